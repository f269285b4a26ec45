"""Placement: tenants × topology → CPUs and memory nodes per tenant (pure, deterministic).

Rules, each traced to the studies in docs/background.md:
- A tenant asking for N CPUs gets them on one node when any node has room, with its memory
  bound to that node (Red Hat reference architecture: NUMA pinning of CPUs *and* memory, up
  to +12.5%). Which node: `slicectl.core.placement.packing` (local tenants first, a search when the
  greedy order strands one).
- Whole cores: SMT siblings stay together, and no tenant shares a physical core with
  housekeeping or another exclusive tenant unless nothing else is left
  (`slicectl.core.placement.cores`); the layout's notes say when that, or a local tenant spanning
  nodes, happened.
- Housekeeping CPUs are never given to tenants (LinkedIn, 2016: keep housekeeping apart).
- A node without memory binds memory to the nearest node(s) with memory; a node without CPUs
  is never chosen for CPUs unless named.
- Stability: with `previous` (the last placement), each tenant keeps what it had where it can,
  so changing one tenant moves no other that still fits (Red Hat reference architecture
  §4.3: live reallocation).
- Locality before stability, but never silently: a `local` tenant is never split over nodes.
  When keeping the others in place would split one although some layout puts every local
  tenant on one node, placement refuses and names the re-pack (`slicectl.core.placement.repack`:
  the fewest other tenants moved, then the fewest CPUs); with `repack` it returns that layout,
  its `moves` listed. Where no layout puts the tenant on one node, only `numa: any` lets it
  span nodes.

Why this module runs past 400 lines: one placement's steps (checks, housekeeping, explicit
lists, counted tenants, the pool, the notes) share one `Claims` and are read in their order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from slicectl.core.config.config import Config, Tenant
from slicectl.core.config.values import resolved
from slicectl.core.cpulist import format_cpulist
from slicectl.core.errors import PlacementError, Problem
from slicectl.core.placement import repack as repacking
from slicectl.core.placement.cores import Claims
from slicectl.core.placement.layout import Layout, TenantPlacement, cpu_nodes_for, split_locals
from slicectl.core.placement.packing import Ask, place_asks
from slicectl.core.placement.topology import Topology
from slicectl.core.properties.properties import Numa


def place(
    config: Config,
    topo: Topology,
    previous: Mapping[str, frozenset[int]] | None = None,
    repack: bool = False,
    may_split: bool = False,
) -> Layout:
    """Place every tenant of `config` on `topo`; `previous` keeps tenants where they were.

    A counted exclusive `numa: local` tenant that would span nodes is refused (PlacementError)
    unless some layout puts every local tenant on one node; then the refusal names that
    layout's moves, and with `repack` it is the result. With `may_split` (the generator at boot,
    on CPUs that are no longer all there), a tenant no layout puts on one node spans nodes
    instead of being refused, and the layout's notes say so."""
    previous = previous or {}
    layout = place_keeping(config, topo, previous)
    split = split_locals(config, layout)
    if not split:
        return layout
    nodes = {t.name: tuple(cpu_nodes_for(topo, t)) for t in config.tenants}
    found = repacking.fewest_moves(
        config, topo, previous, layout, split, nodes,
        lambda movers, loose: place_keeping(
            config, topo, {k: v for k, v in previous.items()
                           if not (loose and any(k == t.name for t in split))}, movers),
        lambda: place_keeping(config, topo, {}))
    if found is None:
        if may_split:
            return layout
        raise repacking.no_one_node(config, topo, layout, split[0])
    if not repack:
        raise repacking.repack_needed(config, layout, split, found)
    return found


