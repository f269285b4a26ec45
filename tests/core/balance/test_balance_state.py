"""The balancer's state (slicectl.core.balance.balance_state) and what the plan says it may do
(slicectl.core.balance.balance.ElasticRange): moves recorded, apply's reset, a restart's adoption,
balanced against drift, the state file's JSON and its errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from paths import TESTS

from slicectl.core.balance.balance import ElasticRange, Move
from slicectl.core.balance.balance_state import (
    BalanceState,
    TenantBalance,
    is_balanced,
    reconcile,
)
from slicectl.core.config.config import load_yaml, parse_config
from slicectl.core.cpulist import parse_cpulist
from slicectl.core.errors import StateError
from slicectl.core.plan import Plan, build_plan
from slicectl.host.files.balance_state_file import read_state, reset_state, write_state
from slicectl.host.topology.sysfs import load_topology

XEON = str(TESTS / "fixtures" / "topologies" / "xeon-2s-smt.json")
YAML = """\
version: 1
housekeeping: {cpus: 2}
tenants:
  web: {cpus: 4, cpus_min: 2, cpus_max: 8, nodes: [0]}
  batch: {cpus: 4, cpus_min: 2, nodes: [0]}
  db: {cpus: 4, nodes: [1]}
  far: {cpus: 2, cpus_min: 2, cpus_max: 4, nodes: [1]}
