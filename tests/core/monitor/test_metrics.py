"""Metrics from two samples: rates, dropped deltas, trouble flags."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from cgtree import NUMA_HOSTS, build_numa_fixture
from hypothesis import given
from hypothesis import strategies as st
from paths import TESTS

from slicectl.core.monitor.metrics import (
    MetricsMemo,
    NumaMetrics,
    SliceMetrics,
    Trouble,
    classify,
    compute,
)
from slicectl.core.monitor.samples import CgroupSample, NodeMemory, Pressure, PsiLine, Snapshot
from slicectl.host.cgroup.sampler import Sampler
from slicectl.host.topology.sysfs import read_topology

SYSFS = TESTS / "fixtures" / "sysfs"


def psi(some_total: int = 0, full_total: int = 0, avg10: float = 0.0) -> Pressure:
    return Pressure(PsiLine(avg10, 0.0, 0.0, some_total), PsiLine(0.0, 0.0, 0.0, full_total))


def sample(**values: object) -> CgroupSample:
    """A tenant slice with quiet counters; keyword arguments override fields."""
    base = CgroupSample(
        unit="tenants-db1.slice", path="tenants.slice/tenants-db1.slice", inode=42,
        usage_usec=1_000_000, nr_periods=100, nr_throttled=10, throttled_usec=5000,
        cpu_quota_usec=200000, cpu_period_usec=100000, cpu_weight=100,
        cpus=frozenset(range(4)), mems=frozenset({0}),
        memory_current=1 << 30, memory_low=0, memory_min=0, memory_high=None,
        memory_max=2 << 30, swap_current=0, swap_max=None,
        anon=600 << 20, file=400 << 20, active_file=300 << 20, inactive_file=100 << 20,
        workingset_refault=0, events_low=0, events_high=0, events_max=0, events_oom=0,
        events_oom_kill=0, cpu_pressure=psi(), memory_pressure=psi(), io_pressure=psi(),
        tasks=7,
    )  # fmt: skip
    return dataclasses.replace(base, **values)  # type: ignore[arg-type]


def test_samples_and_metrics_are_values() -> None:
    """Slotted dataclasses: built without the frozen __init__, compared and hashed by value."""
    a, b = sample(), sample()
    assert a == b and hash(a) == hash(b) and a != sample(tasks=8)
    m1, m2 = (SliceMetrics.from_samples(a, s, 1.0) for s in (b, sample()))
    assert m1 == m2 and len({m1, m2}) == 1 and m1.cpu_pressure == m2.cpu_pressure
    assert m1 != SliceMetrics.from_samples(a, sample(usage_usec=2_000_000), 1.0)


def test_cpu_cores_and_percent_of_allowed_cpus() -> None:
    m = SliceMetrics.from_samples(sample(), sample(usage_usec=1_500_000), 0.5)
    assert m.cpu_cores == pytest.approx(1.0)
    assert m.cpu_percent == pytest.approx(25.0)  # 1 core of 4 allowed
    assert m.quota_cores == pytest.approx(2.0)


def test_cpu_cores_never_above_the_cpus_allowed_or_the_quota() -> None:
    """A rate above them is the counter and the clock read a moment apart."""
    over_cpus = sample(cpu_quota_usec=None, usage_usec=1_000_000 + 4_200_000)  # 4.2 of 4
    assert SliceMetrics.from_samples(sample(cpu_quota_usec=None), over_cpus,
                                     1.0).cpu_cores == pytest.approx(4.0)
    over_quota = SliceMetrics.from_samples(sample(), sample(usage_usec=3_250_000), 1.0)
    assert over_quota.cpu_cores == pytest.approx(2.0)  # 2.25 cores, quota 2
    unknown = sample(cpus=None, cpu_quota_usec=None, usage_usec=9_000_000)
    assert SliceMetrics.from_samples(sample(cpus=None, cpu_quota_usec=None), unknown,
                                     1.0).cpu_cores == pytest.approx(8.0)  # nothing to cap


def test_psi_share_is_the_rate_else_avg10() -> None:
    """One figure for every view (table, detail, top, status, trouble colours)."""
    cur = sample(memory_pressure=psi(300_000, avg10=12.5))
    later = SliceMetrics.from_samples(sample(), cur, 1.0).memory_pressure
    assert later is not None and later.some.share() == pytest.approx(30.0)
    first = SliceMetrics.from_samples(None, cur, 1.0).memory_pressure
    assert first is not None and first.some.share() == 12.5


def test_allowed_cpus_fall_back_to_the_host() -> None:
    cur = sample(cpus=None, usage_usec=3_000_000)
    m = SliceMetrics.from_samples(sample(cpus=None), cur, 1.0, host_cpus=16)
    assert m.allowed_cpus == 16 and m.cpu_percent == pytest.approx(12.5)


def test_throttled_percent_and_time() -> None:
    cur = sample(nr_periods=110, nr_throttled=15, throttled_usec=255000)
    m = SliceMetrics.from_samples(sample(), cur, 1.0)
    assert m.throttled_percent == pytest.approx(50.0)
    assert m.throttled_s == pytest.approx(0.25)
    idle = SliceMetrics.from_samples(sample(), sample(), 1.0)
    assert idle.throttled_percent == 0.0  # no period elapsed, nothing throttled


def test_psi_rate_from_totals_is_clamped() -> None:
    cur = sample(cpu_pressure=psi(250_000, 100_000, avg10=12.5), io_pressure=psi(5_000_000))
    m = SliceMetrics.from_samples(sample(), cur, 1.0)
    assert m.cpu_pressure is not None and m.cpu_pressure.full is not None
    assert m.cpu_pressure.some.rate == pytest.approx(25.0)
    assert m.cpu_pressure.full.rate == pytest.approx(10.0)
    assert m.cpu_pressure.some.avg10 == 12.5
    assert m.io_pressure is not None and m.io_pressure.some.rate == 100.0


def test_memory_levels_and_event_deltas() -> None:
    cur = sample(events_high=3, events_max=2, events_oom=1, events_oom_kill=1)
    m = SliceMetrics.from_samples(sample(), cur, 1.0)
    assert m.memory_percent == pytest.approx(50.0)  # of memory.max
    assert (m.events_high, m.events_max, m.events_oom, m.events_oom_kill) == (3, 2, 1, 1)
    only_high = SliceMetrics.from_samples(None, sample(memory_max=None, memory_high=4 << 30), 1)
    assert only_high.memory_percent == pytest.approx(25.0)


@pytest.mark.parametrize(
    "prev, dt",
    [
        (None, 1.0),
        (sample(inode=41), 1.0),  # the slice was stopped and started again
        (sample(usage_usec=9_000_000), 1.0),  # a counter went backwards
        (sample(events_oom_kill=5), 1.0),
        (sample(), 0.029),  # seed 002: under 30 ms the cpu controller is not accurate
        (sample(), 0.0),
    ],
)
def test_deltas_are_dropped(prev: CgroupSample | None, dt: float) -> None:
    m = SliceMetrics.from_samples(prev, sample(usage_usec=2_000_000, events_high=1), dt)
    assert m.cpu_cores is None and m.cpu_percent is None and m.throttled_percent is None
    assert m.events_high is None
    assert m.cpu_pressure is not None and m.cpu_pressure.some.rate is None
    assert m.memory_current == 1 << 30 and m.tasks == 7  # levels are still shown


def test_30ms_is_enough() -> None:
    m = SliceMetrics.from_samples(sample(), sample(usage_usec=1_030_000), 0.03)
    assert m.cpu_cores == pytest.approx(1.0)


def test_compute_pairs_cgroups_by_path() -> None:
    new = sample(path="tenants.slice/tenants-new.slice", unit="tenants-new.slice", inode=7)
    prev = Snapshot(10.0, {"tenants.slice/tenants-db1.slice": sample()}, 8)
    cur = Snapshot(
        11.0,
        {"tenants.slice/tenants-db1.slice": sample(usage_usec=3_000_000), new.path: new},
        8,
    )
    by_unit = {m.unit: m for m in compute(prev, cur)}
    assert by_unit["tenants-db1.slice"].cpu_cores == pytest.approx(2.0)
    assert by_unit["tenants-new.slice"].cpu_cores is None
    assert by_unit["tenants-db1.slice"].cgroup == "/tenants.slice/tenants-db1.slice"
    assert all(m.cpu_cores is None for m in compute(None, cur))


def test_trouble_flags() -> None:
    calm = SliceMetrics.from_samples(sample(), sample(), 1.0)
    assert calm.trouble == frozenset()
    cur = sample(
        memory_current=(2 << 30) - 1,
        memory_pressure=psi(300_000),
        nr_periods=200,
        nr_throttled=60,
        events_oom_kill=1,
    )
    m = SliceMetrics.from_samples(sample(), cur, 1.0)
    assert m.trouble == {Trouble.PRESSURE, Trouble.THROTTLED, Trouble.NEAR_LIMIT, Trouble.OOM}
    assert classify(m, pressure_above=50.0, throttled_above=90.0, near_limit=100.0) == {Trouble.OOM}


counters = st.integers(min_value=0, max_value=2**63)


@given(a=counters, b=counters, fa=counters, fb=counters, u=counters, v=counters,
       dt=st.floats(min_value=0.0, max_value=1e6, allow_nan=False))  # fmt: skip
def test_rates_stay_in_range(a: int, b: int, fa: int, fb: int, u: int, v: int, dt: float) -> None:
    prev = sample(usage_usec=u, memory_pressure=psi(a, fa))
    cur = sample(usage_usec=v, memory_pressure=psi(b, fb))
    m = SliceMetrics.from_samples(prev, cur, dt)
    assert m.cpu_cores is None or m.cpu_cores >= 0
    assert m.memory_pressure is not None and m.memory_pressure.full is not None
    for rate in (m.memory_pressure.some.rate, m.memory_pressure.full.rate):
        assert rate is None or 0.0 <= rate <= 100.0


# -- the metrics memo --------------------------------------------------------------------


def test_memo_reuses_metrics_of_unchanged_samples_only() -> None:
    same, moving = sample(), sample(path="tenants.slice/tenants-web.slice", unit="web.slice")
    first = Snapshot(10.0, {same.path: same, moving.path: moving}, 8)
    later = dataclasses.replace(moving, usage_usec=2_000_000)
    second = Snapshot(11.0, {same.path: same, moving.path: later}, 8)
    third = Snapshot(12.0, {same.path: same, moving.path: later}, 8)
    memo = MetricsMemo()
    memo.compute(first, second)
    a = {m.unit: m for m in memo.compute(second, third)}
    b = {m.unit: m for m in memo.compute(second, third)}
    assert a["tenants-db1.slice"] is b["tenants-db1.slice"]  # the same sample: reused
    assert a["tenants-db1.slice"].cpu_cores == 0.0
    # Another memo (another reader) does not share it; nor does a too short interval.
    assert MetricsMemo().compute(second, third)[0] is not a["tenants-db1.slice"]
    short = memo.compute(second, Snapshot(11.01, third.cgroups, 8))
    assert short[0].cpu_cores is None


# -- NUMA locality -------------------------------------------------------------------------


def numa_sample(nodes: dict[int, int], cpus: set[int] | None, mems: set[int] | None
                ) -> CgroupSample:
    """A sample with `nodes` (node -> anonymous MiB) on the testbed's 4 nodes."""
    return sample(
        numa=tuple(NodeMemory(n, nodes.get(n, 0) << 20, 0) for n in range(4)),
        cpus=None if cpus is None else frozenset(cpus),
        mems=None if mems is None else frozenset(mems),
    )


