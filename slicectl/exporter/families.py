"""The metrics `slicectl exporter` serves: one table, and the series of one snapshot (pure).

`METRICS` declares every metric once: its name, type, help, labels and the cgroup file it
comes from; the exporter (`slicectl.exporter.server`) turns what `SeriesMemo.series` returns into
prometheus_client families, and docs/metrics.md lists the same table (a test checks both).
Names follow Prometheus' conventions: base units (seconds, bytes), `_total` on counters, and
cAdvisor's PSI names (`waiting` = "some", `stalled` = "full") so existing dashboards translate.

Values are the kernel's counters as they are at scrape time, never rates: Prometheus computes
rates itself (its `rate()` handles counter resets when a slice is recreated). A limit the
cgroup does not set ("max") is `+Inf`; a value whose file held garbage is left out and counted
as an error (`CgroupSample.unreadable`); a file the cgroup does not have is left out.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

from slicectl.core.balance.balance_state import GROW, SHRINK, BalanceState
from slicectl.core.monitor.cgroupfiles import FILES
from slicectl.core.monitor.cpuset_partition import PartitionMetrics
from slicectl.core.monitor.metrics import NodeCpus, NumaMetrics
from slicectl.core.monitor.samples import CgroupSample, Pressure, Snapshot

INF = float("inf")
SLICE_LABELS = ("slice", "tenant")


class MetricType(StrEnum):
    COUNTER = "counter"
    GAUGE = "gauge"


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One exported metric; counters' names end in `_total` as exposed in the text format."""

    name: str
    type: MetricType
    help: str
    source: str  # the cgroup file (or what else) the value comes from
    labels: tuple[str, ...] = SLICE_LABELS


C, G = MetricType.COUNTER, MetricType.GAUGE


def _spec(name: str, type: MetricType, help: str, source: str,
          *extra: str) -> MetricSpec:
    return MetricSpec(f"slicectl_{name}", type, help, source, SLICE_LABELS + extra)


# (metric, CgroupSample field, divisor): values read as they are, over the divisor (µs -> s;
# a division, not a product with 1e-6, to keep decimal values exact: 3456789 µs = 3.456789 s).
_PLAIN = (
    (_spec("cpu_usage_seconds_total", C, "CPU time used by the slice's tasks", "cpu.stat"),
     "usage_usec", 1e6),
    (_spec("cpu_throttled_seconds_total", C, "Time the slice's tasks were throttled by "
           "its CPU quota", "cpu.stat"), "throttled_usec", 1e6),
    (_spec("cpu_periods_total", C, "CPU quota enforcement periods that elapsed", "cpu.stat"),
     "nr_periods", 1.0),
    (_spec("cpu_throttled_periods_total", C, "CPU quota periods in which the slice was "
           "throttled", "cpu.stat"), "nr_throttled", 1.0),
    (_spec("cpu_weight", G, "CPU weight (CPUWeight=, 1-10000)", "cpu.weight"),
     "cpu_weight", 1.0),
    (_spec("memory_current_bytes", G, "Memory charged to the slice", "memory.current"),
     "memory_current", 1.0),
    (_spec("memory_anon_bytes", G, "Anonymous memory", "memory.stat"), "anon", 1.0),
    (_spec("memory_file_bytes", G, "Page cache", "memory.stat"), "file", 1.0),
    (_spec("memory_active_file_bytes", G, "Page cache on the active list", "memory.stat"),
     "active_file", 1.0),
    (_spec("memory_inactive_file_bytes", G, "Page cache on the inactive list",
           "memory.stat"), "inactive_file", 1.0),
    (_spec("memory_swap_current_bytes", G, "Swap used", "memory.swap.current"),
     "swap_current", 1.0),
    (_spec("memory_workingset_refaults_total", C, "Evicted pages faulted back in (anon + "
           "file)", "memory.stat"), "workingset_refault", 1.0),
    (_spec("tasks", G, "Tasks (threads) in the slice", "pids.current"), "tasks", 1.0),
)
# (metric, limit field, field that shows the controller is on): None reads +Inf ("max").
_LIMITS = (
    (_spec("memory_min_bytes", G, "memory.min protection (MemoryMin=)", "memory.min"),
     "memory_min", "memory_current"),
    (_spec("memory_low_bytes", G, "memory.low protection (MemoryLow=)", "memory.low"),
     "memory_low", "memory_current"),
    (_spec("memory_high_bytes", G, "memory.high throttling limit (MemoryHigh=), +Inf when "
           "unlimited", "memory.high"), "memory_high", "memory_current"),
    (_spec("memory_max_bytes", G, "memory.max hard limit (MemoryMax=), +Inf when unlimited",
           "memory.max"), "memory_max", "memory_current"),
    (_spec("memory_swap_max_bytes", G, "Swap limit (MemorySwapMax=), +Inf when unlimited",
           "memory.swap.max"), "swap_max", "swap_current"),
)
_EVENTS_SPEC = _spec("memory_events_total", C, "memory.events: times the slice hit "
                     "memory.low/high/max, OOM situations and OOM kills", "memory.events",
                     "event")
