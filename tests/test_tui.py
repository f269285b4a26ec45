"""The TUI's monitoring under Textual's pilot: the overview, sorting, polling, navigation, and
SVG snapshots of each screen (tests/snapshots/). Editing is in test_tui_edit.py, the headless
model in test_tui_model.py, a real terminal in test_tui_tmux.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cgtree import NUMA_HOSTS, Motion, MovingTree, build_numa_fixture, build_partition_fixture
from textual.pilot import Pilot
from textual.widgets import DataTable
from tuikit import (
    FIXTURE,
    YAML,
    make_topology,
    monitor_settings,
    running,
    static_text,
    table_rows,
    tree_names,
    wait_for,
)

from slicectl.core.config.yamledit import edit_tenant
from slicectl.core.errors import SamplerError
from slicectl.core.monitor.metrics import MIN_RATE_WINDOW, Trouble
from slicectl.host.topology.sysfs import read_topology
from slicectl.tui import run_tui
from slicectl.tui.app import SlicectlApp, TuiSettings
from slicectl.tui.components.slice_table import SliceTable
from slicectl.tui.model import (
    SortKey,
)
from slicectl.tui.screens.detail import DetailScreen
from slicectl.tui.screens.help import HelpScreen
from slicectl.tui.screens.numa import NumaScreen
from slicectl.views.monitor import NUMA_COLUMN, TROUBLE_STYLE

# -- the app: monitoring ------------------------------------------------------------------


async def test_overview_lists_slices_and_updates(tree: MovingTree) -> None:
    async with running(monitor_settings(tree.root)) as (app, pilot):
        names = {row[0] for row in table_rows(app)}
        assert {"tenants-db1.slice", "tenants-web.slice", "system.slice"} <= names
        seen = app.samples
        tree.advance(1.0)
        await wait_for(pilot, lambda: app.samples >= seen + 2)
        db1 = next(r for r in table_rows(app) if r[0] == "tenants-db1.slice")
        assert db1[1].endswith("/ 4") and db1[1] != "- / 4"  # cores / allowed CPUs
        assert "900M / 950M / 1G" in db1
        # sparklines against the limits: db1 holds 900M of its 1G memory.max, system.slice a
        # constant 64M of the host's 4G (no limit)
        mem = app.screen.query_one(SliceTable).headers.index("mem history")
        system = next(r for r in table_rows(app) if r[0] == "system.slice")
        assert db1[mem].strip()[-1] == "▇" and set(system[mem].strip()) == {"▁"}
        # trouble colours: db1 is at 95 % of memory.high, system.slice is fine
        table = app.screen.query_one(SliceTable)
        styles = {r[0]: table.row_style_at(i) for i, r in enumerate(table_rows(app))}
        assert styles["tenants-db1.slice"] == "red"
        assert styles["system.slice"] == ""
        assert "READ-ONLY" in static_text(app, "#banner")


async def test_an_elastic_tenant_shows_its_size_now_and_declared(tree: MovingTree,
                                                                   tmp_path: Path) -> None:
    """From the balancer's state file: web holds 6 CPUs of its declared 4; db1 is fixed."""
    from slicectl.apply.applier import ApplyOptions
    from slicectl.core.balance.balance_state import BalanceState, TenantBalance
    from slicectl.host.files.balance_state_file import write_state

    state = tmp_path / "balance.json"
    write_state(state, BalanceState({"web": TenantBalance(frozenset({0, 1, 2, 3}),
                                                          frozenset(range(6)), grown=1)}))
    settings = monitor_settings(tree.root, options=ApplyOptions(balance_state=state))
    async with running(settings) as (app, pilot):
        names = {row[0] for row in table_rows(app)}
        assert "tenants-web.slice [6/4 cpus]" in names and "tenants-db1.slice" in names
        write_state(state, BalanceState({"web": TenantBalance(frozenset({0, 1, 2, 3}),
                                                              frozenset({0, 1, 2, 3}))}))
        await wait_for(pilot, lambda: "tenants-web.slice [4/4 cpus]" in {
            row[0] for row in table_rows(app)})


