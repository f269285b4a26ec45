"""Editing in the TUI: edit -> plan -> apply and profile switches against the fake systemd on
a private bus (slicectl/demo/fakesystemd.py), checked as a user would: the dialog's diff, the
cgroup files, tenants.yaml on disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from badtenants import UNREADABLE
from cgtree import MovingTree
from dbus_fast import Variant
from textual.pilot import Pilot
from textual.widgets import Input, Label, OptionList
from tuikit import YAML, make_topology, running, showing, static_rendered, static_text, wait_for

from slicectl.apply.applier import ApplyOptions, apply_plan
from slicectl.core.cpulist import parse_cpulist
from slicectl.core.errors import OutputError
from slicectl.demo.cgtree import make_root
from slicectl.demo.fakesystemd import FakeSystemd
from slicectl.host.files.tenantsfile import replace_tenants
from slicectl.host.planning import load_tenants
from slicectl.tui import tui_settings
from slicectl.tui.app import STALE, SlicectlApp, TuiSettings
from slicectl.tui.components.slice_table import SliceTable
from slicectl.tui.screens.edit import DiffScreen, EditScreen, ProfileScreen

# -- the app: editing against the fake systemd -----------------------------------------------


@pytest.fixture
def host(tmp_path: Path, dbus_daemon: str, fake_systemd: FakeSystemd) -> ApplyOptions:
    """A host: the fake systemd's cgroup tree (made samplable) and unit/control dirs."""
    make_root(tmp_path / "cgroup")
    (tmp_path / "units").mkdir()
    return ApplyOptions(unit_dir=tmp_path / "units", cgroup_root=tmp_path / "cgroup",
                        bus_address=dbus_daemon, control_dir=tmp_path / "control")


async def edit_settings(tmp_path: Path, options: ApplyOptions, text: str = YAML
                        ) -> TuiSettings:
    path = tmp_path / "tenants.yaml"
    path.write_text(text)
    await apply_plan(load_tenants(str(path)), make_topology(), options)  # the host as it was
    settings = tui_settings(str(path), options.cgroup_root, 0.05, options=options, euid=0)
    settings.topology = make_topology()
    assert settings.readonly == []
    return settings


def cgroup_file(options: ApplyOptions, tenant: str, name: str) -> str:
    return (options.cgroup_root / "tenants.slice" / f"tenants-{tenant}.slice" / name
            ).read_text().strip()


async def test_edit_plan_apply_updates_host_file_and_view(tmp_path: Path,
                                                          host: ApplyOptions) -> None:
    settings = await edit_settings(tmp_path, host)
    async with running(settings) as (app, pilot):
        await pilot.press("e")
        assert isinstance(app.screen, EditScreen) and app.screen.tenant == "db1"
        weight = app.screen.query_one("#f-cpu_weight", Input)
        assert weight.value == "300"
        weight.value = "500"
        await pilot.press("enter")
        await wait_for(pilot, lambda: showing(app, DiffScreen, "#diff-text"))
        diff = static_text(app, "#diff-text")
        assert "tenants-db1.slice: CPUWeight 300 -> 500" in diff
        assert "tenants.yaml will be rewritten" in diff
        await pilot.press("y")
        await wait_for(pilot, lambda: app._pending is None)  # noqa: SLF001
        assert cgroup_file(host, "db1", "cpu.weight") == "500"
        text = (tmp_path / "tenants.yaml").read_text()
        assert "    cpu_weight: 500  # more than web\n" in text
        assert text.startswith("# tenants of the test host\n")
        # the view shows the effect: the next sample reads the new weight
        await wait_for(pilot, lambda: any(
            m.unit == "tenants-db1.slice" and m.cpu_weight == 500 for m in app.metrics))


