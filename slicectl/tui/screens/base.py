"""What every data screen shares: read access to the app's state and a refresh hook."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from textual.screen import Screen

if TYPE_CHECKING:
    from slicectl.tui.state import TuiState


class DataScreen(Screen[Any]):
    """A screen that shows the latest sample; the app calls `refresh_data` after each one."""

    @property
    def tui(self) -> TuiState:
        """The app's state, read-only: changes go to the app as messages."""
        return cast("TuiState", self.app)

    def refresh_data(self) -> None:
        """Redraw from the app's latest metrics and history."""
