"""Which node each counted exclusive tenant lands on (pure; part of placement).

Greedy placement in a fixed order strands tenants: a big `spread` tenant placed first takes
a core on every node, and `local` tenants that would have fitted one node each no longer do.
So `local` tenants (and `any` ones, which prefer one node) are assigned to nodes first by a
search: biggest first onto the node with the least room left (best fit), which is the whole
answer on almost every host; when that greedy path leaves a tenant without a node, the
search backtracks over the other assignments (exhaustive on small hosts, bounded on large
ones, nodes that are interchangeable tried once). `spread` tenants are dealt afterwards from
what is left, a whole core per node in turn. Passes relax in this order: every local and any
tenant on one node without sharing a core; local ones on one node without sharing; local ones
on one node sharing cores if they must; and last the plain greedy order, in which a tenant
that fits no node takes the fewest, fullest nodes (plan says so).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from slicectl.core.config.config import Tenant
from slicectl.core.errors import PlacementError, Problem
from slicectl.core.frozen import frozen
from slicectl.core.placement.cores import Claims, cores_of
from slicectl.core.properties.properties import Numa

SEARCH_BUDGET = 5000  # node tries per pass: exhaustive for 5 tenants on 4 nodes, ms on hosts


@frozen
class Ask:
    """A counted exclusive tenant still to place, and where it may go."""

    tenant: Tenant
    file: str
    count: int
    candidates: tuple[int, ...]  # nodes it may take CPUs from
    seed: frozenset[int]  # what it held before, kept where it can be (stability)
    protection: int  # memory.low + memory.min, checked against each node's memory

    @property
    def name(self) -> str:
        return self.tenant.name

    @property
    def pinned(self) -> bool:
        """Named one node: it may not spill over to others."""
        return self.tenant.nodes is not None and len(self.tenant.nodes) == 1

    def problem(self, message: str, hint: str) -> PlacementError:
        return PlacementError(Problem(self.file, self.tenant.line_of("cpus"),
                                      f"tenants.{self.name}.cpus", message, hint))


def place_asks(claims: Claims, asks: Sequence[Ask], first: frozenset[str] = frozenset()
               ) -> dict[str, list[int]]:
    """CPUs for every ask, claimed in `claims`; raises PlacementError if they do not fit.

    `first`: asks searched before the others (a re-pack's movers: each tries its old node
    first, and gives it up only when a bigger tenant needs the room). Each pass is tried
    first with every `spread` tenant spanning two nodes, then without (plan notes it)."""
    local = [a for a in asks if a.tenant.numa is Numa.LOCAL]
    single = [a for a in asks if a.tenant.numa is not Numa.SPREAD]
    spreads = any(_can_span(a) for a in asks)
    passes = ((single, False), (local, False), (local, True))
    for searched, shared in passes:
        names = {a.name for a in searched}
        rest = [a for a in asks if a.name not in names]
        for span in (True, False) if spreads else (False,):
            saved = claims.save()
            found = _search(claims, _search_order(searched, first), rest, shared, span)
            if found is not None:
                found.update(_place_in_order(claims, rest))
                return found
            claims.restore(saved)
    # No layout puts every local tenant on one node: each as well as it can, or an error.
    return _place_in_order(claims, asks)


def _can_span(ask: Ask) -> bool:
    """A spread tenant that can span nodes: two CPUs or more, two candidate nodes or more."""
    return ask.tenant.numa is Numa.SPREAD and ask.count > 1 and len(ask.candidates) > 1


def _search_order(asks: Sequence[Ask], first: frozenset[str]) -> list[Ask]:
    return ([a for a in _biggest_first(asks) if a.name in first]
            + [a for a in _biggest_first(asks) if a.name not in first])


def _biggest_first(asks: Sequence[Ask]) -> list[Ask]:
    return sorted(asks, key=lambda a: (-a.count, a.name))


# --- one tenant on one node ------------------------------------------------------------------


def on_node(claims: Claims, ask: Ask, node: int, shared: bool) -> list[int] | None:
    """The ask's CPUs on `node` (its seed kept when it is all there), or None."""
    if not claims.memory_fits(node, ask.protection):
        return None
    cores = claims.node_cores[node]
    seed = ask.seed
    if seed and seed <= claims.node_cpus[node] and seed <= claims.free:
        claims.claim(ask.name, seed)
        extra = claims.pick(ask.name, cores, ask.count - len(seed), shared=shared, near=seed)
        claims.release(seed)
        if extra is not None:
            return sorted(seed) + extra
    if claims.free_count[node] < ask.count:
        return None
    return claims.pick(ask.name, cores, ask.count, shared=shared)


