"""The NUMA maps for people: nodes × CPUs with each CPU's owner, the plan's (`numa_map`) and
the live one beside the plan (`live_map_view`).

Each CPU carries its owner's mark, tenants A, B, … in tenant order, # housekeeping, . the
shared pool and free CPUs, and is coloured by it; the legend names every mark, so a map reads
without colour (NO_COLOR, a pipe) as with it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from slicectl.core.human import human_size
from slicectl.core.placement.cache_groups import CacheSharing
from slicectl.core.placement.layout import Layout
from slicectl.core.placement.topology import Topology
from slicectl.views.page import column, memory_text, table

if TYPE_CHECKING:
    from slicectl.core.monitor.numa_map import LiveMap

# Colours for tenants in the NUMA map, in tenant order; housekeeping and free fixed.
PALETTE = ("cyan", "magenta", "green", "yellow", "blue", "bright_red", "bright_cyan",
           "bright_magenta", "bright_green", "bright_yellow", "bright_blue", "red")
HOUSEKEEPING_STYLE = "bold white on grey23"
FREE_STYLE = "dim"
# Marks of the maps' owners, for reading without colour: tenants A, B, … in tenant order
# (past the 52nd, all "+"), housekeeping "#", the shared pool and free CPUs ".".
TENANT_MARKS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
MORE_MARK, HOUSEKEEPING_MARK, FREE_MARK = "+", "#", "."
CACHE_MARK = "|"  # between a node's last-level cache groups in the map
DISAGREE_MARK = "!"


def marks_of(names: Iterable[str]) -> dict[str, tuple[str, str]]:
    """Each owner's (mark, style) in the maps: tenants in the order given, then housekeeping
    and the shared pool."""
    marks = {name: (TENANT_MARKS[i] if i < len(TENANT_MARKS) else MORE_MARK,
                    PALETTE[i % len(PALETTE)]) for i, name in enumerate(names)}
    return marks


def legend_of(marks: dict[str, tuple[str, str]], extra: Iterable[tuple[str, str, str]] = ()
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


def numa_map(topo: Topology, layout: Layout | None = None, tenant_order: Iterable[str] = (),
             marked: frozenset[int] = frozenset()) -> Table | Group:
    """Nodes × CPUs; with a layout, each CPU marked (a letter, named in the legend) and
    coloured by its owner; `marked` CPUs (those a change moves) underlined."""
    owners, marks = _owners(layout, tenant_order) if layout is not None else ({}, {})
    free = (FREE_MARK, FREE_STYLE) if layout is not None else ("", "")
    width = max((len(str(c.id)) for c in topo.cpus), default=1)
    t = table("NUMA map (node × CPU)")
    column(t, "node", "right", wrap=False)
    column(t, "CPUs")
    column(t, "memory", "right", wrap=False)
    grouped = False
    for n in topo.nodes:
        groups = _cache_groups(topo, n.id)
        grouped = grouped or len(groups) > 1
        cells = Text()
        for i, group in enumerate(groups):
            if i:
                cells.append(f" {CACHE_MARK}")
            for c in sorted(group):
                mark, style = marks.get(owners.get(c, ""), free)
                cells.append(" " if cells else "")
                cells.append(str(c).rjust(width) + mark,
                             style=f"{style} underline" if c in marked else style)
        t.add_row(f"node{n.id}", cells if n.cpus else Text("(no CPUs)", style="dim"),
                  memory_text(n.memory_bytes))
    cache_note = f"{CACHE_MARK} between CPUs: last-level cache groups"
    if layout is None:
        return Group(t, Text(cache_note)) if grouped else t
    legend = legend_of(marks, [(FREE_MARK, "shared/free", FREE_STYLE)])
    if grouped:
        legend.append(f"; {cache_note}")
    if marked:
        legend.append("; ")
        legend.append("underlined", style="underline")
        legend.append(": CPUs the change moves")
    return Group(t, legend)


def _owners(layout: Layout, tenant_order: Iterable[str]
            ) -> tuple[dict[int, str], dict[str, tuple[str, str]]]:
    """Each CPU's owner in `layout` (housekeeping, or a tenant holding it alone), and each
    owner's (mark, style)."""
    owners = dict.fromkeys(layout.housekeeping, "housekeeping")
    marks = marks_of(list(tenant_order) or [p.tenant for p in layout.tenants])
    for p in layout.tenants:
        if p.exclusive:
            owners.update(dict.fromkeys(p.cpus, p.tenant))
    marks["housekeeping"] = (HOUSEKEEPING_MARK, HOUSEKEEPING_STYLE)
    return owners, marks


def _cache_groups(topo: Topology, node: int) -> tuple[frozenset[int], ...]:
    """A node's CPUs by last-level cache group where the groups are known, else all in one."""
    n = topo.node(node)
    if n.cpus and n.cache_sharing is CacheSharing.GROUPS:
        return topo.cache_groups(node)
    return (n.cpus,)


def live_map_view(live: LiveMap) -> RenderableType:
    """The live NUMA map: per node the CPUs coloured by the slice holding them now, the plan's
    beside them (CPUs where they differ in reverse video, listed below with the reason), and
    each tenant's memory on the node."""
    from slicectl.core.monitor.numa_map import HOUSEKEEPING, SHARED

    marks = marks_of(live.tenants)
    marks[HOUSEKEEPING] = (HOUSEKEEPING_MARK, HOUSEKEEPING_STYLE)
    marks[SHARED] = (FREE_MARK, FREE_STYLE)
    width = max((len(str(c.cpu)) for n in live.nodes for c in n.cpus), default=1)
    t = table("Live NUMA map (node × CPU, from cpuset.cpus.effective)")
    column(t, "node", "right", wrap=False)
    column(t, "live CPUs")
    if live.planned:
        column(t, "planned CPUs")
    column(t, "memory by tenant")

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
        memory.append(f" of {memory_text(n.memory_bytes)}", style="dim")
        now.rstrip()
        planned.rstrip()
        cells = [Text(f"node{n.node}"), now or Text("(no CPUs)", style="dim")]
        if live.planned:
            cells.append(planned or Text("(no CPUs)", style="dim"))
        t.add_row(*cells, memory)
    legend = legend_of(marks, [(DISAGREE_MARK, "live and plan differ", "reverse")]
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
