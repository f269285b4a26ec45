"""Placement: tenants × topology → CPUs and memory nodes per tenant (pure, deterministic).

Rules (DESIGN §4), each traced to the seeds:
- A tenant asking for N CPUs gets them on one node when any node has room, with its memory
  bound to that node (seed 000: NUMA pinning of CPUs *and* memory, up to +12.5%).
- Whole cores first: SMT siblings stay together so tenants do not share a physical core.
- Housekeeping CPUs are never given to tenants (seed 001: keep housekeeping apart).
- A node without memory binds memory to the nearest node(s) with memory; a node without CPUs
  is never chosen for CPUs unless named.
- Stability: with `previous` (the last placement), each tenant keeps what it had where it can,
  so changing one tenant moves as few others as possible (seed 000 §4.3: live reallocation).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from slicectl.config import Config, Tenant
from slicectl.cpulist import format_cpulist
from slicectl.errors import PlacementError
from slicectl.settings import Numa
from slicectl.topology import Topology


@dataclass(frozen=True)
class TenantPlacement:
    """Where one tenant runs: its CPUs, the nodes they are on, and its memory nodes."""

    tenant: str
    cpus: frozenset[int]
    cpu_nodes: tuple[int, ...]
    memory_nodes: tuple[int, ...] | None  # None: memory not bound
    exclusive: bool
    pool: bool  # True: runs on the shared pool (no `cpus` asked)


@dataclass(frozen=True)
class Layout:
    """The placement of every tenant plus the housekeeping CPUs and the shared pool."""

    housekeeping: frozenset[int]
    shared_pool: frozenset[int]
    tenants: tuple[TenantPlacement, ...]

    def of(self, tenant: str) -> TenantPlacement:
        for p in self.tenants:
            if p.tenant == tenant:
                return p
        raise KeyError(tenant)


class _State:
    """Mutable bookkeeping during one placement run."""

    def __init__(self, topo: Topology, housekeeping: frozenset[int]) -> None:
        self.topo = topo
        self.free: set[int] = set(topo.online_cpus - housekeeping)
        self.owner: dict[int, str] = {}
        self.protected: dict[int, int] = {n.id: 0 for n in topo.nodes}

    def claim(self, tenant: str, cpus: Iterable[int]) -> None:
        for c in cpus:
            self.free.discard(c)
            self.owner[c] = tenant

    def free_on(self, node: int) -> frozenset[int]:
        return frozenset(self.free & self.topo.node(node).cpus)

    def describe_free(self) -> str:
        parts = []
        for n in self.topo.nodes:
            free = self.free_on(n.id)
            cpus = format_cpulist(free) if free else "-"
            parts.append(f"node{n.id}: {len(free)} free ({cpus})")
        return "; ".join(parts)


def _pick_cores(topo: Topology, available: frozenset[int], count: int) -> list[int] | None:
    """`count` CPUs from `available`, whole free cores first, in CPU order; None if short."""
    if len(available) < count:
        return None
    all_cores = topo.cores()
    whole: list[tuple[int, ...]] = []
    partial: list[tuple[int, ...]] = []
    for core in all_cores:
        free = tuple(c for c in core if c in available)
        if not free:
            continue
        (whole if len(free) == len(core) else partial).append(free)
    chosen: list[int] = []
    need = count
    # Whole cores while a whole core fits; then single threads, from partial cores first so
    # that no further whole core is split (siblings of different tenants share a core).
    for core in whole:
        if len(core) <= need:
            chosen.extend(core)
            need -= len(core)
        if need == 0:
            return chosen
    rest = [c for core in partial for c in core]
    rest += [c for core in whole if core[0] not in chosen for c in core]
    for c in rest:
        if need == 0:
            break
        if c not in chosen:
            chosen.append(c)
            need -= 1
    return chosen if need == 0 else None


def _nodes_of(topo: Topology, cpus: Iterable[int]) -> tuple[int, ...]:
    return tuple(sorted({n for c in cpus if (n := topo.node_of(c)) is not None}))


def _memory_nodes(topo: Topology, t: Tenant, cpu_nodes: tuple[int, ...]) -> tuple[int, ...] | None:
    """Memory binding: named nodes, else the CPUs' nodes (nearest with memory); any: none."""
    if t.numa is Numa.ANY and t.nodes is None:
        return None
    base = t.nodes if t.nodes is not None else cpu_nodes
    mems = sorted({m for n in base for m in topo.memory_nodes_for(n)})
    return tuple(mems) or None