def _node_order(claims: Claims, ask: Ask) -> list[int]:
    """The seed's node first, then best fit: least room left, then lowest id."""
    fits = sorted((claims.free_count[n] - ask.count, n) for n in ask.candidates
                  if claims.free_count[n] >= ask.count)
    order = [n for _, n in fits]
    seed_nodes = {claims.node_of.get(c) for c in ask.seed}
    if len(seed_nodes) == 1 and (home := seed_nodes.pop()) in ask.candidates:
        order = [home] + [n for n in order if n != home]
    return order


def _take(claims: Claims, ask: Ask, node: int, cpus: list[int]) -> None:
    claims.claim(ask.name, cpus)
    claims.protected[node] += ask.protection


def _untake(claims: Claims, ask: Ask, node: int, cpus: list[int]) -> None:
    claims.release(cpus)
    claims.protected[node] -= ask.protection


# --- the search ------------------------------------------------------------------------------


class _Search:
    """Depth-first over node choices with undo; an explicit stack, so 1,000 tenants fit."""

    def __init__(self, claims: Claims, asks: list[Ask], rest: list[Ask], shared: bool,
                 span: bool) -> None:
        self.claims, self.asks, self.rest, self.shared = claims, asks, rest, shared
        self.span = span
        self.budget = SEARCH_BUDGET
        everyone = asks + rest
        seed_nodes = {claims.node_of.get(c) for a in everyone for c in a.seed}
        # Nodes that every remaining tenant treats alike can stand in for each other.
        self.role = {n: (n in seed_nodes, tuple(n in a.candidates for a in everyone))
                     for n in claims.node_cores}

    def run(self) -> dict[str, list[int]] | None:
        asks, claims = self.asks, self.claims
        chosen: list[tuple[int, list[int]]] = []
        levels: list[Iterator[int]] = []
        if asks:
            claims.release(asks[0].seed)
            levels.append(self.options(asks[0]))
        while True:
            i = len(chosen)
            if i == len(asks):
                if _flexible_fit(claims, self.rest, self.shared, self.span):
                    return {a.name: cpus for a, (_, cpus) in zip(asks, chosen, strict=True)}
                if not asks:
                    return None
                node, cpus = chosen.pop()
                _untake(claims, asks[i - 1], node, cpus)
                continue
            step = self.advance(asks[i], levels[i])
            if step is not None:
                chosen.append(step)
                if i + 1 < len(asks):
                    claims.release(asks[i + 1].seed)
                    levels.append(self.options(asks[i + 1]))
                continue
            # Level i is exhausted: give its seed back and undo the level above.
            claims.claim(asks[i].name, asks[i].seed)
            levels.pop()
            if not chosen or self.budget < 0:
                return None
            node, cpus = chosen.pop()
            _untake(claims, asks[i - 1], node, cpus)

    def advance(self, ask: Ask, options: Iterator[int]) -> tuple[int, list[int]] | None:
        for node in options:
            self.budget -= 1
            if self.budget < 0:
                return None
            cpus = on_node(self.claims, ask, node, self.shared)
            if cpus is not None:
                _take(self.claims, ask, node, cpus)
                return node, cpus
        return None

    def options(self, ask: Ask) -> Iterator[int]:
        """Candidate nodes in preference order, each class of interchangeable nodes once.
        Keys are computed only when the search comes back to this level (after the first
        node failed), so the greedy path costs nothing extra; the claims are then as they
        were when the level was entered."""
        order = _node_order(self.claims, ask)
        tried: set[tuple[object, ...]] = set()
        for k, node in enumerate(order):
            if k == 1:
                tried.add(self.key(order[0]))
            if k:
                key = self.key(node)
                if key in tried:
                    continue
                tried.add(key)
            yield node

    def key(self, node: int) -> tuple[object, ...]:
        c = self.claims
        cores = tuple(sorted((len(core), sum(x in c.free for x in core),
                              any(x in c.housekeeping or x in c.owner for x in core))
                             for core in c.node_cores[node]))
        room = c.memory[node] - c.protected[node] if c.memory[node] else None
        return (self.role[node], c.free_count[node], room, cores)