"""


def cpus(text: str) -> frozenset[int]:
    return parse_cpulist(text)


def plan() -> Plan:
    return build_plan(parse_config(load_yaml(YAML, "t.yaml"), "t.yaml"), load_topology(XEON, None))


def test_the_plan_says_what_each_elastic_tenant_may_hold() -> None:
    ranges = {r.tenant: r for r in plan().elastic}
    assert set(ranges) == {"web", "batch", "far"}  # db is fixed
    web, batch, far = ranges["web"], ranges["batch"], ranges["far"]
    assert (web.declared, web.floor, web.ceiling) == (cpus("3,4,19,20"), 2, 8)
    assert (batch.floor, batch.ceiling) == (2, 4)
    # The elastic tenants' CPUs on its node: never housekeeping's (0,16), db's or node 1's.
    assert web.reach == batch.reach == cpus("1-4,17-20")
    assert far.reach == far.declared
    assert web.allows(cpus("2-4,18-20")) and not web.allows(cpus("1-4,17-20,8"))
    assert not batch.allows(cpus("1-4,17-20"))  # above its ceiling
    assert not web.allows(cpus("3"))  # below its floor


def test_the_plan_json_keeps_the_ranges() -> None:
    p = plan()
    data = p.to_json()
    assert {t["name"]: t.get("elastic") for t in data["tenants"]}["web"] == {
        "cpus_min": 2, "cpus_max": 8, "reach": "1-4,17-20"}
    assert Plan.from_json(json.loads(json.dumps(data))).elastic == p.elastic


MOVE = Move("batch", "web", cpus("2,18"), 0, "web starved; batch idle")


def state() -> BalanceState:
    return BalanceState({}).for_plan(plan().elastic)


def test_a_move_hands_the_core_over_and_counts_both_directions() -> None:
    after = state().with_move(MOVE, 1000.0)
    web, batch = after.tenants["web"], after.tenants["batch"]
    assert (web.cpus, web.grown, web.shrunk, web.last_move) == (cpus("2-4,18-20"), 1, 0, 1000.0)
    assert (batch.cpus, batch.grown, batch.shrunk) == (cpus("1,17"), 0, 1)
    assert web.declared == cpus("3,4,19,20") and web.last_reason == MOVE.reason
    assert after.tenants["far"] == state().tenants["far"]


def test_apply_returns_every_tenant_to_its_declared_cpus_and_keeps_the_counters() -> None:
    back = state().with_move(MOVE, 1000.0).declared(plan().elastic)
    assert {n: t.cpus for n, t in back.tenants.items()} == {
        n: t.declared for n, t in back.tenants.items()}
    assert back.tenants["web"].grown == 1


def test_a_restarted_balancer_keeps_its_moves_unless_the_declared_cpus_changed() -> None:
    moved = state().with_move(MOVE, 1000.0)
    assert moved.for_plan(plan().elastic) == moved
    other = ElasticRange("web", cpus("3,19"), 2, 8, cpus("1-4,17-20"))
    assert moved.for_plan((other,)).tenants == {"web": TenantBalance(cpus("3,19"),
                                                                     cpus("3,19"))}


def test_balanced_only_as_the_state_records_and_within_the_range() -> None:
    ranges = {r.tenant: r for r in plan().elastic}
    moved = state().with_move(MOVE, 1000.0)
    assert is_balanced(ranges["web"], cpus("2-4,18-20"), moved)
    assert not is_balanced(ranges["web"], cpus("2-4,18-20"), None)  # no state: drift
    assert not is_balanced(ranges["web"], cpus("1-4,18-20"), moved)  # not what it records
    wild = moved.adopt("web", cpus("1-4,8,17-20"))  # a state file saying more than it may
    assert not is_balanced(ranges["web"], cpus("1-4,8,17-20"), wild)


def test_reconcile_tells_ours_a_reload_and_someone_elses_apart() -> None:
    moved = state().with_move(MOVE, 1000.0)
    found = reconcile(moved, {"web": cpus("3,4,19,20"), "batch": cpus("1,17"),
                              "far": cpus("6")})
    assert found.taking_part == {"web": cpus("3,4,19,20"), "batch": cpus("1,17")}
    assert found.restored == ("web",)  # back at its declared CPUs (a daemon-reload)
    assert found.foreign == {"far": cpus("6")}


def test_a_move_under_way_counts_either_side_as_the_balancers() -> None:
    """Recorded before it is made: until its outcome is recorded, each tenant of the move may
    hold its CPUs before it or after it, balanced either way; reconcile says which it was."""
    ranges = {r.tenant: r for r in plan().elastic}
    pending = state().with_pending(MOVE)
    web = pending.tenants["web"]
    assert (web.cpus, web.pending, web.grown) == (cpus("3,4,19,20"), cpus("2-4,18-20"), 0)
    assert BalanceState.from_json(pending.to_json(), "f") == pending
    assert pending.to_json()["tenants"]["batch"]["pending"] == "1,17"
    for live in ("3,4,19,20", "2-4,18-20"):
        assert is_balanced(ranges["web"], cpus(live), pending)
    assert not is_balanced(ranges["web"], cpus("1-4,18-20"), pending)
    found = reconcile(pending, {"web": cpus("2-4,18-20"), "batch": cpus("1,2,17,18")})
    assert found.taking_part == found.settled == {"web": cpus("2-4,18-20"),
                                                  "batch": cpus("1,2,17,18")}
    assert found.restored == () and found.foreign == {}
    done = pending.with_move(MOVE, 1000.0)
    assert done.tenants["web"].pending is None and done == state().with_move(MOVE, 1000.0)
    assert "pending" not in done.to_json()["tenants"]["web"]
    assert pending.declared(plan().elastic).tenants["web"].pending is None


def test_the_state_file_round_trips_and_is_written_atomically(tmp_path: Path) -> None:
    path = tmp_path / "run" / "balance.json"
    assert read_state(path) is None
    moved = state().with_move(MOVE, 1000.5)
    write_state(path, moved)
    assert read_state(path) == moved
    assert [p.name for p in path.parent.iterdir()] == ["balance.json"]  # no temporary left
    reset_state(path, plan().elastic)
    assert read_state(path) == moved.declared(plan().elastic)


def test_reset_writes_no_state_where_no_balancer_ran(tmp_path: Path) -> None:
    reset_state(tmp_path / "balance.json", plan().elastic)
    assert not (tmp_path / "balance.json").exists()


@pytest.mark.parametrize(("text", "message"), [
    ("not json", "not JSON"),
    ("[]", "(document): must be an object, not a list"),
    ('{"format": "other"}', "format: is 'other', not 'slicectl-balance-state/1'"),
    ('{"format": "slicectl-balance-state/1"}', "tenants: missing"),
    ('{"format": "slicectl-balance-state/1", "tenants": {"web": {"declared": "0-3", '
     '"cpus": "0-3", "moves": {"grow": -1, "shrink": 0}}}}',
     "tenants.web.moves.grow: -1 is out of range"),
    ('{"format": "slicectl-balance-state/1", "tenants": {"web": {"declared": "0-3", '
     '"cpus": "0-3", "moves": {"grow": 0, "shrink": 0}, "last_move": "yesterday"}}}',
     "tenants.web.last_move: must be a number or null"),
    ("[" * 100000, "not JSON"),
])
def test_a_state_file_that_is_not_a_state_is_a_located_error(
        tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "balance.json"
    path.write_text(text)
    with pytest.raises(StateError) as e:
        read_state(path)
    assert e.value.message.startswith(f"{path}: {message}")
