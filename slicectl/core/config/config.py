"""tenants.yaml v1: strict parsing into the tenants model (slicectl.core.config.tenants), every
problem located by line.

`parse_config(data, path)` raises ConfigError carrying *all* problems found (file, line, key
path, message, hint), so `slicectl validate` can list them at once. What the keys mean, their
parsers and ranges come from the property table (slicectl.core.properties.properties). Nothing here
touches the host: reading the file is slicectl.host.planning.load_tenants.

Why this module runs past 400 lines: one located walk over the document (tenants, profiles,
schedules, confinement, housekeeping) that collects every problem with its line; the values'
parsers and ranges already live in `parsers`, `kinds` and `properties`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from slicectl.core.config.contradictions import contradictions
from slicectl.core.config.tenants import (
    BASE_PROFILE,
    HOUSEKEEPING_UNITS,
    BalancePolicy,
    Config,
    Confinement,
    Tenant,
)
from slicectl.core.config.values import check_ascii, format_duration_us, quote
from slicectl.core.errors import ConfigError, Problem
from slicectl.core.human import human_memory
from slicectl.core.properties.partition import is_partition
from slicectl.core.properties.properties import (
    BALANCE_KEYS,
    BY_KEY,
    CONFINE_SETTINGS,
    CONFINE_TYPES,
    HOUSEKEEPING_KEYS,
    MAX_UNIT_FILE_NAME,
    PROFILE_KEYS,
    TARGET_KEYS,
    TENANT_NAME_RE,
    TENANT_SETTINGS,
    TOP_KEYS,
    Numa,
    Role,
    Setting,
    check_unit_name,
    parse_housekeeping_cpus,
)

__all__ = ["HOUSEKEEPING_UNITS", "Config", "Confinement", "Tenant", "load_yaml",
           "parse_config"]

SUPPORTED_VERSION = 1
TENANT_KEYS: Mapping[str, Setting] = {s.key: s for s in TENANT_SETTINGS}
CONFINE_KEYS: Mapping[str, Setting] = {s.key: s for s in CONFINE_SETTINGS}
PROFILE_OVERRIDES: Mapping[str, Setting] = {k: TENANT_KEYS[k] for k in PROFILE_KEYS}


class _Collector:
    """Collects problems with file/line/key so all are reported at once."""

    # "did you mean" searches are costly (difflib): the first ones get them, a file of
    # thousands of unknown keys gets the list of known keys after that.
    SUGGESTIONS = 100

    def __init__(self, path: str) -> None:
        self.path = path
        self.problems: list[Problem] = []
        self._suggested = 0

    def add(self, line: int, key: str, message: str, hint: str = "") -> None:
        self.problems.append(Problem(self.path, line, key, message, hint))

    def unknown_key_hint(self, key: object, known: tuple[str, ...], what: str = "known keys"
                         ) -> str:
        """Known keys, and the closest one while suggestions last."""
        self._suggested += 1
        if self._suggested <= self.SUGGESTIONS:
            import difflib  # here: only a file with a wrong key pays for importing it

            close = difflib.get_close_matches(str(key)[:60], known, n=1)
            if close:
                return f"did you mean {close[0]!r}? {what}: {', '.join(known)}"
        return f"{what}: {', '.join(known)}"


def _key_line(node: Any, key: Any, default: int) -> int:
    """1-based line of `key` in a mapping from load_yaml (default when unknown)."""
    try:
        return int(node.lc.key(key)[0]) + 1
    except (AttributeError, KeyError, TypeError):
        return default


def _name(value: Any) -> str:
    """A key as a key path shows it (bounded: a key may be anything YAML allows)."""
    plain = isinstance(value, str) and len(value) <= 60 and value.isprintable()
    return value if plain else quote(value)


def _parse_settings(
    c: _Collector, node: Any, table: Mapping[str, Setting], prefix: str, line: int,
    allowed: Mapping[str, Setting] | None = None,
) -> tuple[dict[str, Any], dict[str, int]]:
    """Parse a mapping of settings (keys of `table`, or only `allowed` ones); returns (values,
    lines). Problems go to the collector."""
    values: dict[str, Any] = {}
    lines: dict[str, int] = {}
    if node is None:
        return values, lines
    if not isinstance(node, Mapping):
        c.add(line, prefix, f"expected a mapping of settings, got {_kind(node)}",
              "write it as `key: value` lines indented under it")
        return values, lines
    known = table if allowed is None else allowed
    for key, value in node.items():
        kline = _key_line(node, key, line)
        setting = known.get(key) if isinstance(key, str) else None
        if setting is None:
            path = f"{prefix}.{_name(key)}"
            if allowed is not None and key in table:
                c.add(kline, path, "cannot be changed here", f"allowed here: {', '.join(known)}")
            else:
                c.add(kline, path, "unknown key", c.unknown_key_hint(key, tuple(known)))
            continue
        try:
            values[key] = setting.parse(value)
        except ValueError as e:
            c.add(kline, f"{prefix}.{key}", str(e),
                  getattr(e, "hint", None) or f"{key}: {setting.doc}")
            continue
        lines[key] = kline
    return values, lines


def _split(values: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(dataclass fields, resources) of parsed values, by the keys' roles."""
    fields_ = {k: v for k, v in values.items() if BY_KEY[k].role is not Role.RESOURCE}
    return fields_, {k: v for k, v in values.items() if BY_KEY[k].role is Role.RESOURCE}


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {quote(value)}"


