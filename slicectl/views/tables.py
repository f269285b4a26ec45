"""Human output for the CLI: topology tables, the NUMA map, the plan table.

They are rich's own Table, Text and Group, drawn by rich: in colour on a terminal, as plain
text when piped or redirected (`show`). The TUI shows the placement preview and the live map.
Nothing is cut to fit a width: cells fold (rich's overflow="fold") and CPU lists wrap after a
comma (`CpuList`); the maps mark each CPU's owner with a letter named in the legend, so they
read without colour (NO_COLOR, a pipe).
Front-end code: the core never imports this module; the CLI imports it inside the verbs that
print tables, so `--help` and `generate` never load rich (tests/test_cli.py checks).
"""

from __future__ import annotations

import io
import os
import re
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TextIO

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from slicectl.core.contention import CpuShares, percent
from slicectl.core.cpulist import format_cpulist
from slicectl.core.placement import Layout, TenantPlacement
from slicectl.core.plan import Plan
from slicectl.core.topology import LOCAL_DISTANCE, REMOTE_DISTANCE, Topology
from slicectl.core.values import human_size, human_time

if TYPE_CHECKING:
    from slicectl.core.numa_map import LiveMap

# Colours for tenants in the NUMA map, in tenant order; housekeeping and free fixed.
PALETTE = ("cyan", "magenta", "green", "yellow", "blue", "bright_red", "bright_cyan",
           "bright_magenta", "bright_green", "bright_yellow", "bright_blue", "red")
HOUSEKEEPING_STYLE = "bold white on grey23"
FREE_STYLE = "dim"
# Marks of the maps' owners, for reading without colour: tenants A, B, … in tenant order
# (past the 52nd, all "+"), housekeeping "#", the shared pool and free CPUs ".".
TENANT_MARKS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
MORE_MARK, HOUSEKEEPING_MARK, FREE_MARK = "+", "#", "."
DISAGREE_MARK = "!"


class CpuList:
    """Text in a table cell with CPU lists in it ("0-3,8,10-11", "AllowedCPUs=0,16
    MemoryMax=3G"): as wide as the column allows, wrapped at a space or after a comma, never
    inside a range, never cut with "…" ("0-3,8,10-11" in 6 cells: "0-3,8," "10-11")."""

    def __init__(self, text: str, style: str = "") -> None:
        self.text = text
        self.style = style

    def _parts(self) -> list[str]:
        return re.split(r"(?<=[ ,])(?=[^ ])", self.text)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(max(len(p.rstrip()) for p in self._parts()), len(self.text))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        line = ""
        for part in self._parts():
            if line and len(line) + len(part.rstrip()) > options.max_width:
                yield Text(line.rstrip(), self.style, overflow="fold")
                line = ""
            line += part
        yield Text(line.rstrip(), self.style, overflow="fold")


def _mem(n: int) -> str:
    return human_size(n) if n else "-"


def _table(title: str, caption: str | None = None) -> Table:
    """A table with its title and caption justified left, as all of slicectl's are; add its
    columns with `_column` (nothing is cut to fit)."""
    return Table(title=title, title_justify="left", caption=caption, caption_justify="left")


def _column(t: Table, header: str, justify: Literal["left", "right"] = "left", *,
            wrap: bool = True) -> None:
    """A column whose cells wrap, and fold a word longer than the column, rather than end
    in "…": piped or on a narrow terminal, a name or a setting is never cut. Short names
    (`wrap=False`) keep their width while the others wrap, unless nothing else can give."""
    t.add_column(header, justify=justify, overflow="fold", no_wrap=not wrap)


def _marks(names: Iterable[str]) -> dict[str, tuple[str, str]]:
    """Each owner's (mark, style) in the maps: tenants in the order given, then housekeeping
    and the shared pool."""
    marks = {name: (TENANT_MARKS[i] if i < len(TENANT_MARKS) else MORE_MARK,
                    PALETTE[i % len(PALETTE)]) for i, name in enumerate(names)}
    return marks


