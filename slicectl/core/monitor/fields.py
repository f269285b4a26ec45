"""The one table of a slice's metrics and every output of each (pure).

Each `SliceField` row says, for one metric of a slice: its key in `slicectl status --json` (the
field id, dotted as object.key) and its value there; its column in `status`, `top` and the
TUI, and how a cell shows it; the families `slicectl exporter` serves for it (OpenMetrics name,
type, help, the file it comes from) and how a cgroup's samples of each are read; the columns
`slicectl record` stores for it. Everything else reads this table: the JSON object and the
table's cells (slicectl.views.monitor), the TUI's overview and detail screen (their columns,
by field id), the exporter's families and series (slicectl.exporter.families, and
docs/metrics.md through docs/update-reference), the recorder's schema and rows
(slicectl.host.cgroup.recorder). Adding a metric is one row here plus its tests; a view that
shows it lists its id where it wants the column (docs/design-notes.md, "Adding a metric").

The views show what happened over the interval between two samples (SliceMetrics: rates,
deltas); the exporter serves the kernel's counters as they are at scrape time (CgroupSample),
and Prometheus computes the rates; the recorder stores what `slicectl recommend` reads. A row
holds them all: the same metric, each output in its form.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from operator import attrgetter
from typing import Any

from slicectl.core.cpulist import format_cpulist
from slicectl.core.frozen import frozen
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


@frozen
class Column:
    """A field's column in `status`, `top` and the TUI: its header and its cell."""

    title: str
    cell: Callable[[SliceMetrics], str]  # "-": not measured yet, or not available
    left: bool = False  # aligned left (text), else right (figures)


class MetricType(StrEnum):
    COUNTER = "counter"
    GAUGE = "gauge"


COUNTER, GAUGE = MetricType.COUNTER, MetricType.GAUGE
SLICE_LABELS = ("slice", "tenant")  # the labels of every family of a slice, first


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One exported metric; counters' names end in `_total` as exposed in the text format."""

    name: str
    type: MetricType
    help: str
    source: str  # the cgroup file (or what else) the value comes from
    labels: tuple[str, ...] = SLICE_LABELS


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


@frozen
class Family:
    """A family `slicectl exporter` serves for a field, and how a cgroup's samples are read."""

    name: str
    type: MetricType
    help: str
    source: str  # the cgroup file(s) it comes from
    read: Read
    labels: tuple[str, ...] = ()  # after slice and tenant

    @property
    def spec(self) -> MetricSpec:
        """The metric as the exporter and docs/metrics.md describe it."""
        return MetricSpec(self.name, self.type, self.help, self.source,
                          SLICE_LABELS + self.labels)


# A recorded value of one cgroup, from its sample and its NUMA locality (None: not read).
Recording = Callable[[CgroupSample, NumaMetrics | None], int | float | None]


@frozen
class Recorded:
    """A column `slicectl record` stores for a field, and how a cgroup's value is read."""

    column: str  # in the samples table
    sql: str  # its SQLite type
    doc: str  # its comment in the table's schema
    read: Recording
    since: int = 1  # the schema version that added it (older databases get it added)


@frozen
class SliceField:
    """One metric of a slice and every output of it, keyed by `id`: its key in `status
    --json`, dotted as object.key ("cpu.cores" is {"cpu": {"cores": …}})."""

    id: str
    json: Callable[[SliceMetrics], Any]  # its value in `status --json`
    column: Column | None = None  # its column in status, top and the TUI (views pick them)
    exported: tuple[Family, ...] = ()  # what `slicectl exporter` serves of it
    recorded: tuple[Recorded, ...] = ()  # what `slicectl record` stores of it


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


def _events_json(m: SliceMetrics) -> dict[str, int | None]:
    return {"low": m.events_low, "high": m.events_high, "max": m.events_max,
            "oom": m.events_oom, "oom_kill": m.events_oom_kill}


def _io_json(m: SliceMetrics) -> dict[str, float | None]:
    return {"read_bytes_per_s": json_float(m.io_read_bps, 1),
            "write_bytes_per_s": json_float(m.io_write_bps, 1)}


def _numa_json(m: SliceMetrics) -> dict[str, Any] | None:
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


def _partition_json(m: SliceMetrics) -> dict[str, Any] | None:
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


def _cores_cell(m: SliceMetrics) -> str:
    cores = "-" if m.cpu_cores is None else f"{m.cpu_cores:.2f}"
    return f"{cores} / {m.allowed_cpus}"


def _quota_cell(m: SliceMetrics) -> str:
    return "-" if m.quota_cores is None else f"{m.quota_cores:.2f}"


