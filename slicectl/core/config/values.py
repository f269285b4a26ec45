"""Parsing and formatting of the value types in tenants.yaml: sizes, percents, durations.

Sizes use base 1024 like systemd (K, M, G, T, P, E); "infinity" means no limit and has one
typed representation, `INFINITY` (a `Size` is `int | Infinity`), so every sum and comparison
must say what infinity does: `size_sum`, `size_min`, `size_le`. Formatting produces exactly
what systemd accepts in unit files, so generated files round-trip through systemd. The
ranges are systemd's own (systemd.resource-control(5), measured with `systemd-analyze
verify` on systemd 252): a value outside them would be ignored by systemd with a warning.
Formatting for people (24.5G, no limit, rates with /s, local times) is slicectl.core.human.

Why this module runs past 400 lines: it holds each value type of tenants.yaml with its parser
and its systemd spelling (sizes, shares of RAM and of the task limit, percents, durations), so
every spelling systemd takes is defined once, beside the others it must not be confused with.
"""

from __future__ import annotations

import enum
import re
import reprlib
import unicodedata
from collections.abc import Iterable
from typing import Final, Literal

from slicectl.core.errors import ValueHint
from slicectl.core.frozen import frozen


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
_SIZE_RE = re.compile(r"^\s*(\d{1,40}(?:\.\d{1,40})?)\s*([KMGTPE]?)\s*$", re.ASCII)
# What people write instead (12GB, 12Gb, 12GiB, 12g, 50%): refused with what to write.
_LOOSE_SIZE_RE = re.compile(r"^\s*(\d{1,40}(?:\.\d{1,40})?)\s*([KMGTPE]?)(i?B)?\s*$",
                            re.IGNORECASE | re.ASCII)
_FACTORS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5,
            "E": 1024**6}


PAGE: Final = 4096  # the kernel's and systemd's unit of memory limits (x86-64, arm64 4K)
UINT32_MAX: Final = 2**32 - 1


@frozen
class ShareValue:
    """A share written as systemd writes one (systemd.resource-control(5)): kept in permyriad
    (1/10,000) with the spelling it was written in ("50%", "505‰", "5050‱"), so a unit file
    says what tenants.yaml says and systemd on the target resolves it against what it finds
    there (a share of RAM: `RamShare`; of the task limit: `TaskShare`)."""

    permyriad: int
    text: str

    def __str__(self) -> str:
        return self.text

    def scale(self) -> int:
        """The `u` sent as the property's *Scale twin over D-Bus, UINT32_MAX = 100 %
        (UINT32_SCALE_FROM_PERMYRIAD of systemd's percent-util.h: rounded to nearest), as
        `systemctl set-property` sends it."""
        return (self.permyriad * UINT32_MAX + 5000) // 10_000

    def needs(self) -> int:
        """The first systemd release that parses this spelling: ‰ from 240 (NEWS), two
        decimals and ‱ from 248 (systemd PRs #18444 and #18659, which moved percent parsing
        to permyriad); whole percents with the property itself."""
        if self.text.endswith("‰"):
            return 240
        if self.text.endswith("‱") or "." in self.text:
            return 248
        return 0


@frozen
class RamShare(ShareValue):
    """A share of the host's physical memory, as systemd reads "50%" in a memory property."""

    def bytes_of(self, ram: int) -> int:
        """What systemd makes of it on a host with `ram` bytes: physical_memory_scale() of
        systemd's util.c rounds the RAM down to whole pages, scales the page count and
        rounds down again (`ram` is MemTotal: sysconf(_SC_PHYS_PAGES))."""
        return _scale_pages(ram, self.permyriad, 10_000)

    def bytes_over_dbus(self, ram: int) -> int:
        """What systemd makes of `scale()` (bus_cgroup_set_memory_scale: the same rounding,
        scaled from UINT32_MAX): may differ from `bytes_of` by a page."""
        return _scale_pages(ram, self.scale(), UINT32_MAX)