def _search(claims: Claims, asks: list[Ask], rest: list[Ask], shared: bool, span: bool
            ) -> dict[str, list[int]] | None:
    """Every ask on one of its candidate nodes, the rest still fitting; None if not found."""
    # One that fits no node alone, even with every seed given back, fails every branch.
    seeds = frozenset().union(*(a.seed for a in asks + rest)) - claims.free
    for ask in asks:
        if not any(claims.free_count[n] + len(seeds & claims.node_cpus[n]) >= ask.count
                   for n in ask.candidates):
            return None
    if sum(a.count for a in asks + rest) > len(claims.free) + sum(
            len(a.seed) for a in asks + rest):
        return None
    return _Search(claims, asks, rest, shared, span).run()


def _flexible_fit(claims: Claims, rest: Sequence[Ask], shared: bool, span: bool) -> bool:
    """Whether the tenants placed after the search still find room in their nodes: by count
    when cores may be shared, else by whole free cores (a remainder needs a core of its own).
    With `span`, a spread tenant that can span nodes needs room on two of them."""
    held = [c for a in rest for c in a.seed if c not in claims.free]  # released at their turn
    room: dict[int, list[int]] = {
        n: ([1] * (claims.free_count[n] + len(claims.node_cpus[n].intersection(held)))
            if shared else sorted((len(core) for core in claims.whole_cores(n)), reverse=True))
        for n in claims.node_cores}
    for ask in sorted(rest, key=lambda a: (len(a.candidates), -a.count, a.name)):
        if span and _can_span(ask) and sum(1 for n in ask.candidates if room[n]) < 2:
            return False
        sizes = sorted((s for n in ask.candidates for s in room[n]), reverse=True)
        covered, used = 0, 0
        while covered < ask.count and used < len(sizes):
            covered += sizes[used]
            used += 1
        if covered < ask.count:
            return False
        _consume(room, ask.candidates, sizes[:used])
    return True


def _consume(room: dict[int, list[int]], nodes: Sequence[int], sizes: list[int]) -> None:
    for size in sizes:
        for n in nodes:
            if size in room[n]:
                room[n].remove(size)
                break


# --- after the search, and the greedy fallback --------------------------------------------------


def _place_in_order(claims: Claims, asks: Sequence[Ask]) -> dict[str, list[int]]:
    """One at a time: local and any tenants biggest first (one node if one has room), then
    spread tenants."""
    result: dict[str, list[int]] = {}
    ordered = _biggest_first([a for a in asks if a.tenant.numa is not Numa.SPREAD])
    ordered += _biggest_first([a for a in asks if a.tenant.numa is Numa.SPREAD])
    for ask in ordered:
        claims.release(ask.seed)
        result[ask.name] = place_one(claims, ask)
    return result


def place_one(claims: Claims, ask: Ask) -> list[int]:
    """One ask by itself: dealt if spread, else one node (best fit), else the fewest nodes."""
    if ask.tenant.numa is Numa.SPREAD:
        return deal(claims, ask)
    cpus = _one_node(claims, ask)
    return cpus if cpus is not None else _split(claims, ask)


def _one_node(claims: Claims, ask: Ask) -> list[int] | None:
    for shared in (False, True):
        for node in _node_order(claims, ask):
            cpus = on_node(claims, ask, node, shared)
            if cpus is not None:
                _take(claims, ask, node, cpus)
                return cpus
    return None


