"""The balancer's decision (pure): samples of elastic tenants in, whole-core moves out.

An elastic tenant (`cpus_min`/`cpus_max` in tenants.yaml) that has been starved for the whole
window receives one whole core from an elastic tenant on the same node that has been idle for
the whole window, within both tenants' floors and ceilings, and then neither is moved again
for the cooldown. The policy (`balance:`) and the invariants are in docs/balance.md; nothing
here reads the host or acts on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from slicectl.core.config.tenants import BalancePolicy, Config
from slicectl.core.cpulist import format_cpulist
from slicectl.core.errors import PlacementError, Problem
from slicectl.core.frozen import frozen
from slicectl.core.placement.layout import Layout
from slicectl.core.placement.topology import Topology

Core = tuple[int, ...]
_US = 1_000_000


@frozen
class Reading:
    """One sample of a tenant: when (seconds, monotonic), its CPU use as a share of the CPUs
    it held then (%), and its cpu.pressure `some avg10` (%; None when not read)."""

    time: float
    cpu_percent: float
    pressure: float | None = None


@frozen
class Elastic:
    """An elastic tenant as the balancer sees it: where it may hold CPUs, what it holds, its
    bounds, its recent readings and when a core last moved to or from it."""

    name: str
    nodes: frozenset[int]  # the node(s) it may hold CPUs on
    cpus: frozenset[int]
    floor: int
    ceiling: int
    history: tuple[Reading, ...] = ()
    last_move: float | None = None


@frozen
class Move:
    """One whole core from `donor` to `receiver`, on `node`; `reason` gives the figures."""

    donor: str
    receiver: str
    cpus: frozenset[int]
    node: int
    reason: str


@frozen
class _State:
    """A tenant's condition over the window, with the figures that show it."""

    tenant: Elastic
    starved: bool
    idle: bool
    low: float  # lowest CPU use in the window (%)
    high: float  # highest CPU use in the window (%)
    pressure: float  # highest pressure in the window (%; 0 when never read)


def window(history: Sequence[Reading], since: float | None, now: float,
           policy: BalancePolicy) -> tuple[Reading, ...] | None:
    """The readings of the last window, or None when they do not cover it: a tenant moved
    within the window (its readings describe another size), or a sample is missing at the
    window's start, inside it (a gap of more than two intervals) or at its end."""
    span, interval = policy.window / _US, policy.interval / _US
    start = now - span
    if since is not None and since > start:
        return None
    recent = tuple(r for r in history if start <= r.time <= now)
    if not recent or recent[0].time > start + interval or now - recent[-1].time > interval:
        return None
    if any(b.time - a.time > 2 * interval for a, b in zip(recent, recent[1:], strict=False)):
        return None
    return recent


def _state(t: Elastic, now: float, policy: BalancePolicy) -> _State | None:
    """How `t` fared over the window; None when the window is not covered yet."""
    readings = window(t.history, t.last_move, now, policy)
    if readings is None:
        return None
    pressured = [r.pressure is not None and r.pressure >= policy.pressure_above
                 for r in readings]
    starved = all(r.cpu_percent >= policy.grow_above or p
                  for r, p in zip(readings, pressured, strict=True))
    idle = not any(pressured) and all(r.cpu_percent < policy.shrink_below for r in readings)
    uses = [r.cpu_percent for r in readings]
    pressure = max((r.pressure for r in readings if r.pressure is not None), default=0.0)
    return _State(t, starved, idle, min(uses), max(uses), pressure)


def may_be_starved(history: Sequence[Reading], now: float, policy: BalancePolicy) -> bool:
    """Whether the latest reading up to `now` is starved: only a tenant that passes this
    cheap test can be starved over its whole window, and a round in which no tenant passes
    it moves nothing (its decision need not be made)."""
    for r in reversed(history):
        if r.time <= now:
            return r.cpu_percent >= policy.grow_above or (
                r.pressure is not None and r.pressure >= policy.pressure_above)
    return False