def _valid_name(name: Any) -> bool:
    return isinstance(name, str) and TENANT_NAME_RE.fullmatch(name) is not None


def _parse_tenants(c: _Collector, node: Any, line: int, slice_name: str) -> list[Tenant]:
    tenants: list[Tenant] = []
    if node is None:
        return tenants
    if not isinstance(node, Mapping):
        c.add(line, "tenants", f"expected a mapping of tenant names, got {_kind(node)}",
              "write `tenants:` then one `name: {...}` per tenant")
        return tenants
    for name, body in node.items():
        tline = _key_line(node, name, line)
        if not _valid_name(name):
            c.add(tline, f"tenants.{_name(name)}", "invalid tenant name",
                  "use lower-case letters, digits and _ (start with a letter or digit); "
                  "a '-' would nest slices")
            continue
        unit = f"{slice_name}-{name}.slice"
        if len(unit.encode()) > MAX_UNIT_FILE_NAME:
            c.add(tline, f"tenants.{_name(name)}", f"the slice name {unit[:40]}… is "
                  f"{len(unit.encode())} bytes long; at most {MAX_UNIT_FILE_NAME} fit",
                  "a file name has at most 255 bytes, and slicectl writes a temporary file "
                  "beside each unit file: use a shorter tenant name")
            continue
        values, lines = _parse_settings(c, body, TENANT_KEYS, f"tenants.{name}", tline)
        fields_, resources = _split(values)
        tenants.append(Tenant(name=name, line=tline, lines=lines, resources=resources,
                              **fields_))
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
            if not isinstance(unit, str):
                raise ValueError(f"{quote(unit)} is not a valid systemd unit name")
            check_unit_name(unit, CONFINE_TYPES, folder=True)
        except ValueError as e:
            c.add(uline, f"confine.{_name(unit)}", str(e),
                  "name a unit such as system.slice, user.slice or cron.service")
            continue
        values, lines = _parse_settings(c, body, CONFINE_KEYS, f"confine.{unit}", uline)
        _check_unit_types(c, unit, values, lines)
        fields_, resources = _split(values)
        result.append(Confinement(unit=unit, line=uline, lines=lines, resources=resources,
                                  **fields_))
    return result


