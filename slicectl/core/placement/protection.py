"""Memory protection must fit in RAM minus housekeeping, and in the nodes it is bound to
(pure).

memory.low/memory.min reserve memory only under pressure, and only if the host can honour
them: protection beyond RAM protects nobody (LinkedIn, 2016: limits are not reservations;
cgroup-v2.rst, "memory.low"). A tenant whose memory is bound to nodes (cpuset.mems) can only
be given memory there, so its protection must fit those nodes' memory, beside every other
tenant bound to them. plan, generate and apply refuse such a configuration, and lint reports
it as `protection-overcommit`; both call `overcommit` and `node_overcommit` here.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from itertools import combinations

from slicectl.core.config.tenants import HOUSEKEEPING_UNITS, Config, Tenant
from slicectl.core.config.values import INFINITY, RamShare, resolved, size_bytes
from slicectl.core.frozen import frozen
from slicectl.core.human import exact_size
from slicectl.core.placement.layout import Layout
from slicectl.core.placement.topology import Topology

FIX = "lower memory_low/memory_min so all protections fit in RAM minus housekeeping"
SOURCE = "systemd.resource-control(5)"


@frozen
class Overcommit:
    """Protections that do not fit: where the running total passes the budget, and why."""

    tenant: Tenant  # the tenant at which the total first passes the budget
    key: str  # its protection key, for the line
    everyone: int  # all tenants' protection
    budget: int  # RAM minus housekeeping
    ram: int

    def located(self, path: str) -> str:
        """`FILE:LINE: KEY: message`, as plan and generate report it."""
        return (f"{path}:{self.tenant.line_of(self.key)}: tenants.{self.tenant.name}.{self.key}: "
                f"{self.message()}")

    def message(self) -> str:
        return (f"memory_low + memory_min of all tenants is {exact_size(self.everyone)} but "
                f"RAM minus housekeeping is {exact_size(max(self.budget, 0))} "
                f"({exact_size(self.ram)} - {exact_size(self.ram - self.budget)}); "
                "protection beyond RAM protects nobody (the total passes it at tenant "
                f"{self.tenant.name})")


def housekeeping_memory(config: Config, ram: int) -> int:
    """Memory kept for the host: memory_max of the confined housekeeping units (a share of
    RAM resolved against the host's `ram`)."""
    limits = (resolved(c.memory_max, ram) for c in config.confine if c.unit in HOUSEKEEPING_UNITS)
    return sum(v for v in limits if isinstance(v, int))


def protection(t: Tenant, ram: int) -> int:
    """A tenant's memory_low + memory_min in bytes; infinity protects all of the host's RAM."""
    return sum(size_bytes(v, ram) for v in (t.memory_low, t.memory_min) if v)


def overcommit(config: Config, topo: Topology) -> Overcommit | None:
    """The first tenant at which protections pass RAM minus housekeeping, if any."""
    ram = topo.total_memory
    if ram <= 0:  # RAM unknown: nothing to compare with
        return None
    budget = ram - housekeeping_memory(config, ram)
    total = 0
    for t in config.tenants:
        total += protection(t, ram)
        if total > budget and total > 0:  # no protection at all cannot overcommit
            key = "memory_low" if t.memory_low else "memory_min"
            everyone = sum(protection(x, ram) for x in config.tenants)
            return Overcommit(t, key, everyone, budget, ram)
    return None


def protects(t: Tenant) -> bool:
    """Whether a tenant asks for any protection (infinity and shares of RAM included)."""
    return any(v is INFINITY or (v.permyriad if isinstance(v, RamShare) else v or 0) > 0
               for v in (t.memory_low, t.memory_min))


# Subsets of the bound nodes checked exhaustively up to this many nodes; beyond it, each
# tenant's own node set and each single node.
EXHAUSTIVE_NODES = 10


@frozen
class NodeOvercommit:
    """Protections of tenants whose memory is bound to `nodes` that those nodes cannot hold."""

    tenant: Tenant  # the tenant at which the total (in file order) first passes the memory
    key: str
    tenants: tuple[Tenant, ...]  # every protecting tenant bound within `nodes`
    nodes: tuple[int, ...]
    protected: int
    memory: int

    def located(self, path: str) -> str:
        """`FILE:LINE: KEY: message`, as plan and generate report it."""
        return (f"{path}:{self.tenant.line_of(self.key)}: tenants.{self.tenant.name}.{self.key}: "
                f"{self.message()}")

    def message(self) -> str:
        where = (f"node {self.nodes[0]}, which has" if len(self.nodes) == 1 else
                 f"nodes {', '.join(map(str, self.nodes))}, which have")
        if len(self.tenants) == 1:
            who = f"tenant {self.tenant.name} protects {exact_size(self.protected)} " \
                  "(memory_low + memory_min) but its memory is bound to"
        else:
            names = ", ".join(t.name for t in self.tenants)
            who = f"tenants {names} protect {exact_size(self.protected)} " \
                  "(memory_low + memory_min) with their memory bound to"
        return (f"{who} {where} {exact_size(self.memory)}: protection beyond the memory "
                "it can be given protects nobody")

    @property
    def fix(self) -> str:
        return ("lower memory_low/memory_min, bind the tenant to more or other nodes "
                "(`nodes:`, numa: spread), or numa: any to leave its memory unbound")


def _node_memory(topo: Topology) -> dict[int, int]:
    """MemTotal of every kernel node id that can hold memory (merged nodes too)."""
    memory: dict[int, int] = {}
    for n in topo.nodes:
        memory[n.id] = n.own_memory
        memory.update(n.merged)
    return memory


def _candidates(bound: Sequence[frozenset[int]]) -> Iterator[frozenset[int]]:
    """Node sets to compare protection with, smallest first: every subset of the bound nodes
    (Hall's condition: the tenants bound within a set must fit in it), or on large hosts
    each single node and each tenant's own set."""
    nodes = sorted(frozenset().union(*bound))
    if len(nodes) <= EXHAUSTIVE_NODES:
        for size in range(1, len(nodes) + 1):
            for combo in combinations(nodes, size):
                yield frozenset(combo)
        return
    yield from (frozenset([n]) for n in nodes)
    yield from sorted(set(bound), key=lambda s: (len(s), sorted(s)))


def _sets_within(nodes: frozenset[int], sets: Collection[frozenset[int]]
                 ) -> list[frozenset[int]]:
    """The members of `sets` that are subsets of `nodes`: each subset of a few nodes looked
    up, or every set compared when there are fewer sets than subsets."""
    if 2 ** len(nodes) <= len(sets):
        ordered = sorted(nodes)
        return [s for size in range(1, len(ordered) + 1)
                for combo in combinations(ordered, size)
                if (s := frozenset(combo)) in sets]
    return [s for s in sets if s <= nodes]


def node_overcommit(config: Config, topo: Topology, layout: Layout) -> NodeOvercommit | None:
    """The first set of nodes whose bound tenants protect more than the nodes hold, if any.
    `infinity` counts as nothing here: `overcommit` counts it as all of the host's RAM."""
    memory = _node_memory(topo)
    ram = topo.total_memory
    bound: list[tuple[Tenant, frozenset[int], int]] = []
    for t in config.tenants:
        mems = layout.of(t.name).memory_nodes
        # A share of RAM is of the host's RAM (systemd's physical_memory), not of the nodes.
        amount = sum(v for v in (resolved(t.memory_low, ram), resolved(t.memory_min, ram))
                     if isinstance(v, int))
        if mems and amount > 0:
            bound.append((t, frozenset(mems), amount))
    if not bound:
        return None
    # What the tenants bound to each set of nodes protect together: a candidate adds up the
    # sets within it, not every tenant (thousands of tenants are bound to a few sets).
    by_set: dict[frozenset[int], int] = {}
    for _, b, amount in bound:
        by_set[b] = by_set.get(b, 0) + amount
    for nodes in _candidates(list(by_set)):
        sets = _sets_within(nodes, by_set)
        capacity = sum(memory.get(n, 0) for n in nodes)
        total = sum(by_set[b] for b in sets)
        if not sets or total <= capacity or capacity <= 0:
            continue  # a node with no memory reported: nothing to compare with
        within = [(t, amount) for t, b, amount in bound if b <= nodes]
        running, at = 0, within[-1][0]
        for tenant, amount in within:
            running += amount
            if running > capacity:
                at = tenant
                break
        t = at
        key = "memory_low" if t.memory_low else "memory_min"
        return NodeOvercommit(t, key, tuple(x for x, _ in within), tuple(sorted(nodes)),
                              total, capacity)
    return None
