"""agent.runtime.identity, the one rank source, and agent.runtime.user_libs, the one way to reach torch/numpy.

The rank: from what agent.distributed learned, else torchrun's environment, else an initialised torch.distributed
group (a real single-process gloo group in a fresh interpreter); the event bus, the predicates and agent.distributed
all answer from it. The libraries: a fresh interpreter that never imported torch sees none, and nothing here
imports it.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from support.paths import PYHELPERS, PYTHON
from tensorsight.agent.conditions import predicates
from tensorsight.agent.distributed import ranks
from tensorsight.agent.runtime import events, identity, user_libs
from tensorsight.agent.runtime.identity import RankInfo


@pytest.fixture
def fresh_identity(monkeypatch):
    monkeypatch.setattr(identity, "_learned", None)
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_environment_answers_and_every_reader_agrees(fresh_identity):
    assert identity.rank_info() is None and identity.rank() is None and not identity.is_distributed()
    assert (predicates.rank(), predicates.world_size(), identity.world_size()) == (0, 1, 1)
    fresh_identity.setenv("RANK", "3")
    fresh_identity.setenv("WORLD_SIZE", "4")
    fresh_identity.setenv("LOCAL_RANK", "1")
    assert identity.rank_info() == RankInfo(3, 4, 1, "env")
    assert (identity.rank(), predicates.rank(), predicates.world_size()) == (3, 3, 4)
    assert predicates.is_distributed() and ranks.stops_allowed()
    seen: list[dict] = []
    unsubscribe = events.subscribe(seen.append)
    try:
        events.emit("probe")
    finally:
        unsubscribe()
    assert seen[0]["rank"] == 3


def test_a_learned_rank_wins_and_is_learned_once(fresh_identity):
    fresh_identity.setenv("RANK", "0")
    learned = RankInfo(2, 8, None, "torch.distributed")
    assert identity.learn(learned) is True
    assert identity.learn(RankInfo(5, 8)) is False  # the first announcement stands
    assert identity.learned() == learned and identity.rank() == 2 and identity.world_size() == 8


_GROUP = """
import json, socket
from tensorsight.agent.runtime import identity, user_libs
before = [identity.rank_info_from_torch(), user_libs.loaded_torch() is None]
import torch, torch.distributed as dist
with socket.socket() as s:
    s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
info = identity.rank_info()
dist.destroy_process_group()
print(json.dumps({"before": before, "during": [info.rank, info.world_size, info.source],
                  "after": identity.rank(), "tensor": user_libs.is_tensor(torch.ones(1))}))
"""


def test_an_initialised_process_group_answers_without_a_launcher_environment():
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    proc = subprocess.run(
        [PYTHON, "-c", _GROUP], capture_output=True, text=True, env={**env, "PYTHONPATH": PYHELPERS}, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["before"] == [None, True]  # no group, and torch was not loaded by asking
    assert result["during"] == [0, 1, "torch.distributed"]
    assert result["after"] is None  # torn down and never announced: not distributed any more
    assert result["tensor"] is True


def test_user_libs_reads_what_the_program_imported():
    import numpy as np
    import torch

    assert user_libs.loaded_torch() is torch and user_libs.loaded_numpy() is np
    assert user_libs.is_tensor(torch.ones(2)) and not user_libs.is_tensor(np.ones(2))
    assert user_libs.is_array(np.ones(2)) and not user_libs.is_array([1.0])
    model = torch.nn.Linear(2, 1)
    assert user_libs.is_module(model) and not user_libs.is_module(torch.ones(1))
    assert user_libs.is_optimizer(torch.optim.SGD(model.parameters(), lr=0.1)) and not user_libs.is_optimizer(model)