def _check_unit_types(c: _Collector, unit: str, values: dict[str, Any],
                      lines: Mapping[str, int]) -> None:
    """Keys whose property this unit's type does not take (ManagedOOM*: services, scopes and
    slices only) are refused, and dropped."""
    kind = unit.rpartition(".")[2]
    for key in list(values):
        prop = CONFINE_KEYS[key].prop
        if prop is not None and prop.types is not None and kind not in prop.types:
            c.add(lines[key], f"confine.{unit}.{key}",
                  f"{prop.name}= applies to {', '.join(t + 's' for t in prop.types)} only",
                  f"remove it from {unit}")
            del values[key]


def _parse_profile(c: _Collector, pname: str, body: Any, pline: int,
                   names: tuple[str, ...], known: frozenset[str], lines: dict[str, int]
                   ) -> dict[str, dict[str, Any]]:
    """One profile: tenant -> overrides (their lines go to `lines` as "P.TENANT.KEY")."""
    overrides: dict[str, dict[str, Any]] = {}
    if not isinstance(body, Mapping):
        c.add(pline, f"profiles.{pname}", f"expected tenant overrides, got {_kind(body)}",
              "e.g. `db1: {cpus: 4}`")
        return overrides
    for tname, values in body.items():
        tline = _key_line(body, tname, pline)
        if tname not in known:
            c.add(tline, f"profiles.{pname}.{_name(tname)}", "no such tenant",
                  c.unknown_key_hint(tname, names, "tenants"))
            continue
        parsed, key_lines = _parse_settings(c, values, TENANT_KEYS,
                                            f"profiles.{pname}.{tname}", tline,
                                            PROFILE_OVERRIDES)
        overrides[str(tname)] = parsed
        lines.update({f"{pname}.{tname}.{k}": n for k, n in key_lines.items()})
    return overrides


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
    names = tuple(t.name for t in tenants)  # in file order, for the hint
    known = frozenset(names)  # a tuple's `in` made a profile of every tenant quadratic
    for pname, body in node.items():
        pline = _key_line(node, pname, line)
        if not _valid_name(pname):
            c.add(pline, f"profiles.{_name(pname)}", "invalid profile name",
                  "use lower-case letters, digits and _")
            continue
        plines[pname] = pline
        profiles[pname] = _parse_profile(c, pname, body, pline, names, known,
                                           plines)
    return profiles, plines


def _calendars(value: Any) -> tuple[str, ...]:
    """One calendar expression or a list of them: single lines of text (systemd checks their
    syntax: slicectl.host.systemd.systemd_calendar)."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or not all(
            isinstance(v, str) and v.strip() for v in items):
        raise ValueError(f"expected a calendar expression such as \"Mon..Fri 22:00\", or a "
                         f"list of them; got {quote(value)}")
    if len(items) > 32:
        raise ValueError(f"{len(items)} expressions: at most 32")
    for v in items:
        if len(v) > 200 or not v.isprintable() or "\\" in v:
            raise ValueError(f"{quote(v)} is not a single line of at most 200 characters "
                             "without backslashes")
        check_ascii(v)  # systemd's calendar events are ASCII: ２２:00 is no time
    return tuple(v.strip() for v in items)


def _parse_schedule(c: _Collector, node: Any, line: int,
                    profiles: Mapping[str, Any]) -> tuple[dict[str, tuple[str, ...]],
                                                         dict[str, int]]:
    """schedule: {PROFILE: CALENDAR | [CALENDAR, ...]}; `default` is the base file."""
    schedule: dict[str, tuple[str, ...]] = {}
    lines: dict[str, int] = {}
    if node is None:
        return schedule, lines
    if not isinstance(node, Mapping):
        c.add(line, "schedule", f"expected a mapping of profile names, got {_kind(node)}",
              "e.g. `schedule: {night: \"Mon..Fri 22:00\", default: \"Mon..Fri 07:00\"}`")
        return schedule, lines
    known = (*profiles, BASE_PROFILE) if BASE_PROFILE not in profiles else tuple(profiles)
    for name, value in node.items():
        pline = _key_line(node, name, line)
        if name not in known:
            c.add(pline, f"schedule.{_name(name)}", "no such profile",
                  c.unknown_key_hint(name, known, "profiles (default: the base file)"))
            continue
        try:
            schedule[name] = _calendars(value)
            lines[name] = pline
        except ValueError as e:
            c.add(pline, f"schedule.{name}", str(e),
                  "systemd calendar events, see systemd.time(7)")
    return schedule, lines


def _check_members(c: _Collector, tenants: list[Tenant], confine: list[Confinement],
                   slice_name: str) -> None:
    """A unit belongs to one tenant, and a tenant's units are not confined separately."""
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


