"""How each output shows or reads a slice's fields (pure): their values in `status --json`,
their cells in `status`, `top` and the TUI, the exporter's samples of them, the recorder's
columns. slicectl.core.monitor.fields' table names, for each field, which of these it uses.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from slicectl.core.cpulist import format_cpulist
from slicectl.core.human import human_limit, human_rate, human_size
from slicectl.core.monitor.cpuset_partition import PartitionMetrics
from slicectl.core.monitor.metrics import (
    NodeCpus,
    NumaMetrics,
    PressureMetrics,
    PsiMetrics,
    SliceMetrics,
)
from slicectl.core.monitor.samples import CgroupSample, Pressure

# How a table cell says "no limit" (memory.high or memory.max "max"), in status, top, the TUI.
NO_LIMIT_CELL = "none"


@dataclass(frozen=True, slots=True)
class ScrapeHost:
    """What the exporter reads a cgroup against: the host's CPUs, its NUMA nodes' CPUs (None:
    unknown) and its memory nodes."""

    cpus: int
    node_cpus: NodeCpus | None
    mems: frozenset[int] | None


# A family's samples of one cgroup: (the values of its labels after slice and tenant, value).
Samples = Sequence[tuple[tuple[str, ...], float]]
Read = Callable[[CgroupSample, ScrapeHost], Samples]


# A recorded value of one cgroup, from its sample and its NUMA locality (None: not read).
Recording = Callable[[CgroupSample, NumaMetrics | None], int | float | None]


# --- JSON values -------------------------------------------------------------------------


def json_float(x: float | None, digits: int) -> float | None:
    """Rounded for JSON; None for unknown, and for nan or inf, which JSON cannot carry."""
    return None if x is None or not math.isfinite(x) else round(x, digits)


def rounded(attr: str, digits: int) -> Callable[[SliceMetrics], float | None]:
    """The value of SliceMetrics' `attr`, rounded to `digits` for JSON."""
    get = attrgetter(attr)
    return lambda m: json_float(get(m), digits)


def cpulist(attr: str) -> Callable[[SliceMetrics], str | None]:
    """The CPUs or nodes of SliceMetrics' `attr` as a cpulist ("0-3,8"); None: all."""
    get = attrgetter(attr)
    return lambda m: None if get(m) is None else format_cpulist(get(m))


def _psi_line_json(line: PsiMetrics) -> dict[str, float | None]:
    return {"avg10": json_float(line.avg10, 2), "rate": json_float(line.rate, 2)}


