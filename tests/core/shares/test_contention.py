"""Guaranteed CPU per tenant from tenants.yaml (slicectl.core.shares.contention), and what `plan`
and `lint` show of it (the live reader of competitors: tests/host/cgroup/test_readers.py)."""

from __future__ import annotations

import pytest

from slicectl.core.advice.lint import lint
from slicectl.core.config.config import load_yaml, parse_config
from slicectl.core.config.tenants import Config
from slicectl.core.placement.placement import place
from slicectl.core.placement.topology import Cpu, Node, Topology
from slicectl.core.plan import build_plan
from slicectl.core.shares.contention import (
    ROOT_UNIT,
    CgroupLevel,
    Competition,
    Competitor,
    CpuShares,
    predict_shares,
)
from slicectl.core.shares.shares import IDLE_WEIGHT, Bound, ShareKind, nice_weight


def flat(n: int = 8) -> Topology:
    """One node with CPUs 0..n-1 (the testbed has 8)."""
    return Topology(nodes=(Node(0, frozenset(range(n)), 8 << 30),),
                    cpus=tuple(Cpu(i, True, 0) for i in range(n)), source="flat")


def config(text: str) -> Config:
    return parse_config(load_yaml("version: 1\n" + text, "t.yaml"), "t.yaml")


def shares(text: str, competition: Competition | None = None, n: int = 8) -> CpuShares:
    c, topo = config(text), flat(n)
    return predict_shares(c, place(c, topo), topo, competition)


def cores(s: CpuShares) -> dict[str, float]:
    return {name: g.cores for name, g in s.tenants.items()}


SEED_004_HOST = ('housekeeping: {cpus: "0-2,4-7"}\n'
                 "tenants:\n  a: {cpu_weight: 100}\n  b: {cpu_weight: 100}\n"
                 "  c: {cpu_weight: 100}\n")


def live(root: tuple[Competitor, ...] = (), parent: tuple[Competitor, ...] = (),
         root_cpu: bool = True, parent_cpu: bool = True) -> Competition:
    return Competition(True, CgroupLevel(ROOT_UNIT, root, root_cpu),
                       CgroupLevel("tenants.slice", parent, parent_cpu))


def test_seed_004_on_the_testbeds_cpu_3() -> None:
    """Case 6: a loop in the root pinned to CPU 3 takes half of it from tenants.slice, whose
    three tenants split the other half; system.slice & co. are on the housekeeping CPUs."""
    task = Competitor("PID 900 (loop)", ShareKind.PROCESS, nice_weight(0), frozenset({3}))
    s = shares(SEED_004_HOST, live(root=(task, Competitor("system.slice"))))
    assert cores(s) == pytest.approx({"a": 1 / 6, "b": 1 / 6, "c": 1 / 6}, abs=1e-4)
    got = {g.name: g for g in s.competitors}
    assert got["PID 900 (loop)"].cores == 0.5 and got["PID 900 (loop)"].parent == ROOT_UNIT
    assert got["system.slice"].cpus == {0, 1, 2, 4, 5, 6, 7}  # the plan pins it
    # case 4: a unit directly in tenants.slice (004's loop in `test`) is a fourth sibling
    s = shares(SEED_004_HOST, live(parent=(Competitor("loop.service"),)))
    assert cores(s) == pytest.approx({"a": 0.25, "b": 0.25, "c": 0.25})
    assert s.tenants["a"].bound is Bound.WEIGHT


def test_without_housekeeping_the_root_units_compete_everywhere() -> None:
    s = shares("tenants:\n  a: {cpu_weight: 100}\n  b: {cpu_weight: 300}\n")
    # tenants.slice is 1 of 4 equal groups at the root on every CPU: 2 of 8 cores
    assert cores(s) == pytest.approx({"a": 0.5, "b": 1.5})
    assert not s.live and "assumed" in s.note
    with_hk = shares("housekeeping: {cpus: 2}\n"
                     "tenants:\n  a: {cpu_weight: 100}\n  b: {cpu_weight: 300}\n")
    assert cores(with_hk) == pytest.approx({"a": 1.5, "b": 4.5})