# node n = CPUs n and n + 4, like the testbed
TESTBED_NODES = {n: frozenset({n, n + 4}) for n in range(4)}
HOST_MEMS = frozenset(range(4))


@pytest.mark.parametrize(
    "nodes, cpus, mems, local, outside, bound",
    [
        ({1: 200}, {1, 5}, {1}, 100.0, 0.0, True),  # bound to node 1, all there
        ({1: 150, 2: 50}, {1, 5}, {1}, 75.0, 25.0, True),  # moved from 2, pages lag
        ({1: 150, 2: 50}, {1, 5}, {1, 2}, 75.0, 0.0, True),  # node 2 allowed: only remote
        ({0: 50, 3: 50}, {0, 4}, None, 50.0, 0.0, False),  # `numa: any`, no cpuset
        ({0: 50, 3: 50}, {0, 4}, {0, 1, 2, 3}, 50.0, 0.0, False),
        ({0: 30, 3: 10}, None, None, 100.0, 0.0, False),  # every CPU: every node is local
        ({0: 10, 1: 10}, {0, 1}, {0, 1}, 100.0, 0.0, True),  # spread over two nodes
        ({}, {1, 5}, {1}, None, None, True),  # no memory yet: unknown
    ],
)
def test_local_and_outside_percent(
    nodes: dict[int, int], cpus: set[int] | None, mems: set[int] | None,
    local: float | None, outside: float | None, bound: bool,
) -> None:
    s = numa_sample(nodes, cpus, mems)
    numa = SliceMetrics.from_samples(None, s, 1.0, node_cpus=TESTBED_NODES,
                                     host_mems=HOST_MEMS).numa
    assert numa is not None
    assert numa.local_percent == (None if local is None else pytest.approx(local))
    assert numa.outside_percent == (None if outside is None else pytest.approx(outside))
    assert numa.bound is bound
    assert numa.nodes == s.numa


