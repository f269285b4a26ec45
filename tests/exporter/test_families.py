"""The exporter's metrics (slicectl.exporter.families): one table whose names follow Prometheus'
conventions, and the series of a snapshot built by hand: base units, +Inf for what is not
limited, nothing for what is absent or unreadable, and rows reused for unchanged cgroups."""

from __future__ import annotations

import dataclasses
from typing import Any

from slicectl.core.monitor.samples import CgroupSample, NodeMemory, Pressure, PsiLine, Snapshot
from slicectl.exporter.families import METRICS, SLICE_METRICS, MetricType, SeriesMemo

UNKNOWN = {f.name: None for f in dataclasses.fields(CgroupSample)
           if f.default is dataclasses.MISSING and f.name not in ("unit", "path", "inode")}
DB1 = "tenants.slice/tenants-db1.slice"


def sample(path: str = DB1, **values: Any) -> CgroupSample:
    return CgroupSample(unit=path.rpartition("/")[2], path=path, inode=1,
                        **{**UNKNOWN, **values})


def snapshot(*samples: CgroupSample) -> Snapshot:
    return Snapshot(time=1.0, cgroups={s.path: s for s in samples}, host_cpus=8)


def series_of(*samples: CgroupSample, tenants: dict[str, str] | None = None
              ) -> dict[str, list[tuple[tuple[str, ...], float]]]:
    series, _ = SeriesMemo().series(snapshot(*samples),
                                    tenants or {"tenants-db1.slice": "db1"})
    return {name: rows for name, rows in series.items() if rows}


def test_names_follow_prometheus_conventions() -> None:
    names = [m.name for m in METRICS]
    assert len(names) == len(set(names))
    assert all(n.startswith("slicectl_") for n in names)
    for m in METRICS:
        assert (m.type is MetricType.COUNTER) == m.name.endswith("_total"), m.name
        assert not m.name.endswith(("_usec", "_us", "_kb")), m.name  # base units only
    assert all(m.labels[:2] == ("slice", "tenant") for m in SLICE_METRICS)


def test_values_in_base_units_labelled_by_slice_and_tenant() -> None:
    psi = Pressure(PsiLine(1.0, 0.5, 0.1, 2_500_000), PsiLine(0.0, 0.0, 0.0, 1_000_000))
    got = series_of(sample(usage_usec=3_456_789, throttled_usec=0, memory_current=1 << 20,
                           memory_max=1 << 30, cpu_quota_usec=150_000, cpu_period_usec=100_000,
                           cpus=frozenset({0, 4}), events_oom_kill=2, cpu_pressure=psi))
    labels = ("tenants-db1.slice", "db1")
    assert got["slicectl_cpu_usage_seconds_total"] == [(labels, 3.456789)]
    assert got["slicectl_cpu_throttled_seconds_total"] == [(labels, 0.0)]
    assert got["slicectl_memory_max_bytes"] == [(labels, float(1 << 30))]
    assert got["slicectl_cpu_quota_cpus"] == [(labels, 1.5)]
    assert got["slicectl_cpu_allowed_cpus"] == [(labels, 2.0)]
    assert got["slicectl_memory_events_total"] == [((*labels, "oom_kill"), 2.0)]
    assert got["slicectl_pressure_cpu_waiting_seconds_total"] == [(labels, 2.5)]
    assert got["slicectl_pressure_cpu_stalled_seconds_total"] == [(labels, 1.0)]


def test_unlimited_is_inf_and_a_controller_that_is_off_is_left_out() -> None:
    got = series_of(sample(memory_current=1 << 20, cpu_period_usec=100_000))
    labels = ("tenants-db1.slice", "db1")
    inf = float("inf")
    assert got["slicectl_memory_max_bytes"] == [(labels, inf)]
    assert got["slicectl_memory_high_bytes"] == [(labels, inf)]
    assert got["slicectl_cpu_quota_cpus"] == [(labels, inf)]
    assert got["slicectl_cpu_allowed_cpus"] == [(labels, 8.0)]  # no cpuset: the host's CPUs
    assert "slicectl_memory_swap_max_bytes" not in got  # no swap accounting here


def test_an_unreadable_value_is_left_out_and_counted_by_its_file() -> None:
    s = sample(memory_current=None, usage_usec=5, unreadable=frozenset({"memory_current"}))
    series, errors = SeriesMemo().series(snapshot(s), {})
    assert series["slicectl_memory_current_bytes"] == []
    assert series["slicectl_memory_max_bytes"] == [(("tenants-db1.slice", ""), float("inf"))]
    assert errors == {"memory.current": 1}


def test_numa_memory_by_node_and_type() -> None:
    got = series_of(sample(numa=(NodeMemory(0, 3 << 20, 1 << 20), NodeMemory(1, 0, 4096))))
    labels = ("tenants-db1.slice", "db1")
    assert got["slicectl_memory_numa_bytes"] == [
        ((*labels, "0", "anon"), float(3 << 20)), ((*labels, "0", "file"), float(1 << 20)),
        ((*labels, "1", "anon"), 0.0), ((*labels, "1", "file"), 4096.0)]


def test_rows_of_unchanged_cgroups_are_reused() -> None:
    memo = SeriesMemo()
    a, b = sample(usage_usec=1), sample("system.slice", usage_usec=2)
    first, _ = memo.rows(snapshot(a, b), {})
    again, _ = memo.rows(snapshot(a, b), {})
    assert again is first and len(memo) == 2
    a2 = sample(usage_usec=3)
    third, _ = memo.rows(snapshot(a2, b), {})
    assert dict(third)["system.slice"] is dict(first)["system.slice"]
    assert sorted(dict(third)[DB1]) == [
        ("slicectl_cpu_allowed_cpus", ("tenants-db1.slice", ""), 8.0),
        ("slicectl_cpu_usage_seconds_total", ("tenants-db1.slice", ""), 3e-6)]
