"""The cgroup v2 interface files slicectl samples, and how each parses (pure, no I/O).

`FILES` declares every file once: its name, the `samples.CgroupSample` fields it fills and the
parser from the bytes the kernel shows to those values. The sampler (`slicectl.host.cgroup.sampler`)
opens, reads and re-reads them in this order; this module turns what it read into a sample. Parsing
is bytes-level, without regexes, to keep allocations per sample low, and garbage (not a number,
out of range, not UTF-8, truncated) reads as unknown, None: a parser raises ValueError at worst,
caught once per file, never per sample. Which fields held garbage (rather than being absent or
"max") is kept in `CgroupSample.unreadable`: the exporter drops those series and counts them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields as dataclass_fields
from functools import lru_cache
from operator import itemgetter
from typing import Any

from slicectl.core.cpulist import parse_cpulist
from slicectl.core.monitor.samples import CgroupSample, NodeMemory, Pressure, PsiLine
from slicectl.core.properties.partition import PartitionState

# The kernel's counters are 64-bit; a value past the signed range is garbage for us (and
# SQLite, where `record` stores it, could not hold it).
_INT_MAX = (1 << 63) - 1

# One file's values, one per field it fills.
Values = tuple[Any, ...]

# A parser's mark for a value that is in the file but cannot be read: `CgroupFile.read` turns
# it into None and names the field in the sample's `unreadable`.
_GARBAGE: Any = object()


class _Garbled(tuple[Any, ...]):
    """A file's values where some could not be read: None there, and named in `bad`."""

    bad: tuple[str, ...]


def _int(text: bytes) -> int | None:
    """A counter or size: a non-negative 64-bit integer, else None (garbage is unknown)."""
    try:
        n = int(text)
    except ValueError:
        return None
    return n if 0 <= n <= _INT_MAX else None


def _number(data: bytes) -> Values:
    """A single-value file: "123\\n" -> 123, "max\\n" -> None."""
    if data[:3] == b"max":
        return (None,)
    n = _int(data)
    if n is None:
        raise ValueError("not a number")
    return (n,)


def _key(name: str) -> tuple[bytes, bytes]:
    """Search patterns for `name` in a flat-keyed file (first line, later lines)."""
    return (name.encode() + b" ", b"\n" + name.encode() + b" ")


def _after(data: bytes, key: tuple[bytes, bytes]) -> bytes | None:
    """The rest of the line that starts with `key` (from `_key`), None if there is none."""
    first, later = key
    if data.startswith(first):
        i = len(first)
    else:
        i = data.find(later)
        if i < 0:
            return None
        i += len(later)
    j = data.find(b"\n", i)
    return data[i:j] if j >= 0 else data[i:]


def _keyed(data: bytes, keys: tuple[tuple[bytes, bytes], ...]) -> list[Any]:
    """The values of these keys (from `_key`) in a flat-keyed file such as cpu.stat: None
    where absent, _GARBAGE where unreadable. (`_int` inline: this runs a dozen times per
    cgroup per refresh.)"""
    out: list[Any] = []
    for key in keys:
        value = _after(data, key)
        if value is None:
            out.append(None)
            continue
        try:
            n = int(value)
        except ValueError:
            out.append(_GARBAGE)
            continue
        out.append(n if 0 <= n <= _INT_MAX else _GARBAGE)
    return out


def _flat_keyed(*keys: str) -> Callable[[bytes], Values]:
    """A parser for these keys of a flat-keyed file, in this order."""
    patterns = tuple(map(_key, keys))

    def parse(data: bytes) -> Values:
        return tuple(_keyed(data, patterns))

    return parse


def _cpu_max(data: bytes) -> Values:
    """cpu.max: "QUOTA PERIOD" -> (quota µs or None for "max", period µs)."""
    q, _, p = data.partition(b" ")
    quota = None if q == b"max" else _int(q)
    period = _int(p) if p else None
    return (_GARBAGE if quota is None and q != b"max" else quota,
            _GARBAGE if period is None else period)


_STAT_KEYS = ("anon", "file", "active_file", "inactive_file")
# The sizes, then the refaults of kernels since 5.9 (anon and file); before, one counter.
_STAT_READ = tuple(map(_key, (*_STAT_KEYS, "workingset_refault_anon",
                              "workingset_refault_file")))
_REFAULT = (_key("workingset_refault"),)


def _memory_stat(data: bytes) -> Values:
    """memory.stat: the sizes of `_STAT_KEYS`, then workingset refaults (anon + file)."""
    *sizes, refault, more = _keyed(data, _STAT_READ)
    if refault is None:  # kernels before 5.9 only have the combined counter
        refault = _keyed(data, _REFAULT)[0]
    elif refault is not _GARBAGE:
        refault = _GARBAGE if more is _GARBAGE else refault + (more or 0)
    return (*sizes, refault)


