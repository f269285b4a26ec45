"""The balancer's decision (slicectl.core.balance.balance) on synthetic machines and traces."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slicectl.core.balance.balance import Elastic, Move, Reading, check_floors, decide
from slicectl.core.config.config import load_yaml, parse_config
from slicectl.core.config.tenants import BalancePolicy
from slicectl.core.errors import PlacementError
from slicectl.core.placement.layout import Layout, TenantPlacement
from slicectl.core.placement.topology import Cpu, Node, Topology
from slicectl.core.plan import build_plan

G = 1024**3
POLICY = BalancePolicy()  # interval 10s, cooldown 60s, window 30s, 90% / 40%, pressure 20%
INTERVAL = POLICY.interval / 1_000_000
Load = Callable[[float], float]


def apply_moves(tenants: Iterable[Elastic], moves: Iterable[Move], now: float
                ) -> list[Elastic]:
    """The tenants after `moves` (CPUs handed over, `last_move` set): what the next
    interval's decision starts from."""
    by_name = {t.name: t for t in tenants}
    for m in moves:
        d, r = by_name[m.donor], by_name[m.receiver]
        by_name[m.donor] = replace(d, cpus=d.cpus - m.cpus, last_move=now)
        by_name[m.receiver] = replace(r, cpus=r.cpus | m.cpus, last_move=now)
    return list(by_name.values())


def machine(nodes: int = 2, cores: int = 4, smt: int = 2) -> Topology:
    """`nodes` nodes of `cores` cores of `smt` threads; CPU ids numbered as Linux does on
    x86 (first threads of every core, then the second threads)."""
    total = nodes * cores
    cpus, node_cpus = [], []
    for n in range(nodes):
        ids: list[int] = []
        for c in range(cores):
            core = n * cores + c
            siblings = frozenset(core + k * total for k in range(smt))
            ids += sorted(siblings)
            cpus += [Cpu(id=i, online=True, node=n, package=n, core=c, siblings=siblings)
                     for i in sorted(siblings)]
        node_cpus.append(Node(id=n, cpus=frozenset(ids), memory_bytes=64 * G))
    return Topology(nodes=tuple(node_cpus), cpus=tuple(sorted(cpus, key=lambda c: c.id)))


def core_cpus(topo: Topology, *first: int) -> frozenset[int]:
    """The CPUs of the cores whose first thread is each of `first`."""
    return frozenset(c for core in topo.cores() if core[0] in first for c in core)


def trace(load: Load, until: float, start: float = 0.0, pressure: Load | None = None
          ) -> tuple[Reading, ...]:
    """Readings every interval from `start` to `until` of CPU use `load(t)`."""
    out, t = [], start
    while t <= until + 1e-9:
        out.append(Reading(t, load(t), None if pressure is None else pressure(t)))
        t += INTERVAL
    return tuple(out)


def flat(pct: float) -> Load:
    return lambda _t: pct


def tenant(name: str, cpus: frozenset[int], floor: int, ceiling: int, load: Load,
           now: float, nodes: tuple[int, ...] = (0,), last_move: float | None = None,
           pressure: Load | None = None) -> Elastic:
    return Elastic(name, frozenset(nodes), cpus, floor, ceiling,
                   trace(load, now, pressure=pressure), last_move)


# --- the basic move ---------------------------------------------------------------------


def test_a_whole_core_moves_from_the_idle_tenant_to_the_starved_one() -> None:
    topo = machine(nodes=1, cores=4, smt=2)
    now = 60.0
    busy = tenant("busy", core_cpus(topo, 0), 2, 6, flat(97), now)
    idle = tenant("idle", core_cpus(topo, 1, 2, 3), 2, 6, flat(10), now)
    (move,) = decide([busy, idle], topo, POLICY, now)
    assert (move.donor, move.receiver, move.node) == ("idle", "busy", 0)
    assert move.cpus == core_cpus(topo, 3)  # a whole core: both threads
    assert "busy starved for 30s (CPU use 97% or more of 2 CPUs" in move.reason
    assert "idle idle for 30s (CPU use at most 10% of 6 CPUs" in move.reason