def _legend(marks: dict[str, tuple[str, str]], extra: Iterable[tuple[str, str, str]] = ()
            ) -> Text:
    """"legend: A=db1 B=db2 #=housekeeping .=shared/free": each mark named, in its colour."""
    legend = Text("legend:")
    for name, (mark, style) in marks.items():
        legend.append(" ")
        legend.append(f"{mark}={name}", style=style)
    for mark, name, style in extra:
        legend.append(" ")
        legend.append(f"{mark}={name}", style=style)
    return legend


def topology_table(topo: Topology) -> Table:
    """One row per node: CPUs, cores, memory, distances."""
    t = _table(f"NUMA topology ({topo.source})")
    _column(t, "node", "right", wrap=False)
    _column(t, "CPUs")
    _column(t, "count", "right", wrap=False)
    _column(t, "cores", "right", wrap=False)
    _column(t, "memory", "right", wrap=False)
    _column(t, "distances")
    ids = topo.node_ids()
    for n in topo.nodes:
        cores = topo.cores(n.cpus)
        dist = " ".join(str(LOCAL_DISTANCE if m == n.id else n.distances.get(m, REMOTE_DISTANCE))
                        for m in ids)
        # Text, not str: no markup or emoji codes to look for in 64 distances per row.
        t.add_row(Text(str(n.id)), CpuList(format_cpulist(n.cpus) or "-"),
                  *map(Text, (str(len(n.cpus)), str(len(cores)), _mem(n.memory_bytes), dist)))
    return t


def topology_summary(topo: Topology) -> Text:
    """The host in one line: nodes, CPUs, SMT, memory, and what is unusual about it."""
    online = topo.online_cpus
    smt = max((len(c.siblings) for c in topo.cpus if c.online), default=1)
    parts = [f"{len(topo.nodes)} node(s)", f"{len(online)} online CPUs",
             f"SMT {'on (' + str(smt) + ' threads/core)' if smt > 1 else 'off'}",
             f"memory {_mem(topo.total_memory)}"]
    if topo.offline_cpus:
        parts.append(f"offline CPUs: {format_cpulist(topo.offline_cpus)}")
    no_mem = [str(n.id) for n in topo.nodes if not n.has_memory]
    no_cpu = [str(n.id) for n in topo.nodes if not n.cpus]
    if no_mem:
        parts.append(f"node(s) without memory: {', '.join(no_mem)}")
    if no_cpu:
        parts.append(f"node(s) without CPUs: {', '.join(no_cpu)}")
    for n in topo.nodes:
        if n.merged:
            parts.append(f"node {n.id} includes kernel node(s) "
                         f"{', '.join(map(str, n.merged))} (they list the same CPUs)")
    return Text(", ".join(parts))


def numa_map(topo: Topology, layout: Layout | None = None, tenant_order: Iterable[str] = (),
             marked: frozenset[int] = frozenset()) -> Table | Group:
    """Nodes × CPUs; with a layout, each CPU marked (a letter, named in the legend) and
    coloured by its owner; `marked` CPUs (those a change moves) underlined."""
    owners: dict[int, str] = {}
    marks: dict[str, tuple[str, str]] = {}
    if layout is not None:
        for c in layout.housekeeping:
            owners[c] = "housekeeping"
        marks = _marks(list(tenant_order) or [p.tenant for p in layout.tenants])
        for p in layout.tenants:
            if p.exclusive:
                for c in p.cpus:
                    owners[c] = p.tenant
        marks["housekeeping"] = (HOUSEKEEPING_MARK, HOUSEKEEPING_STYLE)
    free = (FREE_MARK, FREE_STYLE) if layout is not None else ("", "")
    width = max((len(str(c.id)) for c in topo.cpus), default=1)
    t = _table("NUMA map (node × CPU)")
    _column(t, "node", "right", wrap=False)
    _column(t, "CPUs")
    _column(t, "memory", "right", wrap=False)
    for n in topo.nodes:
        cells = Text()
        for c in sorted(n.cpus):
            mark, style = marks.get(owners.get(c, ""), free)
            if cells:
                cells.append(" ")
            cells.append(str(c).rjust(width) + mark,
                         style=f"{style} underline" if c in marked else style)
        t.add_row(f"node{n.id}", cells if n.cpus else Text("(no CPUs)", style="dim"),
                  _mem(n.memory_bytes))
    if layout is None:
        return t
    legend = _legend(marks, [(FREE_MARK, "shared/free", FREE_STYLE)])
    if marked:
        legend.append("; ")
        legend.append("underlined", style="underline")
        legend.append(": CPUs the change moves")
    return Group(t, legend)