def test_confined_weights_and_other_root_slices() -> None:
    text = ("confine:\n  system.slice: {cpu_weight: 20}\n  machine.slice: {cpu_weight: 50}\n"
            "tenants:\n  a: {cpu_weight: 100}\n")
    s = shares(text)
    weights = {g.name: g.weight for g in s.competitors}
    assert weights == {"init.scope": 1024, "machine.slice": 512, "system.slice": 205,
                       "user.slice": 1024}
    assert s.tenants["a"].cores == pytest.approx(8 * 1024 / (1024 * 3 + 512 + 205), abs=1e-4)


def test_no_cpu_controller_means_no_guarantee() -> None:
    """Nothing sets a CPU weight or quota: systemd enables no cpu controller, every thread
    competes on its own; a tenant alone on its CPUs (housekeeping elsewhere) still has them."""
    s = shares("tenants:\n  a: {cpus: 2}\n  b: {}\n")
    assert cores(s) == {"a": 0.0, "b": 0.0}
    assert {g.bound for g in s.tenants.values()} == {Bound.THREADS}
    s = shares("housekeeping: {cpus: 2}\ntenants:\n  a: {cpus: 2}\n  b: {}\n  c: {}\n")
    assert cores(s) == {"a": 2.0, "b": 0.0, "c": 0.0}
    assert s.tenants["a"].bound is Bound.CPUS and s.tenants["b"].bound is Bound.THREADS
    # live: the cpu controller already enabled there makes the tenants groups
    s = shares("housekeeping: {cpus: 2}\ntenants:\n  b: {}\n  c: {}\n", live())
    assert cores(s) == {"b": 3.0, "c": 3.0}


def test_quota_idle_and_pool() -> None:
    s = shares("housekeeping: {cpus: 2}\ntenants:\n  q: {cpus: 4, cpu_quota: 150%}\n"
               "  i: {cpu_weight: idle}\n  w: {cpu_weight: 1000}\n")
    assert s.tenants["q"].cores == 1.5 and s.tenants["q"].bound is Bound.QUOTA
    assert s.tenants["i"].weight == IDLE_WEIGHT
    assert s.tenants["w"].cores == pytest.approx(2 * 10240 / (10240 + 3), abs=1e-4)


def test_parent_slice_named_in_the_config() -> None:
    s = shares("slice: dbs\nhousekeeping: {cpus: 2}\ntenants:\n  x: {cpu_weight: 100}\n"
               "  y: {cpu_weight: 100}\n")
    assert cores(s) == pytest.approx({"x": 3.0, "y": 3.0})
    assert {(g.name, g.parent) for g in s.tenants.values()} == {
        ("dbs-x.slice", "dbs.slice"), ("dbs-y.slice", "dbs.slice")}


def test_plan_json_carries_the_shares() -> None:
    c, topo = config(SEED_004_HOST), flat()
    data = build_plan(c, topo).to_json()
    assert [t["cpu_share"] for t in data["tenants"]] == [
        {"cores": 0.3333, "percent": 4.17, "bound": "weight"}] * 3
    assert data["cpu_shares"]["online_cpus"] == 8
    assert {x["name"]: x["weight"] for x in data["cpu_shares"]["competitors"]} == {
        "init.scope": 100, "system.slice": 100, "user.slice": 100}


def test_lint_share_below_cpus() -> None:
    c = config("housekeeping: {cpus: 2}\ntenants:\n  heavy: {cpu_weight: 900}\n"
               "  light: {}\n  spare: {cpu_weight: idle}\n  own: {cpus: 2}\n")
    found = [f for f in lint(c, flat()) if f.rule == "share-below-cpus"]
    assert [(f.line, f.level) for f in found] == [(5, "warning")]  # light; idle is meant
    assert "light is guaranteed 0.40 of its 4 CPU(s) (10%)" in found[0].message
    assert "heavy (weight 900)" in found[0].message
