"""Phase shares, the phase table and the data-loading verdict (pure)."""

import pytest

from tensorsight.core.phases import (
    PHASES,
    LoaderSettings,
    data_loading_advice,
    dominant_phase,
    format_phase_table,
    phase_shares,
    phase_verdicts,
    running_totals,
)

pytestmark = pytest.mark.numpy_only  # also run under Python 3.10, 3.12 and 3.13 (scripts/test.sh)

LOADER = LoaderSettings(file="/project/train.py", line=12, num_workers=0)


def totals(data: float, forward: float = 1.0, backward: float = 1.0, optimizer: float = 0.5, other: float = 0.5):
    return {"data": data, "forward": forward, "backward": backward, "optimizer": optimizer, "other": other}


def test_shares_sum_to_one_and_name_the_dominant_phase():
    shares = phase_shares(totals(data=6.0))
    assert abs(sum(shares.values()) - 1.0) < 1e-12
    assert shares["data"] == 6.0 / 9.0
    assert dominant_phase(totals(data=6.0)) == ("data", 6.0 / 9.0)


def test_shares_of_nothing_measured_are_zero_not_a_division_error():
    assert phase_shares({}) == dict.fromkeys(PHASES, 0.0)


def test_data_above_half_is_a_performance_warning_at_the_dataloader_line():
    findings = phase_verdicts(totals(data=6.0), steps=10, loader=LOADER, cpu_count=8)
    assert len(findings) == 1
    finding = findings[0]
    assert (finding.kind, finding.severity, finding.file, finding.line) == ("performance", "warning", LOADER.file, 12)
    assert "67%" in finding.message
    assert "num_workers=7" in finding.message
    assert "persistent_workers=True" in finding.message
    assert finding.details["shares"]["data"] == round(6.0 / 9.0, 4)
    assert finding.details["ms_per_step"]["data"] == 600.0


def test_data_below_the_threshold_or_too_few_steps_or_no_loader_gives_no_verdict():
    assert phase_verdicts(totals(data=2.0), steps=10, loader=LOADER) == []
    assert phase_verdicts(totals(data=6.0), steps=2, loader=LOADER) == []
    assert phase_verdicts(totals(data=6.0), steps=10, loader=None) == []
    assert phase_verdicts(totals(data=2.0), steps=10, loader=LOADER, data_share_threshold=0.3) != []


def test_advice_follows_the_loader_settings():
    busy = LoaderSettings(file="f.py", line=1, num_workers=4, persistent_workers=True, pin_memory=False)
    advice = data_loading_advice(busy, uses_gpu=True, cpu_count=16)
    assert "num_workers=4 is not keeping up" in advice[0]
    assert not any("persistent_workers" in line for line in advice)
    assert any("pin_memory=True" in line for line in advice)
    assert not any("pin_memory" in line for line in data_loading_advice(busy, uses_gpu=False, cpu_count=16))


def test_phase_table_lists_every_phase_per_step():
    table = format_phase_table(totals(data=6.0), steps=3)
    lines = table.splitlines()
    assert lines[0].split() == ["phase", "ms/step", "share"]
    assert [line.split()[0] for line in lines[1:6]] == list(PHASES)
    assert "2000.00" in lines[1] and "67%" in lines[1]
    assert "3000.00" in lines[-1] and "(3 steps)" in lines[-1]


def test_a_data_phase_of_a_few_milliseconds_is_no_bottleneck_even_at_half_the_step():
    # 3 ms of 5.3 ms per step (57%): a tiny model's batch hand-off, which no DataLoader setting removes
    tiny = {"data": 0.003 * 10, "forward": 0.001 * 10, "backward": 0.001 * 10, "optimizer": 0.0003 * 10}
    assert phase_verdicts(tiny, steps=10, loader=LOADER, cpu_count=2) == []
    slow = {name: seconds * 10 for name, seconds in tiny.items()}  # the same shares at 10x the time: 30 ms/step
    assert len(phase_verdicts(slow, steps=10, loader=LOADER, cpu_count=2)) == 1


def test_time_spent_waiting_for_a_cpu_comes_off_the_phases_before_the_verdict():
    # wall: data 6 of 9 s (67%); the training thread waited 4 s for a CPU inside the data phase and 1 s elsewhere
    waited = {"data": 4.0, "step": 5.0}
    running = running_totals(totals(data=6.0), waited)
    assert running["data"] == 2.0
    assert abs(sum(running.values()) - 4.0) < 1e-12
    assert running["forward"] == 1.0 - 1.0 * 1.0 / 3.0  # the other second comes off in proportion to each phase
    assert phase_verdicts(totals(data=6.0), steps=10, loader=LOADER, cpu_count=8, waited=waited) == []


def test_a_loader_that_is_the_bottleneck_on_its_own_time_is_still_reported_on_a_loaded_machine():
    # the machine took 30% of every phase: the shares of the program's own time are those of the wall time
    wall = totals(data=6.0)
    waited = {"data": 0.3 * 6.0, "step": 0.3 * sum(wall.values())}
    (finding,) = phase_verdicts(wall, steps=10, loader=LOADER, cpu_count=8, waited=waited)
    assert "67%" in finding.message and finding.details["cpu_wait_ms_per_step"] == 270.0


def test_without_readings_or_with_nonsense_the_wall_times_stand():
    assert running_totals(totals(data=6.0), None) == totals(data=6.0)
    assert running_totals(totals(data=6.0), {}) == totals(data=6.0)
    running = running_totals(totals(data=6.0), {"data": 60.0, "step": -5.0})
    assert running["data"] == 0.0 and all(value >= 0.0 for value in running.values())