def placement_line(p: TenantPlacement) -> str:
    """One tenant's placement in words: CPUs, nodes, sharing, memory binding."""
    where = "shared pool" if p.pool else ("exclusive" if p.exclusive else "shared")
    mem = ("memory unbound" if p.memory_nodes is None
           else "memory node " + ",".join(map(str, p.memory_nodes)))
    return (f"{p.tenant}: CPUs {format_cpulist(p.cpus) or '-'} ({len(p.cpus)}) on node "
            f"{','.join(map(str, p.cpu_nodes))} ({where}), {mem}")


def placement_preview(topo: Topology, before: Layout, after: Layout, tenant: str
                      ) -> RenderableType:
    """What an edit does to the placement, before its plan diff: the edited tenant before and
    after, every other tenant it moves, and the new map with the moved CPUs underlined
    (the TUI shows it)."""
    old = {p.tenant: p for p in before.tenants}
    lines = Text()
    moved: set[int] = set()
    for p in after.tenants:
        was = old.get(p.tenant)
        if was == p and p.tenant != tenant:
            continue
        if was is None:
            lines.append(f"new  {placement_line(p)}\n")
        elif was == p:
            lines.append(f"same {placement_line(p)}\n", style="dim")
        else:
            lines.append(f"was  {placement_line(was)}\n", style="dim")
            lines.append(f"now  {placement_line(p)}\n", style="bold")
        moved |= p.cpus ^ (was.cpus if was is not None else frozenset())
    moved |= before.housekeeping ^ after.housekeeping
    order = [p.tenant for p in after.tenants]
    return Group(lines, numa_map(topo, after, order, frozenset(moved)))


def live_map_view(live: LiveMap) -> RenderableType:
    """The live NUMA map: per node the CPUs coloured by the slice holding them now, the plan's
    beside them (CPUs where they differ in reverse video, listed below with the reason), and
    each tenant's memory on the node."""
    from slicectl.core.numa_map import HOUSEKEEPING, SHARED

    marks = _marks(live.tenants)
    marks[HOUSEKEEPING] = (HOUSEKEEPING_MARK, HOUSEKEEPING_STYLE)
    marks[SHARED] = (FREE_MARK, FREE_STYLE)
    width = max((len(str(c.cpu)) for n in live.nodes for c in n.cpus), default=1)
    t = _table("Live NUMA map (node × CPU, from cpuset.cpus.effective)")
    _column(t, "node", "right", wrap=False)
    _column(t, "live CPUs")
    if live.planned:
        _column(t, "planned CPUs")
    _column(t, "memory by tenant")

    def cpu(text: Text, number: int, owner: str, disagrees: bool) -> None:
        # "12A": CPU 12 is tenant A's; "12A!": live and plan differ there (also reversed).
        mark, style = marks.get(owner, ("?", ""))
        if text:
            text.append(" ")
        text.append(str(number).rjust(width) + mark, style=style + (" reverse" * disagrees))
        text.append(DISAGREE_MARK if disagrees else "" if not live.planned else " ")

    for n in live.nodes:
        now, planned = Text(), Text()
        for c in n.cpus:
            cpu(now, c.cpu, c.live, c.disagrees)
            if c.plan is not None:
                cpu(planned, c.cpu, c.plan, c.disagrees)
        memory = Text(", ".join(f"{owner} {human_size(used)}" for owner, used in n.memory)
                      or "-")
        memory.append(f" of {_mem(n.memory_bytes)}", style="dim")
        now.rstrip()
        planned.rstrip()
        cells = [Text(f"node{n.node}"), now or Text("(no CPUs)", style="dim")]
        if live.planned:
            cells.append(planned or Text("(no CPUs)", style="dim"))
        t.add_row(*cells, memory)
    legend = _legend(marks, [(DISAGREE_MARK, "live and plan differ", "reverse")]
                     if live.disagreements else [])
    parts: list[RenderableType] = [t, legend]
    if live.planned:
        wrong = live.disagreements
        if wrong:
            parts.append(Text(f"{len(wrong)} CPU(s) where live and plan differ:", style="bold"))
            parts.extend(Text(f"  CPU {c.cpu}: live {c.live}, planned {c.plan}: {c.reason}")
                         for c in wrong)
        else:
            parts.append(Text("live matches the plan", style="green"))
    return Group(*parts)


