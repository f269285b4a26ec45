"""One slice: its limits, PSI and memory history, and its processes."""

from __future__ import annotations

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Header, Static

from slicectl.core.cpulist import format_cpulist
from slicectl.core.human import human_limit, human_size
from slicectl.core.monitor.fields import column
from slicectl.core.monitor.metrics import PressureMetrics, SliceMetrics
from slicectl.tui.messages import EditRequested, ProcessesRead
from slicectl.tui.model import PSI_SCALE, cpu_scale, memory_scale, node_bars, read_processes
from slicectl.tui.screens.base import DataScreen
from slicectl.tui.tree import effective_limits, limits_from
from slicectl.views.monitor import row_style
from slicectl.views.tables import guaranteed_text

SPARK_WIDTH = 40


def _psi(p: PressureMetrics | None) -> str:
    if p is None:
        return "-"
    if p.full is None:
        return f"{p.some.share():.1f}/-%"
    return f"{p.some.share():.1f}/{p.full.share():.1f}%"


def limits_text(m: SliceMetrics) -> str:
    """Limits beside usage, one topic per line."""
    def cell(field_id: str) -> str:  # as the overview shows it
        return column(field_id).cell(m)

    cpus = format_cpulist(m.cpus) if m.cpus else "all"
    weight = "-" if m.cpu_weight is None else str(m.cpu_weight)
    partition = []
    if m.partition is not None:
        partition.append(f"cpuset  {m.partition.describe()}")
        if m.partition.problem() is not None:
            partition.append(f"        hint: {m.partition.hint()}")
    return "\n".join((
        f"CPU     {cell('cpu.cores')} cores  CPUs {cpus}  weight {weight}  "
        f"quota {cell('limits.cpu_quota_cores')}  "
        f"throttled {cell('cpu.throttled_percent')} of periods",
        *partition,
        f"memory  {human_size(m.memory_current)}  anon {human_size(m.anon)}  "
        f"file {human_size(m.file)}  swap {human_size(m.swap_current)}  "
        f"nodes {format_cpulist(m.mems) if m.mems else 'all'}",
        f"limits  min {human_size(m.memory_min or 0)}  low {human_size(m.memory_low or 0)}  "
        f"high {human_limit(m.memory_high)}  max {human_limit(m.memory_max)}  "
        f"swap {human_limit(m.swap_max)}",
        f"PSI some/full  cpu {_psi(m.cpu_pressure)}  memory {_psi(m.memory_pressure)}  "
        f"io {_psi(m.io_pressure)}",
        f"events  {cell('events')}  tasks {cell('tasks')}",
        "        (throttled: periods the quota stopped it in; events: memory.events since "
        "the last refresh, high = over memory.high, max = at memory.max)",
    ))


class DetailScreen(DataScreen):
    """The detail of one slice, refreshed with every sample."""

    BINDINGS = [
        Binding("escape,backspace", "app.pop_screen", "Back"),
        Binding("e", "edit", "Edit"),
    ]

    def __init__(self, cgroup: str) -> None:
        super().__init__()
        self.cgroup = cgroup

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="detail-title")
        yield Static(id="limits")
        yield Static(id="history")
        yield Static("processes", id="procs-title")
        yield DataTable(id="procs", cursor_type="row")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        table = self.query_one("#procs", DataTable)
        table.add_columns("PID", "command", "cgroup")
        self.refresh_data()

    def metric(self) -> SliceMetrics | None:
        """This slice's latest metrics (None: it vanished)."""
        return next((m for m in self.tui.metrics if m.cgroup == self.cgroup), None)

    def refresh_data(self) -> None:
        m = self.metric()
        title = self.query_one("#detail-title", Static)
        if m is None:
            title.update(f"{self.cgroup}: gone (the slice was stopped)")
            return
        title.update(f"{m.unit}  {m.cgroup}")
        limits = self.query_one("#limits", Static)
        tenant = self.tui.tenant_of(self.cgroup)
        shares = self.tui.cpu_shares() if tenant is not None else None
        share = ""
        if shares is not None and tenant is not None and tenant in shares.tenants:
            basis = "this host" if shares.live else "assumed"
            share = (f"\nshare   {guaranteed_text(shares, tenant, basis)} "
                     "guaranteed when all is busy")
        extra = [*limits_from(effective_limits(self.tui.metrics)[m.cgroup]), *node_bars(m)]
        limits.update(limits_text(m) + share + "".join("\n" + line for line in extra))
        limits.set_class(bool(row_style(m)), "trouble")
        h = self.tui.history.of(self.cgroup)
        cpu_top = cpu_scale(m)
        mem_top = memory_scale(m, self.tui.settings.host_memory)
        lines = [
            f"cpu cores  {h.spark('cpu', SPARK_WIDTH, cpu_top)} {(m.cpu_cores or 0.0):.2f}"
            f" of {cpu_top:g}",
            f"memory     {h.spark('memory', SPARK_WIDTH, mem_top)} "
            f"{human_size(m.memory_current)} of {human_size(int(mem_top)) if mem_top else '?'}",
            f"psi cpu    {h.spark('psi_cpu', SPARK_WIDTH, PSI_SCALE)} {_psi(m.cpu_pressure)}",
            f"psi memory {h.spark('psi_memory', SPARK_WIDTH, PSI_SCALE)} "
            f"{_psi(m.memory_pressure)}",
            f"psi io     {h.spark('psi_io', SPARK_WIDTH, PSI_SCALE)} {_psi(m.io_pressure)}",
        ]
        self.query_one("#history", Static).update("\n".join(lines))
        self._read_processes()

    @work(thread=True, exclusive=True, group="procs")
    def _read_processes(self) -> None:
        settings = self.tui.settings
        procs = read_processes(settings.cgroup_root, self.cgroup, settings.proc_root)
        self.post_message(ProcessesRead(self.cgroup, procs))

    def on_processes_read(self, message: ProcessesRead) -> None:
        if message.cgroup != self.cgroup:
            return
        table = self.query_one("#procs", DataTable)
        table.clear()
        for p in message.processes:
            table.add_row(str(p.pid), p.comm, p.cgroup or ".", key=str(p.pid))
        self.query_one("#procs-title", Static).update(
            f"processes ({len(message.processes)})")

    def action_edit(self) -> None:
        """Edit this slice's tenant."""
        self.post_message(EditRequested(self.tui.tenant_of(self.cgroup)))