def _housekeeping(config: Config, topo: Topology) -> frozenset[int]:
    hk = config.housekeeping_cpus
    where = f"{config.path}:{config.housekeeping_line}: housekeeping.cpus"
    if isinstance(hk, frozenset):
        _check_cpus_exist(topo, hk, where, "housekeeping")
        return hk
    if hk == 0:
        return frozenset()
    # A count: whole cores from the lowest-numbered node(s), so the other nodes stay whole
    # for tenants (a database pinned to a node wants all of it, seed 000).
    chosen: list[int] = []
    for node in sorted(topo.nodes, key=lambda n: n.id):
        if len(chosen) >= hk:
            break
        got = _pick_cores(topo, node.cpus, min(hk - len(chosen), len(node.cpus)))
        chosen.extend(got or [])
    if len(chosen) < hk:
        raise PlacementError(
            f"{where}: asks for {hk} housekeeping CPUs, but the host has only "
            f"{len(topo.online_cpus)} online",
            "lower housekeeping.cpus",
        )
    return frozenset(chosen)


def _check_cpus_exist(topo: Topology, cpus: frozenset[int], where: str, what: str) -> None:
    known = {c.id for c in topo.cpus}
    missing = cpus - known
    if missing:
        raise PlacementError(
            f"{where}: CPU(s) {format_cpulist(missing)} do not exist on this host",
            f"{what}: the host's CPUs are {format_cpulist(known)}",
        )
    offline = cpus & topo.offline_cpus
    if offline:
        raise PlacementError(
            f"{where}: CPU(s) {format_cpulist(offline)} are offline",
            f"online CPUs: {format_cpulist(topo.online_cpus)}",
        )


def _check_nodes(config: Config, topo: Topology, t: Tenant) -> None:
    if t.nodes is None:
        return
    missing = [n for n in t.nodes if n not in topo.node_ids()]
    if missing:
        raise PlacementError(
            f"{config.path}:{t.line_of('nodes')}: tenants.{t.name}.nodes: node(s) "
            f"{', '.join(map(str, missing))} do not exist on this host",
            f"nodes here: {', '.join(map(str, topo.node_ids()))}",
        )


def _cpu_nodes_for(topo: Topology, t: Tenant) -> list[int]:
    """Nodes to take CPUs from: named nodes with CPUs, else nearest CPU nodes; else all."""
    with_cpus = [n.id for n in topo.nodes if n.cpus]
    if t.nodes is None:
        return with_cpus
    named = [n for n in t.nodes if topo.node(n).cpus]
    if named:
        return named
    # Only CPU-less (memory) nodes named: CPUs from the nearest nodes that have CPUs.
    best = min(topo.distance(n, m) for n in t.nodes for m in with_cpus)
    return sorted({m for n in t.nodes for m in with_cpus if topo.distance(n, m) == best})


def _count(t: Tenant) -> int:
    """The CPU count a tenant asks for (0 for explicit cpulists or the pool)."""
    return t.cpus if isinstance(t.cpus, int) else 0


def _protection(t: Tenant) -> int:
    """Protected bytes a tenant puts on its node(s). `infinity` counts as nothing here: it
    cannot fit beside anything, and build_plan's global check (slicectl.protection), which
    counts it as all of the host's RAM, refuses it beside any other protection."""
    return sum(v for v in (t.memory_low, t.memory_min) if isinstance(v, int))


def _place_count(
    st: _State, config: Config, t: Tenant, count: int, seed: frozenset[int]
) -> frozenset[int]:
    topo = st.topo
    candidates = _cpu_nodes_for(topo, t)
    where = f"{config.path}:{t.line_of('cpus')}: tenants.{t.name}.cpus"
    if t.numa is Numa.SPREAD:
        return _place_spread(st, t, count, candidates, where)
    # local / any: one node if any has room; stick to the node of `seed` when possible.
    seed_nodes = _nodes_of(topo, seed)
    if len(seed_nodes) == 1 and seed_nodes[0] in candidates:
        extra = _pick_cores(topo, st.free_on(seed_nodes[0]) - seed, count - len(seed))
        if extra is not None:
            return seed | frozenset(extra)
    fits: list[tuple[int, int]] = []
    for n in candidates:
        free = st.free_on(n)
        mem = topo.node(n)
        mem_ok = not mem.has_memory or st.protected[n] + _protection(t) <= mem.memory_bytes
        if len(free) >= count and mem_ok:
            fits.append((len(free) - count, n))  # best fit: least left over, then lowest id
    if fits:
        node = min(fits)[1]
        chosen = _pick_cores(topo, st.free_on(node), count)
        assert chosen is not None
        st.protected[node] += _protection(t)
        return frozenset(chosen)
    if t.nodes is not None and len(t.nodes) == 1:
        raise PlacementError(
            f"{where}: asks for {count} CPUs on node {t.nodes[0]}, which has "
            f"{len(st.free_on(candidates[0]))} free",
            f"free CPUs per node: {st.describe_free()}",
        )
    # No single node has room: the fewest nodes, fullest first (the tenant is told by
    # `plan` that its CPUs span nodes; lint cross-node-cpus flags it too).
    chosen_all: list[int] = []
    for n in sorted(candidates, key=lambda n: (-len(st.free_on(n)), n)):
        need = count - len(chosen_all)
        if need == 0:
            break
        free = st.free_on(n)
        got = _pick_cores(topo, free, min(need, len(free)))
        chosen_all.extend(got or [])
    if len(chosen_all) < count:
        free_there = sum(len(st.free_on(n)) for n in candidates)
        on = "" if t.nodes is None else f" on nodes {', '.join(map(str, candidates))}"
        raise PlacementError(
            f"{where}: asks for {count} CPUs but only {free_there} are free{on} "
            "for exclusive use",
            f"free CPUs per node: {st.describe_free()}; lower the count, free CPUs from "
            "another tenant, or reduce housekeeping.cpus",
        )
    return frozenset(chosen_all)


