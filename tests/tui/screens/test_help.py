"""The `?` screen (slicectl.tui.screens.help): every key the screens bind is on it, and escape,
? or q close it."""

from __future__ import annotations

import pytest
from cgtree import MovingTree
from textual.widgets import Static
from tuikit import monitor_settings, running, wait_for

from slicectl.tui.app import SlicectlApp
from slicectl.tui.components.slice_table import SliceTable
from slicectl.tui.screens.detail import DetailScreen
from slicectl.tui.screens.help import HELP, HelpScreen
from slicectl.tui.screens.numa import NumaScreen
from slicectl.tui.screens.overview import OverviewScreen

# How HELP spells a key Textual names otherwise.
SPELLED = {"slash": "/", "question_mark": "?", "plus": "+", "minus": "-", "up": "↑",
           "down": "↓"}
# Keys on no help line on purpose: the table's vi keys and page/home/end (as in any table),
# backspace (a second key for escape's "back").
UNLISTED = {"k", "j", "pageup", "pagedown", "home", "end", "backspace"}


def keys_bound() -> set[str]:
    keys = set()
    for owner in (SlicectlApp, OverviewScreen, DetailScreen, NumaScreen, SliceTable):
        for binding in owner.BINDINGS:
            keys |= set(binding.key.split(","))  # type: ignore[union-attr]
    return keys - UNLISTED


def test_every_key_bound_is_on_the_help_screen() -> None:
    words = {part for word in HELP.split() for part in (word, *word.split("/")) if part}
    assert sorted(k for k in keys_bound() if SPELLED.get(k, k) not in words) == []


@pytest.mark.parametrize("close", ["escape", "question_mark", "q"])
async def test_it_opens_on_question_mark_and_closes(tree: MovingTree, close: str) -> None:
    async with running(monitor_settings(tree.root)) as (app, pilot):
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        assert "fold/unfold" in str(app.screen.query_one("#help-text", Static).content)
        await pilot.press(close)
        await wait_for(pilot, lambda: isinstance(app.screen, OverviewScreen))
        assert app.is_running  # q closes the help, it does not quit


async def test_it_explains_throttled_and_events_whole_at_80x24(tree: MovingTree) -> None:
    async with running(monitor_settings(tree.root), size=(80, 24)) as (app, pilot):
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.pause()
        text = app.screen.query_one("#help-text", Static)
        shown = str(text.content)
        assert "throttled  share of CPU periods in which the quota stopped the slice" in shown
        assert "events     memory.events since the last refresh: high +N" in shown
        assert text.region.height == len(HELP.splitlines())  # every line, none cut off
        assert text.region.bottom <= 24 - 1
