"""One-line bars: the read-only banner and the status line."""

from __future__ import annotations

from textual.widgets import Static


class ReadOnlyBanner(Static):
    """Says why editing is off; hidden when it is on."""

    _reasons: list[str] | None = None

    def set_reasons(self, reasons: list[str]) -> None:
        """Show the reasons, or hide the banner when there are none (a no-op when they are
        the ones shown: an update costs the screen a layout pass)."""
        if reasons == self._reasons:
            return
        self._reasons = list(reasons)
        self.display = bool(reasons)
        self.update("READ-ONLY (monitoring only): " + "; ".join(reasons) if reasons else "")


class StatusLine(Static):
    """Sort order, interval, slice count and active profile."""

    _shown: str | None = None

    def show_text(self, text: str) -> None:
        """Show `text` when it differs from what is shown; the line is one row high, so a
        new text needs no layout pass."""
        if text != self._shown:
            self._shown = text
            self.update(text, layout=False)
