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
from slicectl.core.tenants import Config

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


def version_problems(config: Config, version: int, source: str) -> list[Problem]:
    """Every key of `config` (profiles included) that systemd `version` cannot take."""
    problems: list[Problem] = []

    def add(line: int, path: str, needs: int) -> None:
        problems.append(Problem(
            config.path, line, path,
            f"needs systemd {needs} or later, but the target runs systemd {version} "
            f"({source})",
            "remove the key, or upgrade systemd on the target; --systemd-version N plans "
            "for another target"))

    for t in config.tenants:
        for key, needs in _too_new(t.resources, version):
            add(t.line_of(key), f"tenants.{t.name}.{key}", needs)
    for c in config.confine:
        for key, needs in _too_new(c.resources, version):
            add(c.line_of(key), f"confine.{c.unit}.{key}", needs)
    for name, overrides in config.profiles.items():
        for tenant, values in overrides.items():
            for key, needs in _too_new(values, version):
                line = config.profile_lines.get(f"{name}.{tenant}.{key}",
                                                config.profile_lines.get(name, 0))
                add(line, f"profiles.{name}.{tenant}.{key}", needs)
    return problems


def check_version(config: Config, version: int | None, source: str) -> None:
    """Raise ConfigError if the target's systemd cannot take a key (None: unknown, no check)."""
    if version is None:
        return
    problems = version_problems(config, version, source)
    if problems:
        raise ConfigError(problems)
