"""Kinds of property values: one object per kind knows every form a value takes (pure).

A value of a systemd resource property appears in five places, and each kind converts
between them, so a property row in `slicectl.core.properties.properties` needs only to name its
kind:

- the **plan value** (`PlanValue`): the typed value in a Plan (`frozenset` of CPUs, an int
  percent, a `Size`, a choice, a per-device list), written into unit files (`lines`) and
  plan JSON (`json`/`from_json`);
- the **live value** (`LiveValue`): the D-Bus value decoded, as slicectl compares what
  systemd reports with what it wants (`live`, `unset`, `show` for people);
- the **wire value**: what dbus-fast sends and returns for the property's signature
  (`to_wire`/`from_wire`; only slicectl.host.systemd.systemd calls these);
- the **cgroup file** that proves the kernel took it (`slicectl.core.properties.properties`
  pairs each property with its file; the helpers at the end format the expected text).

Facts about systemd's encodings come from systemd.resource-control(5),
org.freedesktop.systemd1(5) and systemd's sources (research notes in docs/design-notes.md),
checked on systemd 252 in the testbed.

Why this module runs past 400 lines: it is a table of kinds, each a small class holding all
five forms of one kind of value together, which is the point (one place per kind).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from slicectl.core.config.values import (
    INFINITY,
    PAGE,
    UINT32_MAX,
    UINT64_MAX,
    RamShare,
    Size,
    TaskShare,
    format_duration_us,
    format_memory,
    parse_memory_size,
)
from slicectl.core.cpulist import format_cpulist, from_bitmask, parse_cpulist, to_bitmask
from slicectl.core.frozen import frozen
from slicectl.core.human import exact_size, human_memory


@frozen
class HostLimits:
    """What systemd on the target resolves a share against: its RAM in bytes (MemTotal) and
    its task limit (system_tasks_max: the least of kernel.threads-max, kernel.pid_max - 1
    and the root cgroup's pids.max). 0: unknown, and a share then matches no live value."""

    memory: int = 0
    tasks: int = 0


@frozen
class RamShareLive:
    """The live value of a share of RAM on a host with `ram` bytes of it. systemd reports
    memory properties in bytes: those of the unit file's "50%" (`RamShare.bytes_of`), or of
    the *Scale value slicectl sent over D-Bus (`RamShare.bytes_over_dbus`), which may differ
    by a page; either means the share is in force. `ram` 0: unknown, nothing matches."""

    share: RamShare
    ram: int

    @property
    def accepted(self) -> frozenset[int]:
        """The byte values systemd may report for it on this host."""
        if self.ram <= 0:
            return frozenset()
        return frozenset({self.share.bytes_of(self.ram), self.share.bytes_over_dbus(self.ram)})


@frozen
class TaskShareLive:
    """The live value of a share of the task limit on a host whose limit is `limit`.
    systemd reports TasksMax as the count it resolved: that of the unit file's "50%"
    (`TaskShare.tasks_of`), or of the TasksMaxScale slicectl sent (`tasks_over_dbus`), which
    may differ by one; either means the share is in force. `limit` 0: unknown."""

    share: TaskShare
    limit: int

    @property
    def accepted(self) -> frozenset[int]:
        """The counts systemd may report for it on this host."""
        if self.limit <= 0:
            return frozenset()
        return frozenset({self.share.tasks_of(self.limit), self.share.tasks_over_dbus(self.limit)})


# A per-device list, sorted by path: ((path, value), ...); a value may be infinity.
DeviceValues = tuple[tuple[str, Size], ...]
PlanValue = frozenset[int] | Size | RamShare | TaskShare | str | DeviceValues  # Size: int | ∞
LiveValue = (frozenset[int] | int | str | tuple[tuple[str, int], ...] | RamShareLive
             | TaskShareLive | None)
DEFAULT_WEIGHT: Final = 100
DEFAULT_PERIOD_US: Final = 100_000
WEIGHT_IDLE: Final = 0  # CPUWeight=idle on D-Bus (systemd 252+)


class Kind:
    """How one kind of value looks in a unit file, in JSON, on D-Bus and to people. The base
    kind is a number (`t` on D-Bus; UINT64_MAX = unset)."""

    signature = "t"
    unset: LiveValue = None  # the live value systemd reports when the property is not set
    appends = False  # D-Bus adds to the list: send an empty one first to replace it

    def file(self, value: PlanValue) -> str:
        """The value as written in a unit file."""
        return str(value)

    def lines(self, value: PlanValue) -> list[str]:
        """The values of the property's lines in a unit file (most kinds: one)."""
        return [self.file(value)]

    def human_lines(self, value: PlanValue) -> list[str]:
        """`lines` for people (plan's tables): the same but for sizes, 24.5G for 25088M
        (both are what systemd takes)."""
        return self.lines(value)

    def json(self, value: PlanValue) -> Any:
        """The value in plan JSON (docs/plan-json.md)."""
        return value

    def from_json(self, data: Any) -> PlanValue:
        """Inverse of `json`."""
        if isinstance(data, bool) or not isinstance(data, int):
            raise ValueError(f"expected a whole number, got {data!r}")
        return data

    def live(self, value: PlanValue) -> LiveValue:
        """The live value that means `value` is in force."""
        assert isinstance(value, int)
        return value

    def live_on(self, value: PlanValue, host: HostLimits) -> LiveValue:
        """`live` on the host `host` describes (only a share depends on it)."""
        return self.live(value)

    def same(self, live: LiveValue, want: LiveValue) -> bool:
        """Whether what systemd reports (`live`) means the value slicectl wants is in force."""
        return live == want

    def wire_name(self, name: str, live: LiveValue) -> tuple[str, str]:
        """The D-Bus property and signature that carry `live` (most kinds: their own)."""
        return name, self.signature

    def to_wire(self, live: LiveValue) -> Any:
        """The live value as dbus-fast sends it (`t`: UINT64_MAX for unset)."""
        if live is None:
            return UINT64_MAX
        if isinstance(live, int) and not isinstance(live, bool) and 0 <= live <= UINT64_MAX:
            return live
        raise ValueError(f"expected a non-negative int or None, got {live!r}")

    def from_wire(self, raw: Any) -> LiveValue:
        """What systemd returned, as a live value."""
        return None if raw == UINT64_MAX else int(raw)

    def show(self, live: LiveValue) -> str:
        """A live value in unit-file spelling (plan --json's "live" and "desired")."""
        return "(unset)" if live is None else str(live)

    def human(self, live: LiveValue) -> str:
        """A live value for people (plan's change lines): as `show` but for sizes."""
        return self.show(live)


class CpuSet(Kind):
    """A set of CPUs or NUMA nodes: "0-3,8" in files, an `ay` bitmask on D-Bus (bit c%8 of
    byte c//8; systemd pads the masks it returns to 8 bytes); empty = unset."""

    signature = "ay"
    unset: LiveValue = frozenset()

    def file(self, value: PlanValue) -> str:
        assert isinstance(value, frozenset)
        return format_cpulist(value)

    def json(self, value: PlanValue) -> Any:
        return self.file(value)

    def from_json(self, data: Any) -> PlanValue:
        return parse_cpulist(str(data))

    def live(self, value: PlanValue) -> LiveValue:
        assert isinstance(value, frozenset)
        return value

    def to_wire(self, live: LiveValue) -> Any:
        if live is None or isinstance(live, frozenset | set):
            return to_bitmask(live or ())  # an empty mask resets the setting
        raise ValueError(f"expected a set of ints, got {live!r}")

    def from_wire(self, raw: Any) -> LiveValue:
        return from_bitmask(raw)

    def show(self, live: LiveValue) -> str:
        assert isinstance(live, frozenset)
        return format_cpulist(live) or "(unset)"


class Number(Kind):
    """A plain number (`t`, UINT64_MAX = unset), e.g. IOWeight."""


class Weight(Number):
    """CPUWeight= and StartupCPUWeight=: 1..10000, or `idle` (0 on D-Bus, systemd 252+)."""

    def file(self, value: PlanValue) -> str:
        return "idle" if value == WEIGHT_IDLE else str(value)

    def json(self, value: PlanValue) -> Any:
        return "idle" if value == WEIGHT_IDLE else value

    def from_json(self, data: Any) -> PlanValue:
        return WEIGHT_IDLE if data == "idle" else super().from_json(data)

    def show(self, live: LiveValue) -> str:
        return "idle" if live == WEIGHT_IDLE else super().show(live)


class Quota(Kind):
    """CPUQuota=: percent of one CPU in files; µs of CPU time per second on D-Bus
    (CPUQuotaPerSecUSec, 150 % = 1,500,000)."""

    def file(self, value: PlanValue) -> str:
        return f"{value}%"

    def live(self, value: PlanValue) -> LiveValue:
        assert isinstance(value, int)
        return value * 10_000

    def show(self, live: LiveValue) -> str:
        if live is None:
            return "(unset)"
        assert isinstance(live, int)
        return f"{live / 10_000:g}%"


class Duration(Kind):
    """A time span: "100ms" in files, µs on D-Bus."""

    def file(self, value: PlanValue) -> str:
        assert isinstance(value, int)
        return format_duration_us(value)


class Limit(Kind):
    """A count that may be infinity (TasksMax=): infinity is UINT64_MAX on D-Bus, None here."""

    def file(self, value: PlanValue) -> str:
        return "infinity" if value is INFINITY else str(value)

    def json(self, value: PlanValue) -> Any:
        return "infinity" if value is INFINITY else value

    def from_json(self, data: Any) -> PlanValue:
        return INFINITY if data == "infinity" else super().from_json(data)

    def live(self, value: PlanValue) -> LiveValue:
        return None if value is INFINITY else super().live(value)

    def same(self, live: LiveValue, want: LiveValue) -> bool:
        # A share (of RAM, of the task limit) is in force at any count systemd may make of it.
        if isinstance(want, RamShareLive | TaskShareLive):
            return isinstance(live, int) and live in want.accepted
        return super().same(live, want)


class Tasks(Limit):
    """TasksMax=: a number of tasks, infinity, or a share of the kernel's task limit ("50%").
    A share is written as it is in unit files, where systemd resolves it on the host, and
    sent over D-Bus as TasksMaxScale (`u`, UINT32_MAX = 100 %), as `systemctl set-property
    TasksMax=50%` does; systemd reports the count it made of it (TaskShareLive). systemd
    refuses a TasksMaxScale of UINT32_MAX (dbus-cgroup.c: 1 to UINT32_MAX - 1), so 100 % is
    sent as the count it makes on this host: the unit file keeps the share for the next
    reload. (systemd writes a TasksMaxScale into its runtime drop-in a tenth too small, 4.0%
    for 40%: slicectl.apply.transaction puts system.control back, so that file never stays.)"""

    def __init__(self, *, scale_since: int = 0) -> None:
        # The first systemd whose D-Bus API takes TasksMaxScale.
        self.scale_since = scale_since

    def file(self, value: PlanValue) -> str:
        return str(value) if isinstance(value, TaskShare) else super().file(value)

    def json(self, value: PlanValue) -> Any:
        return str(value) if isinstance(value, TaskShare) else super().json(value)

    def from_json(self, data: Any) -> PlanValue:
        from slicectl.core.config.parsers import parse_tasks_max

        return parse_tasks_max(data)

    def live_on(self, value: PlanValue, host: HostLimits) -> LiveValue:
        if isinstance(value, TaskShare):
            return TaskShareLive(value, host.tasks)
        return self.live(value)

    def wire_name(self, name: str, live: LiveValue) -> tuple[str, str]:
        if isinstance(live, TaskShareLive) and live.share.permyriad < 10_000:
            return f"{name}Scale", "u"
        return name, self.signature

    def to_wire(self, live: LiveValue) -> Any:
        if isinstance(live, TaskShareLive) and live.share.permyriad < 10_000:
            return live.share.scale()
        if isinstance(live, TaskShareLive):
            if live.limit <= 0:
                raise ValueError("100% of the task limit is sent as the count it makes, and "
                                 "this host's task limit is unknown")
            return live.limit
        return super().to_wire(live)

    def show(self, live: LiveValue) -> str:
        if isinstance(live, TaskShareLive):
            if live.limit <= 0:
                return f"{live.share} of the task limit"
            return f"{live.share} of the task limit ({live.share.tasks_of(live.limit)})"
        return super().show(live)


class Bytes(Limit):
    """A memory size. A *limit* (MemoryMax, MemoryHigh, MemorySwapMax, MemoryZSwapMax) is
    unset when it is infinity (UINT64_MAX on D-Bus, None here); a *protection* (MemoryLow,
    MemoryMin) is unset at 0 and infinity is UINT64_MAX.

    A share of RAM ("50%") is written as it is in unit files, where systemd resolves it
    against the host's memory, and sent over D-Bus as the property's *Scale twin (`u`,
    UINT32_MAX = 100 %: MemoryMaxScale, …), as `systemctl set-property MemoryMax=50%` does;
    systemd reports the bytes it made of it (RamShareLive)."""

    def __init__(self, *, protection: bool = False, unset_text: str = "(unset)",
                 scale_since: int = 0) -> None:
        self.protection = protection
        self.unset = 0 if protection else None
        self.unset_text = unset_text
        # The first systemd whose D-Bus API takes the *Scale twin (0: none, no share of RAM).
        self.scale_since = scale_since

    def file(self, value: PlanValue) -> str:
        assert isinstance(value, int | RamShare) or value is INFINITY
        return format_memory(value)

    def json(self, value: PlanValue) -> Any:
        return str(value) if isinstance(value, RamShare) else super().json(value)

    def human_lines(self, value: PlanValue) -> list[str]:
        assert isinstance(value, int | RamShare) or value is INFINITY
        return [human_memory(value)]

    def from_json(self, data: Any) -> PlanValue:
        return parse_memory_size(data)

    def live(self, value: PlanValue) -> LiveValue:
        if value is INFINITY:
            return UINT64_MAX if self.protection else None
        assert isinstance(value, int)
        return value

    def live_on(self, value: PlanValue, host: HostLimits) -> LiveValue:
        if isinstance(value, RamShare):
            return RamShareLive(value, host.memory)
        return self.live(value)

    def wire_name(self, name: str, live: LiveValue) -> tuple[str, str]:
        # systemd refuses a Scale that comes to 0 bytes: 0% is sent as 0 bytes.
        if isinstance(live, RamShareLive) and live.share.permyriad > 0:
            return f"{name}Scale", "u"
        return name, self.signature

    def to_wire(self, live: LiveValue) -> Any:
        if isinstance(live, RamShareLive):
            return live.share.scale() if live.share.permyriad > 0 else 0
        if self.protection and live is None:
            return 0  # systemd's "no protection"
        return super().to_wire(live)

    def from_wire(self, raw: Any) -> LiveValue:
        if self.protection:
            return int(raw)
        return super().from_wire(raw)

    def show(self, live: LiveValue) -> str:
        if live is None:
            return self.unset_text
        if isinstance(live, RamShareLive):
            if live.ram <= 0:
                return f"{live.share} of RAM"
            return f"{live.share} of RAM ({live.share.bytes_of(live.ram)})"
        if self.protection and live == 0:
            return "(unset)"
        return str(live)

    def human(self, live: LiveValue) -> str:
        if isinstance(live, RamShareLive) and live.ram > 0:
            return f"{live.share} of RAM ({exact_size(live.share.bytes_of(live.ram))})"
        shown = self.show(live)
        if not isinstance(live, int) or not shown.isdigit() or live >= UINT64_MAX:
            return shown
        return exact_size(live)


class Bool(Kind):
    """yes/no in unit files, `b` on D-Bus, true/false in plan JSON (e.g.
    MemoryZSwapWriteback=); `default` is what systemd reports when it is not set."""

    signature = "b"

    def __init__(self, default: bool) -> None:
        self.unset = default

    def file(self, value: PlanValue) -> str:
        return "yes" if value else "no"

    def json(self, value: PlanValue) -> Any:
        return bool(value)

    def from_json(self, data: Any) -> PlanValue:
        if not isinstance(data, bool):
            raise ValueError(f"expected true or false, got {data!r}")
        return data

    def live(self, value: PlanValue) -> LiveValue:
        return bool(value)

    def to_wire(self, live: LiveValue) -> Any:
        if isinstance(live, bool):
            return live
        raise ValueError(f"expected true or false, got {live!r}")

    def from_wire(self, raw: Any) -> LiveValue:
        return bool(raw)

    def show(self, live: LiveValue) -> str:
        return "yes" if live else "no"


def flag_text(live: LiveValue) -> str:
    """A boolean cgroup file's text: 1 or 0."""
    return "1" if live else "0"


class Choice(Kind):
    """One of a few words (`s` on D-Bus), e.g. ManagedOOMMemoryPressure= auto|kill."""

    signature = "s"

    def __init__(self, *choices: str) -> None:
        self.choices = choices
        self.unset = choices[0]  # systemd's default comes first

    def from_json(self, data: Any) -> PlanValue:
        if data not in self.choices:
            raise ValueError(f"expected one of {', '.join(self.choices)}, got {data!r}")
        return str(data)

    def live(self, value: PlanValue) -> LiveValue:
        assert isinstance(value, str)
        return value

    def to_wire(self, live: LiveValue) -> Any:
        if live in self.choices:
            return live
        raise ValueError(f"expected one of {', '.join(self.choices)}, got {live!r}")

    def from_wire(self, raw: Any) -> LiveValue:
        # An empty word is how systemd reports an enum setting nobody set: its default.
        return str(raw) or self.unset

    def show(self, live: LiveValue) -> str:
        return str(live)


class Permyriad(Kind):
    """A share written as a percent with up to two decimals ("60%", "12.5%"), kept in
    permyriad (1/10,000), sent as a `u` scaled so that UINT32_MAX is 100 %
    (ManagedOOMMemoryPressureLimit=, systemd 248+); 0 = unset (systemd-oomd's default)."""

    signature = "u"
    unset: LiveValue = 0

    def file(self, value: PlanValue) -> str:
        assert isinstance(value, int)
        whole, part = divmod(value, 100)
        return f"{whole}.{part:02d}".rstrip("0").rstrip(".") + "%"

    def live(self, value: PlanValue) -> LiveValue:
        assert isinstance(value, int)
        return (value * UINT32_MAX + 5000) // 10_000

    def to_wire(self, live: LiveValue) -> Any:
        if isinstance(live, int) and not isinstance(live, bool) and 0 <= live <= UINT32_MAX:
            return live
        raise ValueError(f"expected an int from 0 to {UINT32_MAX}, got {live!r}")

    def from_wire(self, raw: Any) -> LiveValue:
        return int(raw)

    def show(self, live: LiveValue) -> str:
        assert isinstance(live, int)
        if live == 0:
            return "(unset)"
        return self.file(round(live * 10_000 / UINT32_MAX))


class Devices(Kind):
    """A value per block device, `path value` per line (IODeviceWeight=, IOReadBandwidthMax=,
    …): `a(st)` on D-Bus, where systemd *adds* each entry to the unit's list, so a full list
    is sent after an empty one (`appends`); in a unit file an empty assignment first resets
    what earlier files set. A value may be infinity (UINT64_MAX: no limit on that device)."""

    signature = "a(st)"
    unset: LiveValue = ()
    appends = True

    def __init__(self, unit: str = "") -> None:
        self.unit = unit  # " B/s", " IOPS": for people

    def _value(self, v: Size) -> str:
        return "infinity" if v is INFINITY else str(v)

    def lines(self, value: PlanValue) -> list[str]:
        assert isinstance(value, tuple)
        return ["", *(f"{path} {self._value(v)}" for path, v in value)]

    def file(self, value: PlanValue) -> str:
        return "; ".join(self.lines(value)[1:])

    def json(self, value: PlanValue) -> Any:
        assert isinstance(value, tuple)
        return {path: "infinity" if v is INFINITY else v for path, v in value}

    def from_json(self, data: Any) -> PlanValue:
        if not isinstance(data, dict):
            raise ValueError(f"expected a mapping of device paths, got {data!r}")
        if not all(v == "infinity" or isinstance(v, int) and not isinstance(v, bool)
                   for v in data.values()):  # int() would take "５" too
            raise ValueError(f"expected whole numbers or infinity, got {data!r}")
        return tuple(sorted((str(p), INFINITY if v == "infinity" else v)
                            for p, v in data.items()))

    def live(self, value: PlanValue) -> LiveValue:
        assert isinstance(value, tuple)
        return tuple((p, UINT64_MAX if v is INFINITY else v) for p, v in value)

    def to_wire(self, live: LiveValue) -> Any:
        if live is None:
            return []
        if isinstance(live, tuple) and all(
                isinstance(p, str) and isinstance(v, int) and 0 <= v <= UINT64_MAX
                for p, v in live):
            return [[p, v] for p, v in live]
        raise ValueError(f"expected (path, value) pairs, got {live!r}")

    def from_wire(self, raw: Any) -> LiveValue:
        return tuple(sorted((str(p), int(v)) for p, v in raw))

    def show(self, live: LiveValue) -> str:
        assert isinstance(live, tuple)
        shown = ", ".join(f"{p} {'infinity' if v == UINT64_MAX else v}{self.unit}"
                          for p, v in live)
        return shown or "(unset)"


# --- what cgroup files must say --------------------------------------------------------


def same_text(content: str, expected: str) -> bool:
    return content == expected


def same_cpus(content: str, expected: str) -> bool:
    return parse_cpulist(content) == parse_cpulist(expected)


def same_cpu_max(content: str, expected: str) -> bool:
    qa, _, pa = content.partition(" ")
    qb, _, pb = expected.partition(" ")
    if "max" in (qa, qb):
        return qa == qb
    # systemd may stretch the period for tiny quotas; compare the ratio (cores) instead.
    return abs(int(qa) / int(pa) - int(qb) / int(pb)) < 0.001


def first_line(content: str, expected: str) -> bool:
    """io.weight: "default N" first, then per-device lines."""
    return content.partition("\n")[0].strip() == expected


def has_entries(content: str, expected: str) -> bool:
    """A nested-keyed file (io.max, io.weight): the device's line holds every key=value of
    `expected` ("8:0 rbps=5000000"), or its value ("8:0 200")."""
    device, _, wanted = expected.partition(" ")
    for line in content.splitlines():
        dev, _, rest = line.strip().partition(" ")
        if dev == device:
            have = set(rest.split())
            return all(item in have for item in wanted.split())
    return False


# What a file reads as when its controller is not enabled for the cgroup (no file): fine only
# when slicectl expects the kernel's default there.
_DEFAULTS = ("", "max", "0", str(DEFAULT_WEIGHT), f"max {DEFAULT_PERIOD_US}",
             f"default {DEFAULT_WEIGHT}")


@frozen
class CgroupExpectation:
    """One cgroup file and what it must contain."""

    file: str
    expected: str
    same: Callable[[str, str], bool] = same_text
    # How the kernel behaves where the file does not exist (an older kernel), if not as one
    # of the usual defaults.
    missing: str | None = None

    def matches(self, content: str | None) -> bool:
        """Whether the file's content (None: no such file) shows the expected value."""
        if content is None:
            return self.expected in _DEFAULTS or self.expected == self.missing
        return self.same(content.strip(), self.expected)


def page_bytes(live: LiveValue) -> str:
    """A memory file's text for a live size: "max" for unset/infinity, else the bytes rounded
    down to whole pages (the kernel stores memory limits in pages); a share of RAM: the bytes
    systemd makes of the unit file's percent."""
    if live is None:
        return "max"
    if isinstance(live, RamShareLive):
        return str(live.share.bytes_of(live.ram))
    assert isinstance(live, int)
    return "max" if live >= UINT64_MAX else str(live // PAGE * PAGE)


def memory_file(file: str, live: LiveValue) -> CgroupExpectation:
    """What a memory.{min,low,high,max,swap.max,zswap.max} file must say for `live`: a share
    of RAM may read as either of the byte values systemd makes of it (RamShareLive)."""
    if isinstance(live, RamShareLive):
        accepted = {str(b) for b in live.accepted}
        return CgroupExpectation(file, page_bytes(live),
                                 lambda content, _expected: content in accepted)
    return CgroupExpectation(file, page_bytes(live))


def count_text(live: LiveValue) -> str:
    """pids.max text: "max" for unset/infinity; a share of the task limit: the count systemd
    makes of the unit file's percent."""
    if isinstance(live, TaskShareLive):
        return str(live.share.tasks_of(live.limit))
    return "max" if live is None or live == UINT64_MAX else str(live)


def tasks_file(live: LiveValue) -> CgroupExpectation:
    """What pids.max must say for `live`: a share of the task limit may read as either of the
    counts systemd makes of it (TaskShareLive)."""
    if isinstance(live, TaskShareLive):
        accepted = {str(n) for n in live.accepted}
        return CgroupExpectation("pids.max", count_text(live),
                                 lambda content, _expected: content in accepted)
    return CgroupExpectation("pids.max", count_text(live))


def cpuset_text(live: LiveValue) -> str:
    """cpuset.cpus/mems text: unset shows "" (the kernel then uses the parent's)."""
    assert isinstance(live, frozenset)
    return format_cpulist(live)


def weight_text(live: LiveValue) -> str:
    """cpu.weight or io.weight's default: unset means the kernel's default weight."""
    return str(live or DEFAULT_WEIGHT)


def cpu_max_text(quota: LiveValue, period: LiveValue) -> str:
    """cpu.max text for a CPUQuotaPerSecUSec and a CPUQuotaPeriodUSec (None: the defaults).
    The kernel takes a quota of at least 1 ms per period."""
    period = period or DEFAULT_PERIOD_US
    assert isinstance(period, int)
    if quota is None:
        return f"max {period}"
    assert isinstance(quota, int)
    return f"{max(quota * period // 1_000_000, 1000)} {period}"
