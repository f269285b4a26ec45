"""The main screen (slicectl.tui.screens.overview): its status line (count, sort and its
direction, interval, filter, columns out of view), and the requests it passes to the app.
Sorting, folding and filtering the tree are in test_tui.py."""

from __future__ import annotations

from cgtree import MovingTree
from tuikit import monitor_settings, running, static_text, wait_for

from slicectl.tui.screens.overview import OverviewScreen


def notes(app: object) -> list[str]:
    return [n.message for n in app._notifications]  # type: ignore[attr-defined]  # noqa: SLF001


async def test_the_status_line(tree: MovingTree) -> None:
    async with running(monitor_settings(tree.root)) as (app, pilot):
        # at 80 columns: the headline columns, and a word on the others
        assert static_text(app, "#status") == (
            "4 slices  sort: cpu ↓  every 0.05s  → more columns")
        await pilot.press("r")
        await wait_for(pilot, lambda: "sort: cpu ↑" in static_text(app, "#status"))
        await pilot.press("s")
        await wait_for(pilot, lambda: "sort: memory" in static_text(app, "#status"))
        await pilot.press("slash", "d", "b")
        await wait_for(pilot, lambda: static_text(app, "#status") == (
            "2 of 4 slices  sort: memory ↑  every 0.05s  filter: db  → more columns"))


async def test_escape_without_a_filter_changes_nothing(tree: MovingTree) -> None:
    async with running(monitor_settings(tree.root)) as (app, pilot):
        before = static_text(app, "#status")
        await pilot.press("escape")
        assert isinstance(app.screen, OverviewScreen) and static_text(app, "#status") == before


async def test_edit_and_profile_go_to_the_app(tree: MovingTree) -> None:
    """Monitoring only here: the app answers both with why it cannot change anything."""
    async with running(monitor_settings(tree.root)) as (app, pilot):
        await pilot.press("e")
        await wait_for(pilot, lambda: notes(app).count("read-only: no TENANTS file given") == 1)
        await pilot.press("p")
        await wait_for(pilot, lambda: notes(app).count("read-only: no TENANTS file given") == 2)
        assert isinstance(app.screen, OverviewScreen)