async def test_rows_changed_off_screen_and_lines_scrolled_sideways(tmp_path: Path) -> None:
    """A line is drawn when first painted: a row that changed while off screen shows its
    current cells once scrolled to. Sideways (right/left), the slice column stays and the
    others move a group at a time; only whole columns are drawn."""
    tree = MovingTree(tmp_path / "cgroup")
    tree.add("tenants.slice")
    for i in range(40):
        tree.add(f"tenants.slice/tenants-t{i:02d}.slice",
                 Motion(cpu_cores=0.1 * (i % 5), memory_bytes=(i + 1) << 20))
    async with running(monitor_settings(tree.root)) as (app, pilot):
        table = app.screen.query_one(SliceTable)
        await wait_for(pilot, lambda: table.row_count == 41)
        seen = app.samples
        tree.advance(1.0)
        await wait_for(pilot, lambda: app.samples >= seen + 2)
        await pilot.press("end")
        last = table.row_count - 1
        shown = table.render_line(last - int(table.scroll_y) + 1).text
        cells = table.get_row_at(last)
        assert shown.split()[:4] == [cells[0].strip(), *cells[1].split()]  # name, cores / N
        assert cells[1] != "- / 8"
        # still values (sparklines full) so that the screen holds while it is scrolled
        await wait_for(pilot, lambda: app.samples >= seen + 20)
        await pilot.press("home")
        width = table.size.width
        before = [table.render_line(y).text for y in range(6)]
        await pilot.press("right")
        after = [table.render_line(y).text for y in range(6)]
        await pilot.press("right")
        third = [table.render_line(y).text for y in range(6)]
        await pilot.press("left", "left")
        assert [table.render_line(y).text for y in range(6)] == before
    assert all(len(line) == width for line in before + after + third)
    fixed = table.fixed_width
    assert [line[:fixed] for line in after] == [line[:fixed] for line in before]  # slices
    assert before[0].split()[:7] == ["slice", "cpu", "cores/allowed", "mem",
                                     "current/high/max", "psi", "mem"]  # at 80 columns
    assert after[0].split()[:5] == ["slice", "quota", "throttled", "psi", "cpu"]
    assert third[0].split()[-1] == "tasks"  # as far right as the table goes
    # the quota group moved left by the headline group's width, cells whole
    shift = before[0].index("quota") - after[0].index("quota")
    assert shift == table.group_offsets()[1] > 0
    quota = table.widths[table.headers.index("quota")]
    for old, new in zip(before[1:], after[1:], strict=True):
        cell = old[fixed + shift:fixed + shift + quota]  # the quota column, the last one shown
        assert new[fixed:fixed + quota] == cell and cell.strip()


async def test_sorting_keys(tree: MovingTree) -> None:
    async with running(monitor_settings(tree.root)) as (app, pilot):
        tree.advance(1.0)
        await wait_for(pilot, lambda: any(r[1] not in ("-", "") and not r[1].startswith("-")
                                          for r in table_rows(app)))
        assert app.sort_key.value == "cpu"
        await pilot.press("s", "s", "s", "s")
        assert app.sort_key is SortKey.NAME
        # among siblings: the top level, then each parent's children under it
        assert tree_names(app) == ["  system.slice", "▾ tenants.slice",
                                   "    tenants-db1.slice", "    tenants-web.slice"]
        await pilot.press("r")
        assert tree_names(app) == ["▾ tenants.slice", "    tenants-web.slice",
                                   "    tenants-db1.slice", "  system.slice"]
        assert "sort: name ↑" in static_text(app, "#status")


async def test_fold_and_filter_the_tree(tree: MovingTree) -> None:
    async with running(monitor_settings(tree.root)) as (app, pilot):
        await pilot.press("s", "s", "s", "s")  # by name
        table = app.screen.query_one(SliceTable)
        table.move_to("/tenants.slice")
        await pilot.press("space")
        assert tree_names(app) == ["  system.slice", "▸ tenants.slice"]
        assert "2 of 4 slices" in static_text(app, "#status")
        await pilot.press("space")
        assert len(tree_names(app)) == 4
        await pilot.press("x")
        assert tree_names(app) == ["  system.slice", "▸ tenants.slice"]
        await pilot.press("x")
        assert len(tree_names(app)) == 4
        await pilot.press("slash", "w", "e", "b")
        assert tree_names(app) == ["▾ tenants.slice", "    tenants-web.slice"]
        await pilot.press("enter")  # keep the filter, back to the table
        assert "filter: web" in static_text(app, "#status")
        await pilot.press("escape")
        assert len(tree_names(app)) == 4 and "filter" not in static_text(app, "#status")


async def test_a_slice_unfolds_to_its_services() -> None:
    async with running(snapshot_settings()) as (app, pilot):
        await pilot.press("s", "s", "s", "s")  # by name
        assert "▸ system.slice" in tree_names(app)  # holds only services: folded at first
        app.screen.query_one(SliceTable).move_to("/system.slice")
        await pilot.press("space")
        names = tree_names(app)
        assert names[names.index("▾ system.slice") + 1] == "    cron.service"
        cron = next(r for r in table_rows(app) if r[0] == "cron.service")
        assert "64M / 2G↑ / 512M" in cron  # memory.high comes from system.slice


