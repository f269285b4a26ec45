"""Parsing and formatting of the value types in tenants.yaml: sizes, percents, durations.

Sizes use base 1024 like systemd (K, M, G, T, P, E); "infinity" means no limit and has one
typed representation, `INFINITY` (a `Size` is `int | Infinity`), so every sum and comparison
must say what infinity does: `size_sum`, `size_min`, `size_le`. Formatting produces exactly
what systemd accepts in unit files, so generated files round-trip through systemd. The
ranges are systemd's own (systemd.resource-control(5), measured with `systemd-analyze
verify` on systemd 252): a value outside them would be ignored by systemd with a warning.
"""

from __future__ import annotations

import enum
import re
import reprlib
from collections.abc import Iterable
from typing import Final, Literal


class Infinity(enum.Enum):
    """The one value of "no limit" (systemd: `infinity`; D-Bus: UINT64_MAX)."""

    INFINITY = "infinity"

    def __str__(self) -> str:
        return "infinity"


INFINITY: Final = Infinity.INFINITY
Size = int | Literal[Infinity.INFINITY]  # bytes, or infinity

UINT64_MAX: Final = 2**64 - 1
# systemd refuses sizes of UINT64_MAX and more ("out of range"): that value means infinity.
MAX_SIZE: Final = UINT64_MAX - 1
# CPUQuota= is parsed into a permyriad int: at most INT_MAX / 100 percent.
MAX_PERCENT: Final = (2**31 - 1) // 100
# The kernel's range for a cpu.max period (cgroup-v2.rst): systemd clamps anything else,
# and then the cgroup would not say what tenants.yaml asked for.
MIN_PERIOD_US: Final = 1_000
MAX_PERIOD_US: Final = 1_000_000

# What systemd's parse_size() takes for memory properties: a number, optionally with a
# fraction, and one upper-case suffix of base 1024 (systemd.resource-control(5)).
_SIZE_RE = re.compile(r"^\s*(\d{1,40}(?:\.\d{1,40})?)\s*([KMGTPE]?)\s*$")
# What people write instead (12GB, 12Gb, 12GiB, 12g, 50%): refused with what to write.
_LOOSE_SIZE_RE = re.compile(r"^\s*(\d{1,40}(?:\.\d{1,40})?)\s*([KMGTPE]?)(i?B)?\s*$",
                            re.IGNORECASE)
_FACTORS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5,
            "E": 1024**6}


