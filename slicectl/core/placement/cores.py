"""Who holds which CPU during one placement run, and picking CPUs a whole core at a time.

A tenant that shares a physical core with the host's daemons or with another exclusive
tenant competes with them for the core's execution units and caches, which is what pinning
was meant to prevent (LinkedIn, 2016: keep housekeeping apart; the Red Hat reference
architecture: whole cores per instance).
So a pick takes whole free cores first and splits at most one core for a remainder; threads
of a core that housekeeping or another exclusive tenant holds are taken only when nothing
else is left, and only when the caller allows it (placement then says so in its notes).

Inside one node, whole cores come from as few last-level cache groups as possible (an L3 is
shared by one AMD CCX/CCD of 4-8 cores, several per node): the group where the tenant
already runs if it has room, else the group that holds the pick with the least room left
(best fit), else the fullest groups first. Kubernetes' CPU manager aligns CPUs by uncore cache
for the same reason (`prefer-align-cpus-by-uncorecache`, +18 % reported on TPROC-C/MySQL).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from slicectl.core.cpulist import format_cpulist
from slicectl.core.frozen import frozen
from slicectl.core.placement.topology import Topology

Core = tuple[int, ...]


@dataclass
class _Sorted:
    """A node's free threads of one pick, sorted by what taking them would share."""

    own: list[int] = field(default_factory=list)  # completes a core the tenant holds part of
    whole: list[Core] = field(default_factory=list)  # every thread free
    clean: list[int] = field(default_factory=list)  # rest of the core is in the shared pool
    shared: list[int] = field(default_factory=list)  # housekeeping/another tenant holds some


@frozen
class _Saved:
    free: set[int]
    owner: dict[int, str]
    protected: dict[int, int]
    free_count: dict[int, int]