def _check_nodes(c: _Collector, tenants: list[Tenant]) -> None:
    for t in tenants:
        if t.nodes is not None and t.numa is Numa.LOCAL and len(t.nodes) > 1:
            c.add(t.line_of("nodes"), f"tenants.{t.name}.nodes",
                  "numa: local means one node, but several nodes are listed",
                  "list one node, or set numa: spread")


def _protection_above_limit(t: Tenant) -> Iterator[tuple[str, str]]:
    """(key, message) for memory_low/memory_min above memory_max where that shows without
    the host's RAM (both sizes, or both shares of RAM; plan compares the rest)."""
    for key, value, limit in t.protection_above_limit(0):
        yield key, (f"{key} {human_memory(value)} is above memory_max {human_memory(limit)}: "
                    f"the tenant can never use what it protects beyond {human_memory(limit)}")


def _check_memory(c: _Collector, tenants: list[Tenant],
                  profiles: Mapping[str, Mapping[str, Mapping[str, Any]]],
                  plines: Mapping[str, int]) -> None:
    """Protection above the limit, in each tenant and in each profile's tenants."""
    hint = "lower memory_low/memory_min to at most memory_max, or raise memory_max"
    for t in tenants:
        for key, message in _protection_above_limit(t):
            c.add(t.line_of(key), f"tenants.{t.name}.{key}", message, hint)
    by_name = {t.name: t for t in tenants}
    for pname, overrides in profiles.items():
        for tname, values in overrides.items():
            if not {"memory_max", "memory_low", "memory_min"} & set(values):
                continue
            for key, message in _protection_above_limit(by_name[tname].with_values(values)):
                where = key if key in values else "memory_max"
                c.add(plines.get(f"{pname}.{tname}.{where}", plines.get(pname, 0)),
                      f"profiles.{pname}.{tname}.{where}", message, hint)


_ELASTIC_RANGE = "cpus_min <= cpus <= cpus_max: cpus is the size the tenant starts with"


def _elastic_problems(t: Tenant, cpus: Any, exclusive: bool) -> Iterator[tuple[str, str, str]]:
    """(key, message, hint) for an elastic tenant whose `cpus` and `exclusive` (its own, or
    a profile's) the balancer cannot work with."""
    if not isinstance(cpus, int):
        what = "no cpus (the shared pool)" if cpus is None else "an explicit cpulist"
        yield ("cpus", f"tenant {t.name} is elastic (cpus_min/cpus_max) but has {what}",
               "write cpus as a count, e.g. cpus: 8: the balancer starts from that many CPUs "
               "and picks the whole cores it moves; or remove cpus_min and cpus_max")
        return
    if not exclusive:
        yield ("exclusive", f"tenant {t.name} is elastic (cpus_min/cpus_max) but not exclusive",
               "a non-exclusive tenant's CPUs overlap the shared pool, so it holds no core "
               "the balancer could move: remove exclusive: false, or cpus_min and cpus_max")
    if t.cpus_min is not None and t.cpus_min > cpus:
        yield "cpus_min", f"cpus_min {t.cpus_min} is above cpus {cpus}", _ELASTIC_RANGE
    if t.cpus_max is not None and t.cpus_max < cpus:
        yield "cpus_max", f"cpus_max {t.cpus_max} is below cpus {cpus}", _ELASTIC_RANGE


