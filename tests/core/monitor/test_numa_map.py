"""The live NUMA map (slicectl/core/monitor/numa_map.py) and `slicectl topology --live`: which slice
holds each CPU now, against the plan, with each tenant's memory per node."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cgtree import MovingTree
from paths import TESTS
from tuikit import make_topology

from slicectl.cli import main
from slicectl.core.monitor.metrics import SliceMetrics, compute
from slicectl.core.monitor.numa_map import (
    HOUSEKEEPING,
    SHARED,
    LiveMap,
    build_live_map,
    live_map_json,
)
from slicectl.host.cgroup.sampler import Sampler

MIB = 1 << 20
SYSFS = TESTS / "fixtures" / "sysfs" / "nehalem-ex-4node"  # node0 = 0,4,8,…


def host(root: Path) -> MovingTree:
    """8 CPUs in 4 nodes (node n = n, n+4): tenant a on node 0, b on node 1, housekeeping
    pinned to node 3, node 2 free; a's memory mostly on node 0."""
    tree = MovingTree(root, cpus="0-7", mems="0-3")
    tree.add("system.slice", cpus="3,7", mems="3", numa={3: (8 * MIB, 0)})
    tree.add("init.scope", cpus="3,7", mems="3", numa={3: (2 * MIB, 0)})
    tree.add("tenants.slice")
    tree.add("tenants.slice/tenants-a.slice", cpus="0,4", mems="0",
             numa={0: (192 * MIB, 0), 1: (64 * MIB, 0)})
    tree.add("tenants.slice/tenants-b.slice", cpus="1,5", mems="1", numa={1: (32 * MIB, 0)})
    return tree


def metrics(tree: MovingTree) -> list[SliceMetrics]:
    with Sampler(tree.root) as sampler:
        return compute(None, sampler.sample())


def owners(live: LiveMap) -> dict[int, tuple[str, str | None]]:
    data = live_map_json(live)
    return {c["cpu"]: (c["live"], c["plan"]) for n in data["nodes"] for c in n["cpus"]}


def test_each_cpu_belongs_to_the_slice_that_holds_it(tmp_path: Path) -> None:
    live = build_live_map(make_topology(), metrics(host(tmp_path)))
    assert {cpu: who for cpu, (who, _) in owners(live).items()} == {
        0: "a", 4: "a", 1: "b", 5: "b", 2: SHARED, 6: SHARED, 3: HOUSEKEEPING, 7: HOUSEKEEPING}
    assert not live.planned and live.disagreements == []
    memory = {n.node: dict(n.memory) for n in live.nodes}
    assert memory[0] == {"a": 192 * MIB}
    assert memory[1] == {"a": 64 * MIB, "b": 32 * MIB}
    assert memory[3] == {HOUSEKEEPING: 10 * MIB}


def test_shared_cpus_and_unpinned_slices_are_the_pool(tmp_path: Path) -> None:
    tree = host(tmp_path)
    tree.add("tenants.slice/tenants-c.slice", cpus="1")  # shares CPU 1 with b
    tree.add("tenants.slice/tenants-d.slice")  # every CPU: pins nothing
    got = owners(build_live_map(make_topology(), metrics(tree)))
    assert got[1] == (SHARED, None) and got[5] == ("b", None) and got[2] == (SHARED, None)


