"""Settings that cannot take effect as written: errors, not advice (pure).

A cpu_quota above what the tenant's CPUs can run, a memory_high at or above memory_max: systemd
takes both, and neither ever does what it says (the tenant is throttled by its CPUs, not its
quota; it hits the hard limit, and the OOM killer, without ever being throttled first). So
validate, plan, generate and apply refuse them, with every other problem of the file
(slicectl.core.config.config runs these after the keys' own checks), and lint reports the same list
at its error level: one place for both (lint's rule names are the `rule`s here).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeGuard

from slicectl.core.config.tenants import Config, Confinement, Tenant
from slicectl.core.config.values import INFINITY, MemorySize, RamShare, resolved, size_le
from slicectl.core.errors import Problem
from slicectl.core.frozen import frozen
from slicectl.core.human import human_memory

QUOTA_FIX = "lower cpu_quota to at most 100% per CPU, or give the tenant more CPUs"
HIGH_FIX = "set memory_high below memory_max (e.g. halfway between footprint and max)"


@frozen
class Contradiction:
    """One setting that cannot take effect: lint's `rule`, and where and why."""

    rule: str
    problem: Problem


def limited(value: MemorySize | None) -> TypeGuard[int | RamShare]:
    """A size (or share of RAM) that is set and not infinity."""
    return value is not None and value is not INFINITY


def at_least(a: MemorySize, b: MemorySize, ram: int) -> bool | None:
    """a >= b, with shares of RAM resolved on a host of `ram` bytes; None when that cannot be
    told (a share against a size, the RAM unknown)."""
    if isinstance(a, RamShare) and isinstance(b, RamShare):
        return a.permyriad >= b.permyriad
    if (isinstance(a, RamShare) or isinstance(b, RamShare)) and ram <= 0:
        return None
    x, y = resolved(a, ram), resolved(b, ram)
    assert x is not None and y is not None
    return size_le(y, x)


def declared_cpus(t: Tenant) -> int | None:
    """How many CPUs the file gives the tenant (a count or a cpulist), None when placement
    decides (a pool)."""
    if isinstance(t.cpus, int) and not isinstance(t.cpus, bool):
        return t.cpus
    if isinstance(t.cpus, frozenset):
        return len(t.cpus)
    return None


def _quota(what: str, name: str, quota: int | None, count: int | None
           ) -> Iterator[tuple[str, str, str, str]]:
    if quota is not None and count and quota > 100 * count:
        yield ("quota-exceeds-cpus", "cpu_quota",
               f"{what} {name} has cpu_quota {quota}% but only {count} CPU(s): at most "
               f"{100 * count}% is reachable", QUOTA_FIX)


def _high(what: str, name: str, high: MemorySize | None, max_: MemorySize | None, ram: int
          ) -> Iterator[tuple[str, str, str, str]]:
    if limited(max_) and high is not None and at_least(high, max_, ram):
        yield ("high-above-max", "memory_high",
               f"{what} {name} has memory_high {human_memory(high)} >= memory_max "
               f"{human_memory(max_)}: memory_high never takes effect, the {what} hits the "
               "hard limit (OOM) without being throttled first", HIGH_FIX)


def _tenant(t: Tenant, count: int | None, ram: int) -> Iterator[tuple[str, str, str, str]]:
    yield from _quota("tenant", t.name, t.cpu_quota, count)
    yield from _high("tenant", t.name, t.memory_high, t.memory_max, ram)


def contradictions(config: Config, cpus_of: Callable[[Tenant], int | None] = declared_cpus,
                   ram: int = 0) -> list[Contradiction]:
    """Every setting of `config` (its tenants, `confine:` units and profiles) that cannot
    take effect. `cpus_of`: a tenant's CPU count (by default what the file declares; lint
    passes the placed count); `ram`: the host's, to compare shares of RAM with sizes (0:
    unknown, such pairs are not compared)."""
    found = []
    for t in config.tenants:
        for rule, key, message, hint in _tenant(t, cpus_of(t), ram):
            found.append(Contradiction(rule, Problem(
                config.path, t.line_of(key), f"tenants.{t.name}.{key}", message, hint)))
    for conf in config.confine:
        found += _confined(config.path, conf, ram)
    found += _profiles(config, cpus_of, ram)
    return found


def _confined(path: str, conf: Confinement, ram: int) -> Iterator[Contradiction]:
    count = len(conf.cpus) if conf.cpus is not None else None
    for rule, key, message, hint in [*_quota("unit", conf.unit, conf.cpu_quota, count),
                                     *_high("unit", conf.unit, conf.memory_high,
                                            conf.memory_max, ram)]:
        yield Contradiction(rule, Problem(path, conf.lines.get(key, conf.line),
                                          f"confine.{conf.unit}.{key}", message, hint))


_PROFILE_KEYS = frozenset({"cpus", "cpu_quota", "memory_high", "memory_max"})


def _profiles(config: Config, cpus_of: Callable[[Tenant], int | None], ram: int
              ) -> Iterator[Contradiction]:
    """What a profile makes contradictory, located at the profile's key (or its tenant)."""
    by_name = {t.name: t for t in config.tenants}
    for pname, overrides in config.profiles.items():
        for tname, values in overrides.items():
            base = by_name.get(tname)
            if base is None or not _PROFILE_KEYS & set(values):
                continue
            t = base.with_values(values)
            count = declared_cpus(t) if "cpus" in values else cpus_of(base)
            for rule, key, message, hint in _tenant(t, count, ram):
                if not _touched(key, values):
                    continue  # the base file's own, reported there
                where = key if key in values else next(k for k in _PROFILE_KEYS
                                                       if k in values)
                line = config.profile_lines.get(f"{pname}.{tname}.{where}",
                                                config.profile_lines.get(pname, 0))
                yield Contradiction(rule, Problem(config.path, line,
                                                  f"profiles.{pname}.{tname}.{where}",
                                                  f"in profile {pname}: {message}", hint))


def _touched(key: str, values: Mapping[str, Any]) -> bool:
    """Whether a profile's `values` change what the rule on `key` compares."""
    related = {"cpu_quota": ("cpu_quota", "cpus"), "memory_high": ("memory_high", "memory_max")}
    return any(k in values for k in related[key])
