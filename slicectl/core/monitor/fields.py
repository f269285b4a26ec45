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
shows it lists its id where it wants the column (docs/design-notes.md, "Adding a metric of a
slice").

The views show what happened over the interval between two samples (SliceMetrics: rates,
deltas); the exporter serves the kernel's counters as they are at scrape time (CgroupSample),
and Prometheus computes the rates; the recorder stores what `slicectl recommend` reads. A row
holds them all: the same metric, each output in its form. How each output shows or reads a
value is slicectl.core.monitor.field_values'.

Why this module runs past 400 lines: it is the table itself, a row per field.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from operator import attrgetter
from typing import Any

from slicectl.core.frozen import frozen
from slicectl.core.monitor.field_values import (
    Read,
    Recording,
    allowed_cpus,
    cores_cell,
    cpulist,
    events_cell,
    events_json,
    io_cell,
    io_json,
    limit,
    local_ratio,
    memory_cell,
    memory_events,
    memory_some_avg10,
    memory_some_total,
    numa_bytes,
    numa_cell,
    numa_json,
    numa_local_percent,
    numa_outside_percent,
    partition_cell,
    partition_invalid,
    partition_json,
    partition_lost,
    partition_made,
    pressure_cell,
    pressure_json,
    psi_stalled,
    psi_waiting,
    quota_cell,
    quota_cpus,
    recorded_as_is,
    rounded,
    sampled,
    tasks_cell,
    throttled_cell,
)
from slicectl.core.monitor.metrics import SliceMetrics


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


def waiting(resource: str) -> Family:
    """The time some of a slice's tasks waited for `resource` (PSI some `total`, s)."""
    return Family(name=f"slicectl_pressure_{resource}_waiting_seconds_total", type=COUNTER,
                  read=psi_waiting(resource),
                  help=f"Time some of the slice's tasks waited for {resource} (PSI some)",
                  source=f"{resource}.pressure")


def stalled(resource: str) -> Family:
    """The time all of a slice's tasks stalled on `resource` (PSI full `total`, s)."""
    return Family(name=f"slicectl_pressure_{resource}_stalled_seconds_total", type=COUNTER,
                  read=psi_stalled(resource),
                  help=f"Time all of the slice's tasks stalled on {resource} (PSI full)",
                  source=f"{resource}.pressure")


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
            name="slicectl_cpu_allowed_cpus", type=GAUGE, read=allowed_cpus,
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
        column=Column(title="quota", cell=quota_cell),
        exported=(Family(
            name="slicectl_cpu_quota_cpus", type=GAUGE, read=quota_cpus,
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
        column=Column(title="cpu cores/allowed", cell=cores_cell),
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
        column=Column(title="throttled", cell=throttled_cell),
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
        column=Column(title="mem current/high/max", cell=memory_cell, left=True),
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
            Recorded(column="memory_some_avg10", sql="REAL", read=memory_some_avg10,
                     doc="memory.pressure some avg10 (%)"),
            Recorded(column="memory_some_total", sql="INTEGER", read=memory_some_total,
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
        id="events", json=events_json,
        column=Column(title="events", cell=events_cell, left=True),
        exported=(Family(
            name="slicectl_memory_events_total", type=COUNTER, read=memory_events,
            labels=("event",),
            help="memory.events: times the slice hit memory.low/high/max, OOM situations and "
                 "OOM kills", source="memory.events"),),
    ),
    SliceField(
        id="tasks", json=attrgetter("tasks"),
        column=Column(title="tasks", cell=tasks_cell),
        exported=(Family(
            name="slicectl_tasks", type=GAUGE, read=sampled("tasks"),
            help="Tasks (threads) in the slice", source="pids.current"),),
    ),
    SliceField(
        id="io", json=io_json,
        column=Column(title="io r/w", cell=io_cell),  # bytes read, written per second
    ),
    SliceField(id="trouble", json=lambda m: sorted(m.trouble)),
    SliceField(
        id="numa", json=numa_json,
        column=Column(title="numa local", cell=numa_cell),
        exported=(
            Family(name="slicectl_memory_numa_bytes", type=GAUGE, read=numa_bytes,
                   labels=("node", "type"),
                   help="Memory on each NUMA node, anonymous and page cache",
                   source="memory.numa_stat"),
            Family(name="slicectl_memory_local_ratio", type=GAUGE, read=local_ratio,
                   help="Share of the slice's memory on the NUMA nodes of its CPUs (0-1)",
                   source="memory.numa_stat, cpuset.cpus.effective"),
        ),
        recorded=(
            Recorded(column="numa_local_percent", sql="REAL", read=numa_local_percent, since=2,
                     doc="share of memory on the nodes of its CPUs (%)"),
            Recorded(column="numa_outside_percent", sql="REAL", read=numa_outside_percent, since=2,
                     doc="share of memory on nodes it may not allocate on (%)"),
        ),
    ),
    SliceField(
        id="partition", json=partition_json,
        column=Column(title="partition", cell=partition_cell, left=True),
        exported=(
            Family(name="slicectl_cpuset_partition", type=GAUGE, read=partition_made,
                   labels=("partition",),
                   help="1 for a cpuset partition (CPUSetPartition=) the kernel made, 0 for "
                        "one it refused; by the state asked for (root, isolated); no series "
                        "for a member", source="cpuset.cpus.partition"),
            Family(name="slicectl_cpuset_partition_invalid", type=GAUGE,
                   read=partition_invalid, labels=("partition", "reason"),
                   help="1 when the kernel refused the slice's cpuset partition, with its "
                        "reason, 0 for a valid one", source="cpuset.cpus.partition"),
            Family(name="slicectl_cpuset_partition_lost_cpus", type=GAUGE,
                   read=partition_lost,
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
