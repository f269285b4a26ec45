"""The key footer: Textual's Footer, rebuilt only when the keys it shows change.

Textual's Footer recomposes (one widget per key, each styled and laid out) whenever a screen
says its bindings may have changed: every focus change, every screen pushed or popped, and
again for each such signal even when the keys are the same, and each rebuild restyles and
lays out the screen (BENCHMARKS.md, host suite). This one compares what it would show,
the shown bindings with their enabled state, tooltip and key display, with what it shows,
and recomposes only when they differ.
"""

from __future__ import annotations

from typing import Any

from textual.widgets import Footer


class KeyFooter(Footer):
    """Textual's Footer, recomposed only when the keys it would show differ."""

    _shown: tuple[Any, ...] | None = None

    def _keys(self) -> tuple[Any, ...]:
        """What `Footer.compose` reads: the shown bindings, as it would show them."""
        keys = tuple((binding, enabled, tooltip, self.app.get_key_display(binding))
                     for _node, binding, enabled, tooltip
                     in self.screen.active_bindings.values() if binding.show)
        return keys, self.show_command_palette, self.app.ENABLE_COMMAND_PALETTE

    async def recompose(self) -> None:
        keys = self._keys()
        if keys == self._shown:
            return
        self._shown = keys
        await super().recompose()