def test_pressure_alone_makes_a_tenant_starved() -> None:
    topo = machine(nodes=1, cores=4, smt=1)
    now = 60.0
    a = tenant("a", frozenset({0, 1}), 1, 3, flat(70), now, pressure=flat(35))
    b = tenant("b", frozenset({2, 3}), 1, 3, flat(5), now, pressure=flat(0))
    (move,) = decide([a, b], topo, POLICY, now)
    assert move.receiver == "a" and "cpu pressure up to 35% (grow at 20%)" in move.reason


def test_a_pressured_tenant_is_not_idle() -> None:
    topo = machine(nodes=1, cores=4, smt=1)
    now = 60.0
    a = tenant("a", frozenset({0, 1}), 1, 3, flat(99), now)
    b = tenant("b", frozenset({2, 3}), 1, 3, flat(5), now, pressure=flat(25))
    assert decide([a, b], topo, POLICY, now) == []


# --- floors and ceilings ----------------------------------------------------------------


def test_never_below_a_floor() -> None:
    topo = machine(nodes=1, cores=4, smt=2)
    now = 60.0
    busy = tenant("busy", core_cpus(topo, 0, 1), 2, 8, flat(99), now)
    idle = tenant("idle", core_cpus(topo, 2, 3), 3, 4, flat(1), now)  # a core would leave 2
    assert decide([busy, idle], topo, POLICY, now) == []


def test_never_above_a_ceiling() -> None:
    topo = machine(nodes=1, cores=4, smt=2)
    now = 60.0
    busy = tenant("busy", core_cpus(topo, 0, 1), 2, 5, flat(99), now)  # a core would make 6
    idle = tenant("idle", core_cpus(topo, 2, 3), 1, 4, flat(1), now)
    assert decide([busy, idle], topo, POLICY, now) == []


def test_a_donor_that_would_be_starved_after_the_move_keeps_its_core() -> None:
    topo = machine(nodes=1, cores=4, smt=1)
    now = 60.0
    busy = tenant("busy", frozenset({0, 1}), 1, 3, flat(99), now)
    # 39% of 2 CPUs is 78% of one: below grow_above, so it may give one.
    spare = tenant("spare", frozenset({2, 3}), 1, 3, flat(39), now)
    assert [m.donor for m in decide([busy, spare], topo, POLICY, now)] == ["spare"]
    # 39% of 3 CPUs would be 117% of the 1 left after its whole core {1,5} went (it would
    # ask it back at once): it keeps them.
    smt = machine(nodes=1, cores=4, smt=2)
    spare3 = tenant("spare", frozenset({1, 5, 2}), 1, 8, flat(39), now)
    busy2 = tenant("busy", frozenset({0, 4}), 1, 8, flat(99), now)
    assert decide([busy2, spare3], smt, POLICY, now) == []


# --- hysteresis and cooldown ------------------------------------------------------------


def run(tenants: list[Elastic], loads: dict[str, Load], topo: Topology, until: float,
        policy: BalancePolicy = POLICY) -> list[tuple[float, Move]]:
    """Every interval up to `until`: the tenants' loads sampled, a decision, its moves made."""
    interval = policy.interval / 1_000_000
    moves: list[tuple[float, Move]] = []
    now = 0.0
    while now <= until:
        tenants = [Elastic(t.name, t.nodes, t.cpus, t.floor, t.ceiling,
                           (*t.history, Reading(now, loads[t.name](now))), t.last_move)
                   for t in tenants]
        made = decide(tenants, topo, policy, now)
        moves += [(now, m) for m in made]
        tenants = apply_moves(tenants, made, now)
        now += interval
    return moves


def test_a_load_between_the_thresholds_never_moves() -> None:
    topo = machine(nodes=1, cores=8, smt=1)
    a = Elastic("a", frozenset({0}), frozenset(range(4)), 1, 7)
    b = Elastic("b", frozenset({0}), frozenset(range(4, 8)), 1, 7)
    # Both between shrink_below (40%) and grow_above (90%), one near each edge.
    loads = {"a": lambda t: 89.0 if int(t) % 20 else 41.0, "b": flat(41)}
    assert run([a, b], loads, topo, until=3600) == []