@pytest.mark.long
async def test_navigation_detail_numa_help_and_quit(tree: MovingTree, tmp_path: Path) -> None:
    db1 = tree.root / "tenants.slice" / "tenants-db1.slice"
    (db1 / "cgroup.procs").write_text("4242\n")
    (tmp_path / "proc" / "4242").mkdir(parents=True)
    (tmp_path / "proc" / "4242" / "comm").write_text("postgres\n")
    settings = monitor_settings(tree.root, proc_root=tmp_path / "proc")
    async with running(settings) as (app, pilot):
        await pilot.press("s", "s", "s", "s")  # by name: the order is known
        index = [r[0] for r in table_rows(app)].index("tenants-db1.slice")
        await pilot.press(*["down"] * index, "enter")
        assert isinstance(app.screen, DetailScreen)
        assert app.screen.cgroup == "/tenants.slice/tenants-db1.slice"
        procs = app.screen.query_one("#procs", DataTable)
        await wait_for(pilot, lambda: procs.row_count == 1)
        assert [str(c) for c in procs.get_row_at(0)][:2] == ["4242", "postgres"]
        assert "CPUs 0-3" in static_text(app, "#limits")
        assert "psi memory" in static_text(app, "#history")
        await pilot.press("escape")
        assert not isinstance(app.screen, DetailScreen)
        await pilot.press("m")
        assert isinstance(app.screen, NumaScreen)
        await pilot.press("escape", "question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape", "q")
        await wait_for(pilot, lambda: app._exit)  # noqa: SLF001


async def test_interval_keys_and_floor(tree: MovingTree) -> None:
    async with running(monitor_settings(tree.root, interval=0.001)) as (app, pilot):
        assert app.interval == MIN_RATE_WINDOW
        assert any("30 ms" in n for n in app.notes)
        await pilot.press("minus")
        assert app.interval == MIN_RATE_WINDOW
        await pilot.press("plus", "plus")
        assert app.interval == 0.1
        assert app.sub_title == "every 0.1s"


def test_missing_cgroup_root_is_an_error_before_the_app(tmp_path: Path) -> None:
    with pytest.raises(SamplerError) as e:
        run_tui(None, tmp_path / "missing")
    assert "does not exist" in e.value.message and "--cgroup-root" in e.value.hint


# -- snapshots (SVG, tests/snapshots/; update with `pytest --snapshot-update`) --------------


async def settled_screenshot(app: SlicectlApp, pilot: Pilot[int], ready: str = "Quit") -> str:
    """A screenshot once it shows `ready` (by default the footer's last key) and two frames in
    a row agree."""
    svg = ""
    for _ in range(60):
        await pilot.pause(0.05)
        new = app.export_screenshot(simplify=True)
        if new == svg and ready in new:
            break
        svg = new
    return svg


def snapshot_settings() -> TuiSettings:
    """The static fixture tree, one sample only (a long interval), fixed read-only reason."""
    config = edit_tenant(YAML, "tenants.yaml", "db1", {})[1]
    return TuiSettings(cgroup_root=FIXTURE, interval=3600, tenants="tenants.yaml",
                       config=config, topology=make_topology(),
                       host_memory=make_topology().total_memory, readonly=["not root"])


SNAPSHOTS = {
    "overview": (),
    # by name: init.scope, system.slice, ▾ tenants.slice, its first child tenants-db1.slice
    "detail": ("s", "s", "s", "s", "down", "down", "down", "enter"),
    "numa": ("m",),
    "help": ("question_mark",),
    "tree-folded": ("x",),  # every parent folded
    "tree-filter": ("slash", "d", "b", "enter"),  # db1 and its parent
}
# What a screen shows once drawn, where it is not the footer's "Quit": the help covers the
# footer (waiting for "Quit" there took all 60 frames, 3 s, on every run).
READY = {"help": "comments"}  # its last line: "... written back with its comments kept."


@pytest.mark.parametrize(("name", "keys"), SNAPSHOTS.items(), ids=SNAPSHOTS.keys())
async def test_snapshot(name: str, keys: tuple[str, ...], svg_snapshot: Any) -> None:
    async with running(snapshot_settings()) as (app, pilot):
        await pilot.press(*keys)
        assert svg_snapshot == await settled_screenshot(app, pilot, READY.get(name, "Quit"))


