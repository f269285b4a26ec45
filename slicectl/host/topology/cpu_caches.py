"""Which CPUs share a CPU's last-level cache, from sysfs `cpuN/cache` (edge).

The last level is the highest `level` of a Data or Unified cache in `cpuN/cache/indexM` (an
Instruction cache holds no data to share); its `shared_cpu_list`, or the hex `shared_cpu_map`
of kernels before 2.6.29, names the CPUs sharing it. `slicectl.host.topology.sysfs` reads it for
every online CPU; `build_topology` keeps the groups within each node.

The cache facts are optional (kernels before 2.6.25, VMs and Arm boards without cache tables
have none), so nothing here is an error: what cannot be read, or reads as what the kernel never
writes, leaves the group unknown (the node stands in). The systemd generator reads them as
root at every boot: each read is bounded, and only regular files are read (a FIFO or a device
in a copied tree must not block or flood it).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable

from slicectl.core.cpulist import KERNEL_MAX_CPUS, parse_cpulist, parse_cpumask

_INDEX_DIR = re.compile(r"index\d{1,4}")
_MAX_CACHE_ENTRIES = 64  # cpuN/cache holds index0..index3 or so, uevent and power
_SMALL_FILE = 64  # level, type
_LIST_FILE = 64 << 10  # a shared_cpu_list of 8,192 CPUs written as "0,2,4,...": about 20 KB
_SHARED_TYPES = ("Unified", "Data")  # an Instruction cache holds no data to share


class LastLevelCaches:
    """Each online CPU's last-level cache group, read once per group: the kernel lists a
    cache's CPUs from the one cache they share, so a CPU another CPU's list names has that
    list: one CPU's files per group are read, not every CPU's (the generator's cold start).
    A list that contradicts another still shows where the groups overlap: build_topology
    then leaves the node standing in."""

    def __init__(self) -> None:
        self._found: dict[int, frozenset[int]] = {}
        self._parsed: dict[str, frozenset[int]] = {}

    def of(self, cpu_dir: str, cpu: int) -> frozenset[int]:
        """The group of CPU `cpu`, whose sysfs directory is `cpu_dir` (empty: unknown)."""
        if cpu in self._found:
            return self._found[cpu]
        group = last_level_cache(cpu_dir, self._parsed)
        if cpu in group:
            for member in group:
                self._found.setdefault(member, group)
        return group


def last_level_cache(d: str, parsed: dict[str, frozenset[int]]) -> frozenset[int]:
    """The CPUs sharing CPU `d`'s last-level cache (the highest `level` of a Unified or
    Data cache in cpuN/cache/indexM), itself included; empty when unknown. `parsed` holds
    the lists already parsed (every CPU of a group lists the same text)."""
    cache = os.path.join(d, "cache")
    best: tuple[int, str] | None = None
    try:
        with os.scandir(cache) as entries:
            for i, entry in enumerate(entries):
                if i >= _MAX_CACHE_ENTRIES:
                    return frozenset()
                if not _INDEX_DIR.fullmatch(entry.name):
                    continue
                level = _bounded_text(os.path.join(entry.path, "level"), _SMALL_FILE)
                kind = _bounded_text(os.path.join(entry.path, "type"), _SMALL_FILE)
                if (level is not None and level.isascii() and level.isdigit() and len(level) < 3
                        and kind in _SHARED_TYPES and (best is None or int(level) > best[0])):
                    best = (int(level), entry.path)
    except OSError:
        return frozenset()
    return frozenset() if best is None else _shared_cpus(best[1], parsed)


def _shared_cpus(index: str, parsed: dict[str, frozenset[int]]) -> frozenset[int]:
    """indexM/shared_cpu_list (or the hex shared_cpu_map of older kernels); empty when
    neither reads as what the kernel writes."""
    for name, parse in (("shared_cpu_list", parse_cpulist), ("shared_cpu_map", parse_cpumask)):
        text = _bounded_text(os.path.join(index, name), _LIST_FILE)
        if text is None:
            continue
        key = f"{name}:{text}"
        if key not in parsed:
            parsed[key] = _cpu_set(text, parse)
        return parsed[key]
    return frozenset()


def _cpu_set(text: str, parse: Callable[[str], frozenset[int]]) -> frozenset[int]:
    """A list or mask naming CPUs below KERNEL_MAX_CPUS, else empty (checked before a range
    such as "0-999999999" is expanded)."""
    if parse is parse_cpulist and any(len(n) > 5 or int(n) >= KERNEL_MAX_CPUS
                                      for n in re.findall(r"[0-9]+", text)):
        return frozenset()
    if parse is parse_cpumask and len(text.replace(",", "")) * 4 > KERNEL_MAX_CPUS:
        return frozenset()
    try:
        return parse(text)
    except ValueError:
        return frozenset()


def _bounded_text(path: str, limit: int) -> str | None:
    """A regular file's ASCII text, stripped, when it is at most `limit` bytes; else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > limit or not data.isascii():
        return None
    return data.decode("ascii").rstrip("\0 \t\n")
