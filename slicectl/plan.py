"""The plan: which units and drop-ins slicectl wants, with which resource properties (pure).

`build_plan(config, topology)` = placement + the unit files it implies. Properties are keyed by
their unit-file names (`AllowedCPUs`, `CPUQuota`, `MemoryMax`, …) with typed values; render
formats them for files and apply converts them for D-Bus. Plans round-trip through JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from slicectl.config import HOUSEKEEPING_UNITS, Config, Confinement, Tenant
from slicectl.cpulist import format_cpulist, parse_cpulist
from slicectl.errors import PlacementError
from slicectl.placement import Layout, place
from slicectl.topology import Topology
from slicectl.values import INFINITY, format_duration_us, format_size

FORMAT = "slicectl-plan/1"
DROPIN_NAME = "50-slicectl.conf"

# Unit-file property → kind of value. Order here is the order in generated files.
CPUSET_PROPS = ("AllowedCPUs", "AllowedMemoryNodes")
INT_PROPS = ("CPUWeight",)
PERCENT_PROPS = ("CPUQuota",)
DURATION_PROPS = ("CPUQuotaPeriodSec",)
SIZE_PROPS = ("MemoryMin", "MemoryLow", "MemoryHigh", "MemoryMax", "MemorySwapMax")
RESOURCE_PROPS = CPUSET_PROPS + INT_PROPS + PERCENT_PROPS + DURATION_PROPS + SIZE_PROPS

PropValue = frozenset[int] | int
SECTION_OF_TYPE = {"slice": "Slice", "service": "Service", "scope": "Scope", "socket": "Socket",
                   "mount": "Mount", "swap": "Swap"}


def format_property(name: str, value: PropValue) -> str:
    """A typed property value as it is written in a unit file."""
    if name in CPUSET_PROPS:
        assert isinstance(value, frozenset)
        return format_cpulist(value)
    assert isinstance(value, int)
    if name in PERCENT_PROPS:
        return f"{value}%"
    if name in DURATION_PROPS:
        return format_duration_us(value)
    if name in SIZE_PROPS:
        return format_size(value)
    return str(value)


def _json_value(name: str, value: PropValue) -> Any:
    if name in CPUSET_PROPS:
        assert isinstance(value, frozenset)
        return format_cpulist(value)
    if name in SIZE_PROPS and value == INFINITY:
        return "infinity"
    return value


def _from_json_value(name: str, value: Any) -> PropValue:
    if name in CPUSET_PROPS:
        return parse_cpulist(str(value))
    if name in SIZE_PROPS and value == "infinity":
        return INFINITY
    return int(value)


@dataclass(frozen=True)
class UnitPlan:
    """One file slicectl generates: a unit file, or a drop-in for an existing unit."""

    unit: str
    path: str  # relative to the unit directory, e.g. "system.slice.d/50-slicectl.conf"
    kind: str  # "unit" | "dropin"
    section: str  # [Slice], [Service], [Scope], …
    properties: Mapping[str, PropValue] = field(default_factory=dict)
    description: str | None = None
    slice: str | None = None  # member units: Slice= (takes effect on restart)
    tenant: str | None = None
    extra: Mapping[str, str] = field(default_factory=dict)  # file-only settings (OOMPolicy)
    wants: tuple[str, ...] = ()  # the parent slice pulls its tenant slices in: one transaction

    def formatted(self) -> list[tuple[str, str]]:
        """(key, value) pairs in file order, values formatted for a unit file."""
        return [(k, format_property(k, self.properties[k]))
                for k in RESOURCE_PROPS if k in self.properties]

    def to_json(self) -> dict[str, Any]:
        return {
            "unit": self.unit, "path": self.path, "kind": self.kind, "section": self.section,
            "description": self.description, "slice": self.slice, "tenant": self.tenant,
            "extra": dict(sorted(self.extra.items())), "wants": list(self.wants),
            "properties": {k: _json_value(k, self.properties[k])
                           for k in RESOURCE_PROPS if k in self.properties},
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> UnitPlan:
        return cls(
            unit=d["unit"], path=d["path"], kind=d["kind"], section=d["section"],
            description=d.get("description"), slice=d.get("slice"), tenant=d.get("tenant"),
            extra=dict(d.get("extra", {})), wants=tuple(d.get("wants", ())),
            properties={k: _from_json_value(k, v) for k, v in d["properties"].items()},
        )


@dataclass(frozen=True)
class Plan:
    """Everything slicectl wants on a host, derived from tenants.yaml and the topology."""

    source: str
    profile: str | None
    topology: str
    layout: Layout
    units: tuple[UnitPlan, ...]

    def unit(self, name: str) -> UnitPlan:
        for u in self.units:
            if u.unit == name:
                return u
        raise KeyError(name)

    def placements(self) -> dict[str, frozenset[int]]:
        """tenant → CPUs, to keep tenants in place next time (placement stability)."""
        return {p.tenant: p.cpus for p in self.layout.tenants if not p.pool}

    def to_json(self) -> dict[str, Any]:
        """The documented `slicectl plan --json` form (docs/plan-json.md)."""
        lay = self.layout
        return {
            "format": FORMAT,
            "source": self.source,
            "profile": self.profile,
            "topology": self.topology,
            "housekeeping_cpus": format_cpulist(lay.housekeeping),
            "shared_pool": format_cpulist(lay.shared_pool),
            "tenants": [
                {
                    "name": p.tenant,
                    "cpus": format_cpulist(p.cpus),
                    "cpu_count": len(p.cpus),
                    "cpu_nodes": list(p.cpu_nodes),
                    "memory_nodes": None if p.memory_nodes is None else list(p.memory_nodes),
                    "exclusive": p.exclusive,
                    "shared_pool": p.pool,
                }
                for p in lay.tenants
            ],
            "units": [u.to_json() for u in self.units],
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Plan:
        from slicectl.placement import TenantPlacement

        layout = Layout(
            housekeeping=parse_cpulist(d["housekeeping_cpus"]),
            shared_pool=parse_cpulist(d["shared_pool"]),
            tenants=tuple(
                TenantPlacement(
                    tenant=t["name"], cpus=parse_cpulist(t["cpus"]),
                    cpu_nodes=tuple(t["cpu_nodes"]),
                    memory_nodes=None if t["memory_nodes"] is None else tuple(t["memory_nodes"]),
                    exclusive=t["exclusive"], pool=t["shared_pool"],
                )
                for t in d["tenants"]
            ),
        )
        return cls(source=d["source"], profile=d["profile"], topology=d["topology"],
                   layout=layout, units=tuple(UnitPlan.from_json(u) for u in d["units"]))


def _tenant_props(t: Tenant, cpus: frozenset[int], mems: tuple[int, ...] | None) -> dict[
        str, PropValue]:
    props: dict[str, PropValue] = {"AllowedCPUs": cpus}
    if mems is not None:
        props["AllowedMemoryNodes"] = frozenset(mems)
    for key, prop in (("cpu_weight", "CPUWeight"), ("cpu_quota", "CPUQuota"),
                      ("cpu_quota_period", "CPUQuotaPeriodSec"), ("memory_min", "MemoryMin"),
                      ("memory_low", "MemoryLow"), ("memory_high", "MemoryHigh"),
                      ("memory_max", "MemoryMax"), ("memory_swap_max", "MemorySwapMax")):
        value = getattr(t, key)
        if value is not None:
            props[prop] = value
    return props


def _confine_props(c: Confinement | None, hk: frozenset[int], housekeeping_unit: bool) -> dict[
        str, PropValue]:
    props: dict[str, PropValue] = {}
    if housekeeping_unit and hk:
        props["AllowedCPUs"] = hk
    if c is not None:
        if c.cpus is not None:
            props["AllowedCPUs"] = c.cpus
        for key, prop in (("cpu_weight", "CPUWeight"), ("cpu_quota", "CPUQuota"),
                          ("memory_high", "MemoryHigh"), ("memory_max", "MemoryMax"),
                          ("memory_swap_max", "MemorySwapMax")):
            value = getattr(c, key)
            if value is not None:
                props[prop] = value
    return props


def _section(unit: str) -> str:
    return SECTION_OF_TYPE[unit.rsplit(".", 1)[1]]


def _sum_protection(values: list[int | None]) -> int:
    return sum(v for v in values if v is not None and v != INFINITY)


def build_plan(
    config: Config, topo: Topology, previous: Mapping[str, frozenset[int]] | None = None
) -> Plan:
    """Place tenants and derive the unit files; `previous` keeps tenants where they were."""
    layout = place(config, topo, previous)
    # Protection beyond RAM protects nobody (issue 5): refuse it here, not only in lint.
    if any(t.memory_low or t.memory_min for t in config.tenants):
        from slicectl.lint import overcommit_rule

        for finding in overcommit_rule(config, topo):
            raise PlacementError(f"{finding.file}:{finding.line}: {finding.message}",
                                 f"{finding.fix} (source: {finding.source})")
    units: list[UnitPlan] = []
    parent = config.slice_unit()
    parent_props: dict[str, PropValue] = {}
    if layout.housekeeping:
        # Keeps everything under tenants.slice off the housekeeping CPUs, members included.
        parent_props["AllowedCPUs"] = topo.online_cpus - layout.housekeeping
    # memory.low/min only protect a cgroup when every ancestor is protected as well, so the
    # parent carries the sum of its children's protection (cgroup-v2.rst, "memory.low").
    low = _sum_protection([t.memory_low for t in config.tenants])
    mins = _sum_protection([t.memory_min for t in config.tenants])
    if mins:
        parent_props["MemoryMin"] = mins
    if low:
        parent_props["MemoryLow"] = low
    # Wants= the tenant slices: starting the parent (apply does, and so does the first member
    # service after a boot) brings every tenant slice up in one systemd transaction.
    units.append(UnitPlan(unit=parent, path=parent, kind="unit", section="Slice",
                          properties=parent_props,
                          description=f"slicectl tenants ({config.slice})",
                          wants=tuple(config.slice_unit(t.name) for t in config.tenants)))
    for t in config.tenants:
        p = layout.of(t.name)
        name = config.slice_unit(t.name)
        units.append(UnitPlan(
            unit=name, path=name, kind="unit", section="Slice",
            properties=_tenant_props(t, p.cpus, p.memory_nodes),
            description=t.description or f"slicectl tenant {t.name}", tenant=t.name,
        ))
    confined = {c.unit: c for c in config.confine}
    for unit in sorted(set(HOUSEKEEPING_UNITS) | set(confined)):
        props = _confine_props(confined.get(unit), layout.housekeeping,
                               unit in HOUSEKEEPING_UNITS)
        # A confined service must survive its jobs hitting MemoryMax: systemd's default
        # OOMPolicy=stop stops the whole unit when the kernel OOM-kills one of its processes
        # (measured in the testbed: cron stopped and restarted); "continue" kills only the
        # runaway job (systemd.service(5), OOMPolicy=).
        extra = ({"OOMPolicy": "continue"}
                 if unit.endswith(".service") and unit in confined else {})
        if props:
            units.append(UnitPlan(unit=unit, path=f"{unit}.d/{DROPIN_NAME}", kind="dropin",
                                  section=_section(unit), properties=props, extra=extra))
    for t in config.tenants:
        for svc in t.services:
            units.append(UnitPlan(unit=svc, path=f"{svc}.d/{DROPIN_NAME}", kind="dropin",
                                  section=_section(svc), slice=config.slice_unit(t.name),
                                  tenant=t.name))
    return Plan(source=config.path, profile=config.profile, topology=topo.source,
                layout=layout, units=tuple(units))
