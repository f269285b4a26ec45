"""The exporter's own process metrics (slicectl.exporter.process_metrics) read from a /proc
written by hand: each value worked out from the fields proc(5) documents. Their agreement with
prometheus_client's own collector, and the open-descriptor count on this kernel, are checked in
test_exporter.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from slicectl.exporter import process_metrics
from slicectl.exporter.process_metrics import ProcessMetrics

# /proc/self/stat after "(comm)": field 3 (state) is parts[0], so utime (14) is parts[11],
# stime (15) parts[12], starttime (22) parts[19], vsize (23) parts[20], rss (24) parts[21].
FIELDS = {11: "150", 12: "50", 19: "12345", 20: "1000000", 21: "250"}
STAT = "4242 (slicectl exp) S " + " ".join(FIELDS.get(i, "0") for i in range(1, 50)) + "\n"
LIMITS = ("Limit                     Soft Limit           Hard Limit           Units\n"
          "Max cpu time              unlimited            unlimited            seconds\n"
          "Max open files            1024                 524288               files\n")


@pytest.fixture
def metrics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ProcessMetrics:
    (tmp_path / "stat").write_text(STAT)
    (tmp_path / "limits").write_text(LIMITS)
    monkeypatch.setattr(process_metrics, "_PROC", str(tmp_path))
    m = ProcessMetrics()
    m._btime, m._ticks, m._pagesize = 1_700_000_000.0, 100.0, 4096
    monkeypatch.setattr(m.fds, "count", lambda: 7)
    return m


def values(m: ProcessMetrics) -> dict[str, float]:
    return {f.name: f.samples[0].value for f in m.collect()}


def test_the_six_families_worked_out_by_hand(metrics: ProcessMetrics) -> None:
    assert values(metrics) == {
        "process_virtual_memory_bytes": 1_000_000.0,
        "process_resident_memory_bytes": 250 * 4096.0,
        "process_start_time_seconds": 1_700_000_123.45,  # 12345 ticks after boot
        "process_cpu_seconds": 2.0,  # (150 + 50) ticks; a counter: `_total` when exposed
        "process_open_fds": 7.0,
        "process_max_fds": 1024.0,  # the soft limit
    }


def test_a_comm_with_a_closing_parenthesis_is_read_right(
        metrics: ProcessMetrics, tmp_path: Path) -> None:
    (tmp_path / "stat").write_text(STAT.replace("(slicectl exp)", "(a) b) c)"))
    assert values(metrics)["process_virtual_memory_bytes"] == 1_000_000.0


def test_without_limits_the_descriptor_families_are_left_out(
        metrics: ProcessMetrics, tmp_path: Path) -> None:
    (tmp_path / "limits").unlink()
    assert list(values(metrics)) == ["process_virtual_memory_bytes",
                                     "process_resident_memory_bytes",
                                     "process_start_time_seconds", "process_cpu_seconds"]


def test_nothing_when_the_boot_time_is_unknown(metrics: ProcessMetrics) -> None:
    metrics._btime = 0.0
    assert values(metrics) == {}
