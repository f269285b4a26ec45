"""What the balancer's decision (slicectl.core.balance.balance) is given, built from a plan's layout
and the slices' metrics; and its moves as JSON. Pure: the front end samples and passes them in.

A tenant's reading is its slice's CPU use over the last two samples as a share of the CPUs the
layout gives it (100% = all of them busy), and its cpu.pressure `some avg10`. A sample pair
without a rate (the first, or the slice recreated in between) gives no reading: the gap it
leaves is the decision's to judge (a window not covered moves nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from slicectl.core.balance.balance import Elastic, Move, Reading, fixed_cpus
from slicectl.core.config.tenants import BalancePolicy, Config
from slicectl.core.cpulist import format_cpulist
from slicectl.core.monitor.metrics import SliceMetrics
from slicectl.core.monitor.samples import CgroupSample
from slicectl.core.placement.layout import Layout

History = Mapping[str, tuple[Reading, ...]]
_US = 1_000_000


def _elastic_of(config: Config) -> Callable[[str], str | None]:
    """cgroup path -> the elastic tenant whose slice it is, or None."""
    elastic = {t.name for t in config.tenants if t.elastic}

    def tenant(cgroup: str) -> str | None:
        name = config.tenant_of(cgroup)
        return name if name in elastic else None

    return tenant


class BalanceInput:
    """The lookups a round needs, made once per balancer run: which slice is which elastic
    tenant, and each tenant's placement."""

    def __init__(self, config: Config, layout: Layout) -> None:
        self.config = config
        self.layout = layout
        self.tenant = _elastic_of(config)
        self._known: dict[str, str | None] = {}  # cgroup path -> tenant(path)
        self._placed = {p.tenant: p for p in layout.tenants}
        self._elastic = [(t, self._placed[t.name], frozenset(self._placed[t.name].cpu_nodes),
                          *t.size_range()) for t in config.tenants if t.elastic]

    def readings(self, metrics: Iterable[SliceMetrics], time: float,
                 held: Mapping[str, frozenset[int]] | None = None) -> dict[str, Reading]:
        """tenant -> its reading at `time` (seconds, the later sample's) for every elastic
        tenant whose slice has a CPU rate in `metrics`: a share of the CPUs it holds (`held`,
        else the CPUs the layout gives it)."""
        out: dict[str, Reading] = {}
        known = self._known
        for m in metrics:
            if (name := known.get(m.cgroup, "")) == "":
                name = known[m.cgroup] = self.tenant(m.cgroup)
            if name is None or m.cpu_cores is None:
                continue
            count = len(held[name] if held is not None and name in held
                        else self._placed[name].cpus)
            if not count:
                continue
            pressure = m.cpu_pressure.some.avg10 if m.cpu_pressure is not None else None
            out[name] = Reading(time, m.cpu_cores / count * 100, pressure)
        return out

    def tenants(self, history: History, last_moves: Mapping[str, float] | None = None,
                held: Mapping[str, frozenset[int]] | None = None) -> list[Elastic]:
        """The elastic tenants as decide() takes them: the nodes the layout gives them, the
        CPUs they hold (`held`: only the tenants in it; else the layout's), their floor and
        ceiling, their readings and when a core last moved."""
        last_moves = last_moves or {}
        return [Elastic(t.name, nodes, placed.cpus if held is None else held[t.name], floor,
                        ceiling, history.get(t.name, ()), last_moves.get(t.name))
                for t, placed, nodes, floor, ceiling in self._elastic
                if held is None or t.name in held]


def readings(config: Config, layout: Layout, metrics: Iterable[SliceMetrics], time: float,
             held: Mapping[str, frozenset[int]] | None = None) -> dict[str, Reading]:
    """BalanceInput.readings, for one round."""
    return BalanceInput(config, layout).readings(metrics, time, held)


def current_cpus(config: Config, samples: Iterable[CgroupSample]) -> dict[str, frozenset[int]]:
    """tenant -> the CPUs its slice runs on now (cpuset.cpus.effective), for every elastic
    tenant whose slice is in `samples` with a cpuset."""
    tenant = _elastic_of(config)
    return {name: s.cpus for s in samples
            if (name := tenant(s.path)) is not None and s.cpus}


def remember(history: History, new: Mapping[str, Reading], now: float,
             policy: BalancePolicy) -> dict[str, tuple[Reading, ...]]:
    """`history` with the `new` readings added, keeping only what a decision at `now` or
    later may still look at (one window and one interval back). Each tenant's readings are
    in time order (each round adds the latest), so only its first ones may be too old."""
    keep_from = now - (policy.window + policy.interval) / _US
    out: dict[str, tuple[Reading, ...]] = {}
    for name, kept in history.items():
        first = 0
        while first < len(kept) and kept[first].time < keep_from:
            first += 1
        kept = kept[first:] if first else kept
        reading = new.get(name)
        out[name] = kept if reading is None else (*kept, reading)
    for name, reading in new.items():
        if name not in out:
            out[name] = (reading,)
    return out


def untouchable(config: Config, layout: Layout) -> tuple[frozenset[int], frozenset[int]]:
    """(housekeeping, fixed tenants') CPUs: decide()'s CPUs that never move."""
    return layout.housekeeping, fixed_cpus(config, layout)


def move_json(move: Move) -> dict[str, Any]:
    """One move as `slicectl balance --json` prints it."""
    return {"from": move.donor, "to": move.receiver, "cpus": format_cpulist(move.cpus),
            "node": move.node, "reason": move.reason}


def move_line(move: Move, dry_run: bool = True) -> str:
    """One move as `slicectl balance` prints it, on one line."""
    verb = "would move" if dry_run else "move"
    return (f"{verb} core {format_cpulist(move.cpus)} (node {move.node}) from {move.donor} "
            f"to {move.receiver}: {move.reason}")
