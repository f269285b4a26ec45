"""Human output for the CLI: topology tables, the NUMA map, the plan table.

They are rich's own Table, Text and Group, drawn by rich: in colour on a terminal, as plain
text when piped or redirected (`show`). The TUI shows the placement preview and the live map.
Front-end code: the core never imports this module; the CLI imports it inside the verbs that
print tables, so `--help` and `generate` never load rich (tests/test_cli.py checks).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group, RenderableType
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


def _mem(n: int) -> str:
    return human_size(n) if n else "-"


def _table(title: str, caption: str | None = None) -> Table:
    """A table with its title and caption justified left, as all of slicectl's are."""
    return Table(title=title, title_justify="left", caption=caption, caption_justify="left")


def topology_table(topo: Topology) -> Table:
    """One row per node: CPUs, cores, memory, distances."""
    t = _table(f"NUMA topology ({topo.source})")
    t.add_column("node", justify="right")
    t.add_column("CPUs")
    t.add_column("count", justify="right")
    t.add_column("cores", justify="right")
    t.add_column("memory", justify="right")
    t.add_column("distances")
    ids = topo.node_ids()
    for n in topo.nodes:
        cores = topo.cores(n.cpus)
        dist = " ".join(str(LOCAL_DISTANCE if m == n.id else n.distances.get(m, REMOTE_DISTANCE))
                        for m in ids)
        # Text, not str: no markup or emoji codes to look for in 64 distances per row.
        t.add_row(*map(Text, (str(n.id), format_cpulist(n.cpus) or "-", str(len(n.cpus)),
                            str(len(cores)), _mem(n.memory_bytes), dist)))
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
    """Nodes × CPUs; with a layout, each CPU coloured and labelled by its owner; `marked` CPUs
    (those a change moves) underlined."""
    owners: dict[int, str] = {}
    styles: dict[str, str] = {}
    if layout is not None:
        for c in layout.housekeeping:
            owners[c] = "housekeeping"
        names = list(tenant_order) or [p.tenant for p in layout.tenants]
        for i, name in enumerate(names):
            styles[name] = PALETTE[i % len(PALETTE)]
        for p in layout.tenants:
            if p.exclusive:
                for c in p.cpus:
                    owners[c] = p.tenant
    styles["housekeeping"] = HOUSEKEEPING_STYLE
    width = max((len(str(c.id)) for c in topo.cpus), default=1)
    t = _table("NUMA map (node × CPU)")
    t.add_column("node", justify="right")
    t.add_column("CPUs")
    t.add_column("memory", justify="right")
    for n in topo.nodes:
        cells = Text()
        for c in sorted(n.cpus):
            owner = owners.get(c)
            style = styles.get(owner or "", FREE_STYLE)
            cells.append(str(c).rjust(width), style=f"{style} underline" if c in marked else style)
            cells.append(" ")
        t.add_row(f"node{n.id}", cells if n.cpus else Text("(no CPUs)", style="dim"),
                  _mem(n.memory_bytes))
    if layout is None:
        return t
    legend = Text("legend: ")
    for name, style in styles.items():
        legend.append(f" {name} ", style=style)
        legend.append(" ")
    legend.append(" shared/free ", style=FREE_STYLE)
    if marked:
        legend.append("  ")
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

    styles = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(live.tenants)}
    styles[HOUSEKEEPING] = HOUSEKEEPING_STYLE
    styles[SHARED] = FREE_STYLE
    width = max((len(str(c.cpu)) for n in live.nodes for c in n.cpus), default=1)
    t = _table("Live NUMA map (node × CPU, from cpuset.cpus.effective)")
    t.add_column("node", justify="right")
    t.add_column("live CPUs")
    if live.planned:
        t.add_column("planned CPUs")
    t.add_column("memory by tenant")
    for n in live.nodes:
        now, planned = Text(), Text()
        for c in n.cpus:
            mark = " reverse" if c.disagrees else ""
            now.append(str(c.cpu).rjust(width), style=styles.get(c.live, "") + mark)
            now.append(" ")
            if c.plan is not None:
                planned.append(str(c.cpu).rjust(width), style=styles.get(c.plan, "") + mark)
                planned.append(" ")
        memory = Text(", ".join(f"{owner} {human_size(used)}" for owner, used in n.memory)
                      or "-")
        memory.append(f" of {_mem(n.memory_bytes)}", style="dim")
        cells = [Text(f"node{n.node}"), now or Text("(no CPUs)", style="dim")]
        if live.planned:
            cells.append(planned or Text("(no CPUs)", style="dim"))
        t.add_row(*cells, memory)
    legend = Text("legend: ")
    for name, style in styles.items():
        legend.append(f" {name} ", style=style)
        legend.append(" ")
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


