"""What one read of the cgroup tree holds: the sampler fills these, metrics read them.

Plain immutable values, no I/O (DESIGN.md §1, §7): the sampler (`slicectl.host.cgroup.sampler`, an
edge) builds them from cgroupfs; `metrics` (core), `record` and the exporter consume them, and tests
build them by hand. Every value is as the kernel reports it: bytes, microseconds, counts.
None means unknown or unlimited: the file is absent (controller not enabled), says "max", or
held something that could not be read (garbage is never an error, DESIGN.md §7).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from slicectl.core.properties.partition import PartitionState


class PsiLine(NamedTuple):
    """One line of a PSI file: share of time stalled (%) and total stall time (µs)."""

    avg10: float
    avg60: float
    avg300: float
    total: int


class Pressure(NamedTuple):
    """A `*.pressure` file: `some` and (if the kernel reports it) `full`."""

    some: PsiLine
    full: PsiLine | None


class NodeMemory(NamedTuple):
    """A cgroup's memory on one NUMA node (`memory.numa_stat` `anon` and `file`), bytes."""

    node: int
    anon: int
    file: int

    @property
    def total(self) -> int:
        """Anonymous memory plus page cache on this node."""
        return self.anon + self.file


# Not frozen: these are built by the hundred on every refresh, and a frozen dataclass's
# __init__ stores each field through object.__setattr__, many times the cost of a plain
# slotted one (BENCHMARKS.md, "Hand-made pieces kept in place of a library"). Treat them as
# immutable all the same.
@dataclass(slots=True, unsafe_hash=True)
class CgroupSample:
    """One cgroup's counters and limits at one instant, field by field as the kernel shows them.

    The comments name the interface file each group comes from (cgroup-v2.rst). Counters
    (usage, periods, refaults, events, PSI totals) only grow while the cgroup exists; a new
    `inode` means the directory was removed and created again, and counters restarted.
    """

    unit: str  # the directory's name, e.g. "tenants-db1.slice"
    path: str  # relative to the cgroup root, e.g. "tenants.slice/tenants-db1.slice"
    inode: int  # of the cgroup directory
    # cpu.stat (µs, counts)
    usage_usec: int | None
    nr_periods: int | None
    nr_throttled: int | None
    throttled_usec: int | None
    # cpu.max ("max" quota -> None), cpu.weight
    cpu_quota_usec: int | None
    cpu_period_usec: int | None
    cpu_weight: int | None
    # cpuset.cpus.effective (else cpuset.cpus), cpuset.mems.effective; None = no cpuset
    # controller here, so everything the parent has
    cpus: frozenset[int] | None
    mems: frozenset[int] | None
    # memory.current, memory.low/min/high/max, memory.swap.current/max (bytes)
    memory_current: int | None
    memory_low: int | None
    memory_min: int | None
    memory_high: int | None
    memory_max: int | None
    swap_current: int | None
    swap_max: int | None
    # memory.stat (bytes; workingset_refault in pages: anon + file, or the combined counter)
    anon: int | None
    file: int | None
    active_file: int | None
    inactive_file: int | None
    workingset_refault: int | None
    # memory.events (counts since the cgroup was created, hierarchical)
    events_low: int | None
    events_high: int | None
    events_max: int | None
    events_oom: int | None
    events_oom_kill: int | None
    # cpu.pressure, memory.pressure, io.pressure
    cpu_pressure: Pressure | None
    memory_pressure: Pressure | None
    io_pressure: Pressure | None
    # pids.current
    tasks: int | None
    # memory.numa_stat, by node: read only on hosts with more than one memory node
    numa: tuple[NodeMemory, ...] | None = None
    # io.stat: bytes read and written, summed over devices (None without the io controller)
    io_read_bytes: int | None = None
    io_write_bytes: int | None = None
    # cpuset.cpus.partition as the kernel states it (None: no such file, no cpuset controller
    # here), and cpuset.cpus, the CPUs asked for (None: empty, the parent's): a valid
    # partition whose effective CPUs are fewer has lost some (Linux 7.0 strips them).
    partition: PartitionState | None = None
    cpus_asked: frozenset[int] | None = None
    # The fields above that are None because their file held garbage (not because the file
    # is absent or says "max"); the exporter drops their series and counts an error.
    unreadable: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Snapshot:
    """All discovered cgroups at one instant, keyed by path relative to the root.

    `time` is a monotonic clock in seconds; `host_cpus` the number of CPUs of the root cgroup
    (the host's online CPUs); `host_mems` the root's memory nodes, None when the cgroup root
    does not say (no cpuset controller).
    """

    time: float
    cgroups: dict[str, CgroupSample]
    host_cpus: int
    host_mems: frozenset[int] | None = None
