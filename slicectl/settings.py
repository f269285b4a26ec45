"""The one table of tenants.yaml settings: key, parser, default, systemd property, doc.

It drives parsing (config.py), rendering (which property a key becomes) and the README's
reference table (a test checks the README against it).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from slicectl.cpulist import parse_cpulist
from slicectl.values import parse_duration_us, parse_percent, parse_size

TENANT_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_]*$")
# systemd unit names: ASCII letters, digits, ":-_.\" and "@" for instances; max 255 chars.
UNIT_NAME_RE = re.compile(r"^[A-Za-z0-9:_.\\-]+(@[A-Za-z0-9:_.\\-]*)?\.[a-z]+$")
UNIT_TYPES = ("service", "socket", "mount", "swap", "slice", "scope", "timer", "path")
# Member units get `Slice=`; systemd honours Slice= only for these types (systemd.resource-control).
SLICE_MEMBER_TYPES = ("service", "socket", "mount", "swap")


class Numa(StrEnum):
    """How a tenant's CPUs and memory relate to NUMA nodes."""

    LOCAL = "local"  # one node, memory bound to it (seed 000: up to +12.5%)
    SPREAD = "spread"  # across nodes evenly, memory from those nodes
    ANY = "any"  # wherever there is room; memory not bound


def parse_int_range(lo: int, hi: int) -> Callable[[Any], int]:
    """A parser for an integer in [lo, hi]."""

    def parse(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected a whole number from {lo} to {hi}, got {value!r}")
        if not lo <= value <= hi:
            raise ValueError(f"{value} is out of range {lo}..{hi}")
        return value

    return parse


def parse_bool(value: Any) -> bool:
    """YAML true/false only (not "yes" strings or 0/1)."""
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def parse_cpus(value: Any) -> int | frozenset[int]:
    """A CPU count (8) or an explicit cpulist ("0-3,16-19" or a YAML list of ints)."""
    if isinstance(value, bool):
        raise ValueError("expected a CPU count or a cpulist such as \"0-3,16-19\"")
    if isinstance(value, int):
        if value < 1:
            raise ValueError(f"a CPU count must be at least 1, got {value}")
        return value
    if isinstance(value, list):
        if not value or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                                for v in value):
            raise ValueError("a CPU list must hold CPU numbers (non-negative integers)")
        return frozenset(value)
    if isinstance(value, str):
        cpus = parse_cpulist(value)
        if not cpus:
            raise ValueError("the cpulist is empty")
        return cpus
    raise ValueError(f"expected a CPU count or a cpulist such as \"0-3,16-19\", got {value!r}")


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
    try:
        return Numa(str(value))
    except ValueError:
        raise ValueError(f"expected one of local, spread, any; got {value!r}") from None


def parse_nodes(value: Any) -> tuple[int, ...]:
    """A list of NUMA node ids, or a single id, or a cpulist-style string ("0-1")."""
    if isinstance(value, bool):
        raise ValueError("expected a list of node numbers such as [0, 1]")
    if isinstance(value, int):
        value = [value]
    if isinstance(value, str):
        return tuple(sorted(parse_cpulist(value)))
    if isinstance(value, list) and value and all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value
    ):
        if len(set(value)) != len(value):
            raise ValueError("a node is listed twice")
        return tuple(sorted(value))
    raise ValueError(f"expected a list of node numbers such as [0, 1], got {value!r}")


def parse_unit_list(suffixes: tuple[str, ...]) -> Callable[[Any], tuple[str, ...]]:
    """A parser for a list of systemd unit names with one of `suffixes`."""

    def parse(value: Any) -> tuple[str, ...]:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError("expected a list of unit names such as [app.service]")
        for v in value:
            check_unit_name(v, suffixes)
        if len(set(value)) != len(value):
            raise ValueError("a unit is listed twice")
        return tuple(value)

    return parse


def check_unit_name(name: str, suffixes: tuple[str, ...] = UNIT_TYPES) -> str:
    """Refuse anything that is not a plain systemd unit name (no paths, spaces, newlines)."""
    if len(name) > 255 or not UNIT_NAME_RE.match(name):
        raise ValueError(f"{name!r} is not a valid systemd unit name")
    if name.rsplit(".", 1)[1] not in suffixes:
        raise ValueError(
            f"{name!r} must end in ." + ", .".join(suffixes)
        )
    if name.startswith("@") or name.endswith("@." + name.rsplit(".", 1)[1]):
        raise ValueError(f"{name!r} is a template; name an instance such as app@1.service")
    return name


