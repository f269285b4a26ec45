"""The one table of tenants.yaml settings and the systemd properties they become.

Each `Setting` row says, for one key: how to parse it (with systemd's own ranges), where it
may appear (tenants, profiles, `confine:`), the unit-file property it becomes with its D-Bus
name, kind of value (slicectl.kinds), cgroup file and first systemd version, whether the TUI
form offers it, and its documentation. Everything else reads this table: config (parsing and
validation), plan and render (which properties, in which order), live (D-Bus values, what a
cgroup file must say), systemd (signatures), the TUI form, and the README's reference
(tests/test_readme.py). Adding a property is one row here plus its tests
(docs/design-notes.md, "Adding a property").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Flag, StrEnum, auto
from typing import Any, Final

from slicectl import kinds
from slicectl.cpulist import parse_cpulist
from slicectl.kinds import CgroupExpectation, Kind, LiveValue
from slicectl.values import (
    MAX_PERIOD_US,
    MIN_PERIOD_US,
    Size,
    parse_duration_us,
    parse_percent,
    parse_size,
    quote,
)

# Whole-string matches: `$` alone would accept a final newline ("db1\n").
TENANT_NAME_RE = re.compile(r"[a-z0-9][a-z0-9_]*")
# systemd unit names: ASCII letters, digits, ":-_.\" and "@" for instances (systemd.unit(5)).
UNIT_NAME_RE = re.compile(r"[A-Za-z0-9:_.\\-]+(@[A-Za-z0-9:_.\\-]*)?\.[a-z]+")
UNIT_TYPES = ("service", "socket", "mount", "swap", "slice", "scope", "timer", "path")
# Member units get `Slice=`; systemd honours Slice= only for these types (systemd.resource-control).
SLICE_MEMBER_TYPES = ("service", "socket", "mount", "swap")
CONFINE_TYPES = ("slice", "service", "scope", "socket", "mount", "swap")
# A file name is at most 255 bytes (NAME_MAX). slicectl writes UNIT and UNIT.d/ and, beside
# each file, a temporary ".UNIT.XXXXXXXX.slicectl-tmp" (slicectl.atomic): 23 bytes more.
NAME_MAX: Final = 255
TEMP_NAME_EXTRA: Final = 23
MAX_UNIT_FILE_NAME: Final = NAME_MAX - TEMP_NAME_EXTRA
# The most CPUs systemd's CPU sets take (CPU_SET_MAX: 8192) and NUMA nodes Linux has
# (MAX_NUMNODES with NODES_SHIFT=10): ranges are checked against these before they expand.
MAX_CPUS: Final = 8192
MAX_NODES: Final = 1024
DESCRIPTION_MAX: Final = 200
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class Numa(StrEnum):
    """How a tenant's CPUs and memory relate to NUMA nodes."""

    LOCAL = "local"  # one node, memory bound to it (seed 000: up to +12.5%)
    SPREAD = "spread"  # across nodes evenly, memory from those nodes
    ANY = "any"  # wherever there is room; memory not bound


class Scope(Flag):
    """Where a key may appear in tenants.yaml."""

    TENANT = auto()  # tenants.NAME
    PROFILE = auto()  # profiles.P.NAME (overrides a tenant's key)
    CONFINE = auto()  # confine.UNIT


class Role(StrEnum):
    """What a key does: becomes a resource property, places CPUs, or names things."""

    RESOURCE = "resource"  # its value becomes the row's property as it is
    PLACEMENT = "placement"  # read by placement (cpus, numa, nodes, exclusive)
    TEXT = "text"  # description
    MEMBERS = "members"  # services


# --- parsers (pure; ValueError with a message for the user) -------------------------------


