"""The live NUMA map: which slice holds each CPU now, next to the plan (pure, no I/O).

A CPU belongs to the tenant whose slice is the only tenant slice with that CPU in its
`cpuset.cpus.effective`; to housekeeping when only housekeeping units (`system.slice`,
`user.slice`, `init.scope`) are pinned to it; otherwise to the shared pool. The plan is read
the same way from its layout (each tenant's CPUs, the housekeeping CPUs), so the two maps
agree exactly when the host runs the plan, and a CPU where they differ is a disagreement,
with the reason when one is known (the slice is not started, a `systemctl set-property`
override, live CPUs that differ from the plan's).

Where each tenant's memory is comes from `memory.numa_stat` (SliceMetrics.numa).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from slicectl.core.config.tenants import slice_tenant
from slicectl.core.cpulist import format_cpulist
from slicectl.core.monitor.metrics import SliceMetrics
from slicectl.core.placement.topology import Topology

HOUSEKEEPING = "housekeeping"
SHARED = "shared pool"
HOUSEKEEPING_UNITS = ("system.slice", "user.slice", "init.scope")
JSON_VERSION = 1


@dataclass(frozen=True, slots=True)
class CpuCell:
    """One CPU: who holds it live, who the plan gives it to (None: no plan), and why they
    differ when they do."""

    cpu: int
    live: str
    plan: str | None = None
    reason: str = ""

    @property
    def disagrees(self) -> bool:
        """Live and plan differ (only with a plan)."""
        return self.plan is not None and self.live != self.plan


@dataclass(frozen=True, slots=True)
class NodeRow:
    """One node: its CPUs and each owner's memory on it (bytes, memory.numa_stat)."""

    node: int
    cpus: tuple[CpuCell, ...]
    memory: tuple[tuple[str, int], ...]  # (owner, bytes), largest first
    memory_bytes: int  # the node's MemTotal


@dataclass(frozen=True, slots=True)
class LiveMap:
    """Nodes × CPUs, live and (optionally) planned."""

    nodes: tuple[NodeRow, ...]
    tenants: tuple[str, ...]  # every tenant seen live or in the plan, for colours
    planned: bool

    @property
    def disagreements(self) -> list[CpuCell]:
        """The CPUs where live and plan differ."""
        return [c for n in self.nodes for c in n.cpus if c.disagrees]


def owners(online: frozenset[int], tenants: Mapping[str, frozenset[int]],
           housekeeping: frozenset[int]) -> dict[int, str]:
    """Each online CPU's owner: the one tenant holding it, else housekeeping when pinned
    there, else the shared pool."""
    out: dict[int, str] = {}
    for cpu in online:
        holders = [t for t, cpus in tenants.items() if cpu in cpus]
        if len(holders) == 1:
            out[cpu] = holders[0]
        elif not holders and cpu in housekeeping:
            out[cpu] = HOUSEKEEPING
        else:
            out[cpu] = SHARED
    return out


def default_tenant_of(parent: str = "tenants") -> Callable[[str], str | None]:
    """Tenant names from slice paths without a tenants.yaml: `/P.slice/P-NAME.slice`."""

    def tenant_of(cgroup: str) -> str | None:
        return slice_tenant(cgroup, parent)

    return tenant_of


def _live_sets(metrics: Sequence[SliceMetrics], online: frozenset[int],
               tenant_of: Callable[[str], str | None]
               ) -> tuple[dict[str, frozenset[int]], frozenset[int], dict[str, SliceMetrics]]:
    """Each live tenant's CPUs, the CPUs housekeeping units are pinned to, tenant metrics."""
    tenants: dict[str, frozenset[int]] = {}
    found: dict[str, SliceMetrics] = {}
    housekeeping: set[int] = set()
    for m in metrics:
        name = tenant_of(m.cgroup)
        cpus = (m.cpus or online) & online
        if name is not None:
            found[name] = m
            if cpus != online:  # a slice on every CPU (or without cpuset) holds none alone
                tenants[name] = cpus
        elif m.cgroup.lstrip("/") in HOUSEKEEPING_UNITS and cpus != online:
            housekeeping |= cpus
    return tenants, frozenset(housekeeping), found


