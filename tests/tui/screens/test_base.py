"""What every data screen shares (slicectl.tui.screens.base): the app's state read through
`tui`, and `refresh_data` called after each sample on every data screen of the stack, hidden
ones too, so going back shows current figures."""

from __future__ import annotations

from cgtree import MovingTree
from tuikit import monitor_settings, running, wait_for

from slicectl.tui.screens.base import DataScreen


class Counting(DataScreen):
    """Counts its refreshes, and what it read of the state at the last one."""

    def __init__(self) -> None:
        super().__init__()
        self.refreshed = 0
        self.slices = 0

    def refresh_data(self) -> None:
        self.refreshed += 1
        self.slices = len(self.tui.metrics)


async def test_every_data_screen_on_the_stack_is_refreshed(tree: MovingTree) -> None:
    async with running(monitor_settings(tree.root)) as (app, pilot):
        below, top = Counting(), Counting()
        await app.push_screen(below)
        await app.push_screen(top)
        assert below.tui is app
        start = below.refreshed, top.refreshed
        await wait_for(pilot, lambda: below.refreshed > start[0] + 1
                       and top.refreshed > start[1] + 1)
        assert below.slices == top.slices == len(app.metrics) == 4