def plan_table(plan: Plan, width: int | None = None) -> Table:
    """One row per tenant: CPUs, nodes, memory binding and the properties it gets. Tenants on
    the whole shared pool say so; the pool's CPUs are listed once, below the table (on a
    large host, repeating a long cpulist per tenant made most of the time `plan` took).
    Where a tenant's row would not fit `width` on one line (e.g. 80 or 100 columns), it is
    a block of lines instead."""
    pool = plan.layout.shared_pool
    caption = f"shared pool: {format_cpulist(pool) or '-'} ({len(pool)} CPUs)"
    if plan.shares is not None:
        caption += f"\nguaranteed CPU when everything is busy; {plan.shares.note}"
    title = f"Plan for {plan.source}" + (f" (profile {plan.profile})" if plan.profile else "")
    rows = [_plan_row(plan, p) for p in plan.layout.tenants]
    t = _table(title, caption)
    _column(t, "tenant", wrap=False)
    _column(t, "slice", wrap=False)
    _column(t, "CPUs")
    _column(t, "n", "right", wrap=False)
    _column(t, "nodes", wrap=False)
    _column(t, "memory", wrap=False)
    if plan.shares is not None:
        _column(t, "guaranteed", "right", wrap=False)
    _column(t, "properties")
    for r in rows:
        t.add_row(r.tenant, r.unit, CpuList(r.cpus), r.n, r.nodes, r.memory, *r.share,
                  CpuList(r.properties))
    if width is None or _fits(t, width):
        return t
    t = _table(title, caption)
    t.show_lines = True
    _column(t, "tenant", wrap=False)
    _column(t, "slice, CPUs (n) on nodes, memory" + (", guaranteed" * bool(plan.shares))
            + ", properties")
    for r in rows:
        where = CpuList(f"CPUs {r.cpus} ({r.n}) on {'' if r.nodes == 'pool' else 'node '}"
                        f"{r.nodes}, memory {r.memory}")
        lines: list[RenderableType] = [Text(r.unit), where]
        lines += [Text(f"guaranteed {g}") for g in r.share]
        t.add_row(r.tenant, Group(*lines, CpuList(r.properties)))
    return t


class _PlanRow(NamedTuple):
    tenant: str
    unit: str
    cpus: str
    n: str
    nodes: str
    memory: str
    share: list[str]
    properties: str


def _plan_row(plan: Plan, p: TenantPlacement) -> _PlanRow:
    """One tenant's cells of the plan table."""
    pool = plan.layout.shared_pool
    unit = next(u for u in plan.units if u.tenant == p.tenant and u.kind == "unit")
    props = " ".join(f"{k}={v}" for k, v in unit.formatted(human=True)
                     if k not in ("AllowedCPUs", "AllowedMemoryNodes"))
    whole_pool = p.pool and p.cpus == pool
    cpus = "shared pool" if whole_pool else (
        format_cpulist(p.cpus) + (" (shared pool)" if p.pool else ""))
    if not p.exclusive and not p.pool:
        cpus += " (shared)"
    mem = ("node " + ",".join(map(str, p.memory_nodes))
           if p.memory_nodes is not None else "unbound")
    nodes = "pool" if whole_pool else ",".join(map(str, p.cpu_nodes))
    share = [] if plan.shares is None else [guaranteed_text(plan.shares, p.tenant)]
    return _PlanRow(p.tenant, unit.unit, cpus, str(len(p.cpus)), nodes, mem, share,
                    props or "-")


