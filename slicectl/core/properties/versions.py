"""Version gating: a key the target's systemd cannot take is refused before anything is
written, located where tenants.yaml sets it (pure).

Each property in the settings table knows the first systemd release that accepts it (and,
for a few values, a later one: `CPUWeight=idle` needs 252). The target's version comes from
systemd itself on the live host (Manager.Version over D-Bus), from a topology export
(`slicectl topology --json` records it), or from `--systemd-version N`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from slicectl.core.config.tenants import Config, Confinement, Tenant
from slicectl.core.errors import ConfigError, Problem
from slicectl.core.properties.properties import BY_KEY, Prop

_LEADING = re.compile(r"\s*(?:systemd\s+)?([0-9]+)")


def parse_version(text: str) -> int | None:
    """The release number in a systemd version string: "252.38-1~deb12u1" -> 252,
    "systemd 252 (252.38-1~deb12u1)" -> 252; None when there is none. (systemd calls its
    Version property informational; its leading number is the release.)"""
    m = _LEADING.match(text)
    return int(m[1]) if m else None


def _as_set(unit: Tenant | Confinement) -> dict[str, Any]:
    """Every key a tenant or confined unit sets in the file, placement keys (cpus, numa,
    nodes) included, with its value: each becomes a property as much as a resource key does
    (`cpus` is AllowedCPUs=, `nodes` AllowedMemoryNodes=)."""
    return {key: unit.resources[key] if key in unit.resources else getattr(unit, key, None)
            for key in unit.lines}


def _set_keys(config: Config) -> Iterator[tuple[int, str, str, Any]]:
    """(line, key path, key, value) of every key `config` sets, wherever: `housekeeping.cpus`
    (AllowedCPUs= of the housekeeping units and of the parent slice), tenants, `confine:`
    units and profiles (whether applied now, switched in by the schedule or not). A profile
    applied now (with_profile) is reported where the profile sets its keys."""
    if config.housekeeping_cpus:
        yield config.housekeeping_line, "housekeeping.cpus", "cpus", config.housekeeping_cpus
    applied = config.profiles.get(config.profile or "", {})
    for t in config.tenants:
        for key, value in _as_set(t).items():
            if key not in applied.get(t.name, {}):
                yield t.line_of(key), f"tenants.{t.name}.{key}", key, value
    for c in config.confine:
        for key, value in _as_set(c).items():
            yield c.line_of(key), f"confine.{c.unit}.{key}", key, value
    for name, overrides in config.profiles.items():
        for tenant, values in overrides.items():
            for key, value in values.items():
                line = config.profile_lines.get(f"{name}.{tenant}.{key}",
                                                config.profile_lines.get(name, 0))
                yield line, f"profiles.{name}.{tenant}.{key}", key, value


def _kernel_text(prop: Prop, value: Any) -> str:
    kernel = prop.needs_kernel(value)
    return "" if kernel is None else " and Linux {}.{} or later".format(*kernel)


def unsupported_keys(keys: Iterable[str], version: int | None) -> dict[str, int]:
    """Of `keys`, those whose property systemd `version` cannot take at all, with the release
    each needs (none when the version is unknown: nothing is held back on a guess)."""
    if version is None:
        return {}
    out = {}
    for key in keys:
        prop = BY_KEY[key].prop
        if prop is not None and prop.since > version:
            out[key] = prop.since
    return out


def version_problems(config: Config, version: int, source: str) -> list[Problem]:
    """Every key of `config` that systemd `version` cannot take, wherever it is set. The
    property each key becomes, and its first version, come from the settings table."""
    problems = []
    for line, path, key, value in _set_keys(config):
        prop = BY_KEY[key].prop
        if prop is not None and prop.needs(value) > version:
            problems.append(Problem(
                config.path, line, path,
                f"needs systemd {prop.needs(value)} or later{_kernel_text(prop, value)}, but "
                f"the target runs systemd {version} ({source})",
                "remove the key, or upgrade systemd on the target; --systemd-version N "
                "plans for another target"))
    return sorted(problems, key=lambda p: p.line)


def parse_kernel(release: str) -> tuple[int, int] | None:
    """(major, minor) of a kernel release: "6.1.0-28-amd64" -> (6, 1); None if it has none."""
    m = re.match(r"([0-9]+)\.([0-9]+)", release)
    return (int(m[1]), int(m[2])) if m else None


def kernel_problems(config: Config, release: str, source: str) -> list[Problem]:
    """Every key whose property the target's kernel lacks (systemd accepts it there and the
    kernel ignores it, so a check on systemd's version alone lets it through)."""
    kernel = parse_kernel(release)
    if kernel is None:
        return []
    problems = []
    for line, path, key, value in _set_keys(config):
        prop = BY_KEY[key].prop
        needs = None if prop is None else prop.needs_kernel(value)
        if needs is not None and kernel < needs:
            problems.append(Problem(
                config.path, line, path,
                "needs Linux {}.{} or later".format(*needs) + f", but the target "
                f"runs Linux {release}",
                "remove the key, or upgrade the kernel on the target"))
    return sorted(problems, key=lambda p: p.line)


def check_version(config: Config, version: int | None, source: str,
                  kernel: str | None = None) -> None:
    """Raise ConfigError if the target's systemd `version` (None: unknown, no check) or its
    kernel release `kernel` (None: unknown) cannot take a key."""
    problems = [] if version is None else version_problems(config, version, source)
    if kernel is not None and not problems:
        problems = kernel_problems(config, kernel, source)
    if problems:
        raise ConfigError(problems)