_EVENTS = (("low", "events_low"), ("high", "events_high"), ("max", "events_max"),
           ("oom", "events_oom"), ("oom_kill", "events_oom_kill"))
_RESOURCES = ("cpu", "memory", "io")
# resource -> (waiting = "some", stalled = "full")
_PSI = {r: (_spec(f"pressure_{r}_waiting_seconds_total", C, f"Time some of the slice's tasks "
                  f"waited for {r} (PSI some)", f"{r}.pressure"),
            _spec(f"pressure_{r}_stalled_seconds_total", C, f"Time all of the slice's tasks "
                  f"stalled on {r} (PSI full)", f"{r}.pressure"))
        for r in _RESOURCES}
_QUOTA = _spec("cpu_quota_cpus", G, "CPU quota in CPUs (CPUQuota= / 100 %), +Inf when "
               "unlimited", "cpu.max")
_ALLOWED = _spec("cpu_allowed_cpus", G, "CPUs the slice may run on (AllowedCPUs=, else the "
                 "host's)", "cpuset.cpus.effective")
_NUMA = _spec("memory_numa_bytes", G, "Memory on each NUMA node, anonymous and page cache",
              "memory.numa_stat", "node", "type")
_LOCAL = _spec("memory_local_ratio", G, "Share of the slice's memory on the NUMA nodes of "
               "its CPUs (0-1)", "memory.numa_stat, cpuset.cpus.effective")
_PARTITION = _spec("cpuset_partition", G, "1 for a cpuset partition (CPUSetPartition=) the "
                   "kernel made, 0 for one it refused; by the state asked for (root, "
                   "isolated); no series for a member", "cpuset.cpus.partition", "partition")
_PARTITION_INVALID = _spec("cpuset_partition_invalid", G, "1 when the kernel refused the "
                           "slice's cpuset partition, with its reason, 0 for a valid one",
                           "cpuset.cpus.partition", "partition", "reason")
_PARTITION_LOST = _spec("cpuset_partition_lost_cpus", G, "CPUs of cpuset.cpus a valid "
                        "partition does not hold (taken by a cgroup beside it that claims "
                        "them, or offline)", "cpuset.cpus, cpuset.cpus.effective")
DRIFT = MetricSpec("slicectl_drift", G, "1 when the live property differs from "
                   "tenants.yaml (what `slicectl plan --exit-code` reports), else 0",
                   "systemd over D-Bus (--tenants)", ("unit", "property"))
BALANCE_MOVES = MetricSpec("slicectl_balance_moves_total", C, "Whole-core moves the "
                           "balancer made to (grow) or from (shrink) an elastic tenant",
                           "the balancer's state file", ("tenant", "direction"))
BALANCE_CPUS = MetricSpec("slicectl_balance_cpus", G, "CPUs an elastic tenant holds now, "
                          "as the balancer left it", "the balancer's state file", ("tenant",))
BALANCE_DECLARED = MetricSpec("slicectl_balance_declared_cpus", G, "CPUs tenants.yaml "
                              "declares for an elastic tenant (what apply and a stop of the "
                              "balancer return it to)", "the balancer's state file",
                              ("tenant",))
BALANCE = (BALANCE_MOVES, BALANCE_CPUS, BALANCE_DECLARED)
SCRAPE_DURATION = MetricSpec("slicectl_exporter_scrape_duration_seconds", G,
                             "Time this scrape took to read and convert the cgroups",
                             "the exporter", ())
ERRORS = MetricSpec("slicectl_exporter_errors_total", C, "Values that could not be read "
                    "(their series were left out), by source", "the exporter", ("source",))
CGROUPS = MetricSpec("slicectl_exporter_cgroups", G, "Cgroups (slices and init.scope) "
                     "read in this scrape", "the exporter", ())

