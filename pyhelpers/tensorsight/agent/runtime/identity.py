"""Who this process is in a distributed job: the agent's one source of the rank and the world size.

The event bus stamps ``rank`` on every event from it, the breakpoint predicates answer ``tensorsight.rank()`` /
``world_size()`` / ``on_rank(...)`` from it, the sentinel names the rank in its stops, and ``agent.distributed``
announces the rank and tells it once it learned the rank from torch.distributed. Answers, in order:

1. what ``agent.distributed`` learned and announced (``learn``), so the rank stays known after the program tears
   its process group down;
2. the launcher's environment: ``RANK`` / ``WORLD_SIZE`` / ``LOCAL_RANK`` as torchrun sets them (no torch needed);
3. an initialised ``torch.distributed`` process group (e.g. ``torch.multiprocessing.spawn`` +
   ``init_process_group(rank=...)``), read only when the program already imported it.

Plumbing: imports no agent module and never imports torch; nothing here raises.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass

from tensorsight.core.protocol import ENV_LOCAL_RANK, ENV_RANK, ENV_WORLD_SIZE


@dataclass(frozen=True)
class RankInfo:
    """This process's place in the job. ``source`` is ``"env"`` (torchrun) or ``"torch.distributed"``."""

    rank: int
    world_size: int
    local_rank: int | None = None
    source: str = "env"


def rank_info_from_env(environ: Mapping[str, str]) -> RankInfo | None:
    """The rank torchrun (or any launcher following its contract) put in the environment; None when absent."""
    rank, world = _non_negative(environ.get(ENV_RANK)), _non_negative(environ.get(ENV_WORLD_SIZE))
    if rank is None:
        return None
    return RankInfo(rank, world if world else rank + 1, _non_negative(environ.get(ENV_LOCAL_RANK)), "env")


def rank_info_from_torch() -> RankInfo | None:
    """The rank of an initialised torch.distributed process group; None before (or without) one."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is None or not dist.is_available() or not dist.is_initialized():
            return None
        return RankInfo(int(dist.get_rank()), int(dist.get_world_size()), None, "torch.distributed")
    except Exception:  # noqa: BLE001 - a half-initialised group is simply "not yet"
        return None


def _non_negative(raw: str | None) -> int | None:
    if raw is None or not raw.strip().isdigit():
        return None
    return int(raw.strip())


_learned: RankInfo | None = None
_lock = threading.Lock()


def learn(info: RankInfo) -> bool:
    """Record the rank ``agent.distributed`` announces; True the first time only (the caller announces it then)."""
    global _learned
    with _lock:
        if _learned is not None:
            return False
        _learned = info
        return True


def learned() -> RankInfo | None:
    """The rank recorded by ``learn``, if any."""
    return _learned


def rank_info() -> RankInfo | None:
    """This process's place in the job, or None when it is not part of a distributed job (yet)."""
    if _learned is not None:
        return _learned
    found = rank_info_from_env(os.environ)
    return found if found is not None else rank_info_from_torch()


def rank() -> int | None:
    """The global rank of this process, or None when it is not distributed."""
    info = rank_info()
    return None if info is None else info.rank


def world_size() -> int:
    """The number of processes in the job; 1 when not distributed."""
    info = rank_info()
    return 1 if info is None else info.world_size


def is_distributed() -> bool:
    return rank_info() is not None


__all__ = [
    "RankInfo",
    "is_distributed",
    "learn",
    "learned",
    "rank",
    "rank_info",
    "rank_info_from_env",
    "rank_info_from_torch",
    "world_size",
]
