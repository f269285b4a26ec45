"""Parsers of tenants.yaml values (pure): each takes what YAML gave and returns the typed
value, or raises ValueError with a message for the user naming the limit it broke.

The settings table (slicectl.core.properties.properties) says which key uses which parser; the
ranges are systemd's and the kernel's own (systemd.resource-control(5), systemd.unit(5)), checked
with `systemd-analyze verify` on systemd 252.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import StrEnum
from typing import Any, Final

from slicectl.core.config.values import (
    INFINITY,
    MAX_PERIOD_US,
    MIN_PERIOD_US,
    UINT64_MAX,
    MemorySize,
    Size,
    TaskShare,
    check_ascii,
    format_duration_us,
    parse_duration_us,
    parse_memory_size,
    parse_task_share,
    quote,
)
from slicectl.core.cpulist import parse_cpulist
from slicectl.core.errors import ValueHint

# Whole-string matches: `$` alone would accept a final newline ("db1\n").
TENANT_NAME_RE = re.compile(r"[a-z0-9][a-z0-9_]*")
# systemd unit names: ASCII letters, digits, ":-_.\" and "@" for instances (systemd.unit(5)).
UNIT_NAME_RE = re.compile(r"[A-Za-z0-9:_.\\-]+(@[A-Za-z0-9:_.\\-]*)?\.[a-z]+")
UNIT_TYPES = ("service", "socket", "mount", "swap", "slice", "scope", "timer", "path")
# Member units get `Slice=`; systemd honours Slice= only for these types (systemd.resource-control).
SLICE_MEMBER_TYPES = ("service", "socket", "mount", "swap")
CONFINE_TYPES = ("slice", "service", "scope", "socket", "mount", "swap")
# A file name is at most 255 bytes (NAME_MAX). slicectl writes UNIT and UNIT.d/ and, beside
# each file, a temporary ".UNIT.XXXXXXXX.slicectl-tmp" (slicectl.host.files.owned): 23 bytes more.
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

    LOCAL = "local"  # one node, memory bound to it (Red Hat reference architecture: up to +12.5%)
    SPREAD = "spread"  # across nodes evenly, memory from those nodes
    ANY = "any"  # wherever there is room; memory not bound


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
    for number in re.findall(r"[0-9]+", value):  # parse_cpulist refuses other digits
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


def memory_parser(minimum: int) -> Callable[[Any], MemorySize]:
    """A parser for a memory property: a size (K/M/G/T/P, base 1024) of at least `minimum`
    bytes, a share of the host's RAM ("50%", as systemd takes it there), or infinity."""

    def parse(value: Any) -> MemorySize:
        return parse_memory_size(value, minimum)

    return parse


def parse_quota_period(value: Any) -> int:
    """CPUQuotaPeriodSec=: the kernel's cpu.max period range; systemd clamps others."""
    return parse_duration_us(value, MIN_PERIOD_US, MAX_PERIOD_US)


def parse_weight(allow_idle: bool) -> Callable[[Any], int]:
    """A CPU weight 1..10000, or `idle` (0: the group runs only when nothing else wants the
    CPU; systemd 252+)."""
    numbers = parse_int_range(1, 10000)

    def parse(value: Any) -> int:
        if allow_idle and value == "idle":
            return 0
        if allow_idle and (isinstance(value, bool) or not isinstance(value, int)):
            raise ValueError(f"expected a whole number from 1 to 10000 or idle, got "
                             f"{quote(value)}")
        return numbers(value)

    return parse


def parse_tasks_max(value: Any) -> Size | TaskShare:
    """TasksMax=: a number of tasks (1 or more), a share of the kernel's task limit, or
    infinity."""
    if isinstance(value, str) and value.strip().lower() == "infinity":
        return INFINITY
    if isinstance(value, str) and value.strip().endswith(("%", "‰", "‱")):
        if (share := parse_task_share(value)) is None:
            raise ValueHint(f"{quote(value)} is not a number of tasks or a share of the task "
                            "limit", "write a share as systemd does, 50%, 12.5%, 505‰ or 5050‱ "
                            "(no space), or a number of tasks such as 4096")
        if share.permyriad == 0:  # systemd's D-Bus refuses a TasksMaxScale of 0 (pids.max 0)
            raise ValueHint(f"{quote(value)} is out of range: systemd takes more than 0% here",
                            "write at least 1 task, or infinity for no limit")
        return share
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected a number of tasks, a share such as 50%, or infinity, got "
                         f"{quote(value)}")
    if not 1 <= value < UINT64_MAX:
        raise ValueError(f"{quote(value)} is out of range: systemd takes 1 or more tasks "
                         "(write infinity for no limit)")
    return value


def parse_choice(*choices: str) -> Callable[[Any], str]:
    """One of `choices`."""

    def parse(value: Any) -> str:
        if isinstance(value, str) and value in choices:
            return value
        raise ValueError(f"expected one of {', '.join(choices)}; got {quote(value)}")

    return parse


_PERCENT2 = re.compile(r"\s*(\d{1,3})(?:\.(\d{1,2}))?\s*%\s*", re.ASCII)