async def test_profile_switch_applies_live_without_touching_the_file(
        tmp_path: Path, host: ApplyOptions) -> None:
    settings = await edit_settings(tmp_path, host)
    async with running(settings) as (app, pilot):
        await pilot.press("p")
        await wait_for(pilot, lambda: showing(app, ProfileScreen, "#profiles"))
        options = app.screen.query_one(OptionList)
        assert options.highlighted == 0  # on the active one: (base)
        await pilot.press("down")  # (base), night
        await pilot.press("enter")
        await wait_for(pilot, lambda: showing(app, DiffScreen, "#diff-text"))
        assert "AllowedCPUs" in static_text(app, "#diff-text")
        await pilot.press("y")
        await wait_for(pilot, lambda: app.profile == "night")
        assert len(parse_cpulist(cgroup_file(host, "db1", "cpuset.cpus"))) == 4  # night: 4
        assert (tmp_path / "tenants.yaml").read_text() == YAML
        assert "profile: night" in static_text(app, "#status")
        await pilot.press("p")  # opens on night; choosing it again says so
        await wait_for(pilot, lambda: showing(app, ProfileScreen, "#profiles"))
        assert app.screen.query_one(OptionList).highlighted == 1
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("night is already active" in str(n.message)
                                          for n in app._notifications))  # noqa: SLF001
        assert not isinstance(app.screen, (ProfileScreen, DiffScreen))


# a and d fill nodes 0 and 1; b and c share node 2 (best fit); e leaves one CPU of node 3
# free. The profile grows b: kept in place, it would take that CPU on node 3.
CROWDED = """\
version: 1
housekeeping: {cpus: 0}
tenants:
  a: {cpus: 2}
  d: {cpus: 2}
  b: {cpus: 1}
  c: {cpus: 1}
  e: {cpus: 1}
profiles:
  grow:
    b: {cpus: 2}
"""


async def test_a_change_refused_as_a_split_is_re_packed_with_r(tmp_path: Path,
                                                             host: ApplyOptions) -> None:
    settings = await edit_settings(tmp_path, host, CROWDED)
    topo = make_topology()
    shared = cgroup_file(host, "b", "cpuset.cpus")
    assert {topo.node_of(c) for c in parse_cpulist(shared)} == \
        {topo.node_of(c) for c in parse_cpulist(cgroup_file(host, "c", "cpuset.cpus"))}
    async with running(settings) as (app, pilot):
        await pilot.press("p")
        await wait_for(pilot, lambda: showing(app, ProfileScreen, "#profiles"))
        await pilot.press("down")  # (base), grow
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("press R to plan that re-pack" in str(n.message)
                                          for n in app._notifications))  # noqa: SLF001
        assert cgroup_file(host, "b", "cpuset.cpus") == shared  # refused: nothing changed
        await pilot.press("R")
        await wait_for(pilot, lambda: showing(app, DiffScreen, "#diff-text"))
        assert "re-pack moves c: node" in static_text(app, "#diff-text")
        await pilot.press("y")
        await wait_for(pilot, lambda: app.profile == "grow")
    b = parse_cpulist(cgroup_file(host, "b", "cpuset.cpus"))
    c = parse_cpulist(cgroup_file(host, "c", "cpuset.cpus"))
    assert len(b) == 2 and len({topo.node_of(x) for x in b}) == 1
    assert {topo.node_of(x) for x in c} != {topo.node_of(x) for x in b}