def test_disagreements_with_the_plan_carry_their_reason(tmp_path: Path) -> None:
    plan = {"a": frozenset({0, 4}), "b": frozenset({2, 6}), "c": frozenset({1, 5})}
    topo, ms = make_topology(), metrics(host(tmp_path))
    live = build_live_map(topo, ms, plan=plan, plan_housekeeping=frozenset({3, 7}))
    assert live.planned
    wrong = {c.cpu: (c.live, c.plan, c.reason) for c in live.disagreements}
    assert wrong == {
        1: ("b", "c", "c: slice not started"), 5: ("b", "c", "c: slice not started"),
        2: (SHARED, "b", "b runs on CPUs 1,5, planned 2,6 (not applied yet, or a reload "
                         "pending)"),
        6: (SHARED, "b", "b runs on CPUs 1,5, planned 2,6 (not applied yet, or a reload "
                         "pending)")}
    override = "/run/systemd/system.control/tenants-b.slice.d/50-AllowedCPUs.conf"
    live = build_live_map(topo, ms, plan=plan, plan_housekeeping=frozenset({3, 7}),
                          overrides={"b": override})
    assert {c.reason for c in live.disagreements} == {
        f"b: CPUs overridden by systemctl set-property ({override})"}
    data = live_map_json(live)
    assert [d["cpu"] for d in data["disagreements"]] == [1, 5, 2, 6]
    assert data["nodes"][0]["cpus"][0] == {"cpu": 0, "live": "a", "plan": "a"}
    # the plan's housekeeping is not pinned live any more
    unpinned = build_live_map(topo, [m for m in ms if m.unit not in ("system.slice",
                                                                   "init.scope")],
                              plan={"a": frozenset({0, 4}), "b": frozenset({1, 5})},
                              plan_housekeeping=frozenset({3, 7}))
    assert {c.reason for c in unpinned.disagreements} == {
        "housekeeping units are not pinned to it live"}


TENANTS = """\
version: 1
tenants:
  a: {cpus: "0,4", nodes: [0]}
  b: {cpus: "1,5", nodes: [1]}
"""


def nehalem_host(root: Path, b_cpus: str) -> MovingTree:
    tree = MovingTree(root, cpus="0-31", mems="0-3")
    tree.add("tenants.slice")
    tree.add("tenants.slice/tenants-a.slice", cpus="0,4", mems="0", numa={0: (200 * MIB, 0)})
    tree.add("tenants.slice/tenants-b.slice", cpus=b_cpus, mems="1")
    return tree


@pytest.mark.parametrize("as_json", [False, True])
def test_topology_live_beside_the_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       as_json: bool) -> None:
    (tmp_path / "tenants.yaml").write_text(TENANTS)
    tree = nehalem_host(tmp_path / "cg", "1,5")
    argv = ["topology", "--live", "--sysfs", str(SYSFS), "--cgroup-root", str(tree.root),
            "--tenants", str(tmp_path / "tenants.yaml"), *(["--json"] if as_json else [])]
    assert main(argv) == 0
    out = capsys.readouterr().out
    if as_json:
        data = json.loads(out)
        assert data["planned"] and data["disagreements"] == []
        assert data["nodes"][0]["memory"] == {"a": 200 * MIB}
        assert data["nodes"][1]["cpus"][0] == {"cpu": 1, "live": "b", "plan": "b"}
    else:
        assert "Live NUMA map" in out and "live matches the plan" in out
        assert "a 200M" in out
    # b moved off its planned CPUs (say, by hand): the map shows where and why
    tree = nehalem_host(tmp_path / "cg2", "9,13")
    assert main(["topology", "--live", "--json", "--sysfs", str(SYSFS), "--cgroup-root",
                 str(tree.root), "--tenants", str(tmp_path / "tenants.yaml")]) == 0
    wrong = json.loads(capsys.readouterr().out)["disagreements"]
    assert {(d["cpu"], d["live"], d["plan"]) for d in wrong} == {
        (1, SHARED, "b"), (5, SHARED, "b"), (9, "b", SHARED), (13, "b", SHARED)}
    assert all("b runs on CPUs 9,13, planned 1,5" in d["reason"] for d in wrong)


def test_tenants_without_live_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topology", "--tenants", "x.yaml"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --tenants and --profile go with --live") and "hint:" in err


async def test_the_tui_map_follows_the_live_cpusets(tmp_path: Path) -> None:
    from tuikit import monitor_settings, running, wait_for

    from slicectl.tui.screens.numa import NumaScreen

    tree = host(tmp_path / "cg")
    async with running(monitor_settings(tree.root)) as (app, pilot):
        await pilot.press("m")
        screen = app.screen
        assert isinstance(screen, NumaScreen) and screen.live is not None
        assert owners(screen.live)[1] == ("b", None)
        tree.cgroups["tenants.slice/tenants-b.slice"].cpus = "2,6"  # moved, e.g. a profile
        tree.advance(0.1)
        await wait_for(pilot, lambda: screen.live is not None
                       and owners(screen.live)[2] == ("b", None))
        assert owners(screen.live)[1] == (SHARED, None)
