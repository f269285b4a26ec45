"""The TUI: headless model, tenants.yaml write-back, and Pilot tests of the app.

Pilot tests drive `SlicectlApp.run_test()` on fake cgroup trees (tests/cgtree.py); the edit →
plan → apply tests run against the fake systemd on a private bus (tests/fakesystemd.py) and
check what a user would see: the dialog's diff, the cgroup files, tenants.yaml on disk.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from cgtree import Motion, MovingTree, make_root
from fakesystemd import FakeSystemd
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, OptionList, Static

from slicectl.apply import ApplyOptions, apply_plan
from slicectl.atomic import write_atomically
from slicectl.config import load_config
from slicectl.cpulist import parse_cpulist
from slicectl.errors import ConfigError, SamplerError
from slicectl.metrics import MIN_RATE_WINDOW, SliceMetrics, compute
from slicectl.sampler import Sampler
from slicectl.topology import Cpu, Node, Topology
from slicectl.tui import run_tui, tui_settings
from slicectl.tui.app import SlicectlApp, TuiSettings
from slicectl.tui.components.slice_table import SliceTable
from slicectl.tui.model import (
    History,
    SortKey,
    clamp_interval,
    next_interval,
    read_processes,
    readonly_reasons,
    sort_metrics,
    spark,
)
from slicectl.tui.screens.detail import DetailScreen
from slicectl.tui.screens.edit import DiffScreen, EditScreen, ProfileScreen
from slicectl.tui.screens.help import HelpScreen
from slicectl.tui.screens.numa import NumaScreen
from slicectl.yamledit import current_values, edit_tenant

FIXTURE = Path(__file__).parent / "fixtures" / "cgroup"

YAML = """\
# tenants of the test host
version: 1
housekeeping: {cpus: 2}   # keep two for the host
tenants:
  # the database: heavy, pinned
  db1:
    cpus: 2          # placed by slicectl
    cpu_weight: 300  # more than web
    memory_max: 512M
  db2: {cpus: 2, cpu_quota: 150%}   # flow style stays flow style
profiles:
  night:
    db1: {cpus: 4}
    db2: {cpus: 1}
"""


def make_topology() -> Topology:
    """8 CPUs in 4 nodes, interleaved like the testbed (node0 = 0,4; node1 = 1,5; …)."""
    nodes = tuple(Node(n, frozenset({n, n + 4}), 1 << 30,
                       {m: 10 if m == n else 20 for m in range(4)}) for n in range(4))
    cpus = tuple(Cpu(c, True, c % 4, package=c, core=0, siblings=frozenset({c}))
                 for c in range(8))
    return Topology(nodes, cpus, "test")


def moving_tree(root: Path) -> MovingTree:
    tree = MovingTree(root)
    tree.add("system.slice", Motion(cpu_cores=0.5))
    tree.add("tenants.slice")
    tree.add("tenants.slice/tenants-db1.slice", Motion(cpu_cores=3.0), cpus="0-3",
             memory_current=900 << 20, memory_max=str(1 << 30), memory_high=str(950 << 20))
    tree.add("tenants.slice/tenants-web.slice", Motion(cpu_cores=1.0, psi_some={"cpu": 40.0}),
             cpu_max="100000 100000", memory_current=2 << 30)
    return tree


async def wait_for(pilot: Pilot[int], cond: Callable[[], bool], timeout: float = 5.0) -> None:
    """Let the app run until `cond()` holds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError("timed out waiting for the app")
        await pilot.pause(0.02)


def table_rows(app: SlicectlApp) -> list[list[str]]:
    table = app.screen.query_one(SliceTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def static_text(app: SlicectlApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).content)


@asynccontextmanager
async def running(settings: TuiSettings, size: tuple[int, int] = (80, 24)
                  ) -> AsyncIterator[tuple[SlicectlApp, Pilot[int]]]:
    with Sampler(settings.cgroup_root) as sampler:
        app = SlicectlApp(settings, sampler)
        async with app.run_test(size=size) as pilot:
            await wait_for(pilot, lambda: app.samples >= 1)
            yield app, pilot


# -- model -------------------------------------------------------------------------------


