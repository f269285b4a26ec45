"""Version gating: a key the target's systemd cannot take is refused before anything is
written, located where tenants.yaml sets it (pure).

Each property in the settings table knows the first systemd release that accepts it (and,
for a few values, a later one: `CPUWeight=idle` needs 252). The target's version comes from
systemd itself on the live host (Manager.Version over D-Bus), from a topology export
(`slicectl topology --json` records it), or from `--systemd-version N`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from slicectl.core.errors import ConfigError, Problem
from slicectl.core.properties import BY_KEY
from slicectl.core.tenants import Config, Confinement, Tenant

_LEADING = re.compile(r"\s*(?:systemd\s+)?(\d+)")


def parse_version(text: str) -> int | None:
    """The release number in a systemd version string: "252.38-1~deb12u1" -> 252,
    "systemd 252 (252.38-1~deb12u1)" -> 252; None when there is none. (systemd calls its
    Version property informational; its leading number is the release.)"""
    m = _LEADING.match(text)
    return int(m[1]) if m else None


def _too_new(values: Mapping[str, Any], version: int) -> Iterator[tuple[str, int]]:
    """(key, version it needs) for each key in `values` that `version` cannot take."""
    for key, value in values.items():
        prop = BY_KEY[key].prop
        if prop is not None and prop.needs(value) > version:
            yield key, prop.needs(value)


def _as_set(unit: Tenant | Confinement) -> dict[str, Any]:
    """Every key a tenant or confined unit sets in the file, placement keys (cpus, numa,
    nodes) included, with its value: each becomes a property as much as a resource key does
    (`cpus` is AllowedCPUs=, `nodes` AllowedMemoryNodes=)."""
    return {key: unit.resources[key] if key in unit.resources else getattr(unit, key, None)
            for key in unit.lines}


def version_problems(config: Config, version: int, source: str) -> list[Problem]:
    """Every key of `config` that systemd `version` cannot take, wherever it is set: tenants,
    profiles (whether applied now, switched in by the schedule or not), `confine:` units and
    `housekeeping.cpus` (AllowedCPUs= of the housekeeping units and of the parent slice).
    The property each key becomes, and its first version, come from the settings table."""
    problems: list[Problem] = []

    def add(line: int, path: str, needs: int) -> None:
        problems.append(Problem(
            config.path, line, path,
            f"needs systemd {needs} or later, but the target runs systemd {version} "
            f"({source})",
            "remove the key, or upgrade systemd on the target; --systemd-version N plans "
            "for another target"))

    if config.housekeeping_cpus:
        for _, needs in _too_new({"cpus": config.housekeeping_cpus}, version):
            add(config.housekeeping_line, "housekeeping.cpus", needs)
    # A profile applied now (with_profile) is reported where the profile sets its keys.
    applied = config.profiles.get(config.profile or "", {})
    for t in config.tenants:
        own = {k: v for k, v in _as_set(t).items() if k not in applied.get(t.name, {})}
        for key, needs in _too_new(own, version):
            add(t.line_of(key), f"tenants.{t.name}.{key}", needs)
    for c in config.confine:
        for key, needs in _too_new(_as_set(c), version):
            add(c.line_of(key), f"confine.{c.unit}.{key}", needs)
    for name, overrides in config.profiles.items():
        for tenant, values in overrides.items():
            for key, needs in _too_new(values, version):
                line = config.profile_lines.get(f"{name}.{tenant}.{key}",
                                                config.profile_lines.get(name, 0))
                add(line, f"profiles.{name}.{tenant}.{key}", needs)
    return sorted(problems, key=lambda p: p.line)


def check_version(config: Config, version: int | None, source: str) -> None:
    """Raise ConfigError if the target's systemd cannot take a key (None: unknown, no check)."""
    if version is None:
        return
    problems = version_problems(config, version, source)
    if problems:
        raise ConfigError(problems)