def place_keeping(
    config: Config,
    topo: Topology,
    previous: Mapping[str, frozenset[int]],
    movers: frozenset[str] = frozenset(),
) -> Layout:
    """One placement, each tenant kept where `previous` had it; `movers` (a re-pack's) keep
    their old node only when no other tenant needs its room. Splits are not refused here."""
    for t in config.tenants:
        _check_nodes(config, topo, t)
    hk = _housekeeping(config, topo)
    claims = Claims(topo, hk)
    placed = _claim_explicit(claims, config)
    listed_shared = _withhold_shared_lists(claims, config, placed)
    counted = [t for t in config.tenants if isinstance(t.cpus, int) and t.exclusive]
    _check_total(claims, config, counted)
    placed.update(_place_counted(claims, config, counted, previous, movers))
    pool = frozenset(claims.free) | listed_shared
    placements = tuple(_finish(config, claims, t, placed, pool, previous.get(t.name))
                       for t in config.tenants)
    return Layout(housekeeping=hk, shared_pool=pool, tenants=placements,
                  notes=_notes(claims, config, placements),
                  before=tuple(sorted(previous.items())))


def _error(config: Config, line: int, key: str, message: str, hint: str) -> PlacementError:
    return PlacementError(Problem(config.path, line, key, message, hint))


def _cpus_error(config: Config, t: Tenant, message: str, hint: str) -> PlacementError:
    return _error(config, t.line_of("cpus"), f"tenants.{t.name}.cpus", message, hint)


# --- checks and housekeeping -------------------------------------------------------------------


def _check_nodes(config: Config, topo: Topology, t: Tenant) -> None:
    missing = [n for n in t.nodes or () if not topo.has_node(n)]
    if missing:
        raise _error(config, t.line_of("nodes"), f"tenants.{t.name}.nodes",
                     f"node(s) {', '.join(map(str, missing))} do not exist on this host",
                     f"nodes here: {', '.join(map(str, topo.node_ids()))}")


def _check_cpus_exist(config: Config, line: int, key: str, topo: Topology,
                      cpus: frozenset[int], what: str) -> None:
    known = {c.id for c in topo.cpus}
    if missing := cpus - known:
        raise _error(config, line, key,
                     f"CPU(s) {format_cpulist(missing)} do not exist on this host",
                     f"{what}: the host's CPUs are {format_cpulist(known)}")
    if offline := cpus & topo.offline_cpus:
        raise _error(config, line, key, f"CPU(s) {format_cpulist(offline)} are offline",
                     f"online CPUs: {format_cpulist(topo.online_cpus)}")


def _housekeeping(config: Config, topo: Topology) -> frozenset[int]:
    hk = config.housekeeping_cpus
    line, key = config.housekeeping_line, "housekeeping.cpus"
    if isinstance(hk, frozenset):
        _check_cpus_exist(config, line, key, topo, hk, "housekeeping")
        return hk
    # A count: whole cores from the lowest-numbered node(s), so the other nodes stay whole
    # for tenants (a database pinned to a node wants all of it, Red Hat reference architecture).
    claims = Claims(topo)
    chosen: list[int] = []
    for node in sorted(topo.nodes, key=lambda n: n.id):
        need = min(hk - len(chosen), len(node.cpus))
        if need > 0:
            chosen += claims.pick("", claims.node_cores[node.id], need, shared=True) or []
    if len(chosen) < hk:
        raise _error(config, line, key,
                     f"asks for {hk} housekeeping CPUs, but the host has only "
                     f"{len(topo.online_cpus)} online", "lower housekeeping.cpus")
    return frozenset(chosen)


def _check_total(claims: Claims, config: Config, counted: Sequence[Tenant]) -> None:
    asked = sum(_count(t) for t in counted)
    if asked > len(claims.free):
        biggest = max(counted, key=lambda t: (_count(t), t.name))
        each = ", ".join(f"{t.name}: {t.cpus}" for t in counted)
        raise _cpus_error(
            config, biggest,
            f"exclusive tenants ask for {asked} CPUs in all ({each}), but only "
            f"{len(claims.free)} are free",
            f"free CPUs per node: {claims.describe_free()}; lower a count, or reduce "
            "housekeeping.cpus")


def _count(t: Tenant) -> int:
    """The CPU count a tenant asks for (0 for explicit cpulists or the pool)."""
    return t.cpus if isinstance(t.cpus, int) else 0