def _throttled_cell(m: SliceMetrics) -> str:
    if m.throttled_percent is None or (m.quota_cores is None and not m.throttled_percent):
        return "-"  # not measured yet; or no quota, so nothing to throttle against
    return f"{m.throttled_percent:.1f}%"


def _memory_cell(m: SliceMetrics) -> str:
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


def _events_cell(m: SliceMetrics) -> str:
    counts = (("oom_kill", m.events_oom_kill), ("oom", m.events_oom), ("max", m.events_max),
              ("high", m.events_high))  # the most serious first
    return ", ".join(f"{name} +{n}" for name, n in counts if n) or "-"


def _tasks_cell(m: SliceMetrics) -> str:
    return "-" if m.tasks is None else str(m.tasks)


def _io_cell(m: SliceMetrics) -> str:
    """Bytes read and written per second: "1.5M/s 0B/s"."""
    if m.io_read_bps is None or m.io_write_bps is None:
        return "-"
    return f"{human_rate(m.io_read_bps)} {human_rate(m.io_write_bps)}"


def _numa_cell(m: SliceMetrics) -> str:
    """The local share of the slice's memory, and the share outside its memory nodes when
    there is some: "97%", "25% (75% out)"."""
    n = m.numa
    if n is None or n.outside_percent is None:
        return "-"
    local = "-" if n.local_percent is None else f"{n.local_percent:.0f}%"
    if n.outside_percent < 0.5:
        return local
    return f"{local} ({n.outside_percent:.0f}% out)"


def _partition_cell(m: SliceMetrics) -> str:
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


def _quota(s: CgroupSample, host: ScrapeHost) -> Samples:
    if not s.cpu_period_usec:
        return ()
    if s.cpu_quota_usec is not None:
        return (((), s.cpu_quota_usec / s.cpu_period_usec),)
    return () if "cpu_quota_usec" in s.unreadable else (((), INF),)


def _allowed(s: CgroupSample, host: ScrapeHost) -> Samples:
    if s.cpus is None and "cpus" in s.unreadable:
        return ()
    return (((), float(len(s.cpus) if s.cpus else host.cpus)),)


_EVENTS = (("low", "events_low"), ("high", "events_high"), ("max", "events_max"),
           ("oom", "events_oom"), ("oom_kill", "events_oom_kill"))


def _events(s: CgroupSample, host: ScrapeHost) -> Samples:
    return [((event,), float(v)) for event, attr in _EVENTS
            if (v := getattr(s, attr)) is not None]


def _waiting_read(resource: str) -> Read:
    get = attrgetter(f"{resource}_pressure")

    def read(s: CgroupSample, host: ScrapeHost) -> Samples:
        p: Pressure | None = get(s)
        return () if p is None else (((), p.some.total / 1e6),)
    return read


def _stalled_read(resource: str) -> Read:
    get = attrgetter(f"{resource}_pressure")

    def read(s: CgroupSample, host: ScrapeHost) -> Samples:
        p: Pressure | None = get(s)
        return () if p is None or p.full is None else (((), p.full.total / 1e6),)
    return read


def waiting(resource: str) -> Family:
    """The time some of a slice's tasks waited for `resource` (PSI some `total`, s)."""
    return Family(name=f"slicectl_pressure_{resource}_waiting_seconds_total", type=COUNTER,
                  read=_waiting_read(resource),
                  help=f"Time some of the slice's tasks waited for {resource} (PSI some)",
                  source=f"{resource}.pressure")


def stalled(resource: str) -> Family:
    """The time all of a slice's tasks stalled on `resource` (PSI full `total`, s)."""
    return Family(name=f"slicectl_pressure_{resource}_stalled_seconds_total", type=COUNTER,
                  read=_stalled_read(resource),
                  help=f"Time all of the slice's tasks stalled on {resource} (PSI full)",
                  source=f"{resource}.pressure")


def _numa_bytes(s: CgroupSample, host: ScrapeHost) -> Samples:
    return [((str(n.node), kind), float(size)) for n in s.numa or ()
            for kind, size in (("anon", n.anon), ("file", n.file))]


def _local_ratio(s: CgroupSample, host: ScrapeHost) -> Samples:
    numa = NumaMetrics.from_sample(s, host.node_cpus, host.mems)
    if numa is None or numa.local_percent is None:
        return ()
    return (((), numa.local_percent / 100),)


def _partition_made(s: CgroupSample, host: ScrapeHost) -> Samples:
    p = PartitionMetrics.from_sample(s)
    return () if p is None else (((p.state.state,), float(p.state.valid)),)