def _cooling(t: Elastic, now: float, policy: BalancePolicy) -> bool:
    return t.last_move is not None and now - t.last_move < policy.cooldown / _US


def _movable_cores(donor: Elastic, receiver: Elastic, topo: Topology,
                   untouchable: frozenset[int]) -> list[tuple[int, Core]]:
    """(node, core) of the donor's whole cores on the receiver's nodes, best first: on the
    node where the receiver holds most, then the donor's highest-numbered core."""
    held = {n: len(receiver.cpus & topo.node(n).cpus) for n in receiver.nodes
            if topo.has_node(n)}
    found = []
    for core in topo.cores():
        node = topo.node_of(core[0])
        if node is None or node not in receiver.nodes or node not in donor.nodes:
            continue
        # Whole cores only: every online thread of the core is the donor's, none is
        # housekeeping's or a fixed tenant's.
        if set(core) <= donor.cpus and not set(core) & untouchable:
            found.append((node, core))
    return sorted(found, key=lambda nc: (-held.get(nc[0], 0), -nc[1][0]))


def _fits(donor: _State, receiver: _State, core: Core, policy: BalancePolicy) -> bool:
    """Floors and ceilings hold after the move, and the donor stays below grow_above with
    its busiest reading spread over what it keeps (else it would ask the core back)."""
    have, give = len(donor.tenant.cpus), len(core)
    if have - give < donor.tenant.floor:
        return False
    if len(receiver.tenant.cpus) + give > receiver.tenant.ceiling:
        return False
    return donor.high * have / (have - give) < policy.grow_above


def _reason(donor: _State, receiver: _State, policy: BalancePolicy) -> str:
    span = f"{policy.window / _US:g}s"
    r, d = receiver, donor
    why = (f"CPU use {r.low:.0f}% or more of {len(r.tenant.cpus)} CPUs"
           if r.low >= policy.grow_above else
           f"cpu pressure up to {r.pressure:.0f}% (grow at {policy.pressure_above}%)")
    return (f"{r.tenant.name} starved for {span} ({why}; grow_above {policy.grow_above}%); "
            f"{d.tenant.name} idle for {span} (CPU use at most {d.high:.0f}% of "
            f"{len(d.tenant.cpus)} CPUs; shrink_below {policy.shrink_below}%)")


def decide(tenants: Iterable[Elastic], topo: Topology, policy: BalancePolicy, now: float,
           housekeeping: frozenset[int] = frozenset(),
           fixed: frozenset[int] = frozenset()) -> list[Move]:
    """The moves of one interval: each starved tenant (most starved first) gets one whole
    core from the idlest tenant on its node(s) that can spare one; every tenant takes part in
    one move at most; `housekeeping` and `fixed` (non-elastic tenants') CPUs are never
    moved. Deterministic: same inputs, same moves."""
    ready = [t for t in sorted(tenants, key=lambda t: t.name) if not _cooling(t, now, policy)]
    # Most rounds nobody is starved: a tenant whose latest reading is not starved is not
    # (every reading of its window must be), and without a receiver no donor is judged.
    states = {t.name: s for t in ready if may_be_starved(t.history, now, policy)
              and (s := _state(t, now, policy)) is not None}
    receivers = sorted((s for s in states.values()
                        if s.starved and len(s.tenant.cpus) < s.tenant.ceiling),
                       key=lambda s: (-s.low, -s.pressure, s.tenant.name))
    if not receivers:
        return []
    states.update({t.name: s for t in ready if t.name not in states
                   and (s := _state(t, now, policy)) is not None})
    donors = sorted((s for s in states.values() if s.idle and len(s.tenant.cpus) > s.tenant.floor),
                    key=lambda s: (s.high, s.tenant.name))
    untouchable = housekeeping | fixed
    moves: list[Move] = []
    busy: set[str] = set()
    for receiver in receivers:
        move = _first_move(receiver, [d for d in donors if d.tenant.name not in busy],
                           topo, policy, untouchable)
        if move is not None:
            moves.append(move)
            busy |= {move.donor, move.receiver}
    return moves