def _protection(t: Tenant, ram: int) -> int:
    """Protected bytes a tenant puts on its node(s), a share of RAM resolved against the
    host's `ram` as systemd does. `infinity` counts as nothing here: it cannot fit beside
    anything, and build_plan's global check (slicectl.core.placement.protection), which counts it as
    all of the host's RAM, refuses it beside any other protection."""
    return sum(v for v in (resolved(t.memory_low, ram), resolved(t.memory_min, ram))
               if isinstance(v, int))


# --- explicit lists -------------------------------------------------------------------------------


def _claim_explicit(claims: Claims, config: Config) -> dict[str, frozenset[int]]:
    """Explicit cpulists: all checked, the exclusive ones claimed (overlaps are errors)."""
    hk, topo = claims.housekeeping, claims.topo
    placed: dict[str, frozenset[int]] = {}
    for t in config.tenants:
        if not isinstance(t.cpus, frozenset):
            continue
        key = f"tenants.{t.name}.cpus"
        _check_cpus_exist(config, t.line_of("cpus"), key, topo, t.cpus, f"tenant {t.name}")
        if t.cpus & hk:
            raise _cpus_error(
                config, t, f"CPU(s) {format_cpulist(t.cpus & hk)} are housekeeping CPUs",
                f"housekeeping CPUs are {format_cpulist(hk)}; pick others or change "
                "housekeeping.cpus")
        if t.exclusive:
            if other := claims.first_owner(t.cpus):
                raise _cpus_error(
                    config, t, f"CPU(s) {format_cpulist(t.cpus & placed[other])} are also "
                    f"given to exclusive tenant {other!r}",
                    "exclusive tenants cannot share CPUs; set exclusive: false on one of them "
                    "or pick other CPUs")
            claims.claim(t.name, t.cpus)
            nodes = claims.nodes_of(t.cpus)
            for n in nodes:
                claims.protected[n] += _protection(t, topo.total_memory) // max(1, len(nodes))
        placed[t.name] = t.cpus
    return placed


def _withhold_shared_lists(claims: Claims, config: Config,
                           placed: Mapping[str, frozenset[int]]) -> frozenset[int]:
    """Non-exclusive explicit lists may share with each other and the pool, never with an
    exclusive tenant ("exclusive: no other tenant shares these CPUs"); counted exclusive
    tenants must not take them."""
    listed: set[int] = set()
    for t in config.tenants:
        if isinstance(t.cpus, frozenset) and not t.exclusive:
            if other := claims.first_owner(t.cpus):
                raise _cpus_error(
                    config, t, f"CPU(s) {format_cpulist(t.cpus & placed[other])} belong to "
                    f"exclusive tenant {other!r}",
                    "a non-exclusive tenant may share CPUs with the pool and other "
                    "non-exclusive tenants only; pick other CPUs")
            listed |= t.cpus
    claims.withhold(listed)
    return frozenset(listed)


# --- counted tenants ---------------------------------------------------------------------------


def _place_counted(claims: Claims, config: Config, counted: Sequence[Tenant],
                   previous: Mapping[str, frozenset[int]], movers: frozenset[str]
                   ) -> dict[str, frozenset[int]]:
    """Keep what each counted tenant had, then place the rest (slicectl.core.placement.packing);
    `movers` are placed again, searched first from where they were."""
    kept = _keep_previous(claims, counted, previous)
    placed: dict[str, frozenset[int]] = {}
    asks: list[Ask] = []
    for t in counted:
        seed = kept.get(t.name, frozenset())
        if len(seed) == _count(t) and t.name not in movers:
            placed[t.name] = seed
        else:
            asks.append(Ask(t, config.path, _count(t), tuple(cpu_nodes_for(claims.topo, t)),
                            seed, _protection(t, claims.topo.total_memory)))
    placed.update({name: frozenset(cpus)
                   for name, cpus in place_asks(claims, asks, movers).items()})
    return placed