def parse_description(value: Any) -> str:
    """One line of text (no control characters: it goes into Description=)."""
    if not isinstance(value, str):
        raise ValueError(f"expected text, got {value!r}")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise ValueError("must be a single line without control characters")
    if len(value) > 200:
        raise ValueError("is longer than 200 characters")
    return value.strip()


def parse_memory(value: Any) -> int:
    """A size: K/M/G/T (base 1024) or infinity."""
    return parse_size(value)


@dataclass(frozen=True)
class Setting:
    """One key of tenants.yaml: how to parse it, its default, its systemd property, its doc."""

    key: str
    parse: Callable[[Any], Any]
    default: Any
    prop: str
    doc: str
    default_doc: str = ""


TENANT_SETTINGS: tuple[Setting, ...] = (
    Setting("description", parse_description, None, "Description",
            "one line shown by systemctl", "tenant NAME"),
    Setting("cpus", parse_cpus, None, "AllowedCPUs",
            "CPU count (placed by slicectl) or explicit cpulist \"0-3,16-19\"",
            "shared pool"),
    Setting("numa", parse_numa, Numa.LOCAL, "AllowedMemoryNodes",
            "local: one node, memory bound to it; spread: across nodes; any: unbound",
            "local"),
    Setting("nodes", parse_nodes, None, "AllowedMemoryNodes",
            "explicit NUMA node(s) for CPUs and memory", "chosen by slicectl"),
    Setting("exclusive", parse_bool, True, "",
            "no other tenant shares these CPUs (false: may overlap the shared pool)", "true"),
    Setting("cpu_weight", parse_int_range(1, 10000), None, "CPUWeight",
            "relative CPU share among siblings, 1..10000", "unset (100)"),
    Setting("cpu_quota", parse_percent, None, "CPUQuota",
            "hard cap in percent of one CPU, e.g. 600%", "unset"),
    Setting("cpu_quota_period", parse_duration_us, None, "CPUQuotaPeriodSec",
            "period for cpu_quota, e.g. 100ms (keep >= 30ms, seed 002)", "unset (100ms)"),
    Setting("memory_max", parse_memory, None, "MemoryMax",
            "hard limit: K/M/G/T (base 1024) or infinity", "unset"),
    Setting("memory_high", parse_memory, None, "MemoryHigh",
            "throttling threshold (reclaim starts here)", "unset"),
    Setting("memory_low", parse_memory, None, "MemoryLow",
            "best-effort protection under pressure (a reservation, seed 001)", "unset"),
    Setting("memory_min", parse_memory, None, "MemoryMin",
            "hard protection: never reclaimed", "unset"),
    Setting("memory_swap_max", parse_memory, None, "MemorySwapMax",
            "swap limit; 0 keeps the tenant out of swap", "unset"),
    Setting("services", parse_unit_list(SLICE_MEMBER_TYPES), (), "Slice",
            "units moved into the tenant's slice by a drop-in", "[]"),
)

# Keys a profile may override (services stay fixed: moving units between slices needs restarts).
PROFILE_KEYS = tuple(s.key for s in TENANT_SETTINGS if s.key not in ("services", "description"))

CONFINE_SETTINGS: tuple[Setting, ...] = (
    Setting("cpus", parse_cpulist_only, None, "AllowedCPUs",
            "cpulist the unit may run on", "housekeeping CPUs for the three housekeeping units"),
    Setting("cpu_weight", parse_int_range(1, 10000), None, "CPUWeight",
            "relative CPU share, 1..10000", "unset"),
    Setting("cpu_quota", parse_percent, None, "CPUQuota", "hard cap, percent of one CPU",
            "unset"),
    Setting("memory_high", parse_memory, None, "MemoryHigh", "throttling threshold", "unset"),
    Setting("memory_max", parse_memory, None, "MemoryMax", "hard limit", "unset"),
    Setting("memory_swap_max", parse_memory, None, "MemorySwapMax", "swap limit", "unset"),
)

TOP_KEYS = ("version", "slice", "housekeeping", "confine", "tenants", "profiles")
HOUSEKEEPING_KEYS = ("cpus",)