SLICE_METRICS: tuple[MetricSpec, ...] = (
    *(m for m, _, _ in _PLAIN), _QUOTA, _ALLOWED, *(m for m, _, _ in _LIMITS), _EVENTS_SPEC,
    *(m for r in _RESOURCES for m in _PSI[r]), _NUMA, _LOCAL, _PARTITION, _PARTITION_INVALID,
    _PARTITION_LOST,
)
METRICS: tuple[MetricSpec, ...] = (*SLICE_METRICS, DRIFT, *BALANCE, SCRAPE_DURATION, ERRORS,
                                   CGROUPS)

# Which file each sample field comes from: the `source` label of an error.
FILE_OF = {field: spec.name for spec in FILES for field in spec.fields}

Row = tuple[tuple[str, ...], float]  # label values, value
Series = dict[str, list[Row]]  # metric name -> rows


Out = list[tuple[str, tuple[str, ...], float]]  # (metric, label values, value)


def _slice_rows(s: CgroupSample, labels: tuple[str, str], host_cpus: int,
                node_cpus: NodeCpus | None, host_mems: frozenset[int] | None) -> Out:
    """(metric, label values, value) of one cgroup."""
    out: Out = []
    for spec, field, divisor in _PLAIN:
        v = getattr(s, field)
        if v is not None:
            out.append((spec.name, labels, v / divisor))
    _limits(s, labels, host_cpus, out)
    for event, field in _EVENTS:
        v = getattr(s, field)
        if v is not None:
            out.append((_EVENTS_SPEC.name, (*labels, event), float(v)))
    for r in _RESOURCES:
        p: Pressure | None = getattr(s, f"{r}_pressure")
        if p is not None:
            waiting, stalled = _PSI[r]
            out.append((waiting.name, labels, p.some.total / 1e6))
            if p.full is not None:
                out.append((stalled.name, labels, p.full.total / 1e6))
    if s.numa is not None:
        _numa(s, labels, node_cpus, host_mems, out)
    partition = PartitionMetrics.from_sample(s)
    if partition is not None:
        _partition(partition, labels, out)
    return out


def _partition(p: PartitionMetrics, labels: tuple[str, str], out: Out) -> None:
    """A cpuset partition: made or refused (with the kernel's reason), and the CPUs a valid
    one lacks."""
    state = p.state
    out.append((_PARTITION.name, (*labels, state.state), float(state.valid)))
    out.append((_PARTITION_INVALID.name, (*labels, state.state, state.reason),
                float(not state.valid)))
    if state.valid:
        out.append((_PARTITION_LOST.name, labels, float(len(p.lost_cpus))))


def _limits(s: CgroupSample, labels: tuple[str, str], host_cpus: int, out: Out) -> None:
    """Memory limits, CPU quota and allowed CPUs: +Inf (or the host's CPUs) where unset,
    left out where the file is absent or held garbage."""
    bad = s.unreadable
    for spec, field, on in _LIMITS:
        v = getattr(s, field)
        if v is not None:
            out.append((spec.name, labels, float(v)))
        elif field not in bad and (getattr(s, on) is not None or on in bad):
            out.append((spec.name, labels, INF))
    if s.cpu_period_usec:
        if s.cpu_quota_usec is not None:
            out.append((_QUOTA.name, labels, s.cpu_quota_usec / s.cpu_period_usec))
        elif "cpu_quota_usec" not in bad:
            out.append((_QUOTA.name, labels, INF))
    if s.cpus is not None or "cpus" not in bad:
        out.append((_ALLOWED.name, labels, float(len(s.cpus) if s.cpus else host_cpus)))


def _numa(s: CgroupSample, labels: tuple[str, str], node_cpus: NodeCpus | None,
          host_mems: frozenset[int] | None, out: Out) -> None:
    for n in s.numa or ():
        node = str(n.node)
        out.append((_NUMA.name, (*labels, node, "anon"), float(n.anon)))
        out.append((_NUMA.name, (*labels, node, "file"), float(n.file)))
    numa = NumaMetrics.from_sample(s, node_cpus, host_mems)
    if numa is not None and numa.local_percent is not None:
        out.append((_LOCAL.name, labels, numa.local_percent / 100))


class _LastRows(NamedTuple):
    """What `SeriesMemo.rows` was last given and returned."""

    samples: list[CgroupSample]
    host: tuple[int, frozenset[int] | None]
    tenants: dict[str, str]
    out: list[tuple[str, Out]]
    errors: Counter[str]
    positions: list[int]  # where each of `samples` (the sampler's order) is in `out`


