"""What the screens read of the app's state, as a Protocol: screens depend on this, never on
the app's module, and change nothing in it (they post messages, tui/messages.py, and the app,
which owns the state, acts on them). No textual here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from slicectl.core.config.config import Config
    from slicectl.core.monitor.metrics import SliceMetrics
    from slicectl.core.shares.contention import CpuShares
    from slicectl.tui.model import History, SortKey
    from slicectl.tui.settings import TuiSettings


class TuiState(Protocol):
    """The app's state as screens see it: read-only."""

    @property
    def settings(self) -> TuiSettings: ...
    @property
    def metrics(self) -> list[SliceMetrics]: ...
    @property
    def history(self) -> History: ...
    @property
    def sort_key(self) -> SortKey: ...
    @property
    def sort_reverse(self) -> bool: ...
    @property
    def interval(self) -> float: ...
    @property
    def config(self) -> Config | None: ...
    @property
    def profile(self) -> str | None: ...
    @property
    def readonly(self) -> list[str]: ...
    @property
    def balance(self) -> dict[str, str]:
        """Slice unit -> its size now and declared, for the balancer's elastic tenants."""

    def tenant_of(self, cgroup: str | None) -> str | None:
        """The tenant whose slice is `cgroup`, if any."""

    def cpu_shares(self) -> CpuShares | None:
        """The tenants' guaranteed CPU as last read (a read starts when it is stale)."""