def _check_elastic(c: _Collector, tenants: list[Tenant],
                   profiles: Mapping[str, Mapping[str, Mapping[str, Any]]],
                   plines: Mapping[str, int]) -> None:
    """Elastic tenants: a counted `cpus` between their floor and ceiling, exclusive; in each
    profile's overrides too (cpus_min and cpus_max themselves are not profile keys)."""
    for t in tenants:
        if not t.elastic:
            continue
        for key, message, hint in _elastic_problems(t, t.cpus, t.exclusive):
            # cpus and exclusive are right in themselves: the bound that makes them wrong is
            # where the problem is.
            if key in ("cpus", "exclusive"):
                key = "cpus_min" if t.cpus_min is not None else "cpus_max"
            c.add(t.line_of(key), f"tenants.{t.name}.{key}", message, hint)
    by_name = {t.name: t for t in tenants}
    for pname, overrides in profiles.items():
        for tname, values in overrides.items():
            t = by_name[tname]
            if not t.elastic or not {"cpus", "exclusive"} & set(values):
                continue
            cpus, exclusive = values.get("cpus", t.cpus), values.get("exclusive", t.exclusive)
            for key, message, hint in _elastic_problems(t, cpus, exclusive):
                where = key if key in values else "cpus"
                c.add(plines.get(f"{pname}.{tname}.{where}", plines.get(pname, 0)),
                      f"profiles.{pname}.{tname}.{where}", message, hint)


def _partition_problems(t: Tenant, value: Any, cpus: Any, exclusive: bool
                        ) -> Iterator[tuple[str, str]]:
    """(message, hint) for a tenant whose cpuset_partition (its own, or a profile's) the
    kernel cannot make of its `cpus` and `exclusive`."""
    if not is_partition(value):
        return
    if cpus is None:
        yield (f"cpuset_partition: {value} needs the tenant's own CPUs, but tenant {t.name} "
               "has no cpus (it runs on the shared pool)",
               "give the tenant cpus (a count or a cpulist): a partition is made of the CPUs "
               "in its AllowedCPUs=")
    if not exclusive:
        yield (f"cpuset_partition: {value} takes the tenant's CPUs away from every other "
               f"cgroup, but tenant {t.name} has exclusive: false (its CPUs overlap the pool)",
               "remove exclusive: false")
    if t.elastic:
        yield (f"cpuset_partition: {value} cannot be elastic: the balancer moves CPUs of "
               "tenants, and a partition's CPUs are fixed when it is applied",
               "remove cpus_min and cpus_max, or cpuset_partition")


def _check_partitions(c: _Collector, tenants: list[Tenant],
                      profiles: Mapping[str, Mapping[str, Mapping[str, Any]]],
                      plines: Mapping[str, int]) -> None:
    """A cpuset partition needs the tenant's own exclusive CPUs, in each profile too."""
    key = "cpuset_partition"
    for t in tenants:
        for message, hint in _partition_problems(t, t.resources.get(key), t.cpus,
                                                 t.exclusive):
            c.add(t.line_of(key), f"tenants.{t.name}.{key}", message, hint)
    by_name = {t.name: t for t in tenants}
    for pname, overrides in profiles.items():
        for tname, values in overrides.items():
            t = by_name[tname]
            if not {key, "cpus", "exclusive"} & set(values):
                continue
            value = values.get(key, t.resources.get(key))
            where = key if key in values else "cpus" if "cpus" in values else "exclusive"
            for message, hint in _partition_problems(t, value, values.get("cpus", t.cpus),
                                                     values.get("exclusive", t.exclusive)):
                c.add(plines.get(f"{pname}.{tname}.{where}", plines.get(pname, 0)),
                      f"profiles.{pname}.{tname}.{where}", message, hint)