def test_locality_without_a_node_map_or_numa_stat() -> None:
    s = numa_sample({1: 150, 2: 50}, {1, 5}, {1})
    numa = NumaMetrics.from_sample(s, None, HOST_MEMS)
    assert numa is not None and numa.local_nodes is None and numa.local_percent is None
    assert numa.outside_percent == pytest.approx(25.0) and numa.bound
    # The host's nodes come from the map when the cgroup root did not list its memory nodes.
    assert NumaMetrics.from_sample(s, TESTBED_NODES, None) == NumaMetrics(
        s.numa or (), frozenset({1}), 75.0, 25.0, True)
    assert SliceMetrics.from_samples(None, sample(), 1.0, node_cpus=TESTBED_NODES).numa is None


def test_a_bound_slice_under_90_percent_local_is_trouble() -> None:
    def trouble(nodes: dict[int, int], mems: set[int] | None) -> frozenset[Trouble]:
        s = numa_sample(nodes, {1, 5}, mems)
        return SliceMetrics.from_samples(None, s, 1.0, node_cpus=TESTBED_NODES,
                                         host_mems=HOST_MEMS).trouble

    assert trouble({1: 90, 0: 10}, {1}) == frozenset()  # 90 % is enough
    assert trouble({1: 89, 0: 11}, {1}) == {Trouble.REMOTE_MEMORY}
    assert trouble({1: 10, 0: 90}, None) == frozenset()  # not bound: only shown, no trouble
    m = SliceMetrics.from_samples(None, numa_sample({1: 80, 0: 20}, {1, 5}, {1}), 1.0,
                                  node_cpus=TESTBED_NODES, host_mems=HOST_MEMS)
    assert classify(m, local_below=75.0) == frozenset()