class ValueHint(ValueError):
    """A value refused with a hint of what to write instead (config shows the hint)."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


def _check_size(size: int, value: object, minimum: int) -> int:
    if size > MAX_SIZE:
        raise ValueError(f"{quote(value)} is too large: systemd takes sizes below 2^64-1 "
                         f"bytes (16E); write infinity for no limit")
    if size < minimum:
        raise ValueError(f"{quote(value)} is out of range: systemd takes {minimum} byte or "
                         "more here (write infinity for no limit)")
    return size


def _not_a_size(value: str) -> ValueError:
    """Why `value` is not a systemd size, with what to write when that is clear."""
    text = value.strip()
    message = f"{quote(value)} is not a size"
    if text.lower() == "max":
        return ValueHint(f"{message} (max is the cgroup file's word for no limit)",
                         "write infinity")
    if text.endswith("%"):
        return ValueHint(f"{message}: slicectl takes memory sizes in bytes, not a share of "
                         "RAM", "write the size, e.g. 48G for half of a 96G host "
                         "(`slicectl topology` shows each node's memory)")
    loose = _LOOSE_SIZE_RE.match(value)
    if loose:
        number, unit, b = loose[1], loose[2].upper(), loose[3]
        if b and not unit:
            return ValueHint(f"{message} (systemd sizes take no B)",
                             f"write {number} (a plain number is bytes)")
        if b:
            return ValueHint(f"{message} (systemd sizes take no B or iB)",
                             f"write {number}{unit} (systemd sizes are base 1024 and take "
                             "no B)")
        return ValueHint(f"{message} (systemd's suffixes are upper case)",
                         f"write {number}{unit} (K, M, G, T, P, E: base 1024)")
    return ValueError(f"{message} (use a number with K, M, G or T, or infinity)")


def parse_size(value: object, minimum: int = 0) -> Size:
    """Parse 24G, 512M, 1.5G, 1048576, 0 or "infinity" into bytes (INFINITY for infinity):
    what systemd takes for memory properties. 12GB, 12Gb, 12GiB, 12g and max are refused
    with what to write instead (systemd refuses them too).

    Sizes of 2^64-1 bytes and more, or below `minimum`, are refused as systemd does.
    """
    if isinstance(value, bool):
        raise ValueError("expected a size such as 512M, 24G or infinity, not a boolean")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"size {quote(value)} is negative")
        return _check_size(value, value, minimum)
    if not isinstance(value, str):
        raise ValueError(f"expected a size such as 512M, 24G or infinity, got {quote(value)}")
    if value.strip().lower() == "infinity":
        return INFINITY
    m = _SIZE_RE.match(value)
    if not m:
        raise _not_a_size(value)
    number, unit = m.group(1), m.group(2)
    if "." not in number:
        return _check_size(int(number) * _FACTORS[unit], value, minimum)  # exact
    from fractions import Fraction

    size = Fraction(number) * _FACTORS[unit]
    if size.denominator != 1:
        raise ValueError(f"{quote(value)} is not a whole number of bytes")
    return _check_size(int(size), value, minimum)


def format_size(size: Size) -> str:
    """Bytes -> the shortest exact systemd size: 25769803776 -> "24G", INFINITY -> "infinity"."""
    if size is INFINITY:
        return "infinity"
    if size == 0:
        return "0"
    for unit in ("E", "P", "T", "G", "M", "K"):
        factor = _FACTORS[unit]
        if size % factor == 0:
            return f"{size // factor}{unit}"
    return str(size)


def human_size(size: Size | None, unset: str = "-") -> str:
    """A size for people, rounded: 6777044K -> "6.5G" (None -> `unset`)."""
    if size is None:
        return unset
    if size is INFINITY:
        return "infinity"
    value = float(size)
    for unit in ("", "K", "M", "G", "T", "P"):
        if value < 1024 or unit == "P":
            return f"{value:.0f}" if unit == "" else f"{value:.1f}".removesuffix(".0") + unit
        value /= 1024
    raise AssertionError("unreachable")


def size_sum(sizes: Iterable[Size | None]) -> Size:
    """The sum of sizes (None: unset, counts as 0); infinity if any of them is infinity."""
    total = 0
    for s in sizes:
        if s is INFINITY:
            return INFINITY
        total += s or 0
    return total


def size_le(a: Size, b: Size) -> bool:
    """a <= b, with infinity above every number."""
    if b is INFINITY:
        return True
    return a is not INFINITY and a <= b


def size_bytes(size: Size, infinity: int) -> int:
    """A size as bytes, with `infinity` standing for infinity (e.g. the host's RAM)."""
    return infinity if size is INFINITY else size


def parse_percent(value: object) -> int:
    """Parse "600%" (or 600) into an integer percent of one CPU, 1 .. MAX_PERCENT (systemd's
    limit for CPUQuota=)."""
    if isinstance(value, bool):
        raise ValueError("expected a percent such as 150%, not a boolean")
    if isinstance(value, int):
        pct = value
    elif isinstance(value, str) and re.fullmatch(r"\s*\d{1,40}\s*%\s*", value):
        pct = int(value.strip().rstrip("%"))
    else:
        raise ValueError(f"{quote(value)} is not a percent (write it like 150%)")
    if pct <= 0:
        raise ValueError(f"{quote(value)} must be more than 0%")
    if pct > MAX_PERCENT:
        raise ValueError(f"{quote(value)} is too large: systemd takes at most {MAX_PERCENT}%")
    return pct


_DURATION_RE = re.compile(r"^\s*(\d{1,40})\s*(us|ms|s)?\s*$")
_DURATION_FACTORS = {"us": 1, "ms": 1000, "s": 1_000_000, None: 1_000_000}


def parse_duration_us(value: object, lo: int = 0, hi: int | None = None) -> int:
    """Parse "100ms", "1s", "500us" (a bare number means seconds, as in systemd) into µs,
    refusing values outside [lo, hi]."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 100ms, not a boolean")
    if not isinstance(value, str | int):
        raise ValueError(f"expected a duration such as 100ms, got {quote(value)}")
    m = _DURATION_RE.match(str(value))
    if not m:
        raise ValueError(f"{quote(value)} is not a duration (write it like 100ms, 1s or 500us)")
    us = int(m.group(1)) * _DURATION_FACTORS[m.group(2)]
    if us < lo or (hi is not None and us > hi):
        span = f"{format_duration_us(lo)} to {format_duration_us(hi)}" if hi is not None \
            else f"at least {format_duration_us(lo)}"
        raise ValueError(f"{quote(value)} is out of range: the kernel takes {span}")
    return us


def format_duration_us(us: int) -> str:
    """µs -> systemd time span: 100000 -> "100ms", 1000000 -> "1s", 1500 -> "1500us"."""
    if us % 1_000_000 == 0:
        return f"{us // 1_000_000}s"
    if us % 1000 == 0:
        return f"{us // 1000}ms"
    return f"{us}us"


QUOTE_LIMIT: Final = 60


class _Quoter(reprlib.Repr):
    """repr() bounded in length and depth: an error message quotes at most QUOTE_LIMIT
    characters of a value, and a YAML alias bomb (a structure of exponential size whose parts
    are shared) is never walked whole."""

    def __init__(self) -> None:
        super().__init__()
        self.maxstring = self.maxother = self.maxlong = QUOTE_LIMIT
        self.maxlevel = 2
        self.maxlist = self.maxtuple = self.maxdict = self.maxset = 4

    def repr1(self, x: object, level: int) -> str:
        # reprlib picks a method by the exact type name; YAML's mappings and sequences are
        # subclasses (slicectl.core.yamldoc), which would fall through to a full repr().
        if isinstance(x, list) and type(x) is not list:
            return self.repr_list(list(x), level)
        if isinstance(x, dict) and type(x) is not dict:
            return self.repr_dict(dict(x), level)
        return super().repr1(x, level)


_QUOTER = _Quoter()


def quote(value: object) -> str:
    """A value as error messages quote it (bounded: see _Quoter)."""
    return _QUOTER.repr(value)
