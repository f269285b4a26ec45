"""The NUMA map: nodes × CPUs coloured by the slice that holds each CPU now, beside the plan
for this host when TENANTS is given (CPUs where they differ marked, with the reason), and each
tenant's memory per node (slicectl/core/monitor/numa_map.py)."""

from __future__ import annotations

from collections.abc import Mapping

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Footer, Header, Static

from slicectl.core.monitor.numa_map import LiveMap, build_live_map, default_tenant_of
from slicectl.tui.messages import PlanRead
from slicectl.tui.plans import PlanView, plan_view
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
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.show_map()

    def show_map(self) -> None:
        """Read the plan (again: after an apply or a profile switch) and draw the map; the
        plan is read in a worker, and drawn when it arrives."""
        app = self.tui
        if app.settings.topology is None:
            self.query_one("#numa-map", Static).update(
                f"No topology: {app.settings.topology_error or 'not read'}")
            self.query_one("#numa-note", Static).update(
                "hint: pass --sysfs ROOT or --topology FILE")
            return
        self._read_plan()
        self.refresh_data()

    @work(thread=True, exclusive=True, group="plan")
    def _read_plan(self) -> None:
        app = self.tui
        self.post_message(PlanRead(plan_view(app.settings, app.config, app.profile)))

    def on_plan_read(self, message: PlanRead) -> None:
        view: PlanView = message.view
        app = self.tui
        note = self.query_one("#numa-note", Static)
        self._plan, self._housekeeping, self._overrides = None, frozenset(), {}
        if app.config is not None:
            self._slice_parent = app.config.slice
        if view.plan is None:
            note.update(view.problem or "Give TENANTS to compare the live map with the plan.")
        else:
            self._plan = {p.tenant: p.cpus for p in view.plan.layout.tenants}
            self._housekeeping = view.plan.layout.housekeeping
            self._overrides = view.overrides
            note.update(self._plan_note(view.plan))
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
        from slicectl.views.maps import live_map_view

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
