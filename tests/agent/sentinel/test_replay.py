"""The replay (agent/sentinel/replay.py), in process on a tiny module: it re-runs the forward op by op on a private
copy and finds the op whose output is born NaN, at its line here, while the original module (parameters, buffers,
attributes, ``_version``) and the program's RNG stream stay exactly as they were."""

import torch
from torch import nn

from tensorsight.agent.sentinel.replay import not_replayable, replay_forward, replaying
from tensorsight.agent.sentinel.state import Call, sw

CALLS = 0


class MakesNaN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.norm = nn.BatchNorm1d(3)
        self.drop = nn.Dropout(0.5)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        hidden = self.drop(self.norm(self.fc(x))) - 100.0
        return torch.sqrt(hidden)  # NaN born here


SQRT_LINE = MakesNaN.forward.__code__.co_firstlineno + 3


class WritesGlobal(nn.Module):
    def forward(self, x):
        global CALLS
        CALLS += 1
        return torch.sqrt(x - 100.0)


def call_of(module, *args):
    return Call(module, torch.get_rng_state(), None, [], torch.is_grad_enabled(), args=args)


def snapshot(module):
    state = {name: (t.detach().clone(), t._version) for name, t in module.state_dict(keep_vars=True).items()}
    return state, module.calls


def test_the_replay_finds_the_op_and_leaves_the_module_and_rng_untouched(fresh_sentinel):
    torch.manual_seed(0)
    model, x = MakesNaN(), torch.randn(4, 3)
    call = call_of(model, x)
    before, rng = snapshot(model), torch.get_rng_state()
    replay = replay_forward(call, stop_at=None)
    assert not isinstance(replay, str)
    record = replay.found
    assert record is not None and replay.reproduced and sw.last is record
    assert (record.op, record.phase, record.file, record.line) == ("torch.sqrt", "forward", __file__, SQRT_LINE)
    assert record.module == "MakesNaN" and record.details == {"replayed": True}
    assert record.title == "NaN born here" and "from finite inputs in MakesNaN" in record.message
    after = snapshot(model)
    assert after[1:] == before[1:] and torch.equal(torch.get_rng_state(), rng)
    for name, (value, version) in before[0].items():
        assert torch.equal(after[0][name][0], value) and after[0][name][1] == version, name
    assert not replaying()
    # the replay drew the dropout mask the call would have: its output is the program's
    torch.set_rng_state(call.rng)
    torch.testing.assert_close(record.output, model(x), equal_nan=True)


def test_a_module_reaching_outside_itself_is_not_replayed(fresh_sentinel):
    call = call_of(WritesGlobal(), torch.ones(2))
    reason = not_replayable(call.module, call)
    assert reason is not None and "assigns the global variable CALLS" in reason
    assert replay_forward(call, stop_at=None) == reason
    assert CALLS == 0 and sw.last is None


def test_a_finite_replay_reports_nothing(fresh_sentinel):
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
    replay = replay_forward(call_of(model, torch.ones(2, 3)), stop_at=None)
    assert replay.found is None and not replay.reproduced and replay.index > 0
    assert fresh_sentinel == []
