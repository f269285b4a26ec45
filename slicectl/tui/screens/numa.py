"""The NUMA map: nodes × CPUs coloured by the slice that holds each CPU now, beside the plan
for this host when TENANTS is given (CPUs where they differ marked, with the reason), and each
tenant's memory per node (slicectl/core/numa_map.py)."""

from __future__ import annotations

from collections.abc import Mapping

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Header, Static

from slicectl.core.numa_map import LiveMap, build_live_map, default_tenant_of
from slicectl.tui.components.footer import KeyFooter
from slicectl.tui.screens.base import DataScreen


class NumaScreen(DataScreen):
    """The live map, refreshed with every sample, beside the plan of tenants.yaml."""

    BINDINGS = [Binding("escape,m", "app.pop_screen", "Back")]

    def __init__(self) -> None:
        super().__init__()
        self._plan: Mapping[str, frozenset[int]] | None = None
        self._housekeeping: frozenset[int] = frozenset()
        self._overrides: dict[str, str] = {}
        self._slice_parent = "tenants"
        self.live: LiveMap | None = None  # what the map shows

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll():
            yield Static(id="numa-map")
            yield Static(id="numa-note")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.show_map()

    def show_map(self) -> None:
        """Read the plan (again: after an apply or a profile switch) and draw the map."""
        app = self.tui
        topo = app.settings.topology
        note = self.query_one("#numa-note", Static)
        if topo is None:
            self.query_one("#numa-map", Static).update(
                f"No topology: {app.settings.topology_error or 'not read'}")
            note.update("hint: pass --sysfs ROOT or --topology FILE")
            return
        plan, problem = app.current_plan()
        self._plan, self._housekeeping, self._overrides = None, frozenset(), {}
        if app.config is not None:
            self._slice_parent = app.config.slice
        if plan is None:
            note.update(problem or "Give TENANTS to compare the live map with the plan.")
        else:
            self._plan = {p.tenant: p.cpus for p in plan.layout.tenants}
            self._housekeeping = plan.layout.housekeeping
            self._overrides = app.cpu_overrides()
            note.update(self._plan_note(plan))
        self.live = None
        self.refresh_data()

    def _plan_note(self, plan: object) -> str:
        from slicectl.core.plan import Plan

        assert isinstance(plan, Plan)
        app = self.tui
        from slicectl.views.tables import placement_line

        lines = [placement_line(p) for p in plan.layout.tenants]
        profile = f" (profile {app.profile})" if app.profile else ""
        return f"planned from {app.settings.tenants}{profile}\n" + "\n".join(lines)

    def refresh_data(self) -> None:
        """Redraw the live side from the latest sample, when it changed."""
        from slicectl.views.tables import live_map_view

        app = self.tui
        topo = app.settings.topology
        if topo is None:
            return
        live = build_live_map(topo, app.metrics, tenant_of=default_tenant_of(self._slice_parent),
                              plan=self._plan, plan_housekeeping=self._housekeeping,
                              overrides=self._overrides)
        if live != self.live:
            self.live = live
            self.query_one("#numa-map", Static).update(live_map_view(live))