def _partition_invalid(s: CgroupSample, host: ScrapeHost) -> Samples:
    p = PartitionMetrics.from_sample(s)
    if p is None:
        return ()
    return (((p.state.state, p.state.reason), float(not p.state.valid)),)


def _partition_lost(s: CgroupSample, host: ScrapeHost) -> Samples:
    p = PartitionMetrics.from_sample(s)
    return () if p is None or not p.state.valid else (((), float(len(p.lost_cpus))),)


# --- the recorder's columns --------------------------------------------------------------


def recorded_as_is(attr: str) -> Recording:
    """CgroupSample's `attr` as the kernel reported it."""
    get = attrgetter(attr)
    return lambda s, numa: get(s)


def _memory_some_avg10(s: CgroupSample, numa: NumaMetrics | None) -> float | None:
    return None if s.memory_pressure is None else s.memory_pressure.some.avg10


def _memory_some_total(s: CgroupSample, numa: NumaMetrics | None) -> int | None:
    return None if s.memory_pressure is None else s.memory_pressure.some.total


def _numa_local(s: CgroupSample, numa: NumaMetrics | None) -> float | None:
    return None if numa is None else numa.local_percent


def _numa_outside(s: CgroupSample, numa: NumaMetrics | None) -> float | None:
    return None if numa is None else numa.outside_percent


# --- the table ---------------------------------------------------------------------------

