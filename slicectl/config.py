"""tenants.yaml v1: strict parsing into frozen dataclasses, every problem located by line.

`load_config(path)` raises ConfigError carrying *all* problems found (file, line, key path,
message, hint), so `slicectl validate` can list them at once. Nothing here touches the host.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from slicectl.errors import ConfigError, Problem
from slicectl.settings import (
    CONFINE_SETTINGS,
    HOUSEKEEPING_KEYS,
    PROFILE_KEYS,
    TENANT_NAME_RE,
    TENANT_SETTINGS,
    TOP_KEYS,
    Numa,
    Setting,
    check_unit_name,
    parse_housekeeping_cpus,
)

SUPPORTED_VERSION = 1
HOUSEKEEPING_UNITS = ("system.slice", "user.slice", "init.scope")


@dataclass(frozen=True)
class Tenant:
    """One tenant: becomes `<slice>-<name>.slice`."""

    name: str
    line: int = 0
    description: str | None = None
    cpus: int | frozenset[int] | None = None
    numa: Numa = Numa.LOCAL
    nodes: tuple[int, ...] | None = None
    exclusive: bool = True
    cpu_weight: int | None = None
    cpu_quota: int | None = None
    cpu_quota_period: int | None = None
    memory_max: int | None = None
    memory_high: int | None = None
    memory_low: int | None = None
    memory_min: int | None = None
    memory_swap_max: int | None = None
    services: tuple[str, ...] = ()
    lines: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)

    def line_of(self, key: str) -> int:
        """Line of `key` in the source file, or of the tenant when the key is absent."""
        return self.lines.get(key, self.line)


@dataclass(frozen=True)
class Confinement:
    """Limits for a housekeeping unit (system.slice, user.slice, cron.service, …)."""

    unit: str
    line: int = 0
    cpus: frozenset[int] | None = None
    cpu_weight: int | None = None
    cpu_quota: int | None = None
    memory_high: int | None = None
    memory_max: int | None = None
    memory_swap_max: int | None = None
    lines: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class Config:
    """A validated tenants.yaml."""

    path: str
    slice: str = "tenants"
    housekeeping_cpus: int | frozenset[int] = 0
    housekeeping_line: int = 0
    confine: tuple[Confinement, ...] = ()
    tenants: tuple[Tenant, ...] = ()
    profiles: Mapping[str, Mapping[str, Mapping[str, Any]]] = field(default_factory=dict)
    profile_lines: Mapping[str, int] = field(default_factory=dict, compare=False)
    profile: str | None = None  # the profile applied by with_profile(), if any

    def tenant(self, name: str) -> Tenant:
        for t in self.tenants:
            if t.name == name:
                return t
        raise KeyError(name)

    def slice_unit(self, tenant: str | None = None) -> str:
        """`tenants.slice`, or `tenants-NAME.slice` for a tenant."""
        return f"{self.slice}.slice" if tenant is None else f"{self.slice}-{tenant}.slice"

    def with_profile(self, name: str | None) -> Config:
        """This config with a profile's overrides applied (None: unchanged)."""
        if name is None:
            return self
        if name not in self.profiles:
            known = ", ".join(sorted(self.profiles)) or "none defined"
            raise ConfigError([Problem(self.path, 0, "profiles", f"no profile {name!r}",
                                       f"profiles in this file: {known}")])
        overrides = self.profiles[name]
        tenants = tuple(
            replace(t, **dict(overrides[t.name])) if t.name in overrides else t
            for t in self.tenants
        )
        return replace(self, tenants=tenants, profile=name)


