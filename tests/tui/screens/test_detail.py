"""One slice's screen (slicectl.tui.screens.detail): its limits and history, its processes
counted, what it says when the slice stops, its cpuset partition and the alert on a broken
one, edit asked of its tenant, and its pressure the same figure as the overview's."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from cgtree import NOT_EXCLUSIVE, MovingTree, build_partition_fixture
from paths import TESTS
from textual.widgets import Static
from tuikit import monitor_settings, running, showing, static_text, wait_for

from slicectl.core.monitor.metrics import PressureMetrics, PsiMetrics, compute
from slicectl.host.cgroup.sampler import Sampler
from slicectl.tui.components.overview_rows import OverviewRows, overview_headers
from slicectl.tui.model import History, worst_pressure
from slicectl.tui.screens.detail import DetailScreen, limits_text
from slicectl.tui.tree import TreeLine, effective_limits
from slicectl.views.monitor import COLUMNS, row

DB1 = "tenants.slice/tenants-db1.slice"


def with_processes(tree: MovingTree, tmp_path: Path, *pids: int) -> Path:
    (tree.root / DB1 / "cgroup.procs").write_text("".join(f"{p}\n" for p in pids))
    for pid in pids:
        (tmp_path / "proc" / str(pid)).mkdir(parents=True)
        (tmp_path / "proc" / str(pid) / "comm").write_text(f"worker{pid}\n")
    return tmp_path / "proc"


async def test_limits_history_and_processes(tree: MovingTree, tmp_path: Path) -> None:
    proc = with_processes(tree, tmp_path, 4242, 4243)
    async with running(monitor_settings(tree.root, proc_root=proc)) as (app, pilot):
        app.push_screen(DetailScreen(f"/{DB1}"))
        await wait_for(pilot, lambda: showing(app, DetailScreen, "#procs-title"))
        await wait_for(pilot, lambda: "processes (2)" in str(
            app.screen.query_one("#procs-title", Static).content))
        assert static_text(app, "#detail-title") == f"tenants-db1.slice  /{DB1}"
        limits = static_text(app, "#limits").splitlines()
        assert limits[0].startswith("CPU ") and "CPUs 0-3" in limits[0]
        assert [line.split()[0] for line in limits[:5]] == ["CPU", "memory", "limits", "PSI",
                                                            "events"]
        # what "throttled" and "events +N" mean, said on the screen that shows them
        assert "throttled: periods the quota stopped it in" in limits[5]
        assert "events: memory.events since the last refresh" in limits[5]
        assert [line.split()[0] for line in static_text(app, "#history").splitlines()] == [
            "cpu", "memory", "psi", "psi", "psi"]


async def test_a_slice_that_stops_is_said_gone(tree: MovingTree) -> None:
    async with running(monitor_settings(tree.root)) as (app, pilot):
        app.push_screen(DetailScreen(f"/{DB1}"))
        await wait_for(pilot, lambda: showing(app, DetailScreen, "#detail-title"))
        tree.remove(DB1)
        await wait_for(pilot, lambda: static_text(app, "#detail-title") == (
            f"/{DB1}: gone (the slice was stopped)"))


async def test_edit_asks_for_the_slices_tenant(tree: MovingTree) -> None:
    """Monitoring only here: the app answers why it cannot edit."""
    async with running(monitor_settings(tree.root)) as (app, pilot):
        app.push_screen(DetailScreen(f"/{DB1}"))
        await wait_for(pilot, lambda: showing(app, DetailScreen, "#detail-title"))
        await pilot.press("e")
        await wait_for(pilot, lambda: any(n.message == "read-only: no TENANTS file given"
                                          for n in app._notifications))  # noqa: SLF001
        await pilot.press("escape")
        assert not isinstance(app.screen, DetailScreen)


async def test_the_partition_and_the_kernels_reason_when_it_is_refused(tmp_path: Path) -> None:
    tree = build_partition_fixture(tmp_path / "cg")
    async with running(monitor_settings(tree.root)) as (app, pilot):

        async def limits(unit: str) -> list[str]:
            app.push_screen(DetailScreen(f"/tenants.slice/{unit}"))
            await wait_for(pilot, lambda: showing(app, DetailScreen, "#limits")
                           and static_text(app, "#limits").startswith("CPU "))
            lines = static_text(app, "#limits").splitlines()
            app.pop_screen()
            return lines

        broken = await limits("tenants-broken.slice")
        at = broken.index(f"cpuset  isolated partition invalid: {NOT_EXCLUSIVE}")
        assert broken[at + 1].startswith("        hint: another cgroup beside it claims")
        assert any(line.startswith("cpuset  root partition lacks CPUs 1 of its cpuset.cpus")
                   for line in await limits("tenants-lacking.slice"))
        assert "cpuset  isolated partition" in await limits("tenants-iso.slice")
        assert not [line for line in await limits("tenants-plain.slice")
                    if line.startswith("cpuset")]


def test_pressure_is_one_figure_in_the_table_the_overview_and_the_detail_view() -> None:
    """PSI is shown as the rate over the interval (the kernel's avg10 only before there is
    one): for a slice whose rate and avg10 differ, status' table, the TUI's overview, its
    detail view and its pressure order all give the rate."""
    with Sampler(TESTS / "fixtures" / "cgroup") as sampler:
        m = next(m for m in compute(None, sampler.sample()) if m.unit == "tenants-db1.slice")
    m = dataclasses.replace(m, cpu_pressure=PressureMetrics(
        some=PsiMetrics(avg10=40.0, rate=12.5), full=PsiMetrics(avg10=30.0, rate=2.5)))
    assert row(m)[COLUMNS.index("psi cpu")] == "12.5%"
    line = TreeLine(m, 0, 0, True, effective_limits([m])[m.cgroup])
    overview = OverviewRows().rows([line], History(), 8 << 30)[0]
    assert overview.cells[overview_headers(False).index("psi cpu")] == "12.5%"
    assert "PSI some/full  cpu 12.5/2.5%" in limits_text(m)
    assert worst_pressure(m) == 12.5
