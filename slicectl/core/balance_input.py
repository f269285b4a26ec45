"""What the balancer's decision (slicectl.core.balance) is given, built from a plan's layout
and the slices' metrics; and its moves as JSON. Pure: the front end samples and passes them in.

A tenant's reading is its slice's CPU use over the last two samples as a share of the CPUs the
layout gives it (100% = all of them busy), and its cpu.pressure `some avg10`. A sample pair
without a rate (the first, or the slice recreated in between) gives no reading: the gap it
leaves is the decision's to judge (a window not covered moves nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from slicectl.core.balance import Elastic, Move, Reading, fixed_cpus
from slicectl.core.cpulist import format_cpulist
from slicectl.core.metrics import SliceMetrics
from slicectl.core.placement import Layout, TenantPlacement
from slicectl.core.samples import CgroupSample
from slicectl.core.tenants import BalancePolicy, Config

History = Mapping[str, tuple[Reading, ...]]
_US = 1_000_000


def tenant_unit(config: Config, tenant: str) -> str:
    """The slice unit of `tenant` (its cgroup directory's name)."""
    return f"{config.slice}-{tenant}.slice"


def _elastic_of(config: Config) -> Callable[[str, str], str | None]:
    """(unit, cgroup path) -> the elastic tenant whose slice it is, or None."""
    units = {tenant_unit(config, t.name): t.name for t in config.tenants if t.elastic}
    parent = f"{config.slice}.slice/"

    def tenant(unit: str, cgroup: str) -> str | None:
        return units.get(unit) if cgroup.lstrip("/").startswith(parent) else None

    return tenant


def _placements(layout: Layout) -> dict[str, TenantPlacement]:
    """tenant -> its placement, looked up once per round (Layout.of searches the tuple)."""
    return {p.tenant: p for p in layout.tenants}


def readings(config: Config, layout: Layout, metrics: Iterable[SliceMetrics], time: float,
             held: Mapping[str, frozenset[int]] | None = None) -> dict[str, Reading]:
    """tenant -> its reading at `time` (seconds, the later sample's) for every elastic tenant
    whose slice has a CPU rate in `metrics`: a share of the CPUs it holds (`held`, else the
    CPUs `layout` gives it)."""
    tenant_of = _elastic_of(config)
    placed = _placements(layout)
    out: dict[str, Reading] = {}
    for m in metrics:
        name = tenant_of(m.unit, m.cgroup)
        if name is None or m.cpu_cores is None:
            continue
        count = len(held[name] if held is not None and name in held else placed[name].cpus)
        if not count:
            continue
        pressure = m.cpu_pressure.some.avg10 if m.cpu_pressure is not None else None
        out[name] = Reading(time, m.cpu_cores / count * 100, pressure)
    return out


def current_cpus(config: Config, samples: Iterable[CgroupSample]) -> dict[str, frozenset[int]]:
    """tenant -> the CPUs its slice runs on now (cpuset.cpus.effective), for every elastic
    tenant whose slice is in `samples` with a cpuset."""
    tenant_of = _elastic_of(config)
    out = {}
    for s in samples:
        name = tenant_of(s.unit, s.path)
        if name is not None and s.cpus:
            out[name] = s.cpus
    return out


def remember(history: History, new: Mapping[str, Reading], now: float,
             policy: BalancePolicy) -> dict[str, tuple[Reading, ...]]:
    """`history` with the `new` readings added, keeping only what a decision at `now` or
    later may still look at (one window and one interval back)."""
    keep_from = now - (policy.window + policy.interval) / _US
    out: dict[str, tuple[Reading, ...]] = {}
    for name in sorted(set(history) | set(new)):
        kept = [r for r in history.get(name, ()) if r.time >= keep_from]
        if name in new:
            kept.append(new[name])
        out[name] = tuple(kept)
    return out


def elastic_tenants(config: Config, layout: Layout, history: History,
                    last_moves: Mapping[str, float] | None = None,
                    held: Mapping[str, frozenset[int]] | None = None) -> list[Elastic]:
    """The elastic tenants of `config` as decide() takes them: the nodes `layout` gives
    them, the CPUs they hold (`held`: only the tenants in it; else the layout's), their floor
    and ceiling, their readings and when a core last moved."""
    last_moves = last_moves or {}
    placements = _placements(layout)
    out = []
    for t in config.tenants:
        if not t.elastic or (held is not None and t.name not in held):
            continue
        placed = placements[t.name]
        floor, ceiling = t.size_range()
        cpus = placed.cpus if held is None else held[t.name]
        out.append(Elastic(t.name, frozenset(placed.cpu_nodes), cpus, floor, ceiling,
                           history.get(t.name, ()), last_moves.get(t.name)))
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