def _psi_line(p: list[bytes], at: int) -> PsiLine:
    """Tokens `at`.. of "some avg10 1.50 avg60 .. total N" as a PsiLine; ValueError if bad."""
    a10, a60, a300 = float(p[at + 2]), float(p[at + 4]), float(p[at + 6])
    total = _int(p[at + 8])
    # Shares are 0-100; also rejects nan and inf, which JSON cannot carry.
    if total is None or not (0.0 <= a10 <= 100.0 and 0.0 <= a60 <= 100.0 and 0.0 <= a300 <= 100.0):
        raise ValueError("not a PSI line")
    return tuple.__new__(PsiLine, (a10, a60, a300, total))  # skips NamedTuple's slow __new__


def _pressure(data: bytes) -> Values:
    """"some avg10=.. avg60=.. avg300=.. total=..\\nfull ..." (full may be absent)."""
    # "some avg10 1.50 avg60 ..." after the replace: values sit at fixed token positions.
    p = data.replace(b"=", b" ").split()
    if len(p) < 9 or p[0] != b"some":
        raise ValueError("not a PSI file")
    full = _psi_line(p, 9) if len(p) >= 18 and p[9] == b"full" else None
    return (tuple.__new__(Pressure, (_psi_line(p, 0), full)),)


@lru_cache(maxsize=1024)  # a pure function: the same few lists repeat across cgroups
def parse_cpulist_file(data: bytes) -> frozenset[int] | None:
    """A cpulist or nodelist file; None when empty (an empty cpuset inherits the parent's)."""
    # Kernel CPU and node numbers have at most 4 digits (NR_CPUS <= 8192): refuse longer
    # ones before expanding a range such as "0-2147483647".
    if any(len(n) > 5 for n in data.replace(b"-", b",").split(b",")):
        raise ValueError("not a cpulist")
    return parse_cpulist(data.decode()) or None


def _io_stat(data: bytes) -> Values:
    """io.stat: "8:0 rbytes=1 wbytes=2 rios=.. wios=.. dbytes=.. dios=..\n" per device ->
    bytes read and written on all devices (0 and 0 for an empty file: no IO yet)."""
    read = written = 0
    for line in data.splitlines():
        device, *items = line.split()
        if b":" not in device:
            raise ValueError("not io.stat")
        for item in items:
            key, eq, value = item.partition(b"=")
            n = _int(value)
            if not eq or n is None:
                raise ValueError("not io.stat")
            if key == b"rbytes":
                read += n
            elif key == b"wbytes":
                written += n
    if read > _INT_MAX or written > _INT_MAX:
        raise ValueError("not io.stat")
    return (read, written)


def _cpus(data: bytes) -> Values:
    return (parse_cpulist_file(data),)


def _partition(data: bytes) -> Values:
    """cpuset.cpus.partition: "member", "isolated", "root invalid (reason)" -> its state; a
    first word that is not a lowercase word is garbage."""
    state = PartitionState.parse(data.decode())  # not UTF-8: UnicodeDecodeError, a ValueError
    if not (state.state.isascii() and state.state.isalpha() and state.state.islower()):
        raise ValueError("not a partition state")
    return (state,)


_NUMA_ANON, _NUMA_FILE = _key("anon"), _key("file")


def _numa_stat(data: bytes) -> Values:
    """memory.numa_stat: "anon N0=123 N1=0\\nfile N0=.." -> anon and file per node."""
    anon, file = _per_node(data, _NUMA_ANON), _per_node(data, _NUMA_FILE)
    if anon is None or file is None or anon.keys() != file.keys():
        raise ValueError("not memory.numa_stat")
    return (tuple(NodeMemory(n, anon[n], file[n]) for n in sorted(anon)),)


def _per_node(data: bytes, key: tuple[bytes, bytes]) -> dict[int, int] | None:
    """One line of memory.numa_stat as node -> bytes; None if absent or malformed."""
    line = _after(data, key)
    if line is None:
        return None
    out: dict[int, int] = {}
    for item in line.split():
        node, eq, value = item.partition(b"=")
        n = _int(value)
        if not eq or node[:1] != b"N" or n is None:
            return None
        out[int(node[1:])] = n  # ValueError for "Nx": the whole file is unknown
    return out or None