def _place_spread(
    st: _State, t: Tenant, count: int, candidates: list[int], where: str
) -> frozenset[int]:
    """Round-robin over nodes, a whole core at a time, so each node gets an even share."""
    topo = st.topo
    chosen: set[int] = set()
    progress = True
    while len(chosen) < count and progress:
        progress = False
        for n in candidates:
            need = count - len(chosen)
            if need == 0:
                break
            free = frozenset(st.free_on(n) - chosen)
            if not free:
                continue
            core = next((c for c in topo.cores(free) if len(c) <= need), None)
            pick = list(core) if core else sorted(free)[:1]
            chosen.update(pick)
            progress = True
    if len(chosen) < count:
        raise PlacementError(
            f"{where}: asks for {count} CPUs spread over nodes "
            f"{', '.join(map(str, candidates))}, but only {len(chosen)} are free there",
            f"free CPUs per node: {st.describe_free()}",
        )
    return frozenset(chosen)


def place(
    config: Config,
    topo: Topology,
    previous: Mapping[str, frozenset[int]] | None = None,
) -> Layout:
    """Place every tenant of `config` on `topo`; `previous` keeps tenants where they were."""
    previous = previous or {}
    hk = _housekeeping(config, topo)
    st = _State(topo, hk)
    result: dict[str, frozenset[int]] = {}

    for t in config.tenants:
        _check_nodes(config, topo, t)
    # 1. Explicit cpulists, exclusive ones claimed (overlaps are errors).
    for t in config.tenants:
        if not isinstance(t.cpus, frozenset):
            continue
        where = f"{config.path}:{t.line_of('cpus')}: tenants.{t.name}.cpus"
        _check_cpus_exist(topo, t.cpus, where, f"tenant {t.name}")
        if t.cpus & hk:
            raise PlacementError(
                f"{where}: CPU(s) {format_cpulist(t.cpus & hk)} are housekeeping CPUs",
                f"housekeeping CPUs are {format_cpulist(hk)}; pick others or change "
                "housekeeping.cpus",
            )
        if t.exclusive:
            clash = {st.owner[c] for c in t.cpus if c in st.owner}
            if clash:
                other = sorted(clash)[0]
                both = t.cpus & result[other]
                raise PlacementError(
                    f"{where}: CPU(s) {format_cpulist(both)} are also given to exclusive "
                    f"tenant {other!r}",
                    "exclusive tenants cannot share CPUs; set exclusive: false on one of them "
                    "or pick other CPUs",
                )
            st.claim(t.name, t.cpus)
            for n in _nodes_of(topo, t.cpus):
                st.protected[n] += _protection(t) // max(1, len(_nodes_of(topo, t.cpus)))
        result[t.name] = t.cpus
    # Non-exclusive explicit lists may share with each other and the pool, never with an
    # exclusive tenant ("exclusive: no other tenant shares these CPUs").
    listed_shared: set[int] = set()
    for t in config.tenants:
        if isinstance(t.cpus, frozenset) and not t.exclusive:
            clash = {st.owner[c] for c in t.cpus if c in st.owner}
            if clash:
                other = sorted(clash)[0]
                raise PlacementError(
                    f"{config.path}:{t.line_of('cpus')}: tenants.{t.name}.cpus: CPU(s) "
                    f"{format_cpulist(t.cpus & result[other])} belong to exclusive tenant "
                    f"{other!r}",
                    "a non-exclusive tenant may share CPUs with the pool and other "
                    "non-exclusive tenants only; pick other CPUs",
                )
            listed_shared |= t.cpus
    st.free -= listed_shared  # counted exclusive tenants must not take them

    counted = [t for t in config.tenants if isinstance(t.cpus, int) and t.exclusive]
    asked = sum(_count(t) for t in counted)
    if asked > len(st.free):
        biggest = max(counted, key=lambda t: (_count(t), t.name))
        each = ", ".join(f"{t.name}: {t.cpus}" for t in counted)
        raise PlacementError(
            f"{config.path}:{biggest.line_of('cpus')}: tenants.{biggest.name}.cpus: exclusive "
            f"tenants ask for {asked} CPUs in all ({each}), but only {len(st.free)} are free",
            f"free CPUs per node: {st.describe_free()}; lower a count, or reduce "
            "housekeeping.cpus",
        )
    # 2. Keep what each counted tenant had (trimmed to its new count, whole cores kept).
    seeds: dict[str, frozenset[int]] = {}
    for t in sorted(counted, key=lambda t: t.name):
        assert isinstance(t.cpus, int)
        prev = frozenset(previous.get(t.name, frozenset())) & frozenset(st.free)
        if not prev:
            continue
        if len(prev) <= t.cpus:
            kept = sorted(prev)  # all of it: replaying a placement changes nothing
        else:
            # Shrinking: keep cores on the node(s) that held most of it, so a local tenant
            # ends up on one node when its new count fits there.
            kept = []
            for n in sorted(_nodes_of(topo, prev),
                            key=lambda n: (-len(prev & topo.node(n).cpus), n)):
                need = t.cpus - len(kept)
                part = prev & topo.node(n).cpus
                kept += _pick_cores(topo, part, min(need, len(part))) or []
                if len(kept) == t.cpus:
                    break
        seeds[t.name] = frozenset(kept)
        st.claim(t.name, kept)
    # 3. Place the rest, biggest first so large tenants still find a whole node.
    for t in sorted(counted, key=lambda t: (-_count(t), t.name)):
        assert isinstance(t.cpus, int)
        seed = seeds.get(t.name, frozenset())
        if len(seed) == t.cpus:
            result[t.name] = seed
            continue
        # Release the seed while searching, so a tenant can move whole if its node is full.
        st.free.update(seed)
        for c in seed:
            st.owner.pop(c, None)
        cpus = _place_count(st, config, t, t.cpus, seed)
        st.claim(t.name, cpus)
        result[t.name] = cpus

    pool = frozenset(st.free) | frozenset(listed_shared)
    placements: list[TenantPlacement] = []
    # 4. Non-exclusive counted tenants take CPUs from the shared pool; the rest get the pool.
    for t in config.tenants:
        if t.name in result:
            cpus = result[t.name]
            is_pool = False
        elif isinstance(t.cpus, int):
            cpus = _place_shared(config, topo, t, t.cpus, pool, previous.get(t.name))
            is_pool = False
        else:
            allowed = frozenset(c for n in _cpu_nodes_for(topo, t) for c in topo.node(n).cpus)
            cpus = pool & allowed if t.nodes is not None else pool
            is_pool = True
            if not cpus:
                raise PlacementError(
                    f"{config.path}:{t.line}: tenants.{t.name}: runs on the shared pool, but "
                    "no CPUs are left in it (exclusive tenants and housekeeping hold them all)",
                    "give this tenant a `cpus` count, or lower another tenant's count",
                )
        cpu_nodes = _nodes_of(topo, cpus)
        placements.append(TenantPlacement(
            tenant=t.name, cpus=cpus, cpu_nodes=cpu_nodes,
            memory_nodes=(None if is_pool and t.nodes is None
                          else _memory_nodes(topo, t, cpu_nodes)),
            exclusive=t.exclusive and not is_pool, pool=is_pool,
        ))
    return Layout(housekeeping=hk, shared_pool=pool, tenants=tuple(placements))


