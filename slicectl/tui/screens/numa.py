"""The NUMA map: nodes × CPUs coloured by owning tenant or housekeeping."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Footer, Header, Static

from slicectl.tui.screens.base import DataScreen


class NumaScreen(DataScreen):
    """The placement of the tenants (as planned for this host) over the topology."""

    BINDINGS = [Binding("escape,m", "app.pop_screen", "Back")]

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll():
            yield Static(id="numa-map")
            yield Static(id="numa-note")
        yield Footer()

    def on_mount(self) -> None:
        self.show_map()

    def show_map(self) -> None:
        """Render the map from the app's topology and the current plan."""
        from slicectl.views import numa_map

        app = self.tui
        topo = app.settings.topology
        note = self.query_one("#numa-note", Static)
        if topo is None:
            self.query_one("#numa-map", Static).update(
                f"No topology: {app.settings.topology_error or 'not read'}")
            note.update("hint: pass --sysfs ROOT or --topology FILE")
            return
        plan, problem = app.current_plan()
        order = [t.name for t in app.config.tenants] if app.config else []
        self.query_one("#numa-map", Static).update(
            numa_map(topo, plan.layout if plan else None, order))
        if plan is None:
            note.update(problem or "Give TENANTS to colour CPUs by tenant.")
            return
        lines = []
        for p in plan.layout.tenants:
            where = "shared pool" if p.pool else ("exclusive" if p.exclusive else "shared")
            mem = ("memory unbound" if p.memory_nodes is None
                   else "memory node " + ",".join(map(str, p.memory_nodes)))
            lines.append(f"{p.tenant}: {len(p.cpus)} CPUs on node "
                         f"{','.join(map(str, p.cpu_nodes))} ({where}), {mem}")
        profile = f" (profile {app.profile})" if app.profile else ""
        note.update(f"planned from {app.settings.tenants}{profile}\n" + "\n".join(lines))
