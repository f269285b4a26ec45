"""A text field whose editing keys act in the order they were typed.

Textual (8.2.8 and before) runs a key bound on a focused `Input` (Backspace, Delete, the
arrows, Home, End, Enter) only when the key event has bubbled back up to the App, a trip
through each ancestor's message queue; printable keys are handled at once by the field. When
several keys arrive in one terminal read (fast typing over SSH, a paste, tmux `send-keys`), the
keys after a bound one reach the field before its action runs: `⌫7` inserts the 7 and then
deletes it, `xy⌫z` ends as `xy`. docs/upstream/textual-backspace.md is the report.
"""

from __future__ import annotations

from textual import events
from textual.binding import BindingsMap
from textual.widgets import Input

# The keys Input binds to its own actions (its public class-level BINDINGS).
_OWN_KEYS = BindingsMap(Input.BINDINGS).key_to_bindings


class Field(Input):
    """An `Input` that runs its own key bindings when the key reaches it, in typing order;
    keys it does not bind (Escape, Ctrl+S, …) still bubble to the screen's bindings."""

    async def on_key(self, event: events.Key) -> None:
        bindings = _OWN_KEYS.get(event.key)
        if not bindings:
            return
        event.stop()  # handled here: it must not bubble to the App's binding check as well
        await self.run_action(bindings[0].action)