def _first_move(receiver: _State, donors: Sequence[_State], topo: Topology,
                policy: BalancePolicy, untouchable: frozenset[int]) -> Move | None:
    for donor in donors:
        if donor.tenant.name == receiver.tenant.name:
            continue
        for node, core in _movable_cores(donor.tenant, receiver.tenant, topo, untouchable):
            if _fits(donor, receiver, core, policy):
                return Move(donor.tenant.name, receiver.tenant.name, frozenset(core), node,
                            _reason(donor, receiver, policy))
    return None


# --- the plan-time check ----------------------------------------------------------------


@frozen
class ElasticRange:
    """What the balancer may make of an elastic tenant: its declared CPUs, its floor and
    ceiling, and `reach`, every CPU it may ever hold (the elastic tenants' declared CPUs on
    its node(s): a move only hands a core between two of them on a node of both)."""

    tenant: str
    declared: frozenset[int]
    floor: int
    ceiling: int
    reach: frozenset[int]

    def allows(self, cpus: frozenset[int]) -> bool:
        """Whether the tenant holding `cpus` is a state the balancer may leave it in."""
        return self.floor <= len(cpus) <= self.ceiling and cpus <= self.reach


def elastic_ranges(config: Config, topo: Topology, layout: Layout
                   ) -> tuple[ElasticRange, ...]:
    """The ElasticRange of every elastic tenant of `config` as `layout` places it."""
    elastic = [t for t in config.tenants if t.elastic]
    pool = frozenset().union(*(layout.of(t.name).cpus for t in elastic))
    out = []
    for t in elastic:
        placed = layout.of(t.name)
        nodes = frozenset().union(*(topo.node(n).cpus for n in placed.cpu_nodes
                                    if topo.has_node(n)))
        floor, ceiling = t.size_range()
        out.append(ElasticRange(t.name, placed.cpus, floor, ceiling, pool & nodes))
    return tuple(out)


def fixed_cpus(config: Config, layout: Layout) -> frozenset[int]:
    """CPUs of exclusive tenants that are not elastic: the balancer never moves them."""
    elastic = {t.name for t in config.tenants if t.elastic}
    return frozenset(c for p in layout.tenants
                     if p.exclusive and not p.pool and p.tenant not in elastic for c in p.cpus)


def check_floors(config: Config, topo: Topology, layout: Layout) -> None:
    """Refuse a plan where the floors (cpus_min) of the elastic tenants on some node(s) add
    up to more CPUs than those node(s) have outside housekeeping and fixed tenants: the
    balancer could not honour them all."""
    elastic = [t for t in config.tenants if t.elastic]
    if not elastic:
        return
    untouchable = layout.housekeeping | fixed_cpus(config, layout)
    nodes = {t.name: frozenset(layout.of(t.name).cpu_nodes) for t in elastic}
    for t in elastic:
        group = nodes[t.name]
        inside = [u for u in elastic if nodes[u.name] <= group]
        floors = sum(u.size_range()[0] for u in inside)
        room = frozenset().union(*(topo.node(n).cpus for n in group)) & topo.online_cpus
        room -= untouchable
        if floors > len(room):
            each = ", ".join(f"{u.name}: {u.size_range()[0]}" for u in inside)
            where = ", ".join(map(str, sorted(group)))
            key = "cpus_min" if t.cpus_min is not None else "cpus"
            raise PlacementError(Problem(
                config.path, t.line_of(key), f"tenants.{t.name}.{key}",
                f"the floors of the elastic tenants on node(s) {where} ({each}) add up to "
                f"{floors} CPUs, but only {len(room)} there are outside housekeeping and "
                f"fixed tenants ({format_cpulist(room) or 'none'})",
                "lower a cpus_min, or move a fixed tenant or housekeeping off the node(s)"))
