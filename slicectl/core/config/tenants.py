"""The tenants of a host as slicectl reads them from tenants.yaml: frozen dataclasses (pure).

`slicectl.core.config.config` builds them (parsing and validation); everything else reads them. A
tenant's resource keys (the settings table's RESOURCE rows) live in one mapping, so a new
property needs no field here; the few the core reasons about have typed accessors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field, replace
from typing import Any

from slicectl.core.config.values import INFINITY, MemorySize, RamShare, resolved, size_le
from slicectl.core.errors import ConfigError, Problem
from slicectl.core.frozen import frozen
from slicectl.core.properties.properties import BALANCE_KEYS, BY_KEY, Numa, Role

HOUSEKEEPING_UNITS = ("system.slice", "user.slice", "init.scope")
# `--profile default` and `schedule: {default: ...}` mean the base configuration, unless a
# profile has that name.
BASE_PROFILE = "default"


class _Resources:
    """Typed access to the resource values the core reasons about (lint, placement, plan).

    Every resource key of the settings table lives in `resources`; a key that only becomes a
    property (no rule looks at it) needs no accessor here."""

    resources: Mapping[str, Any]

    @property
    def cpu_weight(self) -> int | None:
        return self.resources.get("cpu_weight")

    @property
    def cpu_quota(self) -> int | None:
        return self.resources.get("cpu_quota")

    @property
    def cpu_quota_period(self) -> int | None:
        return self.resources.get("cpu_quota_period")

    @property
    def memory_max(self) -> MemorySize | None:
        return self.resources.get("memory_max")

    @property
    def memory_high(self) -> MemorySize | None:
        return self.resources.get("memory_high")

    @property
    def memory_low(self) -> MemorySize | None:
        return self.resources.get("memory_low")

    @property
    def memory_min(self) -> MemorySize | None:
        return self.resources.get("memory_min")

    @property
    def memory_swap_max(self) -> MemorySize | None:
        return self.resources.get("memory_swap_max")

    def protection_above_limit(self, ram: int) -> list[tuple[str, MemorySize, MemorySize]]:
        """(key, value, memory_max) of memory_low/memory_min above memory_max: the kernel caps
        protection at the usage memory_max allows, so the part above it protects nothing.
        Shares of RAM are compared with sizes on a host of `ram` bytes (0: unknown, only
        like with like)."""
        limit = self.memory_max
        if limit is None or limit is INFINITY:
            return []
        found: list[tuple[str, MemorySize, MemorySize]] = []
        for key in ("memory_low", "memory_min"):
            value = self.resources.get(key)
            if value is None:
                continue
            if isinstance(value, RamShare) and isinstance(limit, RamShare):
                above = value.permyriad > limit.permyriad
            elif isinstance(value, RamShare) or isinstance(limit, RamShare):
                if ram <= 0:
                    continue
                have, cap = resolved(value, ram), resolved(limit, ram)
                assert cap is not None and have is not None
                above = not size_le(have, cap)
            else:
                above = not size_le(value, limit)
            if above:
                found.append((key, value, limit))
        return found


@frozen
class Tenant(_Resources):
    """One tenant: becomes `<slice>-<name>.slice`."""

    name: str
    line: int = 0
    description: str | None = None
    cpus: int | frozenset[int] | None = None
    numa: Numa = Numa.LOCAL
    nodes: tuple[int, ...] | None = None
    exclusive: bool = True
    services: tuple[str, ...] = ()
    # Elastic tenants (the balancer, docs/balance.md): the fewest and most CPUs it may hold.
    cpus_min: int | None = None
    cpus_max: int | None = None
    resources: Mapping[str, Any] = field(default_factory=dict)  # key -> value, as set
    lines: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)

    def line_of(self, key: str) -> int:
        """Line of `key` in the source file, or of the tenant when the key is absent."""
        return self.lines.get(key, self.line)

    @property
    def elastic(self) -> bool:
        """The balancer may move whole cores to or from it (cpus_min or cpus_max set)."""
        return self.cpus_min is not None or self.cpus_max is not None

    def size_range(self) -> tuple[int, int]:
        """(floor, ceiling) of an elastic tenant's CPU count; an unset bound is `cpus`."""
        declared = self.cpus if isinstance(self.cpus, int) else 0
        floor = declared if self.cpus_min is None else self.cpus_min
        return floor, declared if self.cpus_max is None else self.cpus_max

    def with_values(self, values: Mapping[str, Any]) -> Tenant:
        """This tenant with some keys changed (a profile's overrides)."""
        fields_ = {k: v for k, v in values.items() if BY_KEY[k].role is not Role.RESOURCE}
        resources = {k: v for k, v in values.items() if BY_KEY[k].role is Role.RESOURCE}
        return replace(self, **fields_, resources={**self.resources, **resources})