def _psi_json(p: PressureMetrics | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {"some": _psi_line_json(p.some),
            "full": None if p.full is None else _psi_line_json(p.full)}


def pressure_json(attr: str) -> Callable[[SliceMetrics], dict[str, Any] | None]:
    """PSI `some` and `full` of SliceMetrics' `attr`: the kernel's avg10 and our rate."""
    get = attrgetter(attr)
    return lambda m: _psi_json(get(m))


def events_json(m: SliceMetrics) -> dict[str, int | None]:
    """memory.events: the increase of each counter over the interval."""
    return {"low": m.events_low, "high": m.events_high, "max": m.events_max,
            "oom": m.events_oom, "oom_kill": m.events_oom_kill}


def io_json(m: SliceMetrics) -> dict[str, float | None]:
    """Bytes read and written per second over the interval, all devices."""
    return {"read_bytes_per_s": json_float(m.io_read_bps, 1),
            "write_bytes_per_s": json_float(m.io_write_bps, 1)}


def numa_json(m: SliceMetrics) -> dict[str, Any] | None:
    """Where the slice's memory is, by node, against the nodes of its CPUs."""
    n: NumaMetrics | None = m.numa
    if n is None:
        return None
    return {
        "nodes": [{"node": x.node, "anon": x.anon, "file": x.file} for x in n.nodes],
        "local_nodes": None if n.local_nodes is None else format_cpulist(n.local_nodes),
        "local_percent": json_float(n.local_percent, 2),
        "outside_percent": json_float(n.outside_percent, 2),
        "bound": n.bound,
    }


def partition_json(m: SliceMetrics) -> dict[str, Any] | None:
    """The slice's cpuset partition: its state, and what is wrong with it."""
    p = m.partition
    if p is None:
        return None
    return {
        "state": p.state.state,
        "valid": p.state.valid,
        "reason": p.state.reason or None,
        "lost_cpus": format_cpulist(p.lost_cpus) if p.lost_cpus else None,
        "problem": p.problem(),
    }


# --- table cells -------------------------------------------------------------------------


def cores_cell(m: SliceMetrics) -> str:
    """CPU cores used over the interval / CPUs it may run on: "1.50 / 4"."""
    cores = "-" if m.cpu_cores is None else f"{m.cpu_cores:.2f}"
    return f"{cores} / {m.allowed_cpus}"


def quota_cell(m: SliceMetrics) -> str:
    """The CPU quota in cores: "3.00"."""
    return "-" if m.quota_cores is None else f"{m.quota_cores:.2f}"


def throttled_cell(m: SliceMetrics) -> str:
    """The share of quota periods throttled: "12.5%" ("-" without a quota)."""
    if m.throttled_percent is None or (m.quota_cores is None and not m.throttled_percent):
        return "-"  # not measured yet; or no quota, so nothing to throttle against
    return f"{m.throttled_percent:.1f}%"


def memory_cell(m: SliceMetrics) -> str:
    """memory.current / memory.high / memory.max: "65M / 900M / 1G"."""
    if m.memory_current is None:
        return "-"
    return (f"{human_size(m.memory_current)} / {human_limit(m.memory_high, NO_LIMIT_CELL)}"
            f" / {human_limit(m.memory_max, NO_LIMIT_CELL)}")


def psi_cell(p: PressureMetrics | None) -> str:
    """The PSI `some` stall share of one resource as status, top and the TUI show it."""
    return "-" if p is None else f"{p.some.share():.1f}%"


def pressure_cell(attr: str) -> Callable[[SliceMetrics], str]:
    """The cell of the pressure of SliceMetrics' `attr` (`psi_cell`)."""
    get = attrgetter(attr)
    return lambda m: psi_cell(get(m))


def events_cell(m: SliceMetrics) -> str:
    """memory.events over the interval, the most serious first: "oom_kill +1, max +3"."""
    counts = (("oom_kill", m.events_oom_kill), ("oom", m.events_oom), ("max", m.events_max),
              ("high", m.events_high))
    return ", ".join(f"{name} +{n}" for name, n in counts if n) or "-"


def tasks_cell(m: SliceMetrics) -> str:
    """Tasks in the slice and below."""
    return "-" if m.tasks is None else str(m.tasks)


def io_cell(m: SliceMetrics) -> str:
    """Bytes read and written per second: "1.5M/s 0B/s"."""
    if m.io_read_bps is None or m.io_write_bps is None:
        return "-"
    return f"{human_rate(m.io_read_bps)} {human_rate(m.io_write_bps)}"


def numa_cell(m: SliceMetrics) -> str:
    """The local share of the slice's memory, and the share outside its memory nodes when
    there is some: "97%", "25% (75% out)"."""
    n = m.numa
    if n is None or n.outside_percent is None:
        return "-"
    local = "-" if n.local_percent is None else f"{n.local_percent:.0f}%"
    if n.outside_percent < 0.5:
        return local
    return f"{local} ({n.outside_percent:.0f}% out)"


def partition_cell(m: SliceMetrics) -> str:
    """The slice's cpuset partition: "isolated", "root invalid", "isolated lacks 3"
    ("-": no partition)."""
    p = m.partition
    if p is None:
        return "-"
    if not p.state.valid:
        return f"{p.state.state} invalid"
    if p.lost_cpus:
        return f"{p.state.state} lacks {format_cpulist(p.lost_cpus)}"
    return p.state.state


# --- the exporter's samples --------------------------------------------------------------
# Values are the kernel's counters and levels at scrape time, in base units; a limit the
# cgroup does not set ("max") is +Inf; a value whose file held garbage is left out (and
# counted by the exporter: CgroupSample.unreadable), as is a file the cgroup does not have.

INF = float("inf")


@dataclass(frozen=True, slots=True)
class SampledValue:
    """A Read of CgroupSample's `attr` as it is, over `per` (a division, not a product with
    1e-6, to keep decimal values exact: 3456789 µs = 3.456789 s). Data rather than a closure:
    the exporter reads these in its loop, without a call each (BENCHMARKS.md, exporter.1000)."""

    attr: str
    per: float = 1.0

    def __call__(self, s: CgroupSample, host: ScrapeHost) -> Samples:
        v = getattr(s, self.attr)
        return () if v is None else (((), v / self.per),)


def sampled(attr: str, per: float = 1.0) -> SampledValue:
    """CgroupSample's `attr` as it is, over `per` (`SampledValue`)."""
    return SampledValue(attr, per)


def limit(attr: str, on: str) -> Read:
    """The limit CgroupSample's `attr`: +Inf when unset ("max") while the controller is on
    (`on`, a value it always has, was read or held garbage)."""
    get, controller = attrgetter(attr), attrgetter(on)

    def read(s: CgroupSample, host: ScrapeHost) -> Samples:
        v = get(s)
        if v is not None:
            return (((), float(v)),)
        bad = s.unreadable
        if attr not in bad and (controller(s) is not None or on in bad):
            return (((), INF),)
        return ()
    return read


def quota_cpus(s: CgroupSample, host: ScrapeHost) -> Samples:
    """cpu.max as CPUs; +Inf without a quota."""
    if not s.cpu_period_usec:
        return ()
    if s.cpu_quota_usec is not None:
        return (((), s.cpu_quota_usec / s.cpu_period_usec),)
    return () if "cpu_quota_usec" in s.unreadable else (((), INF),)


def allowed_cpus(s: CgroupSample, host: ScrapeHost) -> Samples:
    """The CPUs the slice may run on; the host's without a cpuset."""
    if s.cpus is None and "cpus" in s.unreadable:
        return ()
    return (((), float(len(s.cpus) if s.cpus else host.cpus)),)


_EVENTS = (("low", "events_low"), ("high", "events_high"), ("max", "events_max"),
           ("oom", "events_oom"), ("oom_kill", "events_oom_kill"))


def memory_events(s: CgroupSample, host: ScrapeHost) -> Samples:
    """Each memory.events counter, by event."""
    return [((event,), float(v)) for event, attr in _EVENTS
            if (v := getattr(s, attr)) is not None]


def psi_waiting(resource: str) -> Read:
    """PSI some `total` of `resource`, in seconds."""
    get = attrgetter(f"{resource}_pressure")

    def read(s: CgroupSample, host: ScrapeHost) -> Samples:
        p: Pressure | None = get(s)
        return () if p is None else (((), p.some.total / 1e6),)
    return read


def psi_stalled(resource: str) -> Read:
    """PSI full `total` of `resource`, in seconds."""
    get = attrgetter(f"{resource}_pressure")

    def read(s: CgroupSample, host: ScrapeHost) -> Samples:
        p: Pressure | None = get(s)
        return () if p is None or p.full is None else (((), p.full.total / 1e6),)
    return read


def numa_bytes(s: CgroupSample, host: ScrapeHost) -> Samples:
    """memory.numa_stat: anonymous and file memory on each node."""
    return [((str(n.node), kind), float(size)) for n in s.numa or ()
            for kind, size in (("anon", n.anon), ("file", n.file))]


def local_ratio(s: CgroupSample, host: ScrapeHost) -> Samples:
    """The share of the slice's memory on the nodes of its CPUs (0-1)."""
    numa = NumaMetrics.from_sample(s, host.node_cpus, host.mems)
    if numa is None or numa.local_percent is None:
        return ()
    return (((), numa.local_percent / 100),)


def partition_made(s: CgroupSample, host: ScrapeHost) -> Samples:
    """1 for a partition the kernel made, 0 for one it refused, by its state."""
    p = PartitionMetrics.from_sample(s)
    return () if p is None else (((p.state.state,), float(p.state.valid)),)


def partition_invalid(s: CgroupSample, host: ScrapeHost) -> Samples:
    """1 for a partition the kernel refused, with its reason."""
    p = PartitionMetrics.from_sample(s)
    if p is None:
        return ()
    return (((p.state.state, p.state.reason), float(not p.state.valid)),)


def partition_lost(s: CgroupSample, host: ScrapeHost) -> Samples:
    """The CPUs a valid partition lacks of its cpuset.cpus."""
    p = PartitionMetrics.from_sample(s)
    return () if p is None or not p.state.valid else (((), float(len(p.lost_cpus))),)


# --- the recorder's columns --------------------------------------------------------------


def recorded_as_is(attr: str) -> Recording:
    """CgroupSample's `attr` as the kernel reported it."""
    get = attrgetter(attr)
    return lambda s, numa: get(s)


def memory_some_avg10(s: CgroupSample, numa: NumaMetrics | None) -> float | None:
    """memory.pressure some avg10, as the kernel reports it."""
    return None if s.memory_pressure is None else s.memory_pressure.some.avg10


def memory_some_total(s: CgroupSample, numa: NumaMetrics | None) -> int | None:
    """memory.pressure some total (µs)."""
    return None if s.memory_pressure is None else s.memory_pressure.some.total


def numa_local_percent(s: CgroupSample, numa: NumaMetrics | None) -> float | None:
    """The share of memory on the nodes of its CPUs (%)."""
    return None if numa is None else numa.local_percent


def numa_outside_percent(s: CgroupSample, numa: NumaMetrics | None) -> float | None:
    """The share of memory on nodes it may not allocate on (%)."""
    return None if numa is None else numa.outside_percent