# In the order of the `status --json` object (docs/status-json.md); the exporter serves its
# families in this order too.
FIELDS: tuple[SliceField, ...] = (
    SliceField(
        id="unit", json=attrgetter("unit"),
        column=Column(title="slice", cell=attrgetter("unit"), left=True),
    ),
    SliceField(id="cgroup", json=attrgetter("cgroup")),
    # limits
    SliceField(id="limits.cpus", json=cpulist("cpus")),
    SliceField(
        id="limits.allowed_cpus", json=attrgetter("allowed_cpus"),
        exported=(Family(
            name="slicectl_cpu_allowed_cpus", type=GAUGE, read=_allowed,
            help="CPUs the slice may run on (AllowedCPUs=, else the host's)",
            source="cpuset.cpus.effective"),),
    ),
    SliceField(id="limits.mems", json=cpulist("mems")),
    SliceField(
        id="limits.cpu_weight", json=attrgetter("cpu_weight"),
        exported=(Family(
            name="slicectl_cpu_weight", type=GAUGE, read=sampled("cpu_weight"),
            help="CPU weight (CPUWeight=, 1-10000)", source="cpu.weight"),),
    ),
    SliceField(
        id="limits.cpu_quota_cores", json=rounded("quota_cores", 3),
        column=Column(title="quota", cell=_quota_cell),
        exported=(Family(
            name="slicectl_cpu_quota_cpus", type=GAUGE, read=_quota,
            help="CPU quota in CPUs (CPUQuota= / 100 %), +Inf when unlimited",
            source="cpu.max"),),
    ),
    SliceField(
        id="limits.memory_min", json=attrgetter("memory_min"),
        exported=(Family(
            name="slicectl_memory_min_bytes", type=GAUGE,
            read=limit("memory_min", on="memory_current"),
            help="memory.min protection (MemoryMin=)", source="memory.min"),),
    ),
    SliceField(
        id="limits.memory_low", json=attrgetter("memory_low"),
        exported=(Family(
            name="slicectl_memory_low_bytes", type=GAUGE,
            read=limit("memory_low", on="memory_current"),
            help="memory.low protection (MemoryLow=)", source="memory.low"),),
    ),
    SliceField(
        id="limits.memory_high", json=attrgetter("memory_high"),
        exported=(Family(
            name="slicectl_memory_high_bytes", type=GAUGE,
            read=limit("memory_high", on="memory_current"),
            help="memory.high throttling limit (MemoryHigh=), +Inf when unlimited",
            source="memory.high"),),
    ),
    SliceField(
        id="limits.memory_max", json=attrgetter("memory_max"),
        exported=(Family(
            name="slicectl_memory_max_bytes", type=GAUGE,
            read=limit("memory_max", on="memory_current"),
            help="memory.max hard limit (MemoryMax=), +Inf when unlimited",
            source="memory.max"),),
    ),
    SliceField(
        id="limits.memory_swap_max", json=attrgetter("swap_max"),
        exported=(Family(
            name="slicectl_memory_swap_max_bytes", type=GAUGE,
            read=limit("swap_max", on="swap_current"),
            help="Swap limit (MemorySwapMax=), +Inf when unlimited",
            source="memory.swap.max"),),
    ),
    # cpu
    SliceField(
        id="cpu.cores", json=rounded("cpu_cores", 3),
        column=Column(title="cpu cores/allowed", cell=_cores_cell),
        exported=(Family(
            name="slicectl_cpu_usage_seconds_total", type=COUNTER,
            read=sampled("usage_usec", per=1e6),
            help="CPU time used by the slice's tasks", source="cpu.stat"),),
        recorded=(Recorded(column="cpu_usage_usec", sql="INTEGER", read=recorded_as_is(
            "usage_usec"), doc="cpu.stat usage_usec (µs)"),),
    ),
    SliceField(id="cpu.percent", json=rounded("cpu_percent", 2)),
    SliceField(
        id="cpu.throttled_percent", json=rounded("throttled_percent", 2),
        column=Column(title="throttled", cell=_throttled_cell),
        exported=(
            Family(name="slicectl_cpu_periods_total", type=COUNTER,
                   read=sampled("nr_periods"),
                   help="CPU quota enforcement periods that elapsed", source="cpu.stat"),
            Family(name="slicectl_cpu_throttled_periods_total", type=COUNTER,
                   read=sampled("nr_throttled"),
                   help="CPU quota periods in which the slice was throttled",
                   source="cpu.stat"),
        ),
    ),
    SliceField(
        id="cpu.throttled_s", json=rounded("throttled_s", 6),
        exported=(Family(
            name="slicectl_cpu_throttled_seconds_total", type=COUNTER,
            read=sampled("throttled_usec", per=1e6),
            help="Time the slice's tasks were throttled by its CPU quota",
            source="cpu.stat"),),
    ),
    # memory
    SliceField(
        id="memory.current", json=attrgetter("memory_current"),
        column=Column(title="mem current/high/max", cell=_memory_cell, left=True),
        exported=(Family(
            name="slicectl_memory_current_bytes", type=GAUGE, read=sampled("memory_current"),
            help="Memory charged to the slice", source="memory.current"),),
        recorded=(Recorded(column="memory_current", sql="INTEGER", read=recorded_as_is(
            "memory_current"), doc="memory.current (bytes)"),),
    ),
    SliceField(id="memory.percent", json=rounded("memory_percent", 2)),
    SliceField(
        id="memory.anon", json=attrgetter("anon"),
        exported=(Family(
            name="slicectl_memory_anon_bytes", type=GAUGE, read=sampled("anon"),
            help="Anonymous memory", source="memory.stat"),),
        recorded=(Recorded(column="anon", sql="INTEGER", read=recorded_as_is("anon"),
                           doc="memory.stat anon (bytes)"),),
    ),
    SliceField(
        id="memory.file", json=attrgetter("file"),
        exported=(Family(
            name="slicectl_memory_file_bytes", type=GAUGE, read=sampled("file"),
            help="Page cache", source="memory.stat"),),
        recorded=(Recorded(column="file", sql="INTEGER", read=recorded_as_is("file"),
                           doc="memory.stat file (bytes)"),),
    ),
    SliceField(
        id="memory.active_file", json=attrgetter("active_file"),
        exported=(Family(
            name="slicectl_memory_active_file_bytes", type=GAUGE, read=sampled("active_file"),
            help="Page cache on the active list", source="memory.stat"),),
        recorded=(Recorded(column="active_file", sql="INTEGER",
                           read=recorded_as_is("active_file"),
                           doc="memory.stat active_file (bytes)"),),
    ),
    SliceField(
        id="memory.inactive_file", json=attrgetter("inactive_file"),
        exported=(Family(
            name="slicectl_memory_inactive_file_bytes", type=GAUGE,
            read=sampled("inactive_file"),
            help="Page cache on the inactive list", source="memory.stat"),),
    ),
    SliceField(
        id="memory.swap", json=attrgetter("swap_current"),
        exported=(Family(
            name="slicectl_memory_swap_current_bytes", type=GAUGE,
            read=sampled("swap_current"),
            help="Swap used", source="memory.swap.current"),),
    ),
    SliceField(
        id="memory.refaults_per_s", json=rounded("refaults_per_s", 1),
        exported=(Family(
            name="slicectl_memory_workingset_refaults_total", type=COUNTER,
            read=sampled("workingset_refault"),
            help="Evicted pages faulted back in (anon + file)", source="memory.stat"),),
    ),
    # pressure: PSI's "some" is cAdvisor's `waiting`, "full" its `stalled`
    SliceField(
        id="pressure.cpu", json=pressure_json("cpu_pressure"),
        column=Column(title="psi cpu", cell=pressure_cell("cpu_pressure")),
        exported=(waiting("cpu"), stalled("cpu")),
    ),
    SliceField(
        id="pressure.memory", json=pressure_json("memory_pressure"),
        column=Column(title="psi mem", cell=pressure_cell("memory_pressure")),
        exported=(waiting("memory"), stalled("memory")),
        recorded=(
            Recorded(column="memory_some_avg10", sql="REAL", read=_memory_some_avg10,
                     doc="memory.pressure some avg10 (%)"),
            Recorded(column="memory_some_total", sql="INTEGER", read=_memory_some_total,
                     doc="memory.pressure some total (µs)"),
        ),
    ),
    SliceField(
        id="pressure.io", json=pressure_json("io_pressure"),
        column=Column(title="psi io", cell=pressure_cell("io_pressure")),
        exported=(waiting("io"), stalled("io")),
    ),
    # memory.events: the views show the increase over the interval
    SliceField(
        id="events", json=_events_json,
        column=Column(title="events", cell=_events_cell, left=True),
        exported=(Family(
            name="slicectl_memory_events_total", type=COUNTER, read=_events, labels=("event",),
            help="memory.events: times the slice hit memory.low/high/max, OOM situations and "
                 "OOM kills", source="memory.events"),),
    ),
    SliceField(
        id="tasks", json=attrgetter("tasks"),
        column=Column(title="tasks", cell=_tasks_cell),
        exported=(Family(
            name="slicectl_tasks", type=GAUGE, read=sampled("tasks"),
            help="Tasks (threads) in the slice", source="pids.current"),),
    ),
    SliceField(
        id="io", json=_io_json,
        column=Column(title="io r/w", cell=_io_cell),  # bytes read, written per second
    ),
    SliceField(id="trouble", json=lambda m: sorted(m.trouble)),
    SliceField(
        id="numa", json=_numa_json,
        column=Column(title="numa local", cell=_numa_cell),
        exported=(
            Family(name="slicectl_memory_numa_bytes", type=GAUGE, read=_numa_bytes,
                   labels=("node", "type"),
                   help="Memory on each NUMA node, anonymous and page cache",
                   source="memory.numa_stat"),
            Family(name="slicectl_memory_local_ratio", type=GAUGE, read=_local_ratio,
                   help="Share of the slice's memory on the NUMA nodes of its CPUs (0-1)",
                   source="memory.numa_stat, cpuset.cpus.effective"),
        ),
        recorded=(
            Recorded(column="numa_local_percent", sql="REAL", read=_numa_local, since=2,
                     doc="share of memory on the nodes of its CPUs (%)"),
            Recorded(column="numa_outside_percent", sql="REAL", read=_numa_outside, since=2,
                     doc="share of memory on nodes it may not allocate on (%)"),
        ),
    ),
    SliceField(
        id="partition", json=_partition_json,
        column=Column(title="partition", cell=_partition_cell, left=True),
        exported=(
            Family(name="slicectl_cpuset_partition", type=GAUGE, read=_partition_made,
                   labels=("partition",),
                   help="1 for a cpuset partition (CPUSetPartition=) the kernel made, 0 for "
                        "one it refused; by the state asked for (root, isolated); no series "
                        "for a member", source="cpuset.cpus.partition"),
            Family(name="slicectl_cpuset_partition_invalid", type=GAUGE,
                   read=_partition_invalid, labels=("partition", "reason"),
                   help="1 when the kernel refused the slice's cpuset partition, with its "
                        "reason, 0 for a valid one", source="cpuset.cpus.partition"),
            Family(name="slicectl_cpuset_partition_lost_cpus", type=GAUGE,
                   read=_partition_lost,
                   help="CPUs of cpuset.cpus a valid partition does not hold (taken by a "
                        "cgroup beside it that claims them, or offline)",
                   source="cpuset.cpus, cpuset.cpus.effective"),
        ),
    ),
)
FIELD: dict[str, SliceField] = {f.id: f for f in FIELDS}


def column(field_id: str) -> Column:
    """The column of the field `field_id` (KeyError: none)."""
    c = FIELD[field_id].column
    if c is None:
        raise KeyError(f"{field_id} has no column")
    return c


def slice_json(m: SliceMetrics) -> dict[str, Any]:
    """One slice's object of `status --json`: every field at its id, in the table's order."""
    out: dict[str, Any] = {}
    for f in FIELDS:
        *parents, key = f.id.split(".")
        at = out
        for p in parents:
            at = at.setdefault(p, {})
        at[key] = f.json(m)
    return out
