"""Human units: the one formatter of every view (CLI tables, status and top, the TUI,
messages), for people where values.py's format_size and format_memory write what systemd
reads. Sizes are base 1024 like systemd's own output ("24.5G", not 25088M); "no limit" is said,
not spelt as the cgroup file's "max"; rates carry "/s"; times are local with the zone named.
"""

from __future__ import annotations

from typing import Final

from slicectl.core.config.values import (
    INFINITY,
    MemorySize,
    RamShare,
    Size,
    format_size,
)

NO_LIMIT: Final = "no limit"


def human_size(size: Size | None, unset: str = "-", *, exact: bool = False) -> str:
    """A size for people, base 1024, one decimal at most: 25088M -> "24.5G", 512 -> "512B",
    INFINITY -> "no limit" (None -> `unset`). With `exact`, a size that one decimal would
    round is written exactly, as systemd takes it (a change of a few bytes stays visible)."""
    if size is None:
        return unset
    if size is INFINITY:
        return NO_LIMIT
    if size == 0:
        return "0"
    value = float(size)
    for unit in ("B", "K", "M", "G", "T", "P"):
        if value < 1024 or unit == "P":
            if unit == "B":
                return f"{value:.0f}B"
            text = f"{value:.1f}".removesuffix(".0")
            if exact and _rounds(text, unit, size):
                return format_size(size)
            return text + unit
        value /= 1024
    raise AssertionError("unreachable")


def _rounds(number: str, unit: str, size: int) -> bool:
    """Whether `number` `unit` (one decimal) is not exactly `size` bytes."""
    from fractions import Fraction

    factor: int = 1024 ** "BKMGTP".index(unit)
    return Fraction(number) * factor != size


def exact_size(size: Size) -> str:
    """A size for people that never rounds (messages about what tenants.yaml says, which
    compare sizes): "24.5G", "1025K", "infinity" as written there."""
    return "infinity" if size is INFINITY else human_size(size, exact=True)


def human_limit(size: Size | None, none: str = NO_LIMIT) -> str:
    """A memory limit for people: a size, or `none` when there is no limit (None, infinity,
    the cgroup file's "max")."""
    return none if size is None or size is INFINITY else human_size(size)


def human_rate(bytes_per_s: float | None, unset: str = "-") -> str:
    """Bytes per second for people: 1572864.0 -> "1.5M/s", 0 -> "0B/s" (None -> `unset`)."""
    if bytes_per_s is None:
        return unset
    return f"{human_size(max(0, round(bytes_per_s)))}/s"


def human_time(epoch: float) -> str:
    """A moment for people, in local time with its zone, and in UTC when that differs:
    "Fri 2026-11-27 02:00:00 CET (01:00 UTC)"."""
    from datetime import UTC, datetime

    local = datetime.fromtimestamp(epoch).astimezone()
    text = f"{local:%a %Y-%m-%d %H:%M:%S} {local.tzname() or f'{local:%z}'}"
    if local.utcoffset():
        utc = local.astimezone(UTC)
        day = "" if utc.date() == local.date() else f"{utc:%a %Y-%m-%d} "
        text += f" ({day}{utc:%H:%M} UTC)"
    return text


def human_memory(value: MemorySize) -> str:
    """A memory value for people, never rounded: 24.5G, infinity or 50% (as exact_size)."""
    return str(value) if isinstance(value, RamShare) else exact_size(value)
