"""Human output for the CLI: the topology and plan tables (the NUMA maps are views/maps.py).

They are rich's own Table, Text and Group, drawn by rich: in colour on a terminal, as plain
text when piped or redirected (views/page.py's `show`, which also says how they fit a width).
The TUI shows the placement preview.
Front-end code: the core never imports this module; the CLI imports it inside the verbs that
print tables, so `--help` and `generate` never load rich (tests/test_cli.py checks).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from slicectl.core.cpulist import format_cpulist
from slicectl.core.human import human_time
from slicectl.core.placement.cache_groups import CacheSharing
from slicectl.core.placement.layout import Layout, TenantPlacement
from slicectl.core.placement.topology import LOCAL_DISTANCE, REMOTE_DISTANCE, Topology
from slicectl.core.plan import Plan, SetLines, UnitPlan
from slicectl.core.shares.contention import CpuShares, percent
from slicectl.views.maps import numa_map
from slicectl.views.page import CpuList, FilePath, column, fits, memory_text, table


def topology_table(topo: Topology) -> Table:
    """One row per node: CPUs, cores, memory, distances."""
    t = table(f"NUMA topology ({topo.source})")
    column(t, "node", "right", wrap=False)
    column(t, "CPUs")
    column(t, "count", "right", wrap=False)
    column(t, "cores", "right", wrap=False)
    column(t, "memory", "right", wrap=False)
    column(t, "distances")
    ids = topo.node_ids()
    for n in topo.nodes:
        cores = topo.cores(n.cpus)
        dist = " ".join(str(LOCAL_DISTANCE if m == n.id else n.distances.get(m, REMOTE_DISTANCE))
                        for m in ids)
        # Text, not str: no markup or emoji codes to look for in 64 distances per row.
        t.add_row(Text(str(n.id)), CpuList(format_cpulist(n.cpus) or "-"),
                  *map(Text, (str(len(n.cpus)), str(len(cores)), memory_text(n.memory_bytes),
                              dist)))
    return t


# Why a node stands in for its CPUs' last-level cache group, in the topology view.
STANDS_IN = {
    CacheSharing.SPANS_NODES: "node stands in: its last-level cache spans other nodes too",
    CacheSharing.PER_CORE: "node stands in: every core has a last-level cache of its own",
    CacheSharing.UNKNOWN: "node stands in: unknown",
}


def cache_table(topo: Topology) -> Table | Text:
    """One row per node with CPUs: its last-level cache groups (the CPUs sharing one cache,
    "0-3,32-35 | 4-7,36-39"), or why the node stands in for them; one line when no node's
    groups are known."""
    nodes = [n for n in topo.nodes if n.cpus]
    if all(n.cache_sharing is CacheSharing.UNKNOWN for n in nodes):
        return Text("Last-level cache groups: unknown (each node stands in)")
    t = table("Last-level cache groups")
    column(t, "node", "right", wrap=False)
    column(t, "groups", "right", wrap=False)
    column(t, "CPUs sharing each cache")
    for n in nodes:
        if n.cache_sharing is CacheSharing.GROUPS:
            groups = topo.cache_groups(n.id)
            t.add_row(Text(str(n.id)), Text(str(len(groups))),
                      CpuList(" | ".join(format_cpulist(g) for g in groups)))
        else:
            t.add_row(Text(str(n.id)), Text("-"), Text(STANDS_IN[n.cache_sharing]))
    return t


def topology_summary(topo: Topology) -> Text:
    """The host in one line: nodes, CPUs, SMT, memory, and what is unusual about it."""
    online = topo.online_cpus
    smt = max((len(c.siblings) for c in topo.cpus if c.online), default=1)
    parts = [f"{len(topo.nodes)} node(s)", f"{len(online)} online CPUs",
             f"SMT {'on (' + str(smt) + ' threads/core)' if smt > 1 else 'off'}",
             f"memory {memory_text(topo.total_memory)}"]
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
    units: dict[str, UnitPlan] = {}  # each tenant's slice, the first of its name
    for u in plan.units:
        if u.tenant is not None and u.kind == "unit":
            units.setdefault(u.tenant, u)
    sets: SetLines = {}
    rows = [_plan_row(plan, p, units[p.tenant], sets) for p in plan.layout.tenants]
    t = table(title, caption)
    column(t, "tenant", wrap=False)
    column(t, "slice", wrap=False)
    column(t, "CPUs")
    column(t, "n", "right", wrap=False)
    column(t, "nodes", wrap=False)
    column(t, "memory", wrap=False)
    if plan.shares is not None:
        column(t, "guaranteed", "right", wrap=False)
    column(t, "properties")
    for r in rows:
        t.add_row(r.tenant, r.unit, CpuList(r.cpus), r.n, r.nodes, r.memory, *r.share,
                  CpuList(r.properties))
    if width is None or fits(t, width):
        return t
    t = table(title, caption)
    t.show_lines = True
    column(t, "tenant", wrap=False)
    column(t, "slice, CPUs (n) on nodes, memory" + (", guaranteed" * bool(plan.shares))
            + ", properties")
    for r in rows:
        cpus = (f"the shared pool ({r.n} CPUs)" if r.nodes == "pool"
                else f"CPUs {r.cpus} ({r.n}) on node {r.nodes}")
        where = CpuList(f"{cpus}, memory {r.memory}")
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


def _plan_row(plan: Plan, p: TenantPlacement, unit: UnitPlan, sets: SetLines) -> _PlanRow:
    """One tenant's cells of the plan table: its placement and its slice `unit`."""
    pool = plan.layout.shared_pool
    props = " ".join(f"{k}={v}" for k, v in unit.formatted(human=True, sets=sets)
                     if k not in ("AllowedCPUs", "AllowedMemoryNodes"))
    whole_pool = p.pool and p.cpus == pool
    cpus = "shared pool" if whole_pool else (
        format_cpulist(p.cpus) + (" (shared pool)" if p.pool else ""))
    if not p.exclusive and not p.pool:
        cpus += " (shared)"
    mem = ("node " + ",".join(map(str, p.memory_nodes))
           if p.memory_nodes is not None else "unbound")
    nodes = "pool" if whole_pool else ",".join(map(str, p.cpu_nodes))
    if p.exclusive and len(p.cpu_nodes) > 1 and p.memory_nodes is None:
        nodes += " (split)"  # numa: any where no node had room: said here, not only in a note
    share = [] if plan.shares is None else [guaranteed_text(plan.shares, p.tenant)]
    return _PlanRow(p.tenant, unit.unit, cpus, str(len(p.cpus)), nodes, mem, share,
                    props or "-")


