"""The result of placement: where each tenant runs, housekeeping, the shared pool, and a
re-pack's moves (pure data; `slicectl.core.placement.placement` computes it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from functools import cached_property
from typing import Any

from slicectl.core.config.config import Config, Tenant
from slicectl.core.cpulist import format_cpulist, parse_cpulist
from slicectl.core.frozen import frozen
from slicectl.core.placement.topology import Topology
from slicectl.core.properties.properties import Numa


@frozen
class TenantPlacement:
    """Where one tenant runs: its CPUs, the nodes they are on, and its memory nodes."""

    tenant: str
    cpus: frozenset[int]
    cpu_nodes: tuple[int, ...]
    memory_nodes: tuple[int, ...] | None  # None: memory not bound
    exclusive: bool
    pool: bool  # True: runs on the shared pool (no `cpus` asked)


@frozen
class RepackMove:
    """A tenant a re-pack moves: its CPUs before and after, and the nodes of each."""

    tenant: str
    before: frozenset[int]
    after: frozenset[int]
    from_nodes: tuple[int, ...]
    to_nodes: tuple[int, ...]

    @property
    def cpus_moved(self) -> int:
        """Its CPUs that land on a node it was not on (their memory follows them there)."""
        return len(self.after) if set(self.to_nodes) - set(self.from_nodes) else 0

    def describe(self) -> str:
        nodes = "node" + ("s " if len(self.from_nodes) > 1 else " ")
        if self.from_nodes == self.to_nodes:
            return (f"{self.tenant}: CPUs {format_cpulist(self.before)} -> "
                    f"{format_cpulist(self.after)}, on {nodes}"
                    f"{', '.join(map(str, self.to_nodes))}")
        return (f"{self.tenant}: {nodes}{', '.join(map(str, self.from_nodes))} -> "
                f"{', '.join(map(str, self.to_nodes))} ({len(self.after)} "
                f"CPU{'' if len(self.after) == 1 else 's'}, "
                f"{format_cpulist(self.before)} -> {format_cpulist(self.after)}; its memory "
                "moves with it: a changed cpuset.mems migrates its pages)")

    def to_json(self) -> dict[str, object]:
        """One entry of `plan --json`'s `moves` (docs/plan-json.md)."""
        return {"tenant": self.tenant, "from_nodes": list(self.from_nodes),
                "to_nodes": list(self.to_nodes), "cpus_before": format_cpulist(self.before),
                "cpus_after": format_cpulist(self.after), "cpus_moved": self.cpus_moved}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RepackMove:
        return cls(d["tenant"], parse_cpulist(d["cpus_before"]), parse_cpulist(d["cpus_after"]),
                   tuple(d["from_nodes"]), tuple(d["to_nodes"]))


@frozen
class Layout:
    """The placement of every tenant plus the housekeeping CPUs and the shared pool.

    `notes` say where the layout falls short of the rules because nothing better existed:
    a tenant sharing a physical core, a local tenant spanning nodes.
    """

    housekeeping: frozenset[int]
    shared_pool: frozenset[int]
    tenants: tuple[TenantPlacement, ...]
    notes: tuple[str, ...] = ()
    moves: tuple[RepackMove, ...] = ()  # a re-pack: the tenants moved from where they were
    # Where the tenants were before (the placement kept, by tenant), for `plan --explain`;
    # not part of the layout's identity.
    before: tuple[tuple[str, frozenset[int]], ...] = field(default=(), compare=False)

    def repack_notes(self) -> list[str]:
        """A re-pack's moves, one line each, as plan and apply say them."""
        return [f"re-pack moves {m.describe()}" for m in self.moves]

    def of(self, tenant: str) -> TenantPlacement:
        return self._by_tenant[tenant]

    @cached_property
    def _by_tenant(self) -> dict[str, TenantPlacement]:
        """Each tenant's placement by name, built at the first `of`: callers ask for every
        tenant in turn, and a search each time made a plan of thousands quadratic."""
        return {p.tenant: p for p in reversed(self.tenants)}  # the first of a name wins


def split_locals(config: Config, layout: Layout) -> list[Tenant]:
    """The counted exclusive `numa: local` tenants the layout puts on more than one node."""
    return [t for t in config.tenants
            if t.numa is Numa.LOCAL and isinstance(t.cpus, int) and t.exclusive
            and len(layout.of(t.name).cpu_nodes) > 1]


def cpu_nodes_for(topo: Topology, t: Tenant) -> list[int]:
    """Nodes to take CPUs from: named nodes with CPUs, else the nearest CPU nodes; else all."""
    with_cpus = [n.id for n in topo.nodes if n.cpus]
    if t.nodes is None or not with_cpus:
        return with_cpus
    named = sorted({topo.node(n).id for n in t.nodes if topo.node(n).cpus})
    if named:
        return named
    # Only CPU-less (memory) nodes named: CPUs from the nearest nodes that have CPUs.
    best = min(topo.distance(n, m) for n in t.nodes for m in with_cpus)
    return sorted({m for n in t.nodes for m in with_cpus if topo.distance(n, m) == best})