@frozen
class TaskShare(ShareValue):
    """A share of the kernel's task limit, as systemd reads TasksMax=50%: systemd resolves
    it against system_tasks_max() of its limits-util.c, the least of kernel.threads-max,
    kernel.pid_max - 1 and the root cgroup's pids.max (`kinds.HostLimits.tasks`)."""

    def tasks_of(self, limit: int) -> int:
        """What systemd makes of it where the task limit is `limit`
        (system_tasks_max_scale: scaled and rounded down; all of it at 100 %)."""
        return _scale_tasks(limit, self.permyriad, 10_000)

    def tasks_over_dbus(self, limit: int) -> int:
        """What systemd makes of `scale()` sent as TasksMaxScale (the same rounding, scaled
        from UINT32_MAX): may differ from `tasks_of` by one."""
        return _scale_tasks(limit, self.scale(), UINT32_MAX)

    def needs(self) -> int:
        """TasksMax= took whole percents from 231 (NEWS); ‰, decimals and ‱ as in memory
        properties (systemd parses both with the same function)."""
        return max(super().needs(), TASK_SHARE_SINCE)


# The release whose TasksMax= takes a percent and whose D-Bus API takes TasksMaxScale (NEWS of
# 231; the Scale twins of TasksMax and of the memory properties came in one change).
TASK_SHARE_SINCE: Final = 231


def _scale_tasks(limit: int, v: int, of: int) -> int:
    return limit if v == of else limit * v // of


def _scale_pages(ram: int, v: int, of: int) -> int:
    if v == of:
        return ram // PAGE * PAGE
    return ram // PAGE * v // of * PAGE


MemorySize = Size | RamShare  # what a memory key holds: bytes, infinity or a share of RAM

# systemd's parse_permyriad(): "N%" with up to two decimals, "N‰" with one, "N‱" whole; at
# most 100 % (measured with `systemd-analyze verify` on systemd 252: "50 %" and "50.255%" are
# refused).
_SHARE_RE = re.compile(r"\s*(\d{1,10})(?:\.(\d+))?(%|‰|‱)\s*", re.ASCII)
_SHARE_DECIMALS = {"%": 2, "‰": 1, "‱": 0}
_SHARE_FACTOR = {"%": 100, "‰": 10, "‱": 1}


def _parse_share(value: str, of: str, whole: str, hint: str) -> tuple[int, str] | None:
    """(permyriad, spelling) of a share written as systemd's parse_permyriad() takes it; None
    if `value` is not written as a share at all; ValueHint for a share systemd refuses (above
    100 %, too many decimals). `of` names what it is a share of ("RAM"), `whole` all of it
    and `hint` what 100 % is."""
    check_ascii(value, SHARE_SIGNS)
    m = _SHARE_RE.fullmatch(value)
    if m is None:
        return None
    number, part, unit = m[1], m[2] or "", m[3]
    if len(part) > _SHARE_DECIMALS[unit]:
        allowed = {"%": "two decimals (50.25%)", "‰": "one decimal (502.5‰)",
                   "‱": "no decimals (5025‱)"}[unit]
        raise ValueHint(f"{quote(value)} is not a share of {of} systemd takes: {unit} takes "
                        f"{allowed}", "round it, e.g. 50.25%")
    factor = _SHARE_FACTOR[unit]
    permyriad = int(number) * factor + (int(part.ljust(_SHARE_DECIMALS[unit], "0"))
                                        if part else 0)
    if permyriad > 10_000:
        raise ValueHint(f"{quote(value)} is more than all of {whole}",
                        f"a share of {of} is 0% to 100% of {hint}")
    return permyriad, f"{int(number)}{'.' + part if part else ''}{unit}"


def parse_ram_share(value: str) -> RamShare | None:
    """"50%", "12.5%", "505‰", "5050‱" as a RamShare; None if `value` is not written as a
    share at all; ValueHint for a share systemd refuses (above 100 %, too many decimals)."""
    parsed = _parse_share(value, "RAM", "the host's RAM", "the host's physical memory")
    return None if parsed is None else RamShare(*parsed)


# What systemd takes a share of tasks of (system_tasks_max in limits-util.c).
TASK_LIMIT_TEXT: Final = ("the least of kernel.threads-max, kernel.pid_max - 1 and the root "
                          "cgroup's pids.max")


