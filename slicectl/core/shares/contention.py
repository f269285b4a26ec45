"""What each tenant is guaranteed when everything on the host is busy (pure; the cpu.shares
experiments, docs/background.md).

`predict_shares(config, layout, topology, competition)` builds the host's slice tree the way
the plan leaves it (`slicectl.core.shares.shares` computes on it): at the root `system.slice`,
`user.slice`, `init.scope`, the machine's other slices and the processes left in the root
cgroup; in the parent slice (`tenants.slice`, always directly in the root: its name has no
`-`) the tenant slices and any other unit directly in it. Weights and CPUs of the units slicectl
configures come from the plan; everything else from `competition`: read on a live host
(`slicectl.host.cgroup.readers.read_competition`), or the standard assumption
(`Competition.assumed`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from slicectl.core.config.tenants import HOUSEKEEPING_UNITS, Config, Confinement, Tenant
from slicectl.core.cpulist import format_cpulist, parse_cpulist
from slicectl.core.frozen import frozen
from slicectl.core.placement.layout import Layout
from slicectl.core.placement.topology import Topology
from slicectl.core.properties.kinds import WEIGHT_IDLE
from slicectl.core.shares.shares import (
    DEFAULT_CPU_WEIGHT,
    IDLE_WEIGHT,
    NICE_0_WEIGHT,
    Bound,
    Entity,
    Share,
    ShareKind,
    as_cpu_weight,
    cgroup_weight,
    predict,
)

ROOT_UNIT = "-.slice"
# Keys that make systemd enable the cpu controller for a unit (and so for its siblings, which
# share the parent's cgroup.subtree_control, and up to the root): systemd's
# cgroup_context_get_mask. AllowedCPUs is the cpuset controller, not cpu.
CPU_CONTROLLER_KEYS = ("cpu_weight", "startup_cpu_weight", "cpu_quota")


@frozen
class Competitor:
    """A unit or a task that competes with the tenants for CPU."""

    name: str  # unit name, or "PID 123 (comm)"
    kind: ShareKind = ShareKind.UNIT
    weight: int = NICE_0_WEIGHT  # kernel unit (cpu.weight 100 and nice 0 are 1024)
    cpus: frozenset[int] | None = None  # effective cpuset or affinity; None: all


@frozen
class CgroupLevel:
    """The root cgroup or the tenants' parent slice, as far as CPU competition goes."""

    unit: str  # "-.slice" for the root
    members: tuple[Competitor, ...] = ()  # directly in it, besides the parent and the tenants
    cpu_controller: bool = False  # cpu in its cgroup.subtree_control
    weight: int | None = None  # its own weight, when known (never the root's)


@frozen
class Competition:
    """What competes with the tenants: found on this host, or assumed."""

    live: bool
    root: CgroupLevel
    parent: CgroupLevel

    @classmethod
    def assumed(cls, config: Config) -> Competition:
        """The standard competitors: system.slice, user.slice and init.scope at the root, no
        process in the root cgroup, nothing else in the parent slice, and no cpu controller
        enabled by anything but the plan."""
        return cls(False, CgroupLevel(ROOT_UNIT, tuple(Competitor(u) for u in HOUSEKEEPING_UNITS)),
                   CgroupLevel(config.slice_unit()))

    def note(self) -> str:
        """How the competitors were found, for the plan's caption and JSON."""
        if not self.live:
            return ("standard competitors assumed: system.slice, user.slice, init.scope at "
                    "the root, no processes in the root cgroup, nothing else in the parent "
                    "slice")
        members = (*self.root.members, *self.parent.members)
        units = sum(m.kind is ShareKind.UNIT for m in members)
        return (f"competitors counted on this host: {units} unit(s) and "
                f"{len(members) - units} task(s) beside the tenants at the root and in the "
                "parent slice")


def _weight(value: int | None, default: int) -> int:
    if value is None:
        return default
    return IDLE_WEIGHT if value == WEIGHT_IDLE else cgroup_weight(value)


def _root_level(unit: str) -> bool:
    return unit in HOUSEKEEPING_UNITS or (unit.endswith(".slice") and "-" not in unit
                                          and unit != ROOT_UNIT)


def _needs_cpu(items: Iterable[Tenant | Confinement]) -> bool:
    return any(item.resources.get(k) is not None for item in items for k in CPU_CONTROLLER_KEYS)


def _managed(config: Config, layout: Layout,
             live: Mapping[str, Competitor]) -> list[Competitor]:
    """The root-level units slicectl configures (housekeeping, confined slices), with the
    CPUs and weight the plan gives them, else what they have now."""
    confined = {c.unit: c for c in config.confine}
    units = sorted(set(HOUSEKEEPING_UNITS) | {u for u in confined if _root_level(u)})
    out = []
    for unit in units:
        seen, conf = live.get(unit), confined.get(unit)
        cpus = seen.cpus if seen is not None else None
        if unit in HOUSEKEEPING_UNITS and layout.housekeeping:
            cpus = layout.housekeeping
        if conf is not None and conf.cpus is not None:
            cpus = conf.cpus
        default = seen.weight if seen is not None else NICE_0_WEIGHT
        weight = _weight(conf.cpu_weight if conf is not None else None, default)
        out.append(Competitor(unit, ShareKind.UNIT, weight, cpus))
    return out


def _leaf(c: Competitor) -> Entity:
    return Entity(c.name, c.kind, c.weight, c.cpus)


