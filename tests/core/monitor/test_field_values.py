"""How a slice's values are written for people (cells) and for JSON: the formats status, top
and the TUI show (slicectl.core.monitor.field_values)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from slicectl.core.monitor.field_values import (
    cores_cell,
    events_cell,
    io_cell,
    json_float,
    memory_cell,
    numa_cell,
    psi_cell,
    throttled_cell,
)
from slicectl.core.monitor.metrics import PressureMetrics, PsiMetrics


def slice_(**values: Any) -> Any:
    """A slice's metrics with only the values a cell reads."""
    return SimpleNamespace(**values)


def test_cores_and_throttling_say_when_nothing_is_measured() -> None:
    assert cores_cell(slice_(cpu_cores=1.5, allowed_cpus=4)) == "1.50 / 4"
    assert cores_cell(slice_(cpu_cores=None, allowed_cpus=4)) == "- / 4"  # first sample
    assert throttled_cell(slice_(throttled_percent=12.5, quota_cores=2.0)) == "12.5%"
    # no quota: nothing to throttle against, so no "0.0%" that reads like a measurement
    assert throttled_cell(slice_(throttled_percent=0.0, quota_cores=None)) == "-"


def test_memory_shows_current_high_and_max_with_none_for_no_limit() -> None:
    cell = memory_cell(slice_(memory_current=65 << 20, memory_high=900 << 20,
                              memory_max=None))
    assert cell.startswith("65") and cell.endswith("/ none")
    assert memory_cell(slice_(memory_current=None, memory_high=None, memory_max=None)) == "-"


def test_pressure_is_the_rate_over_the_interval_else_the_kernels_avg10() -> None:
    assert psi_cell(PressureMetrics(PsiMetrics(avg10=40.0, rate=12.5), None)) == "12.5%"
    assert psi_cell(PressureMetrics(PsiMetrics(avg10=40.0, rate=None), None)) == "40.0%"
    assert psi_cell(None) == "-"


def test_events_come_most_serious_first_and_only_those_that_happened() -> None:
    m = slice_(events_oom_kill=1, events_oom=0, events_max=3, events_high=7)
    assert events_cell(m) == "oom_kill +1, max +3, high +7"
    assert events_cell(slice_(events_oom_kill=0, events_oom=0, events_max=0,
                              events_high=0)) == "-"


def test_io_and_numa_cells() -> None:
    assert io_cell(slice_(io_read_bps=None, io_write_bps=0.0)) == "-"
    assert io_cell(slice_(io_read_bps=0.0, io_write_bps=0.0)).count("/s") == 2
    numa = SimpleNamespace(local_percent=25.0, outside_percent=75.0)
    assert numa_cell(slice_(numa=numa)) == "25% (75% out)"
    numa = SimpleNamespace(local_percent=97.0, outside_percent=0.2)
    assert numa_cell(slice_(numa=numa)) == "97%"  # nothing worth saying outside
    assert numa_cell(slice_(numa=None)) == "-"


def test_json_floats_are_rounded_and_never_nan_or_inf() -> None:
    assert json_float(1.23456, 2) == 1.23
    assert json_float(float("nan"), 2) is None and json_float(float("inf"), 2) is None
    assert json_float(None, 2) is None