class SeriesMemo:
    """The series of snapshot after snapshot, for one exporter over one sampler.

    The sampler hands back the very same sample object for a cgroup that did not change; its
    rows are then reused instead of rebuilt, the very same list, so what is made of them can
    be reused too (the exporter's text, BENCHMARKS.md exporter.1000). The host's node -> CPUs
    map, if known, is fixed for the memo's lifetime.
    """

    def __init__(self, node_cpus: NodeCpus | None = None) -> None:
        self.node_cpus = node_cpus
        self._rows: dict[str, tuple[CgroupSample, str, Out]] = {}
        self._last: _LastRows | None = None

    def __len__(self) -> int:
        """The cgroups whose rows are kept: those of the last snapshot."""
        return len(self._rows)

    def rows(self, snap: Snapshot, tenants: Mapping[str, str]
             ) -> tuple[list[tuple[str, Out]], Counter[str]]:
        """(cgroup path, its rows) in path order, and the unreadable values by source file;
        `tenants` maps the unit names of slicectl's slices to their tenants. A cgroup that
        did not change (same sample, same tenant) gets the same rows object as last time, and
        a tree where none changed the same list."""
        samples = list(snap.cgroups.values())
        host = (snap.host_cpus, snap.host_mems)
        last = self._last
        if (last is not None and last.host == host and last.tenants == tenants
                and len(last.samples) == len(samples)):
            moved = [k for k, same in enumerate(map(operator.is_, samples, last.samples))
                     if not same]
            if not moved:  # (a sample is its cgroup's: same paths too)
                return last.out, last.errors.copy()
            if all(samples[k].path == last.samples[k].path for k in moved):
                out, errors = self._patch(last, samples, moved, snap)
                self._last = last._replace(samples=samples, out=out, errors=errors.copy())
                return out, errors
        out, errors, positions = self._rows_of(snap, tenants)
        self._last = _LastRows(samples, host, dict(tenants), out, errors.copy(), positions)
        return out, errors

    def _patch(self, last: _LastRows, samples: list[CgroupSample], moved: list[int],
               snap: Snapshot) -> tuple[list[tuple[str, Out]], Counter[str]]:
        """The last rows with those of the cgroups at `moved` (their places in the sampler's
        order) made again: the same cgroups and tenants as last time, a few samples new."""
        out = last.out.copy()
        errors = last.errors.copy()
        for k in moved:
            s, before = samples[k], last.samples[k]
            tenant = last.tenants.get(s.unit, "")
            rows = _slice_rows(s, (s.unit, tenant), snap.host_cpus, self.node_cpus,
                               snap.host_mems)
            self._rows[s.path] = (s, tenant, rows)
            out[last.positions[k]] = (s.path, rows)
            errors.subtract(FILE_OF[field] for field in before.unreadable)
            errors.update(FILE_OF[field] for field in s.unreadable)
        return out, +errors  # (no source left at 0)

    def _rows_of(self, snap: Snapshot, tenants: Mapping[str, str]
                 ) -> tuple[list[tuple[str, Out]], Counter[str], list[int]]:
        errors: Counter[str] = Counter()
        memo: dict[str, tuple[CgroupSample, str, Out]] = {}
        out: list[tuple[str, Out]] = []
        for path, s in sorted(snap.cgroups.items()):
            tenant = tenants.get(s.unit, "")
            hit = self._rows.get(path)
            if hit is not None and hit[0] is s and hit[1] == tenant:
                rows = hit[2]
            else:
                rows = _slice_rows(s, (s.unit, tenant), snap.host_cpus, self.node_cpus,
                                   snap.host_mems)
            memo[path] = (s, tenant, rows)
            out.append((path, rows))
            for field in s.unreadable:
                errors[FILE_OF[field]] += 1
        self._rows = memo
        place = {path: j for j, (path, _) in enumerate(out)}
        return out, errors, [place[path] for path in snap.cgroups]

    def series(self, snap: Snapshot, tenants: Mapping[str, str]) -> tuple[Series, Counter[str]]:
        """Rows of every per-slice metric (see `rows`), by metric."""
        rows, errors = self.rows(snap, tenants)
        out: Series = {m.name: [] for m in SLICE_METRICS}
        for _, cgroup in rows:
            for name, labels, value in cgroup:
                out[name].append((labels, value))
        return out, errors


def balance_series(state: BalanceState | None) -> Series:
    """Rows of the balancer's metrics from its state (none when no balancer has run)."""
    out: Series = {spec.name: [] for spec in BALANCE}
    for name, t in sorted((state.tenants if state is not None else {}).items()):
        out[BALANCE_MOVES.name] += [((name, GROW), float(t.grown)),
                                    ((name, SHRINK), float(t.shrunk))]
        out[BALANCE_CPUS.name].append(((name,), float(len(t.cpus))))
        out[BALANCE_DECLARED.name].append(((name,), float(len(t.declared))))
    return out