class CgroupFile:
    """One interface file: its name, the sample fields it fills and its parser."""

    __slots__ = ("name", "fields", "parse", "fallback", "numa", "unknown", "garbage")

    def __init__(self, name: str, fields: tuple[str, ...], parse: Callable[[bytes], Values],
                 *, fallback: str = "", numa: bool = False) -> None:
        self.name = name
        self.fields = fields
        self.parse = parse  # bytes -> one value per field; may raise ValueError
        self.fallback = fallback  # opened when `name` does not exist (older kernels)
        self.numa = numa  # only on hosts with more than one memory node
        self.unknown: Values = (None,) * len(fields)
        self.garbage = _garbled(self.unknown, fields)

    def read(self, data: bytes | None) -> Values:
        """The file's values; all None when it is absent or could not be parsed (then, and
        for single values it could not read, a `_Garbled` naming those fields)."""
        if data is None:
            return self.unknown
        try:
            values = self.parse(data)
        except ValueError:  # garbage (also non-UTF-8): unknown, and the sample goes on
            return self.garbage
        if _GARBAGE in values:  # identity: no parsed value compares equal to the mark
            bad = tuple(f for f, v in zip(self.fields, values, strict=True) if v is _GARBAGE)
            return _garbled(tuple(None if v is _GARBAGE else v for v in values), bad)
        return values


def _garbled(values: Values, bad: tuple[str, ...]) -> _Garbled:
    out = _Garbled(values)
    out.bad = bad
    return out


def _keyed_file(name: str, **fields: str) -> CgroupFile:
    """A flat-keyed file read into sample fields: field=key in the file."""
    return CgroupFile(name, tuple(fields), _flat_keyed(*fields.values()))


def _value_file(name: str, field: str) -> CgroupFile:
    return CgroupFile(name, (field,), _number)


# Every file re-read on every sample, and the CgroupSample fields it fills (each field once).
FILES = (
    _keyed_file("cpu.stat", usage_usec="usage_usec", nr_periods="nr_periods",
                nr_throttled="nr_throttled", throttled_usec="throttled_usec"),
    CgroupFile("cpu.max", ("cpu_quota_usec", "cpu_period_usec"), _cpu_max),
    _value_file("cpu.weight", "cpu_weight"),
    CgroupFile("cpuset.cpus.effective", ("cpus",), _cpus, fallback="cpuset.cpus"),
    CgroupFile("cpuset.mems.effective", ("mems",), _cpus),
    CgroupFile("cpuset.cpus", ("cpus_asked",), _cpus),
    CgroupFile("cpuset.cpus.partition", ("partition",), _partition),
    _value_file("memory.current", "memory_current"),
    _value_file("memory.low", "memory_low"),
    _value_file("memory.min", "memory_min"),
    _value_file("memory.high", "memory_high"),
    _value_file("memory.max", "memory_max"),
    _value_file("memory.swap.current", "swap_current"),
    _value_file("memory.swap.max", "swap_max"),
    CgroupFile("memory.stat", (*_STAT_KEYS, "workingset_refault"), _memory_stat),
    _keyed_file("memory.events", events_low="low", events_high="high", events_max="max",
                events_oom="oom", events_oom_kill="oom_kill"),
    CgroupFile("memory.numa_stat", ("numa",), _numa_stat, numa=True),
    CgroupFile("cpu.pressure", ("cpu_pressure",), _pressure),
    CgroupFile("memory.pressure", ("memory_pressure",), _pressure),
    CgroupFile("io.pressure", ("io_pressure",), _pressure),
    CgroupFile("io.stat", ("io_read_bytes", "io_write_bytes"), _io_stat),
    _value_file("pids.current", "tasks"),
)  # fmt: skip


def parse_changed(
    raw: list[bytes | None], old_raw: list[bytes | None], old: list[Values]
) -> list[Values]:
    """Each file's values, in `FILES` order; a file that reads as before is not parsed again."""
    if not old:
        return [spec.read(data) for spec, data in zip(FILES, raw, strict=True)]
    return [
        before if data == was else spec.read(data)
        for spec, data, was, before in zip(FILES, raw, old_raw, old, strict=True)
    ]


def build_sample(unit: str, path: str, inode: int, parsed: list[Values]) -> CgroupSample:
    """The sample of one cgroup from the parsed values of its files, in `FILES` order."""
    values = [v for file_values in parsed for v in file_values]
    bad = [f for file_values in parsed if type(file_values) is _Garbled for f in file_values.bad]
    values.append(frozenset(bad) if bad else _READABLE)
    return CgroupSample(unit, path, inode, *_IN_FIELD_ORDER(values))


def _field_order() -> Callable[[list[Any]], tuple[Any, ...]]:
    """Picks, from the values of all files in `FILES` order and then `unreadable`,
    CgroupSample's fields after unit, path and inode, in the order of its constructor. Each
    field is filled by exactly one file: a field no file fills, or two files fill, fails
    here, at import."""
    filled = [f for spec in FILES for f in spec.fields] + ["unreadable"]
    wanted = [f.name for f in dataclass_fields(CgroupSample)][3:]
    if sorted(filled) != sorted(wanted):
        raise AssertionError(f"FILES and CgroupSample disagree: {set(filled) ^ set(wanted)}")
    return itemgetter(*[filled.index(name) for name in wanted])


_IN_FIELD_ORDER = _field_order()
_READABLE: frozenset[str] = frozenset()