def _parse_balance(c: _Collector, data: Mapping[Any, Any]) -> BalancePolicy:
    """The top-level `balance:` section: the balancer's policy, defaults for what it omits."""
    line = _key_line(data, "balance", 0)
    values, lines = _parse_settings(c, data.get("balance"), BALANCE_KEYS, "balance", line)
    policy = BalancePolicy(line=line, lines=lines, **values)
    if policy.grow_above <= policy.shrink_below:
        key = "grow_above" if "grow_above" in lines or "shrink_below" not in lines \
            else "shrink_below"
        c.add(policy.line_of(key), f"balance.{key}",
              f"grow_above {policy.grow_above}% is not above shrink_below "
              f"{policy.shrink_below}%",
              "keep a gap between them (defaults: 90% and 40%): a load between the two "
              "moves nothing, so a tenant near one threshold does not flap")
    if policy.window < policy.interval:
        key = "window" if "window" in lines or "interval" not in lines else "interval"
        c.add(policy.line_of(key), f"balance.{key}",
              f"window {format_duration_us(policy.window)} is shorter than interval "
              f"{format_duration_us(policy.interval)}",
              "a condition counts once every sample over the window shows it: make window "
              "at least interval (defaults: 30s and 10s)")
    return policy


def _check_top(c: _Collector, data: Mapping[Any, Any]) -> None:
    """Unknown top-level keys and the version."""
    for key in data:
        if key not in TOP_KEYS:
            c.add(_key_line(data, key, 1), _name(key), "unknown key",
                  c.unknown_key_hint(key, TOP_KEYS))
    version = data.get("version")
    if version is None:
        c.add(1, "version", "missing", "add `version: 1` at the top")
    # `type() is int`: YAML's true and 1.0 compare equal to 1 but are not version 1.
    elif type(version) is not int or version != SUPPORTED_VERSION:
        c.add(_key_line(data, "version", 1), "version",
              f"unsupported version {quote(version)}", "this slicectl reads version: 1")


def _parse_slice(c: _Collector, data: Mapping[Any, Any]) -> str:
    slice_name = data.get("slice", "tenants")
    if not _valid_name(slice_name):
        c.add(_key_line(data, "slice", 1), "slice", f"invalid slice name {quote(slice_name)}",
              "use lower-case letters, digits and _, e.g. `slice: tenants`")
        return "tenants"
    if len(f"{slice_name}.slice".encode()) > MAX_UNIT_FILE_NAME:
        c.add(_key_line(data, "slice", 1), "slice", f"the slice name is too long (at most "
              f"{MAX_UNIT_FILE_NAME - len('.slice')} bytes)", "use a shorter slice name")
        return "tenants"
    return str(slice_name)


def _parse_housekeeping(c: _Collector, data: Mapping[Any, Any]) -> tuple[
        int | frozenset[int], int]:
    """housekeeping.cpus and its line."""
    hk_cpus: int | frozenset[int] = 0
    hk_line = _key_line(data, "housekeeping", 0)
    hk = data.get("housekeeping")
    if hk is None:
        return hk_cpus, hk_line
    if not isinstance(hk, Mapping):
        c.add(hk_line, "housekeeping", f"expected a mapping, got {_kind(hk)}",
              "e.g. `housekeeping: {cpus: 2}`")
        return hk_cpus, hk_line
    for key, value in hk.items():
        kline = _key_line(hk, key, hk_line)
        if key not in HOUSEKEEPING_KEYS:
            c.add(kline, f"housekeeping.{_name(key)}", "unknown key",
                  c.unknown_key_hint(key, HOUSEKEEPING_KEYS))
            continue
        try:
            hk_cpus = parse_housekeeping_cpus(value)
            hk_line = kline
        except ValueError as e:
            c.add(kline, "housekeeping.cpus", str(e),
                  "a count such as 2, or a cpulist such as \"0,16\"")
    return hk_cpus, hk_line