def test_entry_point_is_slicectl_tui(tmp_path: Path) -> None:
    """`python -m slicectl.tui` is `slicectl tui`: its options, and its refusal, with a hint
    and no traceback, to draw where there is no terminal."""
    import subprocess
    import sys

    usage = subprocess.run([sys.executable, "-m", "slicectl.tui", "--help"],
                           capture_output=True, text=True)
    assert usage.returncode == 0 and usage.stdout.startswith("usage: slicectl tui ")
    proc = subprocess.run([sys.executable, "-m", "slicectl.tui", "--cgroup-root",
                           str(tmp_path / "missing")], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: slicectl tui needs a terminal")
    assert "hint: " in proc.stderr and "Traceback" not in proc.stderr


# -- NUMA locality ------------------------------------------------------------------------


def numa_settings(tmp_path: Path, nodes: int) -> TuiSettings:
    """A tree of tests/cgtree.py's NUMA fixture on the sysfs fixture host of `nodes` nodes."""
    topo = read_topology(Path(__file__).parent / "fixtures" / "sysfs" / NUMA_HOSTS[nodes])
    tree = build_numa_fixture(tmp_path / "cg", {n.id: n.cpus for n in topo.nodes})
    return monitor_settings(tree.root, topology=topo, host_memory=topo.total_memory)


@pytest.mark.parametrize("nodes", [2, 4])
async def test_overview_shows_locality_and_colours_remote_memory(tmp_path: Path,
                                                                 nodes: int) -> None:
    async with running(numa_settings(tmp_path, nodes), size=(200, 30)) as (app, pilot):
        table = app.screen.query_one(SliceTable)
        at = table.headers.index(NUMA_COLUMN)
        rows = {r[0]: r for r in table_rows(app)}
        assert rows["tenants-moved.slice"][at] == "25% (75% out)"
        assert rows["tenants-local.slice"][at] == "100%"
        assert rows["tenants-empty.slice"][at] == "-"
        styles = {r[0]: table.row_style_at(i) for i, r in enumerate(table_rows(app))}
        # bound to node 1 with 75 % of its memory elsewhere: under 90 % local
        assert styles["tenants-moved.slice"] == TROUBLE_STYLE[Trouble.REMOTE_MEMORY]
        assert styles["tenants-local.slice"] == ""
        if nodes == 4:  # spread over nodes 0-1, 90 % there (10 % on node 2): not trouble
            assert rows["tenants-spread.slice"][at] == "90% (10% out)"
            assert styles["tenants-spread.slice"] == ""
        table.move_to("/tenants.slice/tenants-moved.slice")
        await pilot.press("enter")
        assert isinstance(app.screen, DetailScreen)
        limits = static_text(app, "#limits").splitlines()
        assert "NUMA    local 25% on node(s) 1  outside 75%  (bound)" in limits
        node0 = next(line for line in limits if line.startswith("node 0 "))
        node1 = next(line for line in limits if line.startswith("node 1 "))
        assert node0.count("█") == 18 and node0.endswith("192M  outside")
        assert node1.count("█") == 6 and node1.endswith("64M  local")


async def test_one_node_host_has_no_locality_column(tmp_path: Path) -> None:
    async with running(numa_settings(tmp_path, 1)) as (app, _):
        assert NUMA_COLUMN not in app.screen.query_one(SliceTable).headers


# -- cpuset partitions (the detail's lines: test_tui_detail.py) ---------------------------


async def test_a_refused_or_short_partition_colours_its_row(tmp_path: Path) -> None:
    tree = build_partition_fixture(tmp_path / "cg")
    async with running(monitor_settings(tree.root)) as (app, _):
        table = app.screen.query_one(SliceTable)
        styles = {r[0]: table.row_style_at(i) for i, r in enumerate(table_rows(app))}
    assert styles["tenants-broken.slice"] == styles["tenants-lacking.slice"] == TROUBLE_STYLE[
        Trouble.PARTITION]
    assert styles["tenants-iso.slice"] == styles["tenants-plain.slice"] == ""


# --- refused before the screen is taken over -------------------------------------------------

TUI_HINT = ("  hint: for output to a pipe or a file use `slicectl status` (once, `--json` for "
            "programs) or `slicectl top -n N`\n")


@pytest.mark.parametrize("stdout_to_file", [True, False])
def test_tui_without_a_terminal_is_refused_at_once(tmp_path: Path, stdout_to_file: bool) -> None:
    """stdin from /dev/null (and output to a file, or a pipe): exit 2 within the timeout,
    nothing drawn, the reason and what to use instead."""
    out = tmp_path / "out"
    with out.open("w") as f:
        proc = subprocess.run([sys.executable, "-m", "slicectl", "tui"],
                              stdin=subprocess.DEVNULL,
                              stdout=f if stdout_to_file else subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=60)
    assert proc.returncode == 2
    assert out.read_text() == "" and not proc.stdout
    assert proc.stderr == ("error: slicectl tui needs a terminal: standard input and standard "
                           "output are not terminals\n" + TUI_HINT)


@pytest.mark.parametrize("interval", ["0", "0.0", "-1"])
def test_top_refuses_an_interval_of_zero(interval: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "slicectl", "top", "--interval", interval],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.endswith(
        f"slicectl top: error: argument --interval: {interval!r}: must be a finite number "
        "of seconds above 0 (e.g. 1 or 0.5)\n")

