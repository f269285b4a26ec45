"""The demo's moving cgroup tree (slicectl.demo.scenario): the same moves for the same times,
each tenant given what its limits allow, new limits followed and never written."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from slicectl.core.monitor.metrics import PressureMetrics, SliceMetrics, compute
from slicectl.demo.scenario import GIB, MIB, DemoTree
from slicectl.host.cgroup.sampler import Sampler

NODES = {0: frozenset({0, 1, 2, 3, 8, 9, 10, 11}), 1: frozenset({4, 5, 6, 7, 12, 13, 14, 15})}
CACHE = "tenants.slice/tenants-cache.slice"


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _set_limits(root: Path) -> None:
    """The limits apply leaves in the demo (as the fake systemd writes them)."""
    limits = {"tenants-db.slice": {"cpuset.cpus.effective": "1-3,9-11",
                                   "cpuset.mems.effective": "0", "memory.high": str(14 * GIB)},
              "tenants-cache.slice": {"cpuset.cpus.effective": "6,14", "cpuset.mems.effective":
                                      "1", "memory.high": str(GIB)},
              "tenants-batch.slice": {"cpuset.cpus.effective": "7,15", "cpu.max": "200000 100000"}}
    for unit, files in limits.items():
        for name, text in files.items():
            (root / "tenants.slice" / unit / name).write_text(text + "\n")


def _field(root: Path, cgroup: str, name: str, key: str) -> int:
    text = (root / cgroup / name).read_text()
    m = re.search(rf"^{key}[ =](\d+)", text, re.M)
    assert m, text
    return int(m[1])


def test_the_tree_moves_the_same_way_for_the_same_times(tmp_path: Path) -> None:
    trees = [DemoTree(tmp_path / name, NODES) for name in ("a", "b")]
    for tree in trees:
        _set_limits(tree.root)
        for step in range(1, 21):
            tree.advance_to(step * 0.5)
    a, b = (_files(tree.root) for tree in trees)
    assert a == b
    one = DemoTree(tmp_path / "c", NODES)
    _set_limits(one.root)
    one.advance_to(3.0)
    assert _files(one.root) != _files(trees[0].root)  # the time matters


def test_the_tree_gives_each_tenant_what_its_limits_allow(tmp_path: Path) -> None:
    tree = DemoTree(tmp_path / "cgroup", NODES)
    root = tree.root
    _set_limits(root)
    tree.advance_to(5.0)
    usage = {name: _field(root, f"tenants.slice/tenants-{name}.slice", "cpu.stat", "usage_usec")
             for name in ("db", "web", "cache", "batch")}
    high = _field(root, CACHE, "memory.events", "high")
    tree.advance_to(10.0)
    # The cache wants 1.5G and may have 1G: held at memory.high, "high" events keep coming,
    # and it stalls on memory.
    assert int((root / CACHE / "memory.current").read_text()) == GIB
    assert _field(root, CACHE, "memory.events", "high") > high > 0
    avg10 = re.search(r"^some avg10=(\d+\.\d+)", (root / CACHE / "memory.pressure").read_text())
    assert avg10 and float(avg10[1]) > 5, avg10
    # The batch job wants 3 cores, its quota gives 2: throttled, and short of CPU.
    batch = "tenants.slice/tenants-batch.slice"
    batch_cores = (_field(root, batch, "cpu.stat", "usage_usec") - usage["batch"]) / 5e6
    assert batch_cores == pytest.approx(2.0, abs=0.01)
    assert _field(root, batch, "cpu.stat", "nr_throttled") > 0
    # The database's memory is all on its node; the parent's counters are its children's.
    numa = (root / "tenants.slice/tenants-db.slice/memory.numa_stat").read_text()
    assert re.search(r"^anon N0=[1-9]\d* N1=0$", numa, re.M), numa
    children = sum(_field(root, f"tenants.slice/tenants-{n}.slice", "cpu.stat", "usage_usec")
                   for n in usage)
    assert _field(root, "tenants.slice", "cpu.stat", "usage_usec") == children
    assert _field(root, "tenants.slice", "memory.events", "high") == _field(
        root, CACHE, "memory.events", "high")


def test_the_tree_follows_new_limits_and_never_writes_them(tmp_path: Path) -> None:
    tree = DemoTree(tmp_path / "cgroup", NODES)
    _set_limits(tree.root)
    tree.advance_to(1.0)
    (tree.root / CACHE / "memory.high").write_text(f"{2 * GIB}\n")  # as an apply would
    tree.advance_to(2.0)
    events = _field(tree.root, CACHE, "memory.events", "high")
    tree.advance_to(30.0)
    assert (tree.root / CACHE / "memory.high").read_text() == f"{2 * GIB}\n"
    assert int((tree.root / CACHE / "memory.current").read_text()) == 1536 * MIB  # it fits
    assert _field(tree.root, CACHE, "memory.events", "high") == events  # no longer held


DEMO_SLICES = ("init.scope", "system.slice", "user.slice", "tenants.slice",
               *(f"tenants.slice/tenants-{n}.slice" for n in ("db", "web", "cache", "batch")))


def test_a_minute_of_the_demo_obeys_its_limits_and_pressure_moves(tmp_path: Path) -> None:
    """What the demo's views show, computed from its files a second apart over a simulated
    minute (its own clock: no waiting): cores never above the CPUs allowed or the quota, a
    slice at its quota throttled, and pressure and memory that move with the load."""
    tree = DemoTree(tmp_path / "cgroup", NODES)
    _set_limits(tree.root)
    tree.advance_to(1.0)
    seen: dict[str, list[SliceMetrics]] = {}
    with Sampler(tree.root) as sampler:
        prev = dataclasses.replace(sampler.sample(), time=1.0)
        for second in range(2, 62):
            for quarter in (0.25, 0.5, 0.75, 1.0):  # in the demo's steps (session.TICK_S)
                tree.advance_to(second - 1 + quarter)
            cur = dataclasses.replace(sampler.sample(), time=float(second))
            for m in compute(prev, cur):
                seen.setdefault(m.unit, []).append(m)
                path = m.cgroup[1:]
                raw = (cur.cgroups[path].usage_usec  # type: ignore[operator]
                       - prev.cgroups[path].usage_usec) / 1e6  # the files, not the view's cap
                assert raw <= m.allowed_cpus + 1e-6, (m.unit, second, raw)
                if m.quota_cores is not None:
                    assert raw <= m.quota_cores + 1e-6, (m.unit, second, raw)
                    if raw >= m.quota_cores - 0.01:  # at its quota: throttled
                        assert (m.throttled_percent or 0) > 0, (m.unit, second)
            prev = cur
    batch, db, cache, web = (seen[f"tenants-{n}.slice"] for n in ("batch", "db", "cache", "web"))
    assert min(m.throttled_percent or 0 for m in batch) > 0  # it always wants more than 2

    def spread(values: list[float]) -> float:
        return max(values) - min(values)

    def share(p: PressureMetrics | None) -> float:
        assert p is not None
        return p.some.share()

    assert spread([share(m.cpu_pressure) for m in db]) > 1  # % points, with its load
    assert spread([share(m.memory_pressure) for m in cache]) > 5  # held at memory_high
    assert spread([m.memory_pressure.some.avg10 for m in cache  # type: ignore[union-attr]
                   ]) > 2  # the kernel's average moves too
    assert spread([float(m.memory_current or 0) for m in web]) > 100 * MIB
    assert spread([float(m.memory_current or 0) for m in db]) > 100 * MIB
