"""The main screen: every slice with limits beside usage, sortable, coloured by trouble."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Header

from slicectl.tui.components.banner import ReadOnlyBanner, StatusLine
from slicectl.tui.components.slice_table import RIGHT, OverviewRows, SliceTable, overview_headers
from slicectl.tui.model import SortKey, sort_metrics
from slicectl.tui.screens.base import DataScreen


class OverviewScreen(DataScreen):
    """One row per slice; enter opens the detail screen."""

    BINDINGS = [
        Binding("enter", "detail", "Detail", show=True),
        Binding("s", "sort", "Sort"),
        Binding("r", "reverse", "Reverse", show=False),
        Binding("m", "numa", "NUMA map"),
        Binding("e", "edit", "Edit"),
        Binding("p", "profile", "Profile"),
    ]

    def __init__(self, numa: bool = False) -> None:
        """`numa`: show each slice's NUMA locality (the sampler reads memory.numa_stat)."""
        super().__init__()
        self.numa = numa
        self._rows = OverviewRows(numa)

    def compose(self) -> ComposeResult:
        yield Header()
        yield ReadOnlyBanner(id="banner")
        yield StatusLine(id="status")
        yield SliceTable(overview_headers(self.numa), RIGHT, id="slices")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(ReadOnlyBanner).set_reasons(self.tui.readonly)
        self.query_one(SliceTable).focus()
        self.refresh_data()

    def refresh_data(self) -> None:
        app = self.tui
        rows = sort_metrics(app.metrics, app.sort_key, app.sort_reverse)
        self.query_one(SliceTable).show(self._rows.rows(rows, app.history,
                                                             app.settings.host_memory))
        arrow = "↑" if app.sort_reverse else "↓"
        profile = f"  profile: {app.profile}" if app.profile else ""
        self.query_one(StatusLine).show_text(
            f"{len(rows)} slices  sort: {app.sort_key} {arrow}  every {app.interval:g}s"
            f"{profile}")
        self.query_one(ReadOnlyBanner).set_reasons(app.readonly)

    @property
    def selected(self) -> str | None:
        """The cgroup path of the highlighted slice."""
        return self.query_one(SliceTable).selected

    def on_slice_table_selected(self, event: SliceTable.Selected) -> None:
        event.stop()
        self.action_detail()

    def action_detail(self) -> None:
        """Open the detail screen of the highlighted slice."""
        from slicectl.tui.screens.detail import DetailScreen

        cgroup = self.selected
        if cgroup is not None:
            self.app.push_screen(DetailScreen(cgroup))

    def action_sort(self) -> None:
        """Cycle the sort key."""
        keys = list(SortKey)
        app = self.tui
        app.sort_key = keys[(keys.index(app.sort_key) + 1) % len(keys)]
        self.refresh_data()

    def action_reverse(self) -> None:
        """Flip the sort order."""
        self.tui.sort_reverse = not self.tui.sort_reverse
        self.refresh_data()

    def action_numa(self) -> None:
        """Show the NUMA map."""
        from slicectl.tui.screens.numa import NumaScreen

        self.app.push_screen(NumaScreen())

    def action_edit(self) -> None:
        """Edit the highlighted tenant (or pick one)."""
        self.tui.start_edit(self.tui.tenant_of(self.selected))

    def action_profile(self) -> None:
        """Switch to a profile of tenants.yaml."""
        self.tui.start_profile()