def metrics_of(tree: MovingTree) -> list[SliceMetrics]:
    with Sampler(tree.root) as sampler:
        first = sampler.sample()
        tree.advance(1.0)
        second = sampler.sample()
    # the fake tree moved 1 s; pretend the samples were 1 s apart
    return compute(first, type(second)(first.time + 1.0, second.cgroups, second.host_cpus))


def test_sort_metrics_by_each_key(tmp_path: Path) -> None:
    ms = metrics_of(moving_tree(tmp_path))
    units = [m.unit for m in sort_metrics(ms, SortKey.CPU)]
    assert units[:3] == ["tenants-db1.slice", "tenants-web.slice", "system.slice"]
    assert [m.unit for m in sort_metrics(ms, SortKey.CPU, reverse=True)][-1] == units[0]
    assert sort_metrics(ms, SortKey.PRESSURE)[0].unit == "tenants-web.slice"
    assert sort_metrics(ms, SortKey.MEMORY)[0].unit == "tenants-web.slice"
    names = [m.unit for m in sort_metrics(ms, SortKey.NAME)]
    assert names == sorted(names)


def test_spark_and_history() -> None:
    assert spark([0.0, 1.0, 2.0, None], 4, top=2.0) == "▁▅█ "
    assert spark([1.0], 3) == "  █"
    assert spark([], 2) == "  "
    h = History()
    assert list(h.of("/x").cpu) == []


def test_interval_ladder_and_floor() -> None:
    assert clamp_interval(1.0) == (1.0, "")
    value, message = clamp_interval(0.001)
    assert value == MIN_RATE_WINDOW and "30 ms" in message and "seed 002" in message
    assert next_interval(1.0, slower=True) == 2.0
    assert next_interval(1.0, slower=False) == 0.5
    assert next_interval(MIN_RATE_WINDOW, slower=False) == MIN_RATE_WINDOW
    assert next_interval(0.7, slower=False) == 0.5


def test_read_processes_walks_the_subtree(tmp_path: Path) -> None:
    cg = tmp_path / "cgroup" / "tenants.slice" / "tenants-db1.slice"
    (cg / "app.service").mkdir(parents=True)
    (cg / "cgroup.procs").write_text("101\n100\n")
    (cg / "app.service" / "cgroup.procs").write_text("102\n999\n")  # 999 has exited
    proc = tmp_path / "proc"
    for pid, comm in ((100, "postgres"), (101, "pg_wal"), (102, "app")):
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "comm").write_text(comm + "\n")
    procs = read_processes(tmp_path / "cgroup", "/tenants.slice/tenants-db1.slice", proc)
    assert [(p.pid, p.comm, p.cgroup) for p in procs] == [
        (100, "postgres", ""), (101, "pg_wal", ""), (102, "app", "app.service")]
    assert read_processes(tmp_path / "cgroup", "/gone.slice", proc) == []


def test_readonly_reasons(tmp_path: Path) -> None:
    make_root(tmp_path)
    bus = tmp_path / "bus"
    bus.touch()
    assert readonly_reasons("t.yaml", tmp_path, f"unix:path={bus}", euid=0) == []
    reasons = readonly_reasons(None, tmp_path / "nope", "unix:path=/nonexistent/bus", euid=1000)
    assert reasons[0] == "no TENANTS file given" and "not root" in reasons
    assert any("no system bus" in r for r in reasons)
    assert any("no cgroup v2" in r for r in reasons)


# -- tenants.yaml write-back -------------------------------------------------------------


def test_edit_keeps_comments_and_layout() -> None:
    text, config = edit_tenant(YAML, "tenants.yaml", "db1",
                               {"cpu_weight": "500", "memory_max": "", "memory_high": "400M"})
    assert config.tenant("db1").cpu_weight == 500
    assert config.tenant("db1").memory_max is None
    assert config.tenant("db1").memory_high == 400 << 20
    assert "    cpu_weight: 500  # more than web\n" in text
    assert "memory_max" not in text and "    memory_high: 400M\n" in text
    for line in YAML.splitlines():  # every other line stays byte for byte
        if "cpu_weight" not in line and "memory_max" not in line:
            assert line in text.splitlines()