def test_a_load_oscillating_around_grow_above_never_moves_twice_within_cooldown() -> None:
    topo = machine(nodes=1, cores=8, smt=1)
    a = Elastic("a", frozenset({0}), frozenset(range(2)), 1, 7)
    b = Elastic("b", frozenset({0}), frozenset(range(2, 8)), 1, 7)
    # 91% for three samples, then 89% for one, over and over: the window sometimes holds
    # only readings above 90%.
    loads = {"a": lambda t: 89.0 if int(t / INTERVAL) % 4 == 3 else 91.0, "b": flat(5)}
    moves = run([a, b], loads, topo, until=3600)
    assert moves, "the sustained stretches do grow it"
    cooldown = POLICY.cooldown / 1_000_000
    for (t1, _), (t2, _) in zip(moves, moves[1:], strict=False):
        assert t2 - t1 >= cooldown


def test_a_short_burst_is_not_sustained() -> None:
    topo = machine(nodes=1, cores=4, smt=1)
    now = 60.0
    busy = tenant("busy", frozenset({0, 1}), 1, 3, lambda t: 99.0 if t >= 40 else 50.0, now)
    idle = tenant("idle", frozenset({2, 3}), 1, 3, flat(1), now)
    assert decide([busy, idle], topo, POLICY, now) == []
    assert decide([busy, idle], topo, POLICY, now + 0) == []


def test_cooldown_holds_both_tenants_of_a_move() -> None:
    topo = machine(nodes=1, cores=6, smt=1)
    now = 100.0
    busy = tenant("busy", frozenset({0, 1}), 1, 5, flat(99), now, last_move=50.0)
    idle = tenant("idle", frozenset({2, 3, 4, 5}), 1, 5, flat(1), now)
    assert decide([busy, idle], topo, POLICY, now) == []  # 50s ago < 60s
    later = tenant("busy", frozenset({0, 1}), 1, 5, flat(99), 111.0, last_move=50.0)
    idle2 = tenant("idle", frozenset({2, 3, 4, 5}), 1, 5, flat(1), 111.0)
    assert [m.receiver for m in decide([later, idle2], topo, POLICY, 111.0)] == ["busy"]


def test_a_window_not_covered_by_samples_moves_nothing() -> None:
    topo = machine(nodes=1, cores=4, smt=1)
    busy = Elastic("busy", frozenset({0}), frozenset({0, 1}), 1, 3,
                   (Reading(50.0, 99.0), Reading(60.0, 99.0)))  # window starts at 30
    idle = tenant("idle", frozenset({2, 3}), 1, 3, flat(1), 60.0)
    assert decide([busy, idle], topo, POLICY, 60.0) == []
    gap = Elastic("busy", frozenset({0}), frozenset({0, 1}), 1, 3,
                  (Reading(30.0, 99.0), Reading(60.0, 99.0)))  # nothing in between
    assert decide([gap, idle], topo, POLICY, 60.0) == []


def test_one_move_per_tenant_per_interval() -> None:
    topo = machine(nodes=1, cores=8, smt=1)
    now = 60.0
    a = tenant("a", frozenset({0}), 1, 7, flat(99), now)
    b = tenant("b", frozenset({1}), 1, 7, flat(98), now)
    idle = tenant("idle", frozenset(range(2, 8)), 1, 7, flat(1), now)
    moves = decide([a, b, idle], topo, POLICY, now)
    assert [(m.donor, m.receiver) for m in moves] == [("idle", "a")]


# --- locality and what is never touched --------------------------------------------------


def test_only_between_tenants_sharing_a_node() -> None:
    topo = machine(nodes=2, cores=4, smt=2)
    now = 60.0
    busy = tenant("busy", core_cpus(topo, 0), 1, 8, flat(99), now, nodes=(0,))
    far = tenant("far", core_cpus(topo, 4, 5, 6), 1, 8, flat(1), now, nodes=(1,))
    assert decide([busy, far], topo, POLICY, now) == []
    near = tenant("near", core_cpus(topo, 1, 2), 1, 8, flat(1), now, nodes=(0,))
    (move,) = decide([busy, far, near], topo, POLICY, now)
    assert move.donor == "near" and move.node == 0 and move.cpus <= topo.node(0).cpus


