"""Parsing and formatting of the value types in tenants.yaml: sizes, percents, durations.

Sizes use base 1024 like systemd (K, M, G, T); "infinity" means no limit. Formatting produces
exactly what systemd accepts in unit files, so generated files round-trip through systemd.
"""

from __future__ import annotations

import re

INFINITY = -1  # sentinel for "infinity" in sizes (systemd: no limit; D-Bus: UINT64_MAX)
UINT64_MAX = 2**64 - 1

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGTP]?)(i?B?)?\s*$", re.IGNORECASE)
_FACTORS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}


def parse_size(value: object) -> int:
    """Parse 24G, 512M, 1.5G, 1048576, 0 or "infinity" into bytes (INFINITY for infinity)."""
    if isinstance(value, bool):
        raise ValueError("expected a size such as 512M, 24G or infinity, not a boolean")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"size {value} is negative")
        return value
    if not isinstance(value, str):
        raise ValueError(f"expected a size such as 512M, 24G or infinity, got {value!r}")
    if value.strip().lower() == "infinity":
        return INFINITY
    m = _SIZE_RE.match(value)
    if not m:
        raise ValueError(f"{value!r} is not a size (use a number with K, M, G or T, or infinity)")
    number, unit = m.group(1), m.group(2).upper()
    if "." not in number:
        return int(number) * _FACTORS[unit]  # exact, however large
    from fractions import Fraction

    size = Fraction(number) * _FACTORS[unit]
    if size.denominator != 1:
        raise ValueError(f"{value!r} is not a whole number of bytes")
    return int(size)


def format_size(size: int) -> str:
    """Bytes -> the shortest exact systemd size: 25769803776 -> "24G", -1 -> "infinity"."""
    if size == INFINITY:
        return "infinity"
    if size == 0:
        return "0"
    for unit in ("T", "G", "M", "K"):
        factor = _FACTORS[unit]
        if size % factor == 0:
            return f"{size // factor}{unit}"
    return str(size)


def parse_percent(value: object) -> int:
    """Parse "600%" (or 600) into an integer percent of one CPU; must be > 0."""
    if isinstance(value, bool):
        raise ValueError("expected a percent such as 150%, not a boolean")
    if isinstance(value, int):
        pct = value
    elif isinstance(value, str) and re.fullmatch(r"\s*\d+\s*%\s*", value):
        pct = int(value.strip().rstrip("%"))
    else:
        raise ValueError(f"{value!r} is not a percent (write it like 150%)")
    if pct <= 0:
        raise ValueError(f"{value!r} must be more than 0%")
    return pct


_DURATION_RE = re.compile(r"^\s*(\d+)\s*(us|ms|s)?\s*$")
_DURATION_FACTORS = {"us": 1, "ms": 1000, "s": 1_000_000, None: 1_000_000}


def parse_duration_us(value: object) -> int:
    """Parse "100ms", "1s", "500us" (a bare number means seconds, as in systemd) into µs."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 100ms, not a boolean")
    text = str(value)
    m = _DURATION_RE.match(text)
    if not m:
        raise ValueError(f"{value!r} is not a duration (write it like 100ms, 1s or 500us)")
    return int(m.group(1)) * _DURATION_FACTORS[m.group(2)]


def format_duration_us(us: int) -> str:
    """µs -> systemd time span: 100000 -> "100ms", 1000000 -> "1s", 1500 -> "1500us"."""
    if us % 1_000_000 == 0:
        return f"{us // 1_000_000}s"
    if us % 1000 == 0:
        return f"{us // 1000}ms"
    return f"{us}us"