def test_edit_quotes_cpulists_in_flow_mappings() -> None:
    text, config = edit_tenant(YAML, "tenants.yaml", "db2", {"cpus": "0-1,4"})
    assert config.tenant("db2").cpus == frozenset({0, 1, 4})
    assert 'db2: {cpus: "0-1,4", cpu_quota: 150%}' in text
    assert "# flow style stays flow style" in text


def test_edit_rejects_invalid_values_with_located_problems() -> None:
    with pytest.raises(ConfigError) as e:
        edit_tenant(YAML, "tenants.yaml", "db1", {"cpu_weight": "0"})
    assert e.value.problems[0].key == "tenants.db1.cpu_weight"
    assert current_values(YAML, "tenants.yaml", "db1")["cpu_weight"] == "300"


def test_write_atomically_keeps_mode(tmp_path: Path) -> None:
    path = tmp_path / "tenants.yaml"
    path.write_text("old\n")
    path.chmod(0o600)
    write_atomically(path, "new\n")
    assert path.read_text() == "new\n" and path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["tenants.yaml"]  # no temp file left


# -- the app: monitoring ------------------------------------------------------------------


def monitor_settings(root: Path, **kw: object) -> TuiSettings:
    settings = TuiSettings(cgroup_root=root, interval=0.05, readonly=["no TENANTS file given"],
                           topology=make_topology())
    for key, value in kw.items():
        setattr(settings, key, value)
    return settings


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[MovingTree]:
    yield moving_tree(tmp_path / "cgroup")


async def test_overview_lists_slices_and_updates(tree: MovingTree) -> None:
    async with running(monitor_settings(tree.root)) as (app, pilot):
        names = {row[0] for row in table_rows(app)}
        assert {"tenants-db1.slice", "tenants-web.slice", "system.slice"} <= names
        seen = app.samples
        tree.advance(1.0)
        await wait_for(pilot, lambda: app.samples >= seen + 2)
        db1 = next(r for r in table_rows(app) if r[0] == "tenants-db1.slice")
        assert db1[1].endswith("/ 4") and db1[1] != "- / 4"  # cores / allowed CPUs
        assert "900.0M / 950.0M / 1.0G" in db1
        # trouble colours: db1 is at 95 % of memory.high, system.slice is fine
        table = app.screen.query_one(SliceTable)
        styles = {str(table.get_row_at(i)[0]): str(table.get_row_at(i)[0].style)
                  for i in range(table.row_count)}
        assert styles["tenants-db1.slice"] == "red"
        assert styles["system.slice"] == ""
        assert "READ-ONLY" in static_text(app, "#banner")


async def test_polls_never_overlap(tree: MovingTree) -> None:
    async with running(monitor_settings(tree.root)) as (app, pilot):
        app.poll_now()
        app.poll_now()  # a sample is in flight: no second worker, one timer afterwards
        start = app.samples
        await wait_for(pilot, lambda: app.samples >= start + 3)
        sample_workers = [w for w in app.workers if w.group == "sample" and w.is_running]
        assert len(sample_workers) <= 1


async def test_sorting_keys(tree: MovingTree) -> None:
    async with running(monitor_settings(tree.root)) as (app, pilot):
        tree.advance(1.0)
        await wait_for(pilot, lambda: any(r[1] not in ("-", "") and not r[1].startswith("-")
                                          for r in table_rows(app)))
        assert app.sort_key.value == "cpu"
        await pilot.press("s", "s", "s", "s")
        assert app.sort_key is SortKey.NAME
        names = [r[0] for r in table_rows(app)]
        assert names == sorted(names)
        await pilot.press("r")
        assert [r[0] for r in table_rows(app)] == sorted(names, reverse=True)
        assert "sort: name ↑" in static_text(app, "#status")


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


# -- the app: editing against the fake systemd -----------------------------------------------


@pytest.fixture
def host(tmp_path: Path, dbus_daemon: str, fake_systemd: FakeSystemd) -> ApplyOptions:
    """A host: the fake systemd's cgroup tree (made samplable) and unit/control dirs."""
    make_root(tmp_path / "cgroup")
    (tmp_path / "units").mkdir()
    return ApplyOptions(unit_dir=tmp_path / "units", cgroup_root=tmp_path / "cgroup",
                        bus_address=dbus_daemon, control_dir=tmp_path / "control",
                        lock_path=tmp_path / "lock")