@frozen
class Confinement(_Resources):
    """Limits for a housekeeping unit (system.slice, user.slice, cron.service, …)."""

    unit: str
    line: int = 0
    cpus: frozenset[int] | None = None
    resources: Mapping[str, Any] = field(default_factory=dict)
    lines: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)

    def line_of(self, key: str) -> int:
        """Line of `key` in the source file, or of the unit when the key is absent."""
        return self.lines.get(key, self.line)


@frozen
class BalancePolicy:
    """The balancer's policy (top-level `balance:`; defaults from the settings table's
    BALANCE_SETTINGS). Times in µs; shares in percent."""

    interval: int = BALANCE_KEYS["interval"].default
    cooldown: int = BALANCE_KEYS["cooldown"].default
    window: int = BALANCE_KEYS["window"].default
    grow_above: int = BALANCE_KEYS["grow_above"].default
    pressure_above: int = BALANCE_KEYS["pressure_above"].default
    shrink_below: int = BALANCE_KEYS["shrink_below"].default
    line: int = field(default=0, compare=False)
    lines: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)

    def line_of(self, key: str) -> int:
        """Line of `key` in the source file, or of `balance:` when the key is absent."""
        return self.lines.get(key, self.line)


@frozen
class Config:
    """A validated tenants.yaml."""

    path: str
    slice: str = "tenants"
    housekeeping_cpus: int | frozenset[int] = 0
    housekeeping_line: int = 0
    confine: tuple[Confinement, ...] = ()
    tenants: tuple[Tenant, ...] = ()
    profiles: Mapping[str, Mapping[str, Mapping[str, Any]]] = field(default_factory=dict)
    # line of each profile ("night") and of each of its keys ("night.db1.cpus")
    profile_lines: Mapping[str, int] = field(default_factory=dict, compare=False)
    profile: str | None = None  # the profile applied by with_profile(), if any
    # profile (or BASE_PROFILE) -> calendar expressions (systemd.time(7)) that switch to it
    schedule: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    schedule_lines: Mapping[str, int] = field(default_factory=dict, compare=False)
    balance: BalancePolicy = field(default_factory=BalancePolicy)
    # target: the slicectl and tenants.yaml paths on the hosts the units are for (None: not
    # declared), and the line of the section
    target_slicectl: str | None = None
    target_tenants: str | None = None
    target_line: int = 0

    def tenant(self, name: str) -> Tenant:
        for t in self.tenants:
            if t.name == name:
                return t
        raise KeyError(name)

    def slice_unit(self, tenant: str | None = None) -> str:
        """`tenants.slice`, or `tenants-NAME.slice` for a tenant."""
        return f"{self.slice}.slice" if tenant is None else f"{self.slice}-{tenant}.slice"

    def tenant_of(self, cgroup: str) -> str | None:
        """The tenant whose slice `cgroup` is (a unit name or a cgroup path, slice_tenant);
        None for any other unit, or a slice of no tenant of this file."""
        name = slice_tenant(cgroup, self.slice)
        return name if name is not None and any(t.name == name for t in self.tenants) else None

    def with_profile(self, name: str | None) -> Config:
        """This config with a profile's overrides applied (None, or `default` when no profile
        has that name: the base configuration, unchanged)."""
        if name is None or (name == BASE_PROFILE and name not in self.profiles):
            return self
        if name not in self.profiles:
            known = ", ".join(sorted(self.profiles)) or "none defined"
            raise ConfigError([Problem(self.path, 0, "profiles", f"no profile {name!r}",
                                       f"profiles in this file: {known}")])
        overrides = self.profiles[name]
        tenants = tuple(t.with_values(overrides[t.name]) if t.name in overrides else t
                        for t in self.tenants)
        return replace(self, tenants=tenants, profile=name)


def slice_tenant(cgroup: str, parent: str) -> str | None:
    """NAME of the tenant slice `PARENT-NAME.slice`, given as its unit name or its cgroup
    path (`/PARENT.slice/PARENT-NAME.slice`, the leading slash optional); None for any other
    unit or path. Config.tenant_of with a tenants.yaml; this alone where there is none. A
    tenant's name has no dash, so `PARENT-a-b.slice` (a slice systemd nests in
    `PARENT-a.slice`) is no tenant's."""
    path, _, unit = cgroup.lstrip("/").rpartition("/")
    if path and path != f"{parent}.slice":
        return None
    name = unit.removeprefix(f"{parent}-").removesuffix(".slice")
    if not name or "-" in name or unit != f"{parent}-{name}.slice":
        return None
    return name
