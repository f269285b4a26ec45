"""Re-packing: the layout that puts every `numa: local` tenant on one node while moving the
fewest other tenants (then the fewest CPUs), and the refusals that name it (pure).

Why: stability keeps every tenant where the last apply put it, so a tenant that grows past its
node's free CPUs would spill onto a second node although moving a smaller tenant makes room.
For a database, half its memory remote is a silent performance regression (Red Hat, "NUMA
pinning of consolidated databases"); slicectl refuses it and says which moves avoid it.

How the search is bounded: sets of tenants to move are first checked by CPU counts against
each node's room (an exact bin packing of the split tenants and the movers, a handful of
items), smallest sets first, then fewest CPUs; tenants that are interchangeable for that check
(same node, count and allowed nodes) are tried once per class, and on hosts with more than FEW
of them only those on a node a split tenant may use; at most MAX_MOVERS tenants move and at
most CHECKS sets are checked. The sets that pass are placed for real, the best first
(`place_keeping` with them as movers: each mover tries its old node first), and the first
layout with no local tenant split wins: exact on small hosts. When none does, the tenants are
placed afresh, a valid re-pack that may move more tenants than needed (the moves are listed).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence

from slicectl.core.config.config import Config, Tenant
from slicectl.core.cpulist import format_cpulist
from slicectl.core.errors import PlacementError, Problem, RepackNeeded
from slicectl.core.placement.layout import Layout, RepackMove, split_locals
from slicectl.core.placement.topology import Topology
from slicectl.core.properties.properties import Numa

MAX_MOVERS = 3  # tenants one re-pack may move before falling back to a fresh layout
CHECKS = 20_000  # sets of movers checked by counts
TRIALS = 8  # sets placed for real, best first
FEW = 12  # up to this many movers, every one is tried (a move may make room for a move)


Nodes = Mapping[str, tuple[int, ...]]  # tenant -> the nodes it may take CPUs from


def fewest_moves(config: Config, topo: Topology, previous: Mapping[str, frozenset[int]],
                 layout: Layout, split: Sequence[Tenant], nodes: Nodes,
                 moving: Callable[[frozenset[str], bool], Layout],
                 afresh: Callable[[], Layout]) -> Layout | None:
    """The re-pack of `layout` (placed keeping `previous`) that puts the `split` tenants, and
    every other local tenant, on one node each; None when no layout does. `moving(movers,
    loose)` places keeping `previous` but for the movers (with `loose`, the split tenants
    keep nothing either, so a mover may take their old CPUs); `afresh()` places without
    `previous`."""
    if not previous:
        return None  # `layout` was placed afresh already
    for movers in _candidate_sets(config, topo, previous, layout, split, nodes):
        for loose in (False, True):  # the split tenants kept where they were, if it works
            trial = moving(movers, loose)
            if not split_locals(config, trial):
                return _with_moves(trial, layout, previous, split)
    fresh = afresh()
    if split_locals(config, fresh):
        return None
    return _with_moves(fresh, layout, previous, split)


def _with_moves(found: Layout, layout: Layout, previous: Mapping[str, frozenset[int]],
                split: Sequence[Tenant]) -> Layout:
    """`found` with its moves: the running tenants (in `previous`) other than the split ones
    whose CPUs differ from where keeping everyone in place put them."""
    from dataclasses import replace

    names = {t.name for t in split}
    moves = tuple(
        RepackMove(p.tenant, layout.of(p.tenant).cpus, p.cpus, layout.of(p.tenant).cpu_nodes,
             p.cpu_nodes)
        for p in found.tenants
        if p.tenant in previous and p.tenant not in names
        and p.cpus != layout.of(p.tenant).cpus)
    return replace(found, moves=moves, before=tuple(sorted(previous.items())))


# --- which tenants to move ------------------------------------------------------------------


def _candidate_sets(config: Config, topo: Topology, previous: Mapping[str, frozenset[int]],
                    layout: Layout, split: Sequence[Tenant], nodes: Nodes
                    ) -> Iterator[frozenset[str]]:
    """Sets of running tenants whose moving lets every split tenant onto one node, by counts:
    fewest tenants first, then fewest CPUs, then names."""
    names = {t.name for t in split}
    room = _room(config, topo, layout, names)
    wanted = [(_count(t), nodes[t.name]) for t in split]
    useful = {n for _, allowed in wanted for n in allowed}
    movers = _movers(config, nodes, previous, layout, names, useful)
    checks = 0
    for k in range(1, MAX_MOVERS + 1):
        fitting: list[tuple[int, list[str], frozenset[str]]] = []
        seen: set[tuple[tuple[int, int, tuple[int, ...]], ...]] = set()
        for combo in itertools.combinations(movers, k):
            key = tuple(sorted(m[1] for m in combo))
            if key in seen:
                continue
            seen.add(key)
            checks += 1
            if checks > CHECKS:
                break
            freed = dict(room)
            for _, (node, count, _nodes) in combo:
                freed[node] += count
            items = wanted + [(count, nodes) for _, (_node, count, nodes) in combo]
            if _fits(sorted(items, key=lambda i: -i[0]), freed):
                chosen = sorted(m[0] for m in combo)
                fitting.append((sum(m[1][1] for m in combo), chosen, frozenset(chosen)))
        for _, _, movers_set in sorted(fitting)[:TRIALS]:
            yield movers_set
        if fitting or checks > CHECKS:
            return


def _movers(config: Config, nodes: Nodes, previous: Mapping[str, frozenset[int]],
            layout: Layout, split: set[str], useful: set[int]
            ) -> list[tuple[str, tuple[int, int, tuple[int, ...]]]]:
    """Running counted exclusive tenants on one node that may go elsewhere, each with its
    class (node, count, allowed nodes); at most MAX_MOVERS of a class, by name."""
    per_class: dict[tuple[int, int, tuple[int, ...]], list[str]] = {}
    for t in sorted(config.tenants, key=lambda t: t.name):
        if (t.name in split or t.name not in previous or not isinstance(t.cpus, int)
                or not t.exclusive or t.numa is Numa.SPREAD):
            continue
        p = layout.of(t.name)
        allowed = nodes[t.name]
        if len(p.cpu_nodes) != 1 or len(allowed) < 2:
            continue
        per_class.setdefault((p.cpu_nodes[0], t.cpus, allowed), []).append(t.name)
    movers = sorted(((name, key) for key, members in per_class.items()
                     for name in members[:MAX_MOVERS]),
                    key=lambda m: (-m[1][1], m[0]))
    if len(movers) > FEW:  # many: only those on a node a split tenant may use
        movers = [m for m in movers if m[1][0] in useful]
    return movers


def _room(config: Config, topo: Topology, layout: Layout, split: set[str]) -> dict[int, int]:
    """CPUs of each node a counted exclusive tenant could take, the split tenants' own counted
    as free: not housekeeping, another exclusive tenant's, or a shared list's."""
    held = set(layout.housekeeping)
    for p in layout.tenants:
        if p.exclusive and p.tenant not in split:
            held |= p.cpus
    for t in config.tenants:
        if isinstance(t.cpus, frozenset) and not t.exclusive:
            held |= t.cpus
    return {n.id: len(n.cpus - held) for n in topo.nodes}


def _fits(items: Sequence[tuple[int, tuple[int, ...]]], room: dict[int, int]) -> bool:
    """Whether each item (a count and its allowed nodes), biggest first, finds one node with
    room for it: depth first; nodes with the same room that the items left allow alike are
    interchangeable, tried once per level."""
    if not items:
        return True
    (count, nodes), rest = items[0], items[1:]
    tried: set[tuple[int, tuple[bool, ...]]] = set()
    for n in nodes:
        key = (room[n], tuple(n in allowed for _, allowed in rest))
        if room[n] < count or key in tried:
            continue
        tried.add(key)
        room[n] -= count
        ok = _fits(rest, room)
        room[n] += count
        if ok:
            return True
    return False


def _count(t: Tenant) -> int:
    return t.cpus if isinstance(t.cpus, int) else 0


# --- the refusals ---------------------------------------------------------------------------


def repack_needed(config: Config, layout: Layout, split: Sequence[Tenant],
                  found: Layout) -> RepackNeeded:
    """Keeping the others in place splits a local tenant, and a re-pack avoids it: say both."""
    t = split[0]
    p = layout.of(t.name)
    moves = "; ".join(m.describe() for m in found.moves) or "none"
    others = (f" (and {', '.join(s.name for s in split[1:])})" if len(split) > 1 else "")
    home = found.of(t.name).cpu_nodes
    return RepackNeeded(Problem(
        config.path, t.line_of("cpus"), f"tenants.{t.name}.cpus",
        f"keeping every other tenant where it is would split tenant {t.name}{others} "
        f"(numa: local) over nodes {', '.join(map(str, p.cpu_nodes))} (CPUs "
        f"{format_cpulist(p.cpus)}): half its memory remote",
        f"a re-pack puts it on node {', '.join(map(str, home))} by moving "
        f"{len(found.moves)} tenant(s): {moves}. Run plan, then apply, with --repack to do "
        f"it; or set numa: any on {t.name} to allow the split"))


def no_one_node(config: Config, topo: Topology, layout: Layout, t: Tenant) -> PlacementError:
    """No layout puts the local tenant on one node: only `numa: any` lets it span nodes."""
    p = layout.of(t.name)
    free = _room(config, topo, layout, {t.name})
    listed = "; ".join(f"node{n}: {k}" for n, k in sorted(free.items()))
    return PlacementError(Problem(
        config.path, t.line_of("cpus"), f"tenants.{t.name}.cpus",
        f"asks for {t.cpus} CPUs with numa: local, but no node can hold them all beside the "
        f"other tenants (they would span nodes {', '.join(map(str, p.cpu_nodes))})",
        f"CPUs free for it per node: {listed}; set numa: any on {t.name} to let it span "
        f"nodes (its memory is then not bound), or lower cpus to "
        f"{max(free.values(), default=0)}"))
