"""The metrics `slicectl exporter` serves: one table, and the series of one snapshot (pure).

`METRICS` declares every metric once: its name, type, help, labels and the cgroup file it
comes from. Those of a slice (`SLICE_METRICS`) are the families of slicectl.core.monitor.fields'
table, where each metric of a slice has all its outputs, and are read as its rows say; the rest
(drift, the balancer, the exporter's own) are here. The exporter (`slicectl.exporter.server`)
turns what `SeriesMemo.series` returns into prometheus_client families, and docs/metrics.md
lists the same table (a test checks both).
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
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from slicectl.core.balance.balance_state import GROW, SHRINK, BalanceState
from slicectl.core.monitor.cgroupfiles import FILES
from slicectl.core.monitor.field_values import SampledValue, ScrapeHost
from slicectl.core.monitor.fields import FIELDS
from slicectl.core.monitor.fields import MetricSpec as MetricSpec
from slicectl.core.monitor.fields import MetricType as MetricType
from slicectl.core.monitor.metrics import NodeCpus
from slicectl.core.monitor.samples import CgroupSample, Snapshot

C, G = MetricType.COUNTER, MetricType.GAUGE

# Every family of a slice's metrics, from slicectl.core.monitor.fields' table, in its order.
_FAMILIES = tuple(family for field in FIELDS for family in field.exported)
SLICE_METRICS: tuple[MetricSpec, ...] = tuple(family.spec for family in _FAMILIES)
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

METRICS: tuple[MetricSpec, ...] = (*SLICE_METRICS, DRIFT, *BALANCE, SCRAPE_DURATION, ERRORS,
                                   CGROUPS)



def metrics_reference_table(specs: Iterable[MetricSpec]) -> str:
    """A Markdown table of `specs`, as docs/metrics.md lists them (docs/update-reference)."""
    lines = ["| metric | type | labels | source | meaning |", "|---|---|---|---|---|"]
    for m in specs:
        labels = ", ".join(f"`{x}`" for x in m.labels) or "—"
        lines.append(f"| `{m.name}` | {m.type} | {labels} | {m.source} | {m.help} |")
    return "\n".join(lines)


# Which file each sample field comes from: the `source` label of an error.
FILE_OF = {field: spec.name for spec in FILES for field in spec.fields}

Row = tuple[tuple[str, ...], float]  # label values, value
Series = dict[str, list[Row]]  # metric name -> rows


Out = list[tuple[str, tuple[str, ...], float]]  # (metric, label values, value)
# The values read as they are (most families) in the loop, the rest through their rows'
# reads: a call for each family of each cgroup is a large part of a conversion's cost
# (BENCHMARKS.md, exporter.1000).
_SAMPLED = tuple((f.name, f.read.attr, f.read.per) for f in _FAMILIES
                 if isinstance(f.read, SampledValue))
_READS = tuple((f.name, f.read) for f in _FAMILIES if not isinstance(f.read, SampledValue))


def _slice_rows(s: CgroupSample, labels: tuple[str, str], host: ScrapeHost) -> Out:
    """(metric, label values, value) of one cgroup."""
    out: Out = []
    append = out.append
    for name, attr, per in _SAMPLED:
        v = getattr(s, attr)
        if v is not None:
            append((name, labels, v / per))
    for name, read in _READS:
        for extra, value in read(s, host):
            append((name, labels + extra if extra else labels, value))
    return out


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
        host = self._host(snap)  # one for the scrape, not one per cgroup
        for k in moved:
            s, before = samples[k], last.samples[k]
            tenant = last.tenants.get(s.unit, "")
            rows = _slice_rows(s, (s.unit, tenant), host)
            self._rows[s.path] = (s, tenant, rows)
            out[last.positions[k]] = (s.path, rows)
            errors.subtract(FILE_OF[field] for field in before.unreadable)
            errors.update(FILE_OF[field] for field in s.unreadable)
        return out, +errors  # (no source left at 0)

    def _rows_of(self, snap: Snapshot, tenants: Mapping[str, str]
                 ) -> tuple[list[tuple[str, Out]], Counter[str], list[int]]:
        errors: Counter[str] = Counter()
        host = self._host(snap)
        memo: dict[str, tuple[CgroupSample, str, Out]] = {}
        out: list[tuple[str, Out]] = []
        for path, s in sorted(snap.cgroups.items()):
            tenant = tenants.get(s.unit, "")
            hit = self._rows.get(path)
            if hit is not None and hit[0] is s and hit[1] == tenant:
                rows = hit[2]
            else:
                rows = _slice_rows(s, (s.unit, tenant), host)
            memo[path] = (s, tenant, rows)
            out.append((path, rows))
            for field in s.unreadable:
                errors[FILE_OF[field]] += 1
        self._rows = memo
        place = {path: j for j, (path, _) in enumerate(out)}
        return out, errors, [place[path] for path in snap.cgroups]

    def _host(self, snap: Snapshot) -> ScrapeHost:
        return ScrapeHost(snap.host_cpus, self.node_cpus, snap.host_mems)

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