class _Collector:
    """Collects problems with file/line/key so all are reported at once."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.problems: list[Problem] = []

    def add(self, line: int, key: str, message: str, hint: str = "") -> None:
        self.problems.append(Problem(self.path, line, key, message, hint))


def _key_line(node: Any, key: Any, default: int) -> int:
    """1-based line of `key` in a mapping from load_yaml (default when unknown)."""
    try:
        return int(node.lc.key(key)[0]) + 1
    except (AttributeError, KeyError, TypeError):
        return default


def _node_line(node: Any, default: int) -> int:
    try:
        return int(node.lc.line) + 1
    except AttributeError:
        return default


def _unknown_key_hint(key: str, known: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(str(key), known, n=1)
    if close:
        return f"did you mean {close[0]!r}? known keys: {', '.join(known)}"
    return f"known keys: {', '.join(known)}"


def _parse_settings(
    c: _Collector, node: Any, settings: tuple[Setting, ...], prefix: str, line: int,
    allowed: tuple[str, ...] | None = None,
) -> tuple[dict[str, Any], dict[str, int]]:
    """Parse a mapping of settings; returns (values, lines). Problems go to the collector."""
    values: dict[str, Any] = {}
    lines: dict[str, int] = {}
    if node is None:
        return values, lines
    if not isinstance(node, Mapping):
        c.add(line, prefix, f"expected a mapping of settings, got {_kind(node)}",
              "write it as `key: value` lines indented under it")
        return values, lines
    by_key = {s.key: s for s in settings}
    known = tuple(k for k in by_key if allowed is None or k in allowed)
    for key, value in node.items():
        kline = _key_line(node, key, line)
        path = f"{prefix}.{key}"
        if key not in known:
            if allowed is not None and key in by_key:
                c.add(kline, path, "cannot be changed here", f"allowed here: {', '.join(known)}")
            else:
                c.add(kline, path, "unknown key", _unknown_key_hint(str(key), known))
            continue
        setting = by_key[key]
        try:
            values[key] = setting.parse(value)
        except ValueError as e:
            c.add(kline, path, str(e), f"{key}: {setting.doc}")
            continue
        lines[key] = kline
    return values, lines


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r}"


def _parse_tenants(c: _Collector, node: Any, line: int) -> list[Tenant]:
    tenants: list[Tenant] = []
    if node is None:
        return tenants
    if not isinstance(node, Mapping):
        c.add(line, "tenants", f"expected a mapping of tenant names, got {_kind(node)}",
              "write `tenants:` then one `name: {...}` per tenant")
        return tenants
    for name, body in node.items():
        tline = _key_line(node, name, line)
        if not isinstance(name, str) or not TENANT_NAME_RE.match(name):
            c.add(tline, f"tenants.{name}", "invalid tenant name",
                  "use lower-case letters, digits and _ (start with a letter or digit); "
                  "a '-' would nest slices")
            continue
        if body is None:
            body = {}
        values, lines = _parse_settings(c, body, TENANT_SETTINGS, f"tenants.{name}", tline)
        tenants.append(Tenant(name=name, line=tline, lines=lines, **values))
    return tenants


def _parse_confine(c: _Collector, node: Any, line: int) -> list[Confinement]:
    result: list[Confinement] = []
    if node is None:
        return result
    if not isinstance(node, Mapping):
        c.add(line, "confine", f"expected a mapping of unit names, got {_kind(node)}",
              "e.g. `system.slice: {memory_max: 3G}`")
        return result
    for unit, body in node.items():
        uline = _key_line(node, unit, line)
        try:
            check_unit_name(str(unit), ("slice", "service", "scope", "socket", "mount", "swap"))
        except ValueError as e:
            c.add(uline, f"confine.{unit}", str(e),
                  "name a unit such as system.slice, user.slice or cron.service")
            continue
        values, lines = _parse_settings(c, body, CONFINE_SETTINGS, f"confine.{unit}", uline)
        result.append(Confinement(unit=str(unit), line=uline, lines=lines, **values))
    return result


def _parse_profiles(
    c: _Collector, node: Any, line: int, tenants: list[Tenant]
) -> tuple[dict[str, dict[str, dict[str, Any]]], dict[str, int]]:
    profiles: dict[str, dict[str, dict[str, Any]]] = {}
    plines: dict[str, int] = {}
    if node is None:
        return profiles, plines
    if not isinstance(node, Mapping):
        c.add(line, "profiles", f"expected a mapping of profile names, got {_kind(node)}",
              "e.g. `night: {db1: {cpus: 4}}`")
        return profiles, plines
    names = tuple(t.name for t in tenants)
    for pname, body in node.items():
        pline = _key_line(node, pname, line)
        if not isinstance(pname, str) or not TENANT_NAME_RE.match(pname):
            c.add(pline, f"profiles.{pname}", "invalid profile name",
                  "use lower-case letters, digits and _")
            continue
        plines[pname] = pline
        profiles[pname] = {}
        if not isinstance(body, Mapping):
            c.add(pline, f"profiles.{pname}", f"expected tenant overrides, got {_kind(body)}",
                  "e.g. `db1: {cpus: 4}`")
            continue
        for tname, overrides in body.items():
            tline = _key_line(body, tname, pline)
            if tname not in names:
                c.add(tline, f"profiles.{pname}.{tname}", "no such tenant",
                      _unknown_key_hint(str(tname), names).replace("known keys", "tenants"))
                continue
            values, _ = _parse_settings(c, overrides, TENANT_SETTINGS,
                                        f"profiles.{pname}.{tname}", tline, PROFILE_KEYS)
            profiles[pname][str(tname)] = values
    return profiles, plines


def _cross_checks(
    c: _Collector, tenants: list[Tenant], confine: list[Confinement], slice_name: str
) -> None:
    """Checks that span tenants (per-key checks happen while parsing)."""
    members = {svc: t.name for t in tenants for svc in t.services}
    generated = {f"{slice_name}.slice"} | {f"{slice_name}-{t.name}.slice" for t in tenants}
    for conf in confine:
        if conf.unit in generated:
            c.add(conf.line, f"confine.{conf.unit}", "is a slice slicectl generates",
                  "set a tenant's limits under tenants:, not under confine:")
        elif conf.unit in members:
            c.add(conf.line, f"confine.{conf.unit}",
                  f"is a member of tenant {members[conf.unit]!r}",
                  "a tenant's services share the tenant's limits; remove it from confine:")
    owner: dict[str, str] = {}
    for t in tenants:
        for svc in t.services:
            if svc in owner:
                c.add(t.line_of("services"), f"tenants.{t.name}.services",
                      f"{svc} is already a member of tenant {owner[svc]!r}",
                      "a unit can be in one slice only; remove it from one tenant")
            owner.setdefault(svc, t.name)
        if t.nodes is not None and t.numa is Numa.LOCAL and len(t.nodes) > 1:
            c.add(t.line_of("nodes"), f"tenants.{t.name}.nodes",
                  "numa: local means one node, but several nodes are listed",
                  "list one node, or set numa: spread")


def parse_config(data: Any, path: str) -> Config:
    """Validate a loaded YAML document (its mappings know their lines: load_yaml)."""
    c = _Collector(path)
    if not isinstance(data, Mapping):
        c.add(1, "", f"expected a mapping at the top level, got {_kind(data)}",
              "start the file with `version: 1` and a `tenants:` mapping")
        raise ConfigError(c.problems)
    for key in data:
        if key not in TOP_KEYS:
            c.add(_key_line(data, key, 1), str(key), "unknown key",
                  _unknown_key_hint(key, TOP_KEYS))
    version = data.get("version")
    if version is None:
        c.add(1, "version", "missing", "add `version: 1` at the top")
    elif version != SUPPORTED_VERSION:
        c.add(_key_line(data, "version", 1), "version",
              f"unsupported version {version!r}", "this slicectl reads version: 1")
    slice_name = data.get("slice", "tenants")
    if not isinstance(slice_name, str) or not TENANT_NAME_RE.match(slice_name):
        c.add(_key_line(data, "slice", 1), "slice", f"invalid slice name {slice_name!r}",
              "use lower-case letters, digits and _, e.g. `slice: tenants`")
        slice_name = "tenants"
    hk_cpus: int | frozenset[int] = 0
    hk_line = _key_line(data, "housekeeping", 0)
    hk = data.get("housekeeping")
    if hk is not None:
        if not isinstance(hk, Mapping):
            c.add(hk_line, "housekeeping", f"expected a mapping, got {_kind(hk)}",
                  "e.g. `housekeeping: {cpus: 2}`")
        else:
            for key, value in hk.items():
                kline = _key_line(hk, key, hk_line)
                if key not in HOUSEKEEPING_KEYS:
                    c.add(kline, f"housekeeping.{key}", "unknown key",
                          _unknown_key_hint(key, HOUSEKEEPING_KEYS))
                    continue
                try:
                    hk_cpus = parse_housekeeping_cpus(value)
                    hk_line = kline
                except ValueError as e:
                    c.add(kline, "housekeeping.cpus", str(e),
                          "a count such as 2, or a cpulist such as \"0,16\"")
    tenants_node = data.get("tenants")
    tenants = _parse_tenants(c, tenants_node, _key_line(data, "tenants", 1))
    if tenants_node is None and "tenants" not in data:
        c.add(1, "tenants", "missing", "add a `tenants:` mapping with at least one tenant")
    confine = _parse_confine(c, data.get("confine"), _key_line(data, "confine", 1))
    profiles, plines = _parse_profiles(c, data.get("profiles"),
                                       _key_line(data, "profiles", 1), tenants)
    _cross_checks(c, tenants, confine, slice_name)
    if c.problems:
        raise ConfigError(c.problems)
    return Config(path=path, slice=slice_name, housekeeping_cpus=hk_cpus,
                  housekeeping_line=hk_line, confine=tuple(confine), tenants=tuple(tenants),
                  profiles=profiles, profile_lines=plines)


def load_yaml(text: str, path: str, *, round_trip: bool = False) -> Any:
    """Parse YAML keeping lines (`.lc`) and refusing duplicate keys.

    Mappings and sequences are slicectl.yamldoc's LineMap/LineSeq; with `round_trip`, ruamel's
    CommentedMap/CommentedSeq (which also keep comments and styles, and are slower).
    """
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        if round_trip:
            from ruamel.yaml import YAML

            return YAML(typ="rt").load(text)
        from slicectl import yamldoc

        return yamldoc.load(text)
    except MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark is not None else 0
        message = (e.problem or e.context or "invalid YAML").strip()
        hint = "check indentation and quoting around this line"
        if "duplicate" in message.lower() or "found duplicate" in str(e).lower():
            message = "duplicate key " + message.split("found duplicate key", 1)[-1].strip()
            hint = "each key may appear once; merge the two entries"
        raise ConfigError([Problem(path, line, "", message, hint)]) from e
    except YAMLError as e:
        raise ConfigError([Problem(path, 0, "", f"invalid YAML: {e}",
                                   "check the file's syntax")]) from e


def load_config(path: str) -> Config:
    """Read and validate tenants.yaml from `path`."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ConfigError([Problem(path, 0, "", f"cannot read: {e.strerror}",
                                   "check the path to tenants.yaml")]) from e
    except UnicodeDecodeError as e:
        raise ConfigError([Problem(path, 0, "", "is not UTF-8 text",
                                   "save the file as UTF-8")]) from e
    return parse_config(load_yaml(text, path), path)


def tenant_field_names() -> tuple[str, ...]:
    """Settable Tenant fields (for docs and tests)."""
    return tuple(f.name for f in fields(Tenant) if f.name not in ("name", "line", "lines"))