async def edit_settings(tmp_path: Path, options: ApplyOptions) -> TuiSettings:
    path = tmp_path / "tenants.yaml"
    path.write_text(YAML)
    await apply_plan(load_config(str(path)), make_topology(), options)  # the host as it was
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
        await wait_for(pilot, lambda: isinstance(app.screen, DiffScreen))
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
        assert isinstance(app.screen, ProfileScreen)
        options = app.screen.query_one(OptionList)
        options.highlighted = 1  # (base), night
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DiffScreen))
        assert "AllowedCPUs" in static_text(app, "#diff-text")
        await pilot.press("y")
        await wait_for(pilot, lambda: app.profile == "night")
        assert len(parse_cpulist(cgroup_file(host, "db1", "cpuset.cpus"))) == 4  # night: 4
        assert (tmp_path / "tenants.yaml").read_text() == YAML
        assert "profile: night" in static_text(app, "#status")


async def test_failed_apply_rolls_back_and_leaves_the_file(
        tmp_path: Path, host: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    settings = await edit_settings(tmp_path, host)
    fake_systemd.fail_on("SetUnitProperties", "tenants-db1.slice",
                         error="org.freedesktop.DBus.Error.AccessDenied")
    async with running(settings) as (app, pilot):
        await pilot.press("e")
        app.screen.query_one("#f-cpu_weight", Input).value = "700"
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DiffScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: app._pending is None)  # noqa: SLF001
        assert (tmp_path / "tenants.yaml").read_text() == YAML
        assert cgroup_file(host, "db1", "cpu.weight") == "300"
        assert any("rolled back" in n.message for n in app._notifications)  # noqa: SLF001


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


# -- snapshots (SVG, tests/snapshots/; update with `pytest --snapshot-update`) --------------


@pytest.fixture
def svg_snapshot(request: pytest.FixtureRequest) -> Any:
    """syrupy's `snapshot`, one SVG file per test in tests/snapshots/."""
    import syrupy.extensions.single_file as single_file

    class SvgFile(single_file.SingleFileSnapshotExtension):
        file_extension = "svg"  # syrupy >= 5
        _file_extension = "svg"  # syrupy 4
        _write_mode = single_file.WriteMode.TEXT

        @classmethod
        def dirname(cls, *, test_location: Any) -> str:
            return str(Path(test_location.filepath).parent / "snapshots")

    return request.getfixturevalue("snapshot").use_extension(SvgFile)


async def settled_screenshot(app: SlicectlApp, pilot: Pilot[int]) -> str:
    """A screenshot once the footer shows its keys and two frames in a row agree."""
    svg = ""
    for _ in range(60):
        await pilot.pause(0.05)
        new = app.export_screenshot(simplify=True)
        if new == svg and "Quit" in new:
            break
        svg = new
    return svg


def snapshot_settings() -> TuiSettings:
    """The static fixture tree, one sample only (a long interval), fixed read-only reason."""
    config = edit_tenant(YAML, "tenants.yaml", "db1", {})[1]
    return TuiSettings(cgroup_root=FIXTURE, interval=3600, tenants="tenants.yaml",
                       config=config, topology=make_topology(),
                       readonly=["not root"])


@pytest.mark.parametrize("keys", [(), ("s", "s", "s", "s", "down", "down", "enter"), ("m",),
                                  ("question_mark",)], ids=["overview", "detail", "numa", "help"])
async def test_snapshot(keys: tuple[str, ...], svg_snapshot: Any) -> None:
    async with running(snapshot_settings()) as (app, pilot):
        await pilot.press(*keys)
        assert svg_snapshot == await settled_screenshot(app, pilot)


def test_entry_point_reports_a_missing_cgroup_root_without_traceback(tmp_path: Path) -> None:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "slicectl.tui", "--cgroup-root",
                           str(tmp_path / "missing")], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: ") and "hint: " in proc.stderr
    assert "Traceback" not in proc.stderr