def parse_permyriad(value: Any) -> int:
    """A share from 0% to 100% with up to two decimals ("60%", "12.5%"), in permyriad."""
    m = _PERCENT2.fullmatch(value) if isinstance(value, str) and check_ascii(value) else None
    if m is None:
        raise ValueError(f"{quote(value)} is not a percent from 0% to 100% (e.g. 60% or "
                         "12.5%)")
    permyriad = int(m[1]) * 100 + int((m[2] or "0").ljust(2, "0"))
    if permyriad > 10_000:
        raise ValueError(f"{quote(value)} is more than 100%")
    return permyriad


_RATE_RE = re.compile(r"\s*(\d{1,20})\s*([KMGT]?)\s*", re.IGNORECASE | re.ASCII)
_RATE_FACTORS = {"": 1, "K": 1000, "M": 1000**2, "G": 1000**3, "T": 1000**4}


def parse_rate(value: Any) -> Size:
    """An IO limit: bytes or operations per second, K/M/G/T base 1000 as systemd reads them
    (IOReadBandwidthMax=), or infinity; 0 is refused (systemd does at the next reload)."""
    if isinstance(value, str) and check_ascii(value) and value.strip().lower() == "infinity":
        return INFINITY
    if isinstance(value, int) and not isinstance(value, bool):
        rate = value
    else:
        m = _RATE_RE.fullmatch(value) if isinstance(value, str) else None
        if m is None and isinstance(value, str) and value.strip().endswith("%"):
            raise ValueHint(f"{quote(value)} is not a rate: systemd takes no percent for IO "
                            "limits", "write bytes (or operations) per second, e.g. 50M "
                            "(K, M, G, T: base 1000)")
        if m is None:
            raise ValueError(f"{quote(value)} is not a rate (a number with K, M, G or T, base "
                             "1000, or infinity)")
        rate = int(m[1]) * _RATE_FACTORS[m[2].upper()]
    if not 1 <= rate < UINT64_MAX:
        raise ValueError(f"{quote(value)} is out of range: systemd takes 1 or more (write "
                         "infinity for no limit)")
    return rate


# A block device, or any file on one: systemd resolves it to the whole disk when it applies
# the setting. The path is one word of the unit-file line, so no whitespace.
_DEVICE_PATH = re.compile(r"/[^\s\\]*")


def check_device_path(path: Any) -> str:
    """An absolute, normalized path without whitespace (systemd refuses others on D-Bus)."""
    if not isinstance(path, str) or not _DEVICE_PATH.fullmatch(path) or len(path) > 4096:
        raise ValueError(f"{quote(path)} is not an absolute path without spaces, such as "
                         "/dev/sda or /var/lib/db")
    parts = path.split("/")[1:]
    if path != "/" and ("" in parts or "." in parts or ".." in parts):
        raise ValueError(f"{quote(path)} is not normalized (no //, /./ or /../)")
    return path


def parse_devices(values: Callable[[Any], Size]) -> Callable[[Any], tuple[tuple[str, Size], ...]]:
    """A mapping of device path -> value (e.g. {/dev/sda: 50M}), kept sorted by path."""

    def parse(value: Any) -> tuple[tuple[str, Size], ...]:
        if not isinstance(value, dict) or not value:
            raise ValueError("expected a mapping of device paths to values, such as "
                             "{/dev/sda: 50M}")
        if len(value) > 64:
            raise ValueError(f"{len(value)} devices: at most 64")
        out = []
        for path, v in value.items():
            try:
                out.append((check_device_path(path), values(v)))
            except ValueHint as e:
                raise ValueHint(f"{quote(path)}: {e}", e.hint) from None
            except ValueError as e:
                raise ValueError(f"{quote(path)}: {e}") from None
        return tuple(sorted(out))

    return parse


_SHARE_RE = re.compile(r"\s*(\d{1,3})\s*%\s*", re.ASCII)


def parse_share(lo: int, hi: int) -> Callable[[Any], int]:
    """A parser for a whole percent in [lo, hi] of something that is 100% at most (the CPUs a
    tenant holds, a stall share): "90%" or 90."""

    def parse(value: Any) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            pct = value
        else:
            m = _SHARE_RE.fullmatch(value) if isinstance(value, str) else None
            if m is None:
                raise ValueError(f"{quote(value)} is not a percent (write it like 90%)")
            pct = int(m[1])
        if not lo <= pct <= hi:
            raise ValueError(f"{quote(value)} is out of range {lo}%..{hi}%")
        return pct

    return parse


# Togashi et al. (Ritsumeikan University / Mitsubishi Electric): the cpu controller's
# accounting is only accurate over windows of about 30 ms or more, so a CPU use measured over
# less is noise.
MIN_BALANCE_WINDOW_US: Final = 30_000
MAX_BALANCE_TIME_US: Final = 86_400_000_000  # a day


def parse_balance_time(lo: int) -> Callable[[Any], int]:
    """A parser for a balancer time ("10s", "500ms"; a bare number is seconds) in µs, from
    `lo` to a day."""

    def parse(value: Any) -> int:
        us = parse_duration_us(value)
        if lo == MIN_BALANCE_WINDOW_US and us < lo:
            raise ValueError(f"{quote(value)} is shorter than 30ms: CPU use measured over "
                             "less is noise (Togashi et al.)")
        if not lo <= us <= MAX_BALANCE_TIME_US:
            raise ValueError(f"{quote(value)} is out of range {format_duration_us(lo)} to 1 day")
        return us

    return parse