def parse_task_share(value: str) -> TaskShare | None:
    """TasksMax=50% (also 12.5%, 505‰, 5050‱, as systemd takes them) as a TaskShare; None if
    `value` is not written as a share; ValueHint for a share systemd refuses."""
    parsed = _parse_share(value, "the task limit", "the kernel's task limit", TASK_LIMIT_TEXT)
    return None if parsed is None else TaskShare(*parsed)


# The characters beyond ASCII that systemd reads in a value: the per-mille and per-ten-
# thousand signs of a share (parse_permyriad).
SHARE_SIGNS: Final = "‰‱"


def check_ascii(value: str, allowed: str = "") -> bool:
    """True, or ValueHint when `value` holds a character beyond ASCII (but those in
    `allowed`). Python's int(), float(), str.isdigit() and `\\d` take the digits of every
    script (٥, ５, ⁵); systemd reads 0-9 only and ignores a line it cannot parse, so the unit
    would run without that limit. The hint spells the value in ASCII where that is clear."""
    bad = next((ch for ch in value if not ch.isascii() and ch not in allowed), None)
    if bad is None:
        return True
    name = unicodedata.name(bad, "")
    kind = "a digit other than 0-9" if bad.isnumeric() else "not ASCII"
    spelled = _in_ascii(value, allowed)
    raise ValueHint(f"{quote(value)} holds {bad!r} (U+{ord(bad):04X}"
                    f"{' ' + name if name else ''}), {kind}: systemd reads only the ASCII "
                    "digits 0-9 and would ignore the setting",
                    f"write {spelled}" if spelled else "retype it with the digits 0-9 (text "
                    "copied from a document or typed in another keyboard layout may hold "
                    "look-alikes)")


def _in_ascii(value: str, allowed: str) -> str | None:
    """`value` with look-alikes replaced by their ASCII (fullwidth ５０％, ٥), or None."""
    out = []
    for ch in value:
        if ch.isascii() or ch in allowed:
            out.append(ch)
        elif (digit := unicodedata.decimal(ch, None)) is not None:  # ٥, ５: a digit 0-9
            out.append(str(digit))
        elif ch.isnumeric():  # ², ½, Ⅻ: what was meant is not clear
            return None
        elif (folded := unicodedata.normalize("NFKC", ch)).isascii() and folded.isprintable():
            out.append(folded)  # fullwidth ％ and Ｍ, a no-break space
        else:
            return None
    return "".join(out).strip()


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
    if text.endswith(("%", "‰", "‱")):
        return ValueHint(f"{message}: a share of RAM is not taken here",
                         "write the size, e.g. 48G (`slicectl topology` shows the memory)")
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
    check_ascii(value)
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


def parse_memory_size(value: object, minimum: int = 0) -> MemorySize:
    """A memory property's value: a size (parse_size) or, as systemd takes it there, a share
    of the host's RAM ("50%", "12.5%", "505‰", "5050‱"); a share that resolves to less than
    `minimum` bytes (0% of a limit) is refused as systemd refuses it."""
    if isinstance(value, str) and value.strip().endswith(("%", "‰", "‱")):
        share = parse_ram_share(value)
        if share is None:
            raise ValueHint(f"{quote(value)} is not a size or a share of RAM",
                            "write a share as systemd does, 50%, 12.5%, 505‰ or 5050‱ (no "
                            "space, no suffix), or a size such as 48G")
        if share.permyriad == 0 and minimum > 0:
            raise ValueError(f"{quote(value)} is out of range: systemd takes more than 0% "
                             "here (write infinity for no limit)")
        return share
    return parse_size(value, minimum)


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


def size_sum(sizes: Iterable[Size | None]) -> Size:
    """The sum of sizes (None: unset, counts as 0); infinity if any of them is infinity."""
    total = 0
    for s in sizes:
        if s is INFINITY:
            return INFINITY
        total += s or 0
    return total