async def test_failed_apply_rolls_back_and_leaves_the_file(
        tmp_path: Path, host: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    settings = await edit_settings(tmp_path, host)
    fake_systemd.fail_on("SetUnitProperties", "tenants-db1.slice",
                         error="org.freedesktop.DBus.Error.AccessDenied")
    async with running(settings) as (app, pilot):
        await pilot.press("e")
        app.screen.query_one("#f-cpu_weight", Input).value = "700"
        await pilot.press("enter")
        await wait_for(pilot, lambda: showing(app, DiffScreen, "#diff-text"))
        await pilot.press("y")
        await wait_for(pilot, lambda: app._pending is None)  # noqa: SLF001
        assert (tmp_path / "tenants.yaml").read_text() == YAML
        assert cgroup_file(host, "db1", "cpu.weight") == "300"
        assert any("rolled back" in n.message for n in app._notifications)  # noqa: SLF001


async def confirmable_edit(app: SlicectlApp, pilot: Pilot[int], weight: str) -> None:
    """Edit db1's cpu_weight and wait for the diff to confirm."""
    await pilot.press("e")
    app.screen.query_one("#f-cpu_weight", Input).value = weight
    await pilot.press("enter")
    await wait_for(pilot, lambda: showing(app, DiffScreen, "#diff-text"))


async def test_apply_refuses_when_the_host_changed_since_the_diff_was_confirmed(
        tmp_path: Path, host: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    """The diff confirmed is the diff applied: a live change made after it was shown (here a
    `systemctl set-property`-like SetUnitProperties) makes apply refuse, change nothing and
    show the new diff; confirming that one applies it."""
    settings = await edit_settings(tmp_path, host)
    async with running(settings, size=(100, 30)) as (app, pilot):
        await confirmable_edit(app, pilot, "500")
        assert "tenants-db1.slice: CPUWeight 300 -> 500" in static_text(app, "#diff-text")
        fake_systemd.set_properties(fake_systemd.units["tenants-db1.slice"],
                                    [["CPUWeight", Variant("t", 400)]])
        calls = len(fake_systemd.calls)
        await pilot.press("y")
        await wait_for(pilot, lambda: showing(app, DiffScreen, "#diff-warning"))
        assert f"{STALE}: review the new diff and confirm again" in str(
            app.screen.query_one("#diff-warning", Label).content)
        assert any(STALE in n.message for n in app._notifications)  # noqa: SLF001
        assert "tenants-db1.slice: CPUWeight 400 -> 500" in static_text(app, "#diff-text")
        # nothing was changed: no call that changes the host, the value set live, the file
        assert not {"SetUnitProperties", "Reload", "StartUnit", "StopUnit"} & {
            member for member, _ in fake_systemd.calls[calls:]}
        assert cgroup_file(host, "db1", "cpu.weight") == "400"
        assert (tmp_path / "tenants.yaml").read_text() == YAML
        await pilot.press("y")  # the new diff, confirmed
        await wait_for(pilot, lambda: app._pending is None)  # noqa: SLF001
        assert cgroup_file(host, "db1", "cpu.weight") == "500"
        assert "    cpu_weight: 500  # more than web\n" in (tmp_path / "tenants.yaml").read_text()


async def test_apply_refuses_when_tenants_yaml_changed_since_the_edit(
        tmp_path: Path, host: ApplyOptions) -> None:
    """An edit rewrites tenants.yaml: if someone changed the file after the dialog read it,
    apply refuses rather than overwrite their change, and changes nothing."""
    settings = await edit_settings(tmp_path, host)
    async with running(settings) as (app, pilot):
        await confirmable_edit(app, pilot, "500")
        changed = YAML.replace("memory_max: 512M", "memory_max: 768M")
        (tmp_path / "tenants.yaml").write_text(changed)
        await pilot.press("y")
        await wait_for(pilot, lambda: app._pending is None)  # noqa: SLF001
        assert not isinstance(app.screen, DiffScreen)
        assert any("tenants.yaml changed since you confirmed; nothing was changed" in n.message
                   for n in app._notifications)  # noqa: SLF001
        assert cgroup_file(host, "db1", "cpu.weight") == "300"
        assert (tmp_path / "tenants.yaml").read_text() == changed


@pytest.mark.parametrize("case", UNREADABLE)
async def test_edit_refuses_an_unreadable_file_as_the_cli_does(
        tmp_path: Path, host: ApplyOptions, case: str) -> None:
    """The edit dialog reads tenants.yaml with the CLI's reader: a file that became unreadable
    since the TUI started (not UTF-8, a NUL, too large, not a regular file) is refused with
    the message and hint `slicectl write` and `validate` give, and no dialog opens."""
    settings = await edit_settings(tmp_path, host)
    path = tmp_path / "tenants.yaml"
    make, message, hint = UNREADABLE[case]
    make(path)
    async with running(settings) as (app, pilot):
        await pilot.press("e")
        expected = f"{path}{message}\nhint: {hint}"
        await wait_for(pilot, lambda: any(n.message == expected
                                          for n in app._notifications))  # noqa: SLF001
        assert not isinstance(app.screen, EditScreen)


async def test_no_other_edit_writes_tenants_yaml_while_the_tui_applies(
        tmp_path: Path, host: ApplyOptions, monkeypatch: pytest.MonkeyPatch) -> None:
    """The TUI holds tenants.yaml's lock from its check to its write: an edit that tries to
    land during the apply (here `slicectl write`'s writer, not waiting) is held off, so the
    TUI's own check and write see one file and neither edit is lost silently."""
    from slicectl.apply import applier

    settings = await edit_settings(tmp_path, host)
    path = tmp_path / "tenants.yaml"
    theirs = YAML.replace("memory_max: 512M", "memory_max: 768M")
    other: list[str] = []
    real_apply = applier.apply_plan

    async def apply_meanwhile(*args: Any, **kwargs: Any) -> Any:
        try:
            replace_tenants(str(path), theirs, YAML, timeout=0)
            other.append("written")
        except OutputError as e:
            other.append(e.message)
        return await real_apply(*args, **kwargs)

    monkeypatch.setattr(applier, "apply_plan", apply_meanwhile)
    async with running(settings) as (app, pilot):
        await confirmable_edit(app, pilot, "500")
        await pilot.press("y")
        await wait_for(pilot, lambda: app._pending is None)  # noqa: SLF001
    assert len(other) == 1 and other[0].startswith(f"{path} is being written by pid "), other
    assert cgroup_file(host, "db1", "cpu.weight") == "500"
    assert path.read_text() == YAML.replace("cpu_weight: 300", "cpu_weight: 500")


async def test_invalid_edit_stays_in_the_dialog(tmp_path: Path, host: ApplyOptions) -> None:
    settings = await edit_settings(tmp_path, host)
    async with running(settings) as (app, pilot):
        await pilot.press("e")
        app.screen.query_one("#f-cpu_weight", Input).value = "99999"
        await pilot.press("enter")
        assert isinstance(app.screen, EditScreen)
        assert "out of range" in static_text(app, "#edit-error")
        await pilot.press("escape")
        assert not isinstance(app.screen, EditScreen)
        assert (tmp_path / "tenants.yaml").read_text() == YAML


async def test_placement_edit_previews_the_map_then_applies(tmp_path: Path,
                                                            host: ApplyOptions) -> None:
    """numa/nodes/exclusive are in the form; the new placement shows on the map as it is
    typed (a placement that cannot be made says why), before the plan diff."""
    settings = await edit_settings(tmp_path, host)
    async with running(settings, size=(110, 50)) as (app, pilot):
        await pilot.press("e")
        assert isinstance(app.screen, EditScreen)
        form = {key: app.screen.query_one(f"#f-{key}", Input)
                for key in ("cpus", "numa", "nodes", "exclusive")}
        assert [f.value for f in form.values()] == ["2", "", "", ""]
        before = parse_cpulist(cgroup_file(host, "db1", "cpuset.cpus"))
        await wait_for(pilot, lambda: "same db1: CPUs" in static_rendered(app, "#edit-preview"))
        form["nodes"].value = "3"
        await wait_for(pilot, lambda: "now  db1" in static_rendered(app, "#edit-preview"))
        preview = static_rendered(app, "#edit-preview")
        assert f"was  db1: CPUs {cgroup_file(host, 'db1', 'cpuset.cpus')} (2)" in preview
        assert "now  db1: CPUs 3,7 (2) on node 3 (exclusive), memory node 3" in preview
        assert "NUMA map" in preview and "CPUs the change moves" in preview
        form["cpus"].value = "4"  # node 3 has two CPUs
        await wait_for(pilot, lambda: "cannot place this" in static_rendered(
            app, "#edit-preview"))
        assert "node 3" in static_rendered(app, "#edit-preview")
        form["cpus"].value = "2"
        form["exclusive"].value = "maybe"
        await wait_for(pilot, lambda: "expected true or false" in static_text(app, "#edit-error"))
        form["exclusive"].value = "true"
        await pilot.press("enter")
        await wait_for(pilot, lambda: showing(app, DiffScreen, "#diff-text"))
        assert "tenants-db1.slice: AllowedCPUs" in static_text(app, "#diff-text")
        await pilot.press("y")
        await wait_for(pilot, lambda: app._pending is None)  # noqa: SLF001
        assert parse_cpulist(cgroup_file(host, "db1", "cpuset.cpus")) == {3, 7} != before
        assert cgroup_file(host, "db1", "cpuset.mems") == "3"
        text = (tmp_path / "tenants.yaml").read_text()
        assert ("    cpus: 2          # placed by slicectl\n    nodes: 3\n    exclusive: true\n"
                "    cpu_weight: 300  # more than web\n") in text


async def test_read_only_mode_refuses_edits(tree: MovingTree, tmp_path: Path) -> None:
    path = tmp_path / "tenants.yaml"
    path.write_text(YAML)
    settings = tui_settings(str(path), tree.root, 0.05, euid=1000,
                            options=ApplyOptions(cgroup_root=tree.root,
                                                 bus_address="unix:path=/nonexistent/bus"))
    async with running(settings) as (app, pilot):
        banner = static_text(app, "#banner")
        assert "READ-ONLY" in banner and "not root" in banner and "no system bus" in banner
        await pilot.press("e")
        assert not isinstance(app.screen, EditScreen)
        assert any("read-only" in n.message for n in app._notifications)  # noqa: SLF001
        await pilot.press("p")
        assert not isinstance(app.screen, ProfileScreen)




async def test_plans_and_files_are_read_off_the_event_loop(
        tmp_path: Path, host: ApplyOptions, monkeypatch: pytest.MonkeyPatch) -> None:
    """Planning, tenants.yaml, the competitors in /proc and the control files are read in
    workers: the event loop (the main thread) never waits on them."""
    import threading

    import slicectl.apply.applier
    import slicectl.host.cgroup.readers
    import slicectl.host.planning

    on_loop: list[str] = []
    called: set[str] = set()

    def watched(module: object, name: str) -> None:
        real = getattr(module, name)

        def wrapper(*args: object, **kw: object) -> object:
            called.add(name)
            if threading.current_thread() is threading.main_thread():
                on_loop.append(name)
            return real(*args, **kw)

        monkeypatch.setattr(module, name, wrapper)

    settings = await edit_settings(tmp_path, host)
    watched(slicectl.host.planning, "plan_for_host")
    watched(slicectl.apply.applier, "plan_for_host")
    watched(slicectl.host.cgroup.readers, "read_competition")
    watched(slicectl.host.cgroup.readers, "cpu_overrides")
    async with running(settings, size=(110, 50)) as (app, pilot):
        await confirmable_edit(app, pilot, "500")
        await pilot.press("y")
        await wait_for(pilot, lambda: app._pending is None)  # noqa: SLF001
        await pilot.press("m")
        await wait_for(pilot, lambda: "planned from" in static_text(app, "#numa-note"))
        await pilot.press("escape", "s", "s", "s", "s")  # by name
        rows = [m for m in app.metrics if m.unit == "tenants-db1.slice"]
        assert rows
        app.screen.query_one(SliceTable).move_to(rows[0].cgroup)
        await pilot.press("enter")
        await wait_for(pilot, lambda: "guaranteed" in static_text(app, "#limits"))
    assert called == {"plan_for_host", "read_competition", "cpu_overrides"}
    assert on_loop == []