def plan_table(plan: Plan) -> Table:
    """One row per tenant: CPUs, nodes, memory binding and the properties it gets. Tenants on
    the whole shared pool say so; the pool's CPUs are listed once, below the table (on a
    large host, repeating a long cpulist per tenant made most of the time `plan` took)."""
    pool = plan.layout.shared_pool
    caption = f"shared pool: {format_cpulist(pool) or '-'} ({len(pool)} CPUs)"
    if plan.shares is not None:
        caption += f"\nguaranteed CPU when everything is busy; {plan.shares.note}"
    t = _table(f"Plan for {plan.source}" + (f" (profile {plan.profile})" if plan.profile else ""),
               caption)
    t.add_column("tenant")
    t.add_column("slice")
    t.add_column("CPUs")
    t.add_column("n", justify="right")
    t.add_column("nodes")
    t.add_column("memory")
    if plan.shares is not None:
        t.add_column("guaranteed", justify="right")
    t.add_column("properties")
    for p in plan.layout.tenants:
        unit = next(u for u in plan.units if u.tenant == p.tenant and u.kind == "unit")
        props = " ".join(f"{k}={v}" for k, v in unit.formatted()
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
        t.add_row(p.tenant, unit.unit, cpus, str(len(p.cpus)), nodes, mem, *share, props or "-")
    return t


def guaranteed_text(shares: CpuShares, tenant: str, basis: str = "") -> str:
    """A tenant's guaranteed CPU for people: "1.50 cores 18.8% (weight)", and the basis."""
    g = shares.tenants[tenant]
    return (f"{g.cores:.2f} cores {percent(g.cores, shares.online):.1f}% "
            f"({g.bound}{', ' + basis if basis else ''})")


def plan_files_table(plan: Plan) -> Table:
    """The other generated files (parent slice, housekeeping and member drop-ins)."""
    t = _table("Files")
    t.add_column("file")
    t.add_column("settings")
    for u in plan.units:
        if u.tenant is not None and u.kind == "unit":
            continue
        settings = [f"{k}={v}" for k, v in u.formatted()]
        settings += [f"{k}={v}" for _, pairs in u.sections for k, v in pairs
                     if k in ("OnCalendar", "Wants")]
        if u.slice:
            settings.append(f"Slice={u.slice}")
        t.add_row(u.path, " ".join(settings) or "-")
    return t


# Wider than any table: piped, a table is drawn at the width it needs (tables do not expand).
_UNLIMITED = 1 << 16


def show(*items: RenderableType) -> None:
    """Print `items` on stdout for people. On a terminal rich draws them to its width.
    Piped or redirected, where rich draws plain text, text wraps at COLUMNS (160 when unset)
    but a table takes the width it needs: it is not shrunk, so no CPU list is cut with "…"
    (the text goes to grep, a file, a mail); and lines end without the spaces rich pads
    titles and captions with."""
    columns = None if sys.stdout.isatty() else int(os.environ.get("COLUMNS", "160"))
    console = Console(width=columns, soft_wrap=False)
    if columns is None or console.is_terminal:  # FORCE_COLOR: styled, COLUMNS wide
        for item in items:
            console.print(item)
        return
    for item in items:
        for part in item.renderables if isinstance(item, Group) else (item,):
            console.width = _UNLIMITED if isinstance(part, Table) else columns
            with console.capture() as captured:
                console.print(part)
            sys.stdout.write("".join(f"{line.rstrip()}\n"
                                     for line in captured.get().splitlines()))
    sys.stdout.flush()


def schedule_table(schedule: dict[str, Any]) -> Table:
    """The schedule's timers with their next elapse, and the profile in force now."""
    now = schedule["in_force"]
    name = now["profile"] or "default (the base file)"
    since = (f" since {_local(now['since'])}" if now["since"]
             else " (no schedule has elapsed yet)")
    t = _table(f"Schedule (in force now: {name}{since})")
    t.add_column("profile")
    t.add_column("timer")
    t.add_column("calendar")
    t.add_column("next elapse")
    for timer in schedule["timers"]:
        t.add_row(timer["profile"], timer["timer"], "; ".join(timer["calendars"]),
                  _local(timer["next_elapse"]) if timer["next_elapse"] else "never")
    return t


def _local(stamp: str) -> str:
    """An ISO 8601 time of the plan's JSON (UTC) in local time, for people."""
    from datetime import datetime

    return human_time(datetime.fromisoformat(stamp).timestamp())