def _split(claims: Claims, ask: Ask) -> list[int]:
    """No single node has room: the fewest nodes, fullest first (plan notes it)."""
    if ask.pinned:
        raise _pinned_error(claims, ask)
    chosen: list[int] = []
    for n in sorted(ask.candidates, key=lambda n: (-claims.free_count[n], n)):
        need = min(ask.count - len(chosen), claims.free_count[n])
        if need:  # nodes differ, so picks need not be claimed between them
            chosen += claims.pick(ask.name, claims.node_cores[n], need, shared=True) or []
    if len(chosen) < ask.count:
        free_there = sum(claims.free_count[n] for n in ask.candidates)
        on = ("" if ask.tenant.nodes is None
              else f" on nodes {', '.join(map(str, ask.candidates))}")
        raise ask.problem(
            f"asks for {ask.count} CPUs but only {free_there} are free{on} for exclusive use",
            f"free CPUs per node: {claims.describe_free()}; lower the count, free CPUs "
            "from another tenant, or reduce housekeeping.cpus")
    claims.claim(ask.name, chosen)
    return chosen


def _pinned_error(claims: Claims, ask: Ask) -> PlacementError:
    """The message quotes the free CPUs of the node(s) the tenant could take them from, so
    it says what the hint's per-node list says."""
    named = ask.tenant.nodes[0] if ask.tenant.nodes else ask.candidates[0]
    free = sum(claims.free_count[n] for n in ask.candidates)
    if claims.topo.node(named).cpus:
        where = f"on node {named}, which has {free} free"
    else:  # a CPU-less node: its CPUs come from the nearest node(s) with CPUs
        many = len(ask.candidates) > 1
        where = (f"for node {named}, which has no CPUs; the nearest node{'s' if many else ''} "
                 f"with CPUs ({', '.join(map(str, ask.candidates))}) "
                 f"{'have' if many else 'has'} {free} free")
    if free >= ask.count:  # enough CPUs: the memory protection is what does not fit
        where += ", but not the memory for its memory_low + memory_min"
    return ask.problem(f"asks for {ask.count} CPUs {where}",
                       f"free CPUs per node: {claims.describe_free()}")


def deal(claims: Claims, ask: Ask) -> list[int]:
    """Spread: a whole free core per node in turn; the remainder (less than a core) from the
    node whose turn is next, sharing a core only when no node has a free one."""
    nodes = list(ask.candidates)
    chosen: list[int] = []
    whole = {n: claims.whole_cores(n) for n in nodes}
    turn, dealt = 0, True
    while dealt and len(chosen) < ask.count:
        dealt = False
        for i, n in enumerate(nodes):
            need = ask.count - len(chosen)
            core = next((c for c in whole[n] if len(c) <= need), None) if need else None
            if core is not None:
                whole[n].remove(core)
                chosen += core
                turn, dealt = i + 1, True
    need = ask.count - len(chosen)
    if need:
        claims.claim(ask.name, chosen)  # so the remainder completes the tenant's own cores
        rest = _remainder(claims, ask, nodes[turn:] + nodes[:turn], need)
        claims.release(chosen)
        if rest is None:
            raise ask.problem(
                f"asks for {ask.count} CPUs spread over nodes "
                f"{', '.join(map(str, nodes))}, but only "
                f"{sum(claims.free_count[n] for n in nodes)} are free there",
                f"free CPUs per node: {claims.describe_free()}")
        chosen += rest
    claims.claim(ask.name, chosen)
    return chosen


def _remainder(claims: Claims, ask: Ask, nodes: list[int], need: int) -> list[int] | None:
    tries: list[tuple[list[int], bool]] = [([n], False) for n in nodes]
    tries += [(nodes, False), (nodes, True)]
    for group, shared in tries:
        got = claims.pick(ask.name, cores_of(claims, group), need, shared=shared)
        if got is not None:
            return got
    return None
