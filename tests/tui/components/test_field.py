"""The text field of the edit form and the filter: keys that arrive together (one terminal
read, as over SSH or from a paste) act in the order they were typed.

The driver posts every key of a read to the App before any is handled; posting them back to
back here does the same."""

from __future__ import annotations

from collections.abc import Callable

from textual import events
from textual.app import App, ComposeResult
from textual.widgets import Input
from tuikit import wait_for

from slicectl.tui.components.field import Field

# Keys as the terminal sends them: ⌫7 on "12", then xy⌫z, then ← a.
TYPED = [("backspace", "\x7f"), ("7", "7"), ("x", "x"), ("y", "y"), ("backspace", "\x7f"),
         ("z", "z"), ("left", None), ("a", "a")]
AS_TYPED = "17xaz"


class OneField(App[int]):
    """An app of one focused field holding "12", the cursor at its end."""

    def __init__(self, field: Callable[[], Input]) -> None:
        super().__init__()
        self.make_field = field

    def compose(self) -> ComposeResult:
        yield self.make_field()

    @property
    def field(self) -> Input:
        return self.query_one(Input)


async def typed_together(field: Callable[[], Input], expected: str) -> None:
    """TYPED arrives in one read; the field comes to show `expected` (the timeout detects
    anything else)."""
    app = OneField(field)
    async with app.run_test() as pilot:
        app.field.value = "12"
        app.field.cursor_position = 2
        for key, character in TYPED:
            app.post_message(events.Key(key, character))
        await wait_for(pilot, lambda: app.field.value == expected, timeout=10)


async def test_field_keys_arriving_together_act_in_typing_order() -> None:
    await typed_together(Field, AS_TYPED)


async def test_field_enter_submits_what_was_typed_before_it() -> None:
    submitted: list[str] = []

    class Submitting(OneField):
        def on_input_submitted(self, event: Input.Submitted) -> None:
            submitted.append(event.value)

    app = Submitting(Field)
    async with app.run_test() as pilot:
        app.field.value = "1"
        app.field.cursor_position = 1
        for key, character in [("2", "2"), ("enter", "\r"), ("3", "3")]:
            app.post_message(events.Key(key, character))
        await wait_for(pilot, lambda: app.field.value == "123", timeout=10)
        await wait_for(pilot, lambda: bool(submitted), timeout=10)
    assert submitted == ["12"]


async def test_textual_input_still_reorders_bound_keys() -> None:
    """Why Field exists: a bare Textual Input runs ⌫ and ← after the keys that followed them
    (docs/upstream/textual-backspace.md). When this fails, Textual fixed it: Field can go."""
    await typed_together(Input, "127xy")
