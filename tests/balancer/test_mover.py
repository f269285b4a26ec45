"""The balancer's moves on the host (slicectl.balancer.mover), the parts that need no systemd:
the state file it keeps, the lock it takes per move (and what it says while it waits or gives
up), and the check of the cgroups after a move. Moves against the fake systemd are in
test_balancer.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from paths import TESTS

from slicectl.apply.applier import ApplyOptions
from slicectl.balancer import mover
from slicectl.balancer.mover import Mover, Outcome
from slicectl.core.balance.balance import Move
from slicectl.core.config.config import load_yaml, parse_config
from slicectl.core.cpulist import parse_cpulist
from slicectl.core.errors import OutputError, SlicectlError
from slicectl.core.placement.topology import Topology
from slicectl.core.plan import build_plan
from slicectl.host.files.balance_state_file import read_state
from slicectl.host.files.lock import locked_dir

XEON = TESTS / "fixtures" / "topologies" / "xeon-2s-smt.json"
# Placed on xeon-2s-smt: web 3,4,19,20 and batch 1,2,17,18 on node 0; db on node 1.
YAML = """\
version: 1
housekeeping: {cpus: 2}
tenants:
  web: {cpus: 4, cpus_min: 2, cpus_max: 8, nodes: [0]}
  batch: {cpus: 4, cpus_min: 2, nodes: [0]}
  db: {cpus: 4, nodes: [1]}
"""
WEB, BATCH = parse_cpulist("3,4,19,20"), parse_cpulist("1,2,17,18")
MOVE = Move("batch", "web", frozenset({2, 18}), 0, "web starved; batch idle")


def make_mover(tmp_path: Path, waits: list[tuple[str, str]] | None = None,
               lock_timeout: float = 0.0) -> Mover:
    config = parse_config(load_yaml(YAML, "t.yaml"), "t.yaml")
    plan = build_plan(config, Topology.from_json(json.loads(XEON.read_text())), shares=False)
    options = ApplyOptions(unit_dir=tmp_path / "units", cgroup_root=tmp_path / "cgroup",
                           lock_timeout=lock_timeout,
                           balance_state=tmp_path / "run" / "balance.json")
    return Mover(config, plan, options,
                 on_wait=None if waits is None else lambda h, what: waits.append((h, what)))


def test_without_a_readable_state_every_elastic_tenant_starts_at_its_declared_cpus(
        tmp_path: Path) -> None:
    m = make_mover(tmp_path)

    def fresh() -> dict[str, tuple[frozenset[int], frozenset[int], int, int]]:
        return {n: (t.declared, t.cpus, t.grown, t.shrunk) for n, t in m.state().tenants.items()}

    assert fresh() == {"web": (WEB, WEB, 0, 0), "batch": (BATCH, BATCH, 0, 0)}  # no file
    m.options.balance_state.parent.mkdir()
    m.options.balance_state.write_text("garbage")
    assert fresh() == {"web": (WEB, WEB, 0, 0), "batch": (BATCH, BATCH, 0, 0)}


def test_a_move_is_recorded_from_the_cpus_the_decision_saw(tmp_path: Path) -> None:
    m = make_mover(tmp_path)
    m.record_move(MOVE, {"web": WEB, "batch": BATCH})
    state = read_state(m.options.balance_state)
    assert state is not None
    web, batch = state.tenants["web"], state.tenants["batch"]
    assert (web.cpus, web.grown, web.shrunk) == (WEB | {2, 18}, 1, 0)
    assert (batch.cpus, batch.grown, batch.shrunk) == (BATCH - {2, 18}, 0, 1)
    assert web.last_reason == batch.last_reason == "web starved; batch idle"


def test_record_without_waiting_refuses_at_once_when_the_lock_is_held(tmp_path: Path) -> None:
    m = make_mover(tmp_path)
    with locked_dir(m.options.unit_dir, 0.0), pytest.raises(OutputError) as e:
        m.record(lambda s: s, wait=False)
    assert e.value.message.startswith(f"{m.options.unit_dir} is in use by ")
    assert not m.options.balance_state.exists()


def test_a_move_the_lock_holds_off_is_skipped_and_said(tmp_path: Path) -> None:
    waits: list[tuple[str, str]] = []
    m = make_mover(tmp_path, waits, lock_timeout=0.1)
    with locked_dir(m.options.unit_dir, 0.0):
        (outcome,) = m.make([MOVE], {"web": WEB, "batch": BATCH})
    assert outcome.move == MOVE and not outcome.made
    assert outcome.why_not.startswith(f"{m.options.unit_dir} is in use by ")
    assert outcome.why_not.endswith(": gave up after waiting 0.1 s")
    assert [what for _, what in waits] == ["move core 2,18 (node 0) from batch to web"]
    assert outcome == Outcome(MOVE, False, outcome.why_not)


async def test_a_cgroup_that_does_not_follow_fails_the_check(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mover, "SETTLE_S", 0.0)
    m = make_mover(tmp_path)
    group = "/tenants.slice/tenants-web.slice"
    (tmp_path / "cgroup" / group.lstrip("/")).mkdir(parents=True)
    (tmp_path / "cgroup" / group.lstrip("/") / "cpuset.cpus.effective").write_text("3-4,19-20\n")
    await m._verify({"tenants-web.slice": WEB}, {"tenants-web.slice": group})  # noqa: SLF001
    with pytest.raises(SlicectlError) as e:
        await m._verify({"tenants-web.slice": WEB | {2, 18}},  # noqa: SLF001
                        {"tenants-web.slice": group})
    assert e.value.message == (
        f"verification failed: tenants-web.slice: {group}/cpuset.cpus.effective is 3,4,19,20, "
        "expected 2-4,18-20")
    assert e.value.hint == "see `systemctl status` of the slice"