class Claims:
    """Free CPUs, their owners and each node's protected memory, changed as tenants land."""

    def __init__(self, topo: Topology, housekeeping: frozenset[int] = frozenset()) -> None:
        self.topo = topo
        self.housekeeping = housekeeping
        self.free: set[int] = set(topo.online_cpus - housekeeping)
        self.owner: dict[int, str] = {}
        self.protected: dict[int, int] = {n.id: 0 for n in topo.nodes}
        self.memory: dict[int, int] = {n.id: n.memory_bytes for n in topo.nodes}
        self.node_cpus: dict[int, frozenset[int]] = topo.cpus_by_node
        self.node_of: dict[int, int] = {c: n.id for n in topo.nodes for c in n.cpus}
        cores = topo.cores()
        self.core_of: dict[int, Core] = {c: core for core in cores for c in core}
        # Each online CPU's last-level cache group, as its lowest CPU (the node stands in
        # where its groups are unknown: then one key per node).
        self.group_of: dict[int, int] = {
            c.id: min(c.cache) if c.cache else -1 - (c.node or 0)
            for c in topo.cpus if c.online}
        self.node_cores: dict[int, list[Core]] = {n.id: [] for n in topo.nodes}
        for core in cores:
            if (n := self.node_of.get(core[0])) is not None:
                self.node_cores[n].append(core)
        self.free_count: dict[int, int] = {
            n.id: len(n.cpus & self.free) for n in topo.nodes}
        # Every pool tenant is on the same set of CPUs: its nodes are found once.
        self._nodes: dict[frozenset[int], tuple[int, ...]] = {}

    # --- bookkeeping ----------------------------------------------------------------------
    def save(self) -> _Saved:
        return _Saved(set(self.free), dict(self.owner), dict(self.protected),
                      dict(self.free_count))

    def restore(self, saved: _Saved) -> None:
        """Back to `saved` (which stays usable for another restore)."""
        self.free, self.owner = set(saved.free), dict(saved.owner)
        self.protected, self.free_count = dict(saved.protected), dict(saved.free_count)

    def claim(self, tenant: str, cpus: Iterable[int]) -> None:
        for c in cpus:
            if c in self.free:
                self.free.discard(c)
                if (n := self.node_of.get(c)) is not None:
                    self.free_count[n] -= 1
            self.owner[c] = tenant

    def release(self, cpus: Iterable[int]) -> None:
        for c in cpus:
            self.owner.pop(c, None)
            if c not in self.free:
                self.free.add(c)
                if (n := self.node_of.get(c)) is not None:
                    self.free_count[n] += 1

    def withhold(self, cpus: Iterable[int]) -> None:
        """Take CPUs out of the free set without an owner (shared explicit lists)."""
        for c in cpus:
            if c in self.free:
                self.free.discard(c)
                if (n := self.node_of.get(c)) is not None:
                    self.free_count[n] -= 1

    def first_owner(self, cpus: Iterable[int]) -> str | None:
        """The tenant, first by name, that holds any of `cpus`, or None if none is held."""
        return min((self.owner[c] for c in cpus if c in self.owner), default=None)

    def nodes_of(self, cpus: frozenset[int]) -> tuple[int, ...]:
        """The nodes `cpus` are on, in order."""
        nodes = self._nodes.get(cpus)
        if nodes is None:
            nodes = tuple(sorted({n for c in cpus if (n := self.node_of.get(c)) is not None}))
            self._nodes[cpus] = nodes
        return nodes

    def free_on(self, node: int) -> frozenset[int]:
        return frozenset(self.free & self.node_cpus[node])

    def memory_fits(self, node: int, protection: int) -> bool:
        """Whether `protection` more bytes of memory.low/min fit the node's memory."""
        size = self.memory[node]
        return not size or self.protected[node] + protection <= size

    def describe_free(self) -> str:
        parts = []
        for n in self.topo.nodes:
            free = self.free_on(n.id)
            parts.append(f"node{n.id}: {len(free)} free ({format_cpulist(free) or '-'})")
        return "; ".join(parts)

    # --- picking --------------------------------------------------------------------------
    def pick(self, tenant: str, cores: Iterable[Core], count: int, *, shared: bool,
             available: Iterable[int] | None = None, near: Iterable[int] = ()
             ) -> list[int] | None:
        """`count` CPUs for `tenant` from the free threads of `cores` (or of `available`):
        its own partial cores, whole cores while they fit (from the fewest cache groups, the
        group of `near` first), threads whose core-mates are in the shared pool, then one
        whole core split for the remainder; threads of cores that housekeeping or another
        exclusive tenant holds only with `shared`. None if short."""
        pool = self.free if available is None else set(available)
        s = self._sort(tenant, cores, pool)
        if len(s.whole) > 1:
            s.whole = self._by_cache(s.whole, count - len(s.own), near)
        chosen = s.own[:count]
        need = count - len(chosen)
        spare: list[Core] = []
        for core in s.whole:
            if len(core) <= need:
                chosen += core
                need -= len(core)
            else:
                spare.append(core)
        chosen += s.clean[:need]
        need = count - len(chosen)
        if need and spare:  # every spare core is larger than need: split the smallest
            chosen += min(spare, key=len)[:need]
            need = 0
        if need and shared:
            chosen += s.shared[:need]
            need = count - len(chosen)
        return chosen if need == 0 else None

    def _by_cache(self, whole: list[Core], need: int, near: Iterable[int]) -> list[Core]:
        """`whole` (cores of one node) ordered so that a pick of `need` CPUs spans the fewest
        last-level cache groups; as they were when the cores span one group or several nodes."""
        groups: dict[int, list[Core]] = {}
        for core in whole:
            groups.setdefault(self.group_of.get(core[0], -1), []).append(core)
        if len(groups) == 1 or len({self.node_of.get(core[0]) for core in whole}) > 1:
            return whole
        size = {g: sum(map(len, cores)) for g, cores in groups.items()}
        home = {self.group_of[c] for c in near if c in self.group_of}
        fits = [g for g in groups if size[g] >= need]
        first = ([g for g in fits if g in home]
                 or sorted(fits, key=lambda g: (size[g], min(groups[g][0]))))[:1]
        rest = sorted((g for g in groups if g not in first),
                      key=lambda g: (-size[g], min(groups[g][0])))
        return [core for g in first + rest for core in groups[g]]

    def _sort(self, tenant: str, cores: Iterable[Core], pool: set[int]) -> _Sorted:
        s = _Sorted()
        for core in cores:
            avail = [c for c in core if c in pool]
            if not avail:
                continue
            if len(avail) == len(core):
                s.whole.append(core)
                continue
            holders = {self.owner.get(c) for c in core if c not in pool}
            if self.housekeeping.intersection(core) or holders - {None, tenant}:
                s.shared += avail
            elif tenant in holders:
                s.own += avail
            else:
                s.clean += avail
        return s

    def whole_cores(self, node: int) -> list[Core]:
        """The node's cores whose every thread is free."""
        return [core for core in self.node_cores[node] if all(c in self.free for c in core)]

    def shares_core(self, tenant: str, cpus: Iterable[int]
                    ) -> dict[str, tuple[set[int], set[int]]]:
        """Who else holds threads of the cores `cpus` are on ("housekeeping" or a tenant):
        holder -> (the tenant's threads on those cores, the holder's)."""
        result: dict[str, tuple[set[int], set[int]]] = {}
        for c in cpus:
            for mate in self.core_of.get(c, (c,)):
                holder = ("housekeeping" if mate in self.housekeeping
                          else self.owner.get(mate))
                if holder is not None and holder != tenant:
                    mine, theirs = result.setdefault(holder, (set(), set()))
                    mine.add(c)
                    theirs.add(mate)
        return result


def cores_of(claims: Claims, nodes: Sequence[int]) -> list[Core]:
    """The cores of `nodes`, in CPU order."""
    if len(nodes) == 1:
        return claims.node_cores[nodes[0]]
    return sorted((c for n in nodes for c in claims.node_cores[n]), key=lambda c: c[0])