def test_a_tenant_on_several_nodes_takes_cores_on_any_of_them() -> None:
    topo = machine(nodes=2, cores=4, smt=1)
    now = 60.0
    wide = tenant("wide", frozenset({0, 4}), 2, 8, flat(99), now, nodes=(0, 1))
    other = tenant("other", frozenset({5, 6, 7}), 1, 8, flat(1), now, nodes=(1,))
    (move,) = decide([wide, other], topo, POLICY, now)
    assert move.node == 1 and move.cpus == frozenset({7})


def test_half_a_core_never_moves() -> None:
    topo = machine(nodes=1, cores=4, smt=2)  # cores {0,4} {1,5} {2,6} {3,7}
    now = 60.0
    busy = tenant("busy", frozenset({0, 4}), 1, 8, flat(99), now)
    # idle holds core {1,5} whole and one thread of {2,6} and of {3,7}.
    idle = tenant("idle", frozenset({1, 5, 2, 3}), 1, 8, flat(1), now)
    (move,) = decide([busy, idle], topo, POLICY, now)
    assert move.cpus == frozenset({1, 5})


def test_housekeeping_and_fixed_cpus_are_never_taken() -> None:
    topo = machine(nodes=1, cores=4, smt=2)
    now = 60.0
    busy = tenant("busy", frozenset({0, 4}), 1, 8, flat(99), now)
    # Misreported input: the idle tenant claims housekeeping's and a fixed tenant's cores.
    idle = tenant("idle", core_cpus(topo, 1, 2, 3), 1, 8, flat(1), now)
    moves = decide([busy, idle], topo, POLICY, now, housekeeping=core_cpus(topo, 3),
                   fixed=core_cpus(topo, 2))
    assert [m.cpus for m in moves] == [core_cpus(topo, 1)]
    assert decide([busy, idle], topo, POLICY, now, housekeeping=core_cpus(topo, 3),
                  fixed=core_cpus(topo, 1, 2)) == []