def parse_int_range(lo: int, hi: int) -> Callable[[Any], int]:
    """A parser for an integer in [lo, hi]."""

    def parse(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected a whole number from {lo} to {hi}, got {quote(value)}")
        if not lo <= value <= hi:
            raise ValueError(f"{quote(value)} is out of range {lo}..{hi}")
        return value

    return parse


def parse_bool(value: Any) -> bool:
    """YAML true/false only (not "yes" strings or 0/1)."""
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {quote(value)}")
    return value


def parse_bounded_list(value: str, limit: int, what: str) -> frozenset[int]:
    """A kernel-style list ("0-3,8") whose members are below `limit`, checked before any range
    is expanded (a cpulist "0-2147483648" would take gigabytes)."""
    for number in re.findall(r"\d+", value):
        if len(number) > 6 or int(number) >= limit:
            raise ValueError(f"{what} {quote(number)} is out of range: at most {limit - 1}")
    return parse_cpulist(value)


def parse_cpus(value: Any) -> int | frozenset[int]:
    """A CPU count (8) or an explicit cpulist ("0-3,16-19" or a YAML list of ints)."""
    if isinstance(value, bool):
        raise ValueError("expected a CPU count or a cpulist such as \"0-3,16-19\"")
    if isinstance(value, int):
        if value < 1:
            raise ValueError(f"a CPU count must be at least 1, got {value}")
        if value > MAX_CPUS:
            raise ValueError(f"a CPU count must be at most {MAX_CPUS}, got {quote(value)}")
        return value
    if isinstance(value, list):
        if not value or not all(isinstance(v, int) and not isinstance(v, bool)
                                and 0 <= v < MAX_CPUS for v in value):
            raise ValueError(f"a CPU list must hold CPU numbers from 0 to {MAX_CPUS - 1}")
        return frozenset(value)
    if isinstance(value, str):
        cpus = parse_bounded_list(value, MAX_CPUS, "CPU")
        if not cpus:
            raise ValueError("the cpulist is empty")
        return cpus
    raise ValueError(f"expected a CPU count or a cpulist such as \"0-3,16-19\", "
                     f"got {quote(value)}")


def parse_cpulist_only(value: Any) -> frozenset[int]:
    """An explicit cpulist (no counts)."""
    if isinstance(value, int) and not isinstance(value, bool):
        raise ValueError(f"expected a cpulist such as \"0-1\" here, not a count ({value})")
    cpus = parse_cpus(value)
    assert isinstance(cpus, frozenset)
    return cpus


def parse_housekeeping_cpus(value: Any) -> int | frozenset[int]:
    """Housekeeping CPUs: a count (0 allowed: none) or a cpulist."""
    if isinstance(value, int) and not isinstance(value, bool) and value == 0:
        return 0
    return parse_cpus(value)


def parse_numa(value: Any) -> Numa:
    """local, spread or any."""
    if isinstance(value, str) and value in tuple(Numa):
        return Numa(value)
    raise ValueError(f"expected one of local, spread, any; got {quote(value)}")


def parse_nodes(value: Any) -> tuple[int, ...]:
    """A list of NUMA node ids, or a single id, or a cpulist-style string ("0-1")."""
    if isinstance(value, bool):
        raise ValueError("expected a list of node numbers such as [0, 1]")
    if isinstance(value, int):
        value = [value]
    if isinstance(value, str):
        nodes = tuple(sorted(parse_bounded_list(value, MAX_NODES, "node")))
        if not nodes:
            raise ValueError("the node list is empty")
        return nodes
    if isinstance(value, list) and value and all(
        isinstance(v, int) and not isinstance(v, bool) and 0 <= v < MAX_NODES for v in value
    ):
        if len(set(value)) != len(value):
            raise ValueError("a node is listed twice")
        return tuple(sorted(value))
    raise ValueError(f"expected a list of node numbers (0 to {MAX_NODES - 1}) such as [0, 1], "
                     f"got {quote(value)}")


def parse_unit_list(suffixes: tuple[str, ...]) -> Callable[[Any], tuple[str, ...]]:
    """A parser for a list of systemd unit names with one of `suffixes`."""

    def parse(value: Any) -> tuple[str, ...]:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError("expected a list of unit names such as [app.service]")
        for v in value:
            check_unit_name(v, suffixes, folder=True)
        if len(set(value)) != len(value):
            raise ValueError("a unit is listed twice")
        return tuple(value)

    return parse


def check_unit_name(name: str, suffixes: tuple[str, ...] = UNIT_TYPES, *,
                    folder: bool = False) -> str:
    """Refuse anything that is not a plain systemd unit name (no paths, spaces, newlines).

    With `folder`, slicectl writes `NAME.d/`, so NAME may be 2 bytes shorter than systemd's
    limit.
    """
    if not UNIT_NAME_RE.fullmatch(name):
        raise ValueError(f"{quote(name)} is not a valid systemd unit name")
    longest = NAME_MAX - 2 if folder else NAME_MAX
    if len(name.encode()) > longest:
        why = f"slicectl writes a {name[:12]}….d/ folder for it" if folder else "systemd's limit"
        raise ValueError(f"{quote(name)} is {len(name.encode())} bytes long; at most {longest} "
                         f"fit ({why})")
    if name.rsplit(".", 1)[1] not in suffixes:
        raise ValueError(f"{quote(name)} must end in ." + ", .".join(suffixes))
    if name.startswith("@") or name.endswith("@." + name.rsplit(".", 1)[1]):
        raise ValueError(f"{quote(name)} is a template; name an instance such as app@1.service")
    return name


def parse_description(value: Any) -> str:
    """One line of text (no control characters: it goes into Description=)."""
    if not isinstance(value, str):
        raise ValueError(f"expected text, got {quote(value)}")
    if _CONTROL.search(value):
        raise ValueError("must be a single line without control characters")
    if len(value) > DESCRIPTION_MAX:
        raise ValueError(f"is longer than {DESCRIPTION_MAX} characters")
    text = value.strip()
    if text.endswith("\\"):
        # systemd reads a final backslash as "continued on the next line" (systemd.syntax(7)).
        raise ValueError("ends in a backslash, which systemd reads as a line continuation")
    return text


def size_parser(minimum: int) -> Callable[[Any], Size]:
    """A parser for a size (K/M/G/T/P, base 1024, or infinity) of at least `minimum` bytes."""

    def parse(value: Any) -> Size:
        return parse_size(value, minimum)

    return parse


def parse_quota_period(value: Any) -> int:
    """CPUQuotaPeriodSec=: the kernel's cpu.max period range; systemd clamps others."""
    return parse_duration_us(value, MIN_PERIOD_US, MAX_PERIOD_US)


# --- systemd properties -----------------------------------------------------------------

CgroupText = Callable[[LiveValue, Mapping[str, LiveValue]], str]


@dataclass(frozen=True)
class Prop:
    """A systemd unit property slicectl sets, and the cgroup file that proves it took."""

    name: str  # in unit files and plan JSON: CPUQuota
    dbus: str  # on D-Bus: CPUQuotaPerSecUSec
    kind: Kind
    since: int  # first systemd version that accepts it
    cgroup: str | None = None  # the file it lands in; None: checked through another's file
    text: CgroupText | None = None  # what that file says for a live value (and the others)
    same: Callable[[str, str], bool] = kinds.same_text

    @property
    def signature(self) -> str:
        """The D-Bus signature of its value."""
        return self.kind.signature

    def expectation(self, live: LiveValue, want: Mapping[str, LiveValue]
                    ) -> CgroupExpectation | None:
        """What the cgroup file must say once `live` (and the rest of `want`) is in force."""
        if self.cgroup is None or self.text is None:
            return None
        return CgroupExpectation(self.cgroup, self.text(live, want), self.same)


def _cpu_max(quota: LiveValue, want: Mapping[str, LiveValue]) -> str:
    return kinds.cpu_max_text(quota, want.get("CPUQuotaPeriodUSec"))


def _own(text: Callable[[LiveValue], str]) -> CgroupText:
    """A file whose text depends on the property's own value only."""
    return lambda live, _want: text(live)


ALLOWED_CPUS = Prop("AllowedCPUs", "AllowedCPUs", kinds.CpuSet(), 244, "cpuset.cpus",
                    _own(kinds.cpuset_text), kinds.same_cpus)
ALLOWED_MEMORY_NODES = Prop("AllowedMemoryNodes", "AllowedMemoryNodes", kinds.CpuSet(), 244,
                            "cpuset.mems", _own(kinds.cpuset_text), kinds.same_cpus)


def _memory(name: str, file: str, since: int, *, protection: bool = False,
            unset_text: str = "(unset)") -> Prop:
    return Prop(name, name, kinds.Bytes(protection=protection, unset_text=unset_text), since,
                file, _own(kinds.page_bytes))


# --- the table ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """One key of tenants.yaml: how to parse it, where it may appear, the systemd property it
    becomes, and its documentation (README's reference tables are made from these rows)."""

    key: str
    parse: Callable[[Any], Any]
    prop: Prop | None
    doc: str
    default_doc: str = "unset"
    default: Any = None
    role: Role = Role.RESOURCE
    scopes: Scope = Scope.TENANT | Scope.PROFILE
    editable: bool = False  # offered by the TUI's edit form
    hint: str = ""  # the form's placeholder: an example value
    # In `confine:` a key may parse and read differently (cpus: a cpulist only).
    confine_parse: Callable[[Any], Any] | None = None
    confine_doc: str = ""
    confine_default_doc: str = ""

    def in_confine(self) -> Setting:
        """This row as `confine:` reads it."""
        from dataclasses import replace

        return replace(self, parse=self.confine_parse or self.parse,
                       doc=self.confine_doc or self.doc,
                       default_doc=self.confine_default_doc or self.default_doc)


_TPC = Scope.TENANT | Scope.PROFILE | Scope.CONFINE

SETTINGS: tuple[Setting, ...] = (
    Setting("description", parse_description, None, "one line shown by systemctl",
            "tenant NAME", role=Role.TEXT, scopes=Scope.TENANT),
    Setting("cpus", parse_cpus, ALLOWED_CPUS,
            "CPU count (placed by slicectl) or explicit cpulist \"0-3,16-19\"", "shared pool",
            role=Role.PLACEMENT, scopes=_TPC, editable=True, hint="count or cpulist 0-3,8",
            confine_parse=parse_cpulist_only, confine_doc="cpulist the unit may run on",
            confine_default_doc="housekeeping CPUs for the three housekeeping units"),
    Setting("numa", parse_numa, ALLOWED_MEMORY_NODES,
            "local: one node, memory bound to it; spread: across nodes; any: unbound", "local",
            default=Numa.LOCAL, role=Role.PLACEMENT),
    Setting("nodes", parse_nodes, ALLOWED_MEMORY_NODES,
            "explicit NUMA node(s) for CPUs and memory", "chosen by slicectl",
            role=Role.PLACEMENT),
    Setting("exclusive", parse_bool, None,
            "no other tenant shares these CPUs (false: may overlap the shared pool)", "true",
            default=True, role=Role.PLACEMENT),
    Setting("cpu_weight", parse_int_range(1, 10000),
            Prop("CPUWeight", "CPUWeight", kinds.Number(), 232, "cpu.weight",
                 _own(kinds.weight_text)),
            "relative CPU share among siblings, 1..10000", "unset (100)", scopes=_TPC,
            editable=True, hint="1..10000", confine_doc="relative CPU share, 1..10000",
            confine_default_doc="unset"),
    Setting("cpu_quota", parse_percent,
            Prop("CPUQuota", "CPUQuotaPerSecUSec", kinds.Quota(), 213, "cpu.max", _cpu_max,
                 kinds.same_cpu_max),
            "hard cap in percent of one CPU, e.g. 600%", scopes=_TPC, editable=True,
            hint="e.g. 600%", confine_doc="hard cap, percent of one CPU"),
    Setting("cpu_quota_period", parse_quota_period,
            # Its cgroup file is CPUQuota's cpu.max, checked there with this period.
            Prop("CPUQuotaPeriodSec", "CPUQuotaPeriodUSec", kinds.Duration(), 242),
            "period for cpu_quota, e.g. 100ms (keep >= 30ms, seed 002)", "unset (100ms)"),
    Setting("memory_min", size_parser(0), _memory("MemoryMin", "memory.min", 240,
                                                 protection=True),
            "hard protection: never reclaimed", editable=True, hint="e.g. 0"),
    Setting("memory_low", size_parser(0), _memory("MemoryLow", "memory.low", 231,
                                                 protection=True),
            "best-effort protection under pressure (a reservation, seed 001)", editable=True,
            hint="e.g. 16G"),
    Setting("memory_high", size_parser(1), _memory("MemoryHigh", "memory.high", 231),
            "throttling threshold (reclaim starts here)", scopes=_TPC, editable=True,
            hint="e.g. 22G", confine_doc="throttling threshold"),
    Setting("memory_max", size_parser(1), _memory("MemoryMax", "memory.max", 231,
                                                 unset_text="infinity"),
            "hard limit: K/M/G/T (base 1024) or infinity", scopes=_TPC, editable=True,
            hint="e.g. 24G or infinity", confine_doc="hard limit"),
    Setting("memory_swap_max", size_parser(0), _memory("MemorySwapMax", "memory.swap.max",
                                                      232),
            "swap limit; 0 keeps the tenant out of swap", scopes=_TPC,
            confine_doc="swap limit"),
    Setting("services", parse_unit_list(SLICE_MEMBER_TYPES), None,
            "units moved into the tenant's slice by a drop-in", "[]", default=(),
            role=Role.MEMBERS, scopes=Scope.TENANT),
)

BY_KEY: Final[Mapping[str, Setting]] = {s.key: s for s in SETTINGS}
TENANT_SETTINGS: tuple[Setting, ...] = tuple(s for s in SETTINGS if Scope.TENANT in s.scopes)
CONFINE_SETTINGS: tuple[Setting, ...] = tuple(s.in_confine() for s in SETTINGS
                                              if Scope.CONFINE in s.scopes)
# Keys a profile may override (services stay fixed: moving units between slices needs restarts).
PROFILE_KEYS: tuple[str, ...] = tuple(s.key for s in SETTINGS if Scope.PROFILE in s.scopes)
RESOURCE_KEYS: tuple[str, ...] = tuple(s.key for s in SETTINGS if s.role is Role.RESOURCE)
EDITABLE_KEYS: tuple[str, ...] = tuple(s.key for s in SETTINGS if s.editable)
# Every property slicectl sets, in the order generated files list them (the table's order).
PROPERTIES: Final[tuple[Prop, ...]] = tuple(
    dict.fromkeys(s.prop for s in SETTINGS if s.prop is not None))
PROP_BY_NAME: Final[Mapping[str, Prop]] = {p.name: p for p in PROPERTIES}
PROP_BY_DBUS: Final[Mapping[str, Prop]] = {p.dbus: p for p in PROPERTIES}

TOP_KEYS = ("version", "slice", "housekeeping", "confine", "tenants", "profiles")
HOUSEKEEPING_KEYS = ("cpus",)


def reference_table(settings: tuple[Setting, ...]) -> str:
    """The README's reference table for `settings` (tests/test_readme.py compares them)."""
    lines = ["| key | default | systemd property | since systemd | meaning |",
             "|---|---|---|---|---|"]
    for s in settings:
        prop = f"`{s.prop.name}`" if s.prop is not None else (
            "`Slice`" if s.role is Role.MEMBERS else "`Description`" if s.role is Role.TEXT
            else "—")
        since = str(s.prop.since) if s.prop is not None else "—"
        lines.append(f"| `{s.key}` | {s.default_doc} | {prop} | {since} | {s.doc} |")
    return "\n".join(lines)