def guaranteed_text(shares: CpuShares, tenant: str, basis: str = "") -> str:
    """A tenant's guaranteed CPU for people: "1.50 cores 18.8% (weight)", and the basis."""
    g = shares.tenants[tenant]
    return (f"{g.cores:.2f} cores {percent(g.cores, shares.online):.1f}% "
            f"({g.bound}{', ' + basis if basis else ''})")


def plan_files_table(plan: Plan) -> Table:
    """The other generated files (parent slice, housekeeping and member drop-ins)."""
    t = table("Files")
    column(t, "file")
    column(t, "settings")
    for u in plan.units:
        if u.tenant is not None and u.kind == "unit":
            continue
        settings = [f"{k}={v}" for k, v in u.formatted(human=True)]
        settings += [f"{k}={v}" for _, pairs in u.sections for k, v in pairs
                     if k in ("OnCalendar", "Wants")]
        if u.slice:
            settings.append(f"Slice={u.slice}")
        t.add_row(FilePath(u.path), CpuList(" ".join(settings) or "-"))
    return t


def schedule_table(schedule: dict[str, Any]) -> Table:
    """The schedule's timers with their next elapse, and the profile in force now."""
    now = schedule["in_force"]
    name = now["profile"] or "default (the base file)"
    since = (f" since {_local(now['since'])}" if now["since"]
             else " (no schedule has elapsed yet)")
    t = table(f"Schedule (in force now: {name}{since})")
    column(t, "profile")
    column(t, "timer")
    column(t, "calendar")
    column(t, "next elapse")
    for timer in schedule["timers"]:
        t.add_row(timer["profile"], timer["timer"], "; ".join(timer["calendars"]),
                  _local(timer["next_elapse"]) if timer["next_elapse"] else "never")
    return t


def _local(stamp: str) -> str:
    """An ISO 8601 time of the plan's JSON (UTC) in local time, for people."""
    from datetime import datetime

    return human_time(datetime.fromisoformat(stamp).timestamp())