@pytest.mark.parametrize("nodes", [1, 2, 4])
def test_locality_on_numa_fixture_trees(tmp_path: Path, nodes: int) -> None:
    node_cpus = {n.id: n.cpus for n in read_topology(SYSFS / NUMA_HOSTS[nodes]).nodes}
    tree = build_numa_fixture(tmp_path / "cg", node_cpus)
    with Sampler(tree.root) as s:
        first = s.sample()
        tree.advance(1.0)
        second = s.sample()
    by_unit = {m.unit: m for m in MetricsMemo(node_cpus).compute(first, second)}
    if nodes == 1:
        assert all(m.numa is None for m in by_unit.values())
        return

    def shares(unit: str) -> tuple[float | None, float | None, bool]:
        numa = by_unit[unit].numa
        assert numa is not None
        return (numa.local_percent, numa.outside_percent, numa.bound)

    assert shares("tenants-local.slice") == (100.0, 0.0, True)
    assert shares("tenants-empty.slice") == (None, None, True)
    assert shares("tenants-moved.slice") == (25.0, 75.0, True)
    assert Trouble.REMOTE_MEMORY in by_unit["tenants-moved.slice"].trouble
    assert shares("tenants-any.slice") == (50.0, 0.0, False)
    assert shares("system.slice") == (100.0, 0.0, False)  # everywhere, like its CPUs
    if nodes == 4:
        local, outside, bound = shares("tenants-spread.slice")
        assert (local, outside, bound) == pytest.approx((90.0, 10.0, True))
        assert by_unit["tenants-spread.slice"].trouble == frozenset()
    assert sum(Trouble.REMOTE_MEMORY in m.trouble for m in by_unit.values()) == 1