def _keep_previous(claims: Claims, counted: Sequence[Tenant],
                   previous: Mapping[str, frozenset[int]]) -> dict[str, frozenset[int]]:
    """What each tenant keeps of its previous CPUs (trimmed to its count, whole cores kept),
    claimed in name order before anyone is placed. Only CPUs on the nodes it may use now: a
    tenant whose `nodes` changed moves there (its memory goes there too); a `local` tenant
    keeps those of one node only, the node that held most (one that was spread, or split
    before, comes back together on one node, where it grows what it needs)."""
    kept: dict[str, frozenset[int]] = {}
    for t in sorted(counted, key=lambda t: t.name):
        prev = frozenset(previous.get(t.name, frozenset())) & frozenset(claims.free)
        if t.nodes is not None:
            prev &= frozenset(c for n in cpu_nodes_for(claims.topo, t)
                              for c in claims.node_cpus[n])
        if prev and t.numa is Numa.LOCAL and len(claims.nodes_of(prev)) > 1:
            home = max(claims.nodes_of(prev),
                       key=lambda n: (len(prev & claims.node_cpus[n]), -n))
            prev &= claims.node_cpus[home]
        if prev:
            kept[t.name] = _trim(claims, prev, _count(t))
            claims.claim(t.name, kept[t.name])
    return kept


def _trim(claims: Claims, prev: frozenset[int], count: int) -> frozenset[int]:
    """All of `prev` (replaying a placement changes nothing), or when shrinking whole cores
    on the node(s) that held most of it, so a local tenant ends up on one node when its new
    count fits there."""
    if len(prev) <= count:
        return prev
    kept: list[int] = []
    for n in sorted(claims.nodes_of(prev),
                    key=lambda n: (-len(prev & claims.node_cpus[n]), n)):
        part = prev & claims.node_cpus[n]
        need = min(count - len(kept), len(part))
        kept += claims.pick("", claims.node_cores[n], need, shared=True, available=part) or []
        if len(kept) == count:
            break
    return frozenset(kept)


# --- the pool, shared counts, and the result ----------------------------------------------------


def _finish(config: Config, claims: Claims, t: Tenant, placed: Mapping[str, frozenset[int]],
            pool: frozenset[int], previous: frozenset[int] | None) -> TenantPlacement:
    """One tenant's placement: what it was given, shared CPUs from the pool, or the pool."""
    topo = claims.topo
    is_pool = False
    if t.name in placed:
        cpus = placed[t.name]
    elif isinstance(t.cpus, int):
        cpus = _place_shared(config, topo, t, t.cpus, pool, previous)
    else:
        cpus, is_pool = _pool_for(config, claims, t, pool), True
    cpu_nodes = claims.nodes_of(cpus)
    return TenantPlacement(
        tenant=t.name, cpus=cpus, cpu_nodes=cpu_nodes,
        memory_nodes=(None if is_pool and t.nodes is None
                      else _memory_nodes(topo, t, cpu_nodes)),
        exclusive=t.exclusive and not is_pool, pool=is_pool,
    )


def _pool_for(config: Config, claims: Claims, t: Tenant, pool: frozenset[int]
              ) -> frozenset[int]:
    cpus = pool
    if t.nodes is not None:  # the pool on its nodes only
        cpus = pool & frozenset().union(*(claims.node_cpus[n]
                                          for n in cpu_nodes_for(claims.topo, t)))
    if not cpus:
        raise _error(config, t.line, f"tenants.{t.name}",
                     "runs on the shared pool, but no CPUs are left in it (exclusive tenants "
                     "and housekeeping hold them all)",
                     "give this tenant a `cpus` count, or lower another tenant's count")
    return cpus


def _memory_nodes(topo: Topology, t: Tenant, cpu_nodes: tuple[int, ...]
                  ) -> tuple[int, ...] | None:
    """Memory binding: named nodes, else the CPUs' nodes (nearest with memory); any: none."""
    if t.numa is Numa.ANY and t.nodes is None:
        return None
    base = t.nodes if t.nodes is not None else cpu_nodes
    mems = sorted({m for n in base for m in topo.memory_nodes_for(n)})
    return tuple(mems) or None


