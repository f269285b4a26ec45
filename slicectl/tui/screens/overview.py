"""The main screen: the slice tree with limits beside usage, sortable among siblings,
foldable, filtered by name, coloured by trouble."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Header, Input

from slicectl.tui.components.banner import ReadOnlyBanner, StatusLine
from slicectl.tui.components.field import Field
from slicectl.tui.components.overview_rows import (
    RIGHT,
    OverviewRows,
    overview_groups,
    overview_headers,
)
from slicectl.tui.components.slice_table import SliceTable
from slicectl.tui.messages import EditRequested, ProfileRequested, SortChanged
from slicectl.tui.screens.base import DataScreen
from slicectl.tui.tree import SliceTree, unit_holders, with_children


class OverviewScreen(DataScreen):
    """One row per slice; enter opens the detail screen."""

    BINDINGS = [
        Binding("enter", "detail", "Detail", show=True),
        Binding("s", "sort", "Sort"),
        Binding("r", "reverse", "Reverse", show=False),
        Binding("space", "fold", "Fold"),
        Binding("x", "fold_all", "Fold all", show=False),
        Binding("slash", "filter", "Filter"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("m", "numa", "NUMA map"),
        Binding("e", "edit", "Edit"),
        Binding("p", "profile", "Profile"),
    ]

    def __init__(self, numa: bool = False) -> None:
        """`numa`: show each slice's NUMA locality (the sampler reads memory.numa_stat)."""
        super().__init__()
        self.numa = numa
        self._rows = OverviewRows(numa)
        self._tree = SliceTree()
        self.collapsed: set[str] = set()  # cgroups whose subtree is folded away
        self._seen: set[str] = set()  # cgroups shown before (new ones get the default fold)
        self.needle = ""  # the `/` filter
        self._status = ""  # the status line but for the columns hint

    def compose(self) -> ComposeResult:
        yield Header()
        yield ReadOnlyBanner(id="banner")
        yield StatusLine(id="status")
        yield SliceTable(overview_headers(self.numa), RIGHT, overview_groups(self.numa),
                         id="slices")
        yield Field(placeholder="filter slices by name (enter: keep, escape: clear)",
                    id="filter")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#filter", Input).display = False
        self.query_one(ReadOnlyBanner).set_reasons(self.tui.readonly)
        self.query_one(SliceTable).focus()
        self.refresh_data()

    def refresh_data(self) -> None:
        app = self.tui
        seen = {m.cgroup for m in app.metrics}
        if seen - self._seen:
            self.collapsed |= unit_holders(app.metrics) - self._seen
            self._seen = seen
        lines = self._tree.lines(app.metrics, collapsed=self.collapsed, needle=self.needle,
                                 key=app.sort_key, reverse=app.sort_reverse)
        self.query_one(SliceTable).show(self._rows.rows(lines, app.history,
                                                        app.settings.host_memory, app.balance))
        arrow = "↑" if app.sort_reverse else "↓"
        profile = f"  profile: {app.profile}" if app.profile else ""
        shown = (f"{len(lines)} of {len(app.metrics)} slices" if len(lines) != len(app.metrics)
                 else f"{len(lines)} slices")
        needle = f"  filter: {self.needle}" if self.needle else ""
        self._status = (f"{shown}  sort: {app.sort_key} {arrow}  every {app.interval:g}s"
                        f"{needle}{profile}")
        self._show_status()
        self.query_one(ReadOnlyBanner).set_reasons(app.readonly)

    def _show_status(self) -> None:
        hint = self.query_one(SliceTable).columns_hint()
        self.query_one(StatusLine).show_text(f"{self._status}  {hint}" if hint else self._status)

    def on_slice_table_columns_shown(self, event: SliceTable.ColumnsShown) -> None:
        event.stop()
        self._show_status()

    def action_fold(self) -> None:
        """Fold or unfold the highlighted slice's subtree."""
        cgroup = self.selected
        if cgroup is None or cgroup not in with_children(self.tui.metrics):
            return
        self.collapsed ^= {cgroup}
        self.refresh_data()

    def action_fold_all(self) -> None:
        """Fold every slice that has slices below it, or unfold all when all are folded."""
        parents = with_children(self.tui.metrics)
        self.collapsed = set() if parents <= self.collapsed else parents
        self.refresh_data()

    def action_filter(self) -> None:
        """Show the name filter."""
        box = self.query_one("#filter", Input)
        box.display = True
        box.focus()

    def action_clear_filter(self) -> None:
        """Drop the name filter."""
        box = self.query_one("#filter", Input)
        if not box.display and not self.needle:
            return
        box.value = ""
        box.display = False
        self.needle = ""
        self.query_one(SliceTable).focus()
        self.refresh_data()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.needle = event.value.strip()
        self.refresh_data()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one("#filter", Input).display = bool(self.needle)
        self.query_one(SliceTable).focus()

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
        self.post_message(SortChanged())

    def action_reverse(self) -> None:
        """Flip the sort order."""
        self.post_message(SortChanged(reverse=True))

    def action_numa(self) -> None:
        """Show the NUMA map."""
        from slicectl.tui.screens.numa import NumaScreen

        self.app.push_screen(NumaScreen())

    def action_edit(self) -> None:
        """Edit the highlighted tenant (or pick one)."""
        self.post_message(EditRequested(self.tui.tenant_of(self.selected)))

    def action_profile(self) -> None:
        """Switch to a profile of tenants.yaml."""
        self.post_message(ProfileRequested())
