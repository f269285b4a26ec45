"""Memory protection must fit in RAM minus housekeeping (pure).

memory.low/memory.min reserve memory only under pressure, and only if the host can honour
them: protection beyond RAM protects nobody (seed 001: limits are not reservations;
cgroup-v2.rst, "memory.low"). plan, generate and apply refuse such a configuration, and lint
reports it as `protection-overcommit`; both call `overcommit` here.
"""

from __future__ import annotations

from dataclasses import dataclass

from slicectl.core.tenants import HOUSEKEEPING_UNITS, Config, Tenant
from slicectl.core.topology import Topology
from slicectl.core.values import INFINITY, format_size, size_bytes

FIX = "lower memory_low/memory_min so all protections fit in RAM minus housekeeping"
SOURCE = "systemd.resource-control(5)"


@dataclass(frozen=True)
class Overcommit:
    """Protections that do not fit: where the running total passes the budget, and why."""

    tenant: Tenant  # the tenant at which the total first passes the budget
    key: str  # its protection key, for the line
    everyone: int  # all tenants' protection
    budget: int  # RAM minus housekeeping
    ram: int

    def message(self) -> str:
        return (f"memory_low + memory_min of all tenants is {format_size(self.everyone)} but "
                f"RAM minus housekeeping is {format_size(max(self.budget, 0))} "
                f"({format_size(self.ram)} - {format_size(self.ram - self.budget)}); "
                "protection beyond RAM protects nobody (the total passes it at tenant "
                f"{self.tenant.name})")


def housekeeping_memory(config: Config) -> int:
    """Memory kept for the host: memory_max of the confined housekeeping units."""
    return sum(c.memory_max for c in config.confine
               if c.unit in HOUSEKEEPING_UNITS and isinstance(c.memory_max, int))


def protection(t: Tenant, ram: int) -> int:
    """A tenant's memory_low + memory_min in bytes; infinity protects all of the host's RAM."""
    return sum(size_bytes(v, ram) for v in (t.memory_low, t.memory_min) if v)


def overcommit(config: Config, topo: Topology) -> Overcommit | None:
    """The first tenant at which protections pass RAM minus housekeeping, if any."""
    ram = topo.total_memory
    if ram <= 0:  # RAM unknown: nothing to compare with
        return None
    budget = ram - housekeeping_memory(config)
    total = 0
    for t in config.tenants:
        total += protection(t, ram)
        if total > budget and total > 0:  # no protection at all cannot overcommit
            key = "memory_low" if t.memory_low else "memory_min"
            everyone = sum(protection(x, ram) for x in config.tenants)
            return Overcommit(t, key, everyone, budget, ram)
    return None


def protects(t: Tenant) -> bool:
    """Whether a tenant asks for any protection (infinity included)."""
    return any(v is INFINITY or (v or 0) > 0 for v in (t.memory_low, t.memory_min))