def _place_shared(
    config: Config, topo: Topology, t: Tenant, count: int, pool: frozenset[int],
    previous: frozenset[int] | None,
) -> frozenset[int]:
    """A non-exclusive tenant with a count: N CPUs of the shared pool, one node if possible,
    on cores of the pool's own where it can."""
    if previous and len(previous) == count and previous <= pool:
        return frozenset(previous)
    claims = Claims(topo)  # read-only here: who holds what does not change any more
    nodes = cpu_nodes_for(topo, t)
    for n in sorted(nodes, key=lambda n: (-len(pool & topo.node(n).cpus), n)):
        got = claims.pick(t.name, claims.node_cores[n], count, shared=True,
                          available=pool & claims.node_cpus[n])
        if got is not None:
            return frozenset(got)
    allowed = pool if t.nodes is None else pool & frozenset(
        c for n in nodes for c in topo.node(n).cpus)
    got = claims.pick(t.name, topo.cores(), count, shared=True, available=allowed)
    if got is None:
        raise _cpus_error(
            config, t,
            f"asks for {count} shared CPUs but the shared pool has {len(allowed)} "
            f"({format_cpulist(allowed) or '-'})"
            + ("" if t.nodes is None else
               f" on node{'s' if len(nodes) > 1 else ''} {', '.join(map(str, nodes))}"),
            "lower the count, or free CPUs from exclusive tenants")
    return frozenset(got)


def _split_housekeeping(claims: Claims, placements: Sequence[TenantPlacement]) -> list[str]:
    """A note when housekeeping holds part of a physical core whose other threads run the
    shared pool or shared tenants beside it (`housekeeping.cpus: 1` on an SMT host); an
    exclusive tenant there has a note of its own."""
    hk = claims.housekeeping
    siblings = {c.id: c.siblings for c in claims.topo.cpus}
    others = frozenset().union(*(siblings.get(cpu, frozenset()) for cpu in hk)) - hk
    exclusive = frozenset().union(*(p.cpus for p in placements if p.exclusive))
    if not hk or not others - exclusive:
        return []
    return [f"housekeeping CPU(s) {format_cpulist(hk)} share physical cores with CPU(s) "
            f"{format_cpulist(others - exclusive)} (SMT siblings), which run the shared pool "
            f"beside housekeeping; housekeeping.cpus: {len(hk | others)} keeps whole cores "
            "apart"]


def _could_span(claims: Claims, t: Tenant) -> bool:
    """Whether a spread tenant asks for more than a core, on two nodes or more: dealt a whole
    core per node, it spans them when they have room."""
    nodes = cpu_nodes_for(claims.topo, t)
    threads = min((len(core) for n in nodes for core in claims.node_cores[n]), default=1)
    return isinstance(t.cpus, int) and len(nodes) > 1 and t.cpus > threads


def _notes(claims: Claims, config: Config, placements: Sequence[TenantPlacement]
           ) -> tuple[str, ...]:
    """Where the layout falls short of the rules, said once per tenant (pair)."""
    notes = _split_housekeeping(claims, placements)
    for t, p in zip(config.tenants, placements, strict=True):
        if p.exclusive:
            for holder, (mine, theirs) in sorted(claims.shares_core(p.tenant, p.cpus).items()):
                if holder == "housekeeping" or holder > p.tenant:
                    who = holder if holder == "housekeeping" else f"tenant {holder}"
                    notes.append(
                        f"tenant {p.tenant} shares physical cores with {who}: CPU(s) "
                        f"{format_cpulist(mine)} and {format_cpulist(theirs)} are SMT "
                        "siblings (no whole cores were left for it)")
        if t.numa is Numa.LOCAL and isinstance(t.cpus, int) and len(p.cpu_nodes) > 1:
            notes.append(f"tenant {p.tenant} (numa: local) spans nodes "
                         f"{', '.join(map(str, p.cpu_nodes))}: no node had {t.cpus} CPUs "
                         "free for it")
        if (t.numa is Numa.SPREAD and p.exclusive and len(p.cpu_nodes) == 1
                and _could_span(claims, t)):
            notes.append(f"tenant {p.tenant} (numa: spread) runs on node {p.cpu_nodes[0]} "
                         "only: no other node had a free core left for it")
    return tuple(notes)
