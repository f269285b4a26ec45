"""One-line bars: the read-only banner and the status line."""

from __future__ import annotations

from textual.widgets import Static


class ReadOnlyBanner(Static):
    """Says why editing is off; hidden when it is on."""

    def set_reasons(self, reasons: list[str]) -> None:
        """Show the reasons, or hide the banner when there are none."""
        self.display = bool(reasons)
        self.update("READ-ONLY (monitoring only): " + "; ".join(reasons) if reasons else "")


class StatusLine(Static):
    """Sort order, interval, slice count and active profile."""