def test_deterministic() -> None:
    topo = machine(nodes=2, cores=6, smt=2)
    now = 60.0
    ts = [tenant(f"t{i}", core_cpus(topo, i * 3, i * 3 + 1, i * 3 + 2), 1, 12,
                 flat(99 if i % 2 else 1), now, nodes=(i // 2,)) for i in range(4)]
    first = decide(ts, topo, POLICY, now)
    assert first == decide(list(reversed(ts)), topo, POLICY, now) and len(first) == 2


# --- the property test --------------------------------------------------------------------


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Topology, list[Elastic], frozenset[int],
                                        frozenset[int], float]:
    """A random machine whose cores are dealt to housekeeping, fixed tenants and elastic
    tenants (sometimes half a core), with random loads and last moves."""
    topo = machine(draw(st.integers(1, 3)), draw(st.integers(1, 5)),
                   draw(st.sampled_from([1, 2, 4])))
    owners = st.sampled_from(["hk", "fixed", "pool", "e0", "e1", "e2", "e3"])
    held: dict[str, set[int]] = {}
    for core in topo.cores():
        if draw(st.booleans()):
            owner = draw(owners)
            held.setdefault(owner, set()).update(core)
        else:  # thread by thread
            for cpu in core:
                held.setdefault(draw(owners), set()).add(cpu)
    now = 100.0
    tenants = []
    for name in ("e0", "e1", "e2", "e3"):
        cpus = frozenset(held.get(name, ()))
        if not cpus:
            continue
        on = {n for n in topo.node_ids() if topo.node(n).cpus & cpus}
        nodes = frozenset(on | set(draw(st.sets(st.sampled_from(topo.node_ids())))))
        floor = draw(st.integers(1, len(cpus)))
        ceiling = draw(st.integers(len(cpus), len(topo.online_cpus)))
        use = draw(st.sampled_from([0.0, 10.0, 39.0, 40.0, 60.0, 89.0, 90.0, 99.0, 100.0]))
        wobble = draw(st.sampled_from([0.0, 2.0, 30.0]))
        pressure = draw(st.sampled_from([None, 0.0, 19.0, 20.0, 50.0]))
        readings = tuple(Reading(float(t), max(0.0, use - wobble * (t // 10 % 2)), pressure)
                         for t in range(0, 101, 10))
        last = draw(st.sampled_from([None, 0.0, 40.0, 50.0, 90.0]))
        tenants.append(Elastic(name, nodes, cpus, floor, ceiling, readings, last))
    return (topo, tenants, frozenset(held.get("hk", ())), frozenset(held.get("fixed", ())),
            now)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_every_move_keeps_every_invariant(
        case: tuple[Topology, list[Elastic], frozenset[int], frozenset[int], float]) -> None:
    topo, tenants, hk, fixed, now = case
    moves = decide(tenants, topo, POLICY, now, hk, fixed)
    assert moves == decide(list(reversed(tenants)), topo, POLICY, now, hk, fixed)
    by_name = {t.name: t for t in tenants}
    names = [n for m in moves for n in (m.donor, m.receiver)]
    assert len(names) == len(set(names)), "a tenant in two moves of one interval"
    cores = {frozenset(c) for c in topo.cores()}
    cooldown = POLICY.cooldown / 1_000_000
    for m in moves:
        donor, receiver = by_name[m.donor], by_name[m.receiver]
        assert m.donor != m.receiver
        assert m.cpus in cores, "whole cores only"
        assert m.cpus <= donor.cpus and not m.cpus & (hk | fixed)
        assert not m.cpus & receiver.cpus
        assert topo.node_of(min(m.cpus)) == m.node and m.node in donor.nodes & receiver.nodes
        assert len(donor.cpus) - len(m.cpus) >= donor.floor
        assert len(receiver.cpus) + len(m.cpus) <= receiver.ceiling
        for t in (donor, receiver):
            assert t.last_move is None or now - t.last_move >= cooldown
        window = [r for r in receiver.history if r.time >= now - 30]
        assert all(r.cpu_percent >= 90 or (r.pressure or 0) >= 20 for r in window)
        window = [r for r in donor.history if r.time >= now - 30]
        assert all(r.cpu_percent < 40 and (r.pressure or 0) < 20 for r in window)
    after = {t.name: t for t in apply_moves(tenants, moves, now)}
    for t in after.values():
        assert by_name[t.name].floor <= len(t.cpus) or t.cpus == by_name[t.name].cpus
        assert len(t.cpus) <= by_name[t.name].ceiling or t.cpus == by_name[t.name].cpus


# --- the plan-time check of floors -----------------------------------------------------------


def test_floors_that_fit_plan() -> None:
    cfg = parse_config(load_yaml(textwrap.dedent("""\
        version: 1
        tenants:
          db: {cpus: 4, cpus_min: 2, cpus_max: 6, nodes: [0]}
          web: {cpus: 2, cpus_min: 2, cpus_max: 4, nodes: [0]}
    """), "t.yaml"), "t.yaml")
    plan = build_plan(cfg, machine(nodes=2, cores=4, smt=2), shares=False)
    assert len(plan.layout.of("db").cpus) == 4


def test_floors_beyond_the_node_are_a_located_error() -> None:
    topo = machine(nodes=1, cores=4, smt=2)
    cfg = parse_config(load_yaml(textwrap.dedent("""\
        version: 1
        tenants:
          db:
            cpus: 4
            cpus_min: 4
          web:
            cpus: 2
            cpus_min: 2
          fixed: {cpus: 2}
    """), "t.yaml"), "t.yaml")
    # A layout where the fixed tenant holds more than placement would give it (as a stale
    # manifest could): the two floors (6) no longer fit the 4 CPUs left.
    layout = Layout(housekeeping=frozenset(), shared_pool=frozenset(), tenants=(
        TenantPlacement("db", core_cpus(topo, 0, 1), (0,), (0,), True, False),
        TenantPlacement("web", core_cpus(topo, 2), (0,), (0,), True, False),
        TenantPlacement("fixed", core_cpus(topo, 2, 3), (0,), (0,), True, False)))
    with pytest.raises(PlacementError) as e:
        check_floors(cfg, topo, layout)
    assert str(e.value.problem) == (
        "t.yaml:5: tenants.db.cpus_min: the floors of the elastic tenants on node(s) 0 "
        "(db: 4, web: 2) add up to 6 CPUs, but only 4 there are outside housekeeping and "
        "fixed tenants (0,1,4,5)")
    assert e.value.hint == ("lower a cpus_min, or move a fixed tenant or housekeeping off "
                            "the node(s)")