def _place_shared(
    config: Config, topo: Topology, t: Tenant, count: int, pool: frozenset[int],
    previous: frozenset[int] | None,
) -> frozenset[int]:
    """A non-exclusive tenant with a count: N CPUs of the shared pool, one node if possible."""
    if previous and len(previous) == count and previous <= pool:
        return frozenset(previous)
    nodes = _cpu_nodes_for(topo, t)
    by_room = sorted(nodes, key=lambda n: (-len(pool & topo.node(n).cpus), n))
    for n in by_room:
        got = _pick_cores(topo, pool & topo.node(n).cpus, count)
        if got is not None:
            return frozenset(got)
    allowed = pool if t.nodes is None else pool & frozenset(
        c for n in nodes for c in topo.node(n).cpus)
    got = _pick_cores(topo, allowed, count)
    if got is None:
        raise PlacementError(
            f"{config.path}:{t.line_of('cpus')}: tenants.{t.name}.cpus: asks for {count} "
            f"shared CPUs but the shared pool has {len(allowed)} "
            f"({format_cpulist(allowed) or '-'})"
            + ("" if t.nodes is None else
               f" on node{'s' if len(nodes) > 1 else ''} {', '.join(map(str, nodes))}"),
            "lower the count, or free CPUs from exclusive tenants",
        )
    return frozenset(got)