def host_tree(config: Config, layout: Layout, topo: Topology,
              competition: Competition) -> Entity:
    """The root cgroup with everything that competes with the tenants, as the plan sets it.
    The cpu controller is on where the host has it now or the plan's weights and quotas make
    systemd enable it (for a unit's siblings too, and up to the root)."""
    tenant_units = {config.slice_unit(t.name) for t in config.tenants}
    tenants = tuple(
        Entity(config.slice_unit(t.name), ShareKind.UNIT, _weight(t.cpu_weight, NICE_0_WEIGHT),
               layout.of(t.name).cpus, None if t.cpu_quota is None else t.cpu_quota / 100)
        for t in config.tenants)
    tenants_need_cpu = _needs_cpu(config.tenants)
    level = competition.parent
    parent = Entity(
        config.slice_unit(), ShareKind.UNIT, level.weight or NICE_0_WEIGHT,
        topo.online_cpus - layout.housekeeping if layout.housekeeping else None,
        children=(*tenants, *(_leaf(m) for m in level.members if m.name not in tenant_units)),
        cpu_groups=level.cpu_controller or tenants_need_cpu)
    root = competition.root
    managed = _managed(config, layout, {m.name: m for m in root.members})
    names = {m.name for m in managed} | {parent.name}
    others = [m for m in root.members if m.name not in names]
    return Entity(ROOT_UNIT, children=(parent, *map(_leaf, managed), *map(_leaf, others)),
                  cpu_groups=(root.cpu_controller or tenants_need_cpu
                              or _needs_cpu(config.confine)))


@frozen
class Guarantee:
    """One tenant's or competitor's guaranteed CPU, in cores, and what decides it."""

    name: str  # unit name, or "PID 123 (comm)"
    parent: str  # the cgroup it is directly in
    kind: ShareKind
    weight: int  # kernel unit
    cpus: frozenset[int]
    cores: float
    bound: Bound

    @classmethod
    def of(cls, share: Share) -> Guarantee:
        return cls(share.name, share.path[-2] if len(share.path) > 1 else ROOT_UNIT,
                   share.kind, share.weight, share.cpus, round(share.cores, 4), share.bound)

    def to_json(self, online: int) -> dict[str, Any]:
        return {"name": self.name, "parent": self.parent, "kind": str(self.kind),
                "weight": weight_on_cpu_scale(self.weight), "cpus": format_cpulist(self.cpus),
                "cores": self.cores, "percent": percent(self.cores, online),
                "bound": str(self.bound)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Guarantee:
        return cls(str(d["name"]), str(d["parent"]), ShareKind(d["kind"]), _weight_of(d["weight"]),
                   parse_cpulist(d["cpus"]), float(d["cores"]), Bound(d["bound"]))


def percent(cores: float, online: int) -> float:
    """Cores as a percentage of the machine's online CPUs (2 decimals)."""
    return round(100.0 * cores / online, 2) if online else 0.0


def weight_on_cpu_scale(weight: int) -> float | str:
    """A kernel weight on cpu.weight's scale (a nice-0 task is 100), or "idle"."""
    if weight == IDLE_WEIGHT:
        return "idle"
    value = round(as_cpu_weight(weight), 2)
    return int(value) if value.is_integer() else value


def _weight_of(data: float | str) -> int:
    if data == "idle":
        return IDLE_WEIGHT
    return round(float(data) * NICE_0_WEIGHT / DEFAULT_CPU_WEIGHT)


@frozen
class CpuShares:
    """The guaranteed CPU of every tenant and of everything competing with them."""

    live: bool
    note: str
    online: int  # CPUs of the machine (the base of the percentages)
    tenants: Mapping[str, Guarantee]  # tenant name -> its guarantee
    competitors: tuple[Guarantee, ...]

    def tenant_json(self, name: str) -> dict[str, Any]:
        """`plan --json`'s `tenants[].cpu_share`."""
        g = self.tenants[name]
        return {"cores": g.cores, "percent": percent(g.cores, self.online),
                "bound": str(g.bound)}

    def to_json(self) -> dict[str, Any]:
        """`plan --json`'s `cpu_competition` (docs/plan-json.md)."""
        return {"live": self.live, "note": self.note, "online_cpus": self.online,
                "tenants": [g.to_json(self.online) for g in self.tenants.values()],
                "competitors": [g.to_json(self.online) for g in self.competitors]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], tenant_units: Mapping[str, str]) -> CpuShares:
        """Read back what to_json wrote (`tenant_units`: slice unit -> tenant name)."""
        tenants = {tenant_units[g.name]: g
                   for g in map(Guarantee.from_json, data.get("tenants", ()))}
        return cls(bool(data["live"]), str(data["note"]), int(data["online_cpus"]), tenants,
                   tuple(map(Guarantee.from_json, data.get("competitors", ()))))


def predict_shares(config: Config, layout: Layout, topo: Topology,
                   competition: Competition | None = None) -> CpuShares:
    """Every tenant's guaranteed CPU (cores and % of the machine) under full contention."""
    competition = competition or Competition.assumed(config)
    online = topo.online_cpus
    shares = predict(host_tree(config, layout, topo, competition), online)
    by_unit = {config.slice_unit(t.name): t.name for t in config.tenants}
    mine = [s.path == (config.slice_unit(), s.name) and s.name in by_unit for s in shares]
    tenants = {by_unit[s.name]: Guarantee.of(s) for s, m in zip(shares, mine, strict=True) if m}
    others = tuple(Guarantee.of(s) for s, m in zip(shares, mine, strict=True) if not m)
    return CpuShares(competition.live, competition.note(), len(online), tenants, others)