def build_live_map(topology: Topology, metrics: Sequence[SliceMetrics], *,
                   tenant_of: Callable[[str], str | None] | None = None,
                   plan: Mapping[str, frozenset[int]] | None = None,
                   plan_housekeeping: frozenset[int] = frozenset(),
                   overrides: Mapping[str, str] | None = None) -> LiveMap:
    """The live map of `metrics` (one per cgroup) on `topology`. `tenant_of` names the tenant
    of a cgroup path (default: `default_tenant_of()`). With `plan` (tenant -> planned CPUs)
    and `plan_housekeeping`, each CPU also shows its planned owner; `overrides` (tenant ->
    the set-property file that overrides its CPUs) explains disagreements."""
    online = topology.online_cpus
    live_sets, housekeeping, found = _live_sets(metrics, online,
                                                tenant_of or default_tenant_of())
    live = owners(online, live_sets, housekeeping)
    planned = owners(online, plan, plan_housekeeping) if plan is not None else {}
    rows = []
    for node in topology.nodes:
        cells = []
        for cpu in sorted(node.cpus & online):
            p = planned.get(cpu)
            reason = "" if p is None or p == live[cpu] else _reason(
                live[cpu], p, plan or {}, live_sets, set(found), overrides or {})
            cells.append(CpuCell(cpu, live[cpu], p, reason))
        rows.append(NodeRow(node.id, tuple(cells), _memory_on(node.id, found, metrics),
                            node.memory_bytes))
    names = sorted(set(live_sets) | set(plan or {}))
    return LiveMap(tuple(rows), tuple(names), plan is not None)


def _reason(live: str, plan: str, planned: Mapping[str, frozenset[int]],
            live_sets: Mapping[str, frozenset[int]], started: set[str],
            overrides: Mapping[str, str]) -> str:
    """Why a CPU is `live`'s rather than `plan`'s, as far as slicectl can tell."""
    for tenant in (plan, live):
        if tenant in overrides:
            return f"{tenant}: CPUs overridden by systemctl set-property ({overrides[tenant]})"
    if plan not in (HOUSEKEEPING, SHARED) and plan not in started:
        return f"{plan}: slice not started"
    for tenant in (plan, live):
        if tenant in planned and tenant in started and planned[tenant] != live_sets.get(tenant):
            now = (f"CPUs {format_cpulist(live_sets[tenant])}" if tenant in live_sets
                   else "every CPU")
            return (f"{tenant} runs on {now}, planned {format_cpulist(planned[tenant])} "
                    "(not applied yet, or a reload pending)")
    if plan == HOUSEKEEPING:
        return "housekeeping units are not pinned to it live"
    if live == HOUSEKEEPING:
        return "housekeeping units are pinned to it live, not in the plan"
    return "live CPUs differ from the plan"


def _memory_on(node: int, tenants: Mapping[str, SliceMetrics],
               metrics: Sequence[SliceMetrics]) -> tuple[tuple[str, int], ...]:
    """Each tenant's (and housekeeping's) memory on `node`, largest first, zeros left out."""
    use: dict[str, int] = {}
    for name, m in tenants.items():
        use[name] = _on_node(m, node)
    for m in metrics:
        if m.cgroup.lstrip("/") in HOUSEKEEPING_UNITS:
            use[HOUSEKEEPING] = use.get(HOUSEKEEPING, 0) + _on_node(m, node)
    return tuple(sorted(((k, v) for k, v in use.items() if v), key=lambda kv: (-kv[1], kv[0])))


def _on_node(m: SliceMetrics, node: int) -> int:
    if m.numa is None:
        return 0
    return sum(n.total for n in m.numa.nodes if n.node == node)


def live_map_json(live: LiveMap) -> dict[str, Any]:
    """The documented `topology --live --json` object (docs/topology-json.md)."""
    return {
        "version": JSON_VERSION,
        "planned": live.planned,
        "nodes": [{
            "node": n.node,
            "memory_bytes": n.memory_bytes,
            "cpus": [{"cpu": c.cpu, "live": c.live, "plan": c.plan,
                      **({"reason": c.reason} if c.disagrees else {})} for c in n.cpus],
            "memory": {owner: used for owner, used in n.memory},
        } for n in live.nodes],
        "disagreements": [{"cpu": c.cpu, "live": c.live, "plan": c.plan, "reason": c.reason}
                          for c in live.disagreements],
    }