def _fits(t: Table, width: int) -> bool:
    """Whether each row of `t` fits `width` on one line (rich's measure is clamped to the
    console's width: measured on an unlimited one)."""
    console = Console(width=_UNLIMITED, file=io.StringIO())
    return Measurement.get(console, console.options, t).maximum <= width


def guaranteed_text(shares: CpuShares, tenant: str, basis: str = "") -> str:
    """A tenant's guaranteed CPU for people: "1.50 cores 18.8% (weight)", and the basis."""
    g = shares.tenants[tenant]
    return (f"{g.cores:.2f} cores {percent(g.cores, shares.online):.1f}% "
            f"({g.bound}{', ' + basis if basis else ''})")


def plan_files_table(plan: Plan) -> Table:
    """The other generated files (parent slice, housekeeping and member drop-ins)."""
    t = _table("Files")
    _column(t, "file", wrap=False)
    _column(t, "settings")
    for u in plan.units:
        if u.tenant is not None and u.kind == "unit":
            continue
        settings = [f"{k}={v}" for k, v in u.formatted(human=True)]
        settings += [f"{k}={v}" for _, pairs in u.sections for k, v in pairs
                     if k in ("OnCalendar", "Wants")]
        if u.slice:
            settings.append(f"Slice={u.slice}")
        t.add_row(u.path, CpuList(" ".join(settings) or "-"))
    return t


# Wider than any table: piped, a table is drawn at the width it needs (tables do not expand).
_UNLIMITED = 1 << 16
PAGE_WIDTH = 80  # text piped without COLUMNS


def columns_asked() -> int | None:
    """COLUMNS when it is set to a width (the user, or a script, asked for it), else None."""
    value = os.environ.get("COLUMNS", "")
    return int(value) if value.isdigit() and int(value) > 0 else None


def _console(out: TextIO | None = None) -> Console:
    out = out or sys.stdout
    return Console(file=out, width=None if out.isatty() else columns_asked() or PAGE_WIDTH,
                   soft_wrap=False)


def output_width(out: TextIO | None = None) -> int | None:
    """The width `show` draws tables in on `out` (stdout): the terminal's, COLUMNS piped,
    None (as wide as they need) piped without COLUMNS."""
    console = _console(out)
    return console.width if console.is_terminal else columns_asked()


def show(*items: RenderableType, out: TextIO | None = None) -> None:
    """Print `items` on stdout for people. On a terminal rich draws them to its width.
    Piped or redirected, where rich draws plain text: at COLUMNS when it is set, every line
    within it (cells wrap, CPU lists after a comma; nothing is cut with "…"); without
    COLUMNS a table takes the width it needs (a row per line for grep) and text wraps at
    80. Piped lines end without the spaces rich pads titles and cells with."""
    asked = columns_asked()
    out = out or sys.stdout
    console = _console(out)
    if console.is_terminal:  # a terminal, or FORCE_COLOR: styled, COLUMNS wide
        for item in items:
            console.print(item)
        return
    for item in items:
        for part in item.renderables if isinstance(item, Group) else (item,):
            console.width = asked or (_UNLIMITED if isinstance(part, Table) else PAGE_WIDTH)
            with console.capture() as captured:
                console.print(part)
            out.write("".join(f"{line.rstrip()}\n" for line in captured.get().splitlines()))
    out.flush()


def schedule_table(schedule: dict[str, Any]) -> Table:
    """The schedule's timers with their next elapse, and the profile in force now."""
    now = schedule["in_force"]
    name = now["profile"] or "default (the base file)"
    since = (f" since {_local(now['since'])}" if now["since"]
             else " (no schedule has elapsed yet)")
    t = _table(f"Schedule (in force now: {name}{since})")
    _column(t, "profile")
    _column(t, "timer")
    _column(t, "calendar")
    _column(t, "next elapse")
    for timer in schedule["timers"]:
        t.add_row(timer["profile"], timer["timer"], "; ".join(timer["calendars"]),
                  _local(timer["next_elapse"]) if timer["next_elapse"] else "never")
    return t


def _local(stamp: str) -> str:
    """An ISO 8601 time of the plan's JSON (UTC) in local time, for people."""
    from datetime import datetime

    return human_time(datetime.fromisoformat(stamp).timestamp())