def memory_sum(values: Iterable[MemorySize | None], ram: int) -> MemorySize:
    """The sum of memory values (None: unset): a share of RAM when all are shares (systemd
    resolves it on the host), else bytes with shares resolved against `ram`; infinity if any
    is infinity."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, RamShare) for v in present):
        permyriad = min(sum(v.permyriad for v in present if isinstance(v, RamShare)), 10_000)
        whole, part = divmod(permyriad, 100)
        return RamShare(permyriad, f"{whole}.{part:02d}".rstrip("0").rstrip(".") + "%")
    return size_sum(resolved(v, ram) for v in present)


def size_le(a: Size, b: Size) -> bool:
    """a <= b, with infinity above every number."""
    if b is INFINITY:
        return True
    return a is not INFINITY and a <= b


def size_bytes(size: MemorySize, infinity: int) -> int:
    """A size as bytes, with `infinity` standing for infinity and a share of RAM resolved
    against it (the host's RAM), as systemd resolves it."""
    if isinstance(size, RamShare):
        return size.bytes_of(infinity)
    return infinity if size is INFINITY else size


def resolved(size: MemorySize | None, ram: int) -> Size | None:
    """A memory value with a share of RAM resolved against `ram` bytes (as systemd does);
    sizes, infinity and None as they are."""
    return size.bytes_of(ram) if isinstance(size, RamShare) else size


def format_memory(value: MemorySize) -> str:
    """A memory value as written in a unit file: 24G, infinity or 50%."""
    return str(value) if isinstance(value, RamShare) else format_size(value)


def parse_percent(value: object) -> int:
    """Parse "600%" into an integer percent of one CPU, 1 .. MAX_PERCENT (systemd's limit for
    CPUQuota=). A bare number is refused, as systemd refuses `CPUQuota=4`: 4 is more likely
    4 CPUs (400%) than 4% of one CPU, and guessing either way throttles someone."""
    if isinstance(value, bool):
        raise ValueError("expected a percent such as 150%, not a boolean")
    if isinstance(value, int | float) or (isinstance(value, str) and re.fullmatch(
            r"\s*\d{1,40}(?:\.\d+)?\s*", value, re.ASCII)):
        number = str(value).strip()
        cpus = f"{number} CPU" + ("" if number in ("1", "1.0") else "s")
        raise ValueHint(
            f"{quote(value)} has no %: systemd refuses CPUQuota={number}, and it is not clear "
            f"whether {cpus} or {number}% of one CPU is meant",
            f"write the percent of one CPU: {_times_100(number)}% for {cpus}, or {number}% for "
            f"{number}% of one CPU")
    if isinstance(value, str) and check_ascii(value) and re.fullmatch(
            r"\s*\d{1,40}\s*%\s*", value, re.ASCII):
        pct = int(value.strip().rstrip("%"))
    else:
        raise ValueError(f"{quote(value)} is not a percent (write it like 150%)")
    if pct <= 0:
        raise ValueError(f"{quote(value)} must be more than 0%")
    if pct > MAX_PERCENT:
        raise ValueError(f"{quote(value)} is too large: systemd takes at most {MAX_PERCENT}%")
    return pct


def _times_100(number: str) -> str:
    """`number` (digits, maybe a fraction) times 100, as text: "4" -> "400", "1.5" -> "150"."""
    whole, _, fraction = number.partition(".")
    digits = (whole + (fraction + "00")[:2]).lstrip("0") or "0"
    rest = fraction[2:].rstrip("0")
    return digits + (f".{rest}" if rest else "")


_DURATION_RE = re.compile(r"^\s*(\d{1,40})\s*(us|ms|s)?\s*$", re.ASCII)
_DURATION_FACTORS = {"us": 1, "ms": 1000, "s": 1_000_000, None: 1_000_000}


def parse_duration_us(value: object, lo: int = 0, hi: int | None = None) -> int:
    """Parse "100ms", "1s", "500us" (a bare number means seconds, as in systemd) into µs,
    refusing values outside [lo, hi]."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 100ms, not a boolean")
    if not isinstance(value, str | int):
        raise ValueError(f"expected a duration such as 100ms, got {quote(value)}")
    if isinstance(value, str):
        check_ascii(value)
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
        # subclasses (slicectl.core.config.yamldoc), which would fall through to a full repr().
        if isinstance(x, list) and type(x) is not list:
            return self.repr_list(list(x), level)
        if isinstance(x, dict) and type(x) is not dict:
            return self.repr_dict(dict(x), level)
        return super().repr1(x, level)


_QUOTER = _Quoter()


def quote(value: object) -> str:
    """A value as error messages quote it (bounded: see _Quoter)."""
    return _QUOTER.repr(value)