def _parse_target(c: _Collector, data: Mapping[Any, Any]) -> dict[str, str]:
    """target.slicectl and target.tenants: absolute paths on the hosts the units are for."""
    line = _key_line(data, "target", 0)
    target = data.get("target")
    if target is None:
        return {}
    if not isinstance(target, Mapping):
        c.add(line, "target", f"expected a mapping, got {_kind(target)}",
              "e.g. `target: {slicectl: /usr/local/bin/slicectl, tenants: "
              "/etc/slicectl/tenants.yaml}`")
        return {}
    found = {}
    for key, value in target.items():
        kline = _key_line(target, key, line)
        if key not in TARGET_KEYS:
            c.add(kline, f"target.{_name(key)}", "unknown key",
                  c.unknown_key_hint(key, TARGET_KEYS))
        elif not isinstance(value, str) or not value.startswith("/"):
            c.add(kline, f"target.{key}", f"expected an absolute path, got {quote(value)}",
                  "the path on the hosts the units are for, e.g. /usr/local/bin/slicectl")
        elif not value.isprintable() or len(value) > 4096:
            c.add(kline, f"target.{key}", f"{quote(value)} is not a path systemd can run",
                  "use a path of printable characters (no newline or control character)")
        else:
            found[key] = value
    return found


def parse_config(data: Any, path: str, *, contradictions_are_errors: bool = True) -> Config:
    """Validate a loaded YAML document (its mappings know their lines: load_yaml). Settings
    that cannot take effect (slicectl.core.config.contradictions) are errors too, unless
    `contradictions_are_errors` is False (lint, which reports them itself)."""
    c = _Collector(path)
    if not isinstance(data, Mapping):
        c.add(1, "", f"expected a mapping at the top level, got {_kind(data)}",
              "start the file with `version: 1` and a `tenants:` mapping")
        raise ConfigError(c.problems)
    _check_top(c, data)
    slice_name = _parse_slice(c, data)
    hk_cpus, hk_line = _parse_housekeeping(c, data)
    tenants = _parse_tenants(c, data.get("tenants"), _key_line(data, "tenants", 1), slice_name)
    if "tenants" not in data:
        c.add(1, "tenants", "missing", "add a `tenants:` mapping with at least one tenant")
    confine = _parse_confine(c, data.get("confine"), _key_line(data, "confine", 1))
    profiles, plines = _parse_profiles(c, data.get("profiles"),
                                       _key_line(data, "profiles", 1), tenants)
    _check_members(c, tenants, confine, slice_name)
    _check_nodes(c, tenants)
    _check_memory(c, tenants, profiles, plines)
    _check_elastic(c, tenants, profiles, plines)
    _check_partitions(c, tenants, profiles, plines)
    balance = _parse_balance(c, data)
    schedule, slines = _parse_schedule(c, data.get("schedule"), _key_line(data, "schedule", 1),
                                       profiles)
    target = _parse_target(c, data)
    config = Config(path=path, slice=slice_name, housekeeping_cpus=hk_cpus,
                    schedule=schedule, schedule_lines=slines,
                    housekeeping_line=hk_line, confine=tuple(confine), tenants=tuple(tenants),
                    profiles=profiles, profile_lines=plines, balance=balance,
                    target_slicectl=target.get("slicectl"),
                    target_tenants=target.get("tenants"),
                    target_line=_key_line(data, "target", 0))
    # Settings that cannot take effect (lint's errors), with every other problem at once.
    if contradictions_are_errors:
        c.problems.extend(x.problem for x in contradictions(config))
    if c.problems:
        raise ConfigError(sorted(c.problems, key=lambda p: p.line))
    return config


def load_yaml(text: str, path: str, *, round_trip: bool = False) -> Any:
    """Parse YAML keeping lines (`.lc`) and refusing duplicate keys.

    Mappings and sequences are slicectl.core.config.yamldoc's LineMap/LineSeq; with `round_trip`,
    ruamel's CommentedMap/CommentedSeq (which also keep comments and styles, and are slower).
    """
    from slicectl.core.config import yamldoc

    return yamldoc.load_located(text, path, round_trip=round_trip)
