"""The NUMA map screen (slicectl.tui.screens.numa): what it says without a topology or without
TENANTS, and the plan of tenants.yaml beside the live map when given."""

from __future__ import annotations

from pathlib import Path

from cgtree import MovingTree
from textual.pilot import Pilot
from tuikit import YAML, monitor_settings, running, showing, static_rendered, static_text, wait_for

from slicectl.core.config.config import load_yaml, parse_config
from slicectl.tui.app import SlicectlApp
from slicectl.tui.screens.numa import NumaScreen


async def open_map(app: SlicectlApp, pilot: Pilot[int]) -> None:
    await pilot.press("m")
    await wait_for(pilot, lambda: showing(app, NumaScreen, "#numa-note"))


async def test_without_a_topology_it_says_why(tree: MovingTree) -> None:
    settings = monitor_settings(tree.root, topology=None,
                                topology_error="/nonexistent: no NUMA nodes found")
    async with running(settings) as (app, pilot):
        await open_map(app, pilot)
        assert static_text(app, "#numa-map") == "No topology: /nonexistent: no NUMA nodes found"
        assert static_text(app, "#numa-note") == "hint: pass --sysfs ROOT or --topology FILE"


async def test_without_tenants_the_live_map_alone(tree: MovingTree) -> None:
    async with running(monitor_settings(tree.root)) as (app, pilot):
        await open_map(app, pilot)
        await wait_for(pilot, lambda: static_text(app, "#numa-note") == (
            "Give TENANTS to compare the live map with the plan."))
        live = static_rendered(app, "#numa-map")
        assert "Live NUMA map" in live and "planned CPUs" not in live


async def test_with_tenants_the_plan_beside_it(tree: MovingTree, tmp_path: Path) -> None:
    path = tmp_path / "tenants.yaml"
    path.write_text(YAML)
    config = parse_config(load_yaml(YAML, str(path)), str(path))
    async with running(monitor_settings(tree.root, tenants=str(path), config=config)) as (
            app, pilot):
        await open_map(app, pilot)
        await wait_for(pilot, lambda: static_text(app, "#numa-note").startswith("planned"))
        note = static_text(app, "#numa-note").splitlines()
        assert note[0] == f"planned from {path}"
        assert [line.split(":")[0] for line in note[1:]] == ["db1", "db2"]
        assert "planned CPUs" in static_rendered(app, "#numa-map")
        await pilot.press("m")
        await wait_for(pilot, lambda: not isinstance(app.screen, NumaScreen))
