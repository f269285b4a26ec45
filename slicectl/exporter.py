"""`slicectl exporter`: every slice's counters and limits for Prometheus (a front end).

A prometheus_client collector reads the cgroups at scrape time with the sampler's kept file
descriptors (Prometheus' guideline for exporters: no background cache that makes rates jump)
and hands the rows of `exportmetrics` to the library, which writes the text format, or
OpenMetrics when the scraper asks for it (its HTTP handler reads the Accept header). Nothing
here parses a cgroup file: `cgroupfiles` does, once, for every reader.

A value that cannot be read drops its series and counts in `slicectl_exporter_errors_total`;
a scrape never fails because of the host (the health metrics are always there).
"""

from __future__ import annotations

import errno
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest, start_http_server
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector, CollectorRegistry

from slicectl import defaults
from slicectl.atomic import write_atomically
from slicectl.drift import DriftWatch
from slicectl.errors import SlicectlError
from slicectl.exportmetrics import (
    CGROUPS,
    DRIFT,
    ERRORS,
    SCRAPE_DURATION,
    SLICE_METRICS,
    MetricSpec,
    MetricType,
    Row,
    SeriesMemo,
)
from slicectl.metrics import NodeCpus
from slicectl.sampler import Sampler

DEFAULT_PORT = int(defaults.EXPORTER_LISTEN.rpartition(":")[2])


class ExporterError(SlicectlError):
    """The exporter cannot start: address, port, output file."""


def _family(spec: MetricSpec, rows: Iterable[Row]) -> Metric:
    family: CounterMetricFamily | GaugeMetricFamily
    if spec.type is MetricType.COUNTER:
        family = CounterMetricFamily(spec.name, spec.help, labels=spec.labels)
    else:
        family = GaugeMetricFamily(spec.name, spec.help, labels=spec.labels)
    for labels, value in rows:
        family.add_metric(labels, value)
    return family


def manifest_tenants(unit_dir: Path) -> dict[str, str]:
    """Unit name -> tenant of the slices slicectl generated in `unit_dir` (its manifest):
    PARENT-NAME.slice where PARENT.slice is slicectl's too. Empty when there is none."""
    from slicectl.unitdir import UnitDir

    try:
        files = UnitDir(unit_dir).manifest().files
    except (SlicectlError, OSError):
        return {}
    slices = {rel for rel in files if "/" not in rel and rel.endswith(".slice")}
    out = {}
    for unit in slices:
        parent, dash, name = unit.removesuffix(".slice").rpartition("-")
        if dash and f"{parent}.slice" in slices:
            out[unit] = name
    return out


class SliceCollector(Collector):
    """Reads every slice when Prometheus scrapes (one scrape at a time: the sampler is not
    thread-safe, and prometheus_client serves each request in a thread)."""

    def __init__(self, sampler: Sampler, *, node_cpus: NodeCpus | None = None,
                 tenants: Callable[[], Mapping[str, str]] = dict,
                 drift: DriftWatch | None = None) -> None:
        self.sampler = sampler
        self.memo = SeriesMemo(node_cpus)
        self.tenants = tenants
        self.drift = drift
        self.errors: Counter[str] = Counter()
        self._lock = threading.Lock()

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            yield from self._collect()

    def _collect(self) -> Iterator[Metric]:
        start = time.perf_counter()
        series: dict[str, list[Row]] = {}
        cgroups = 0
        try:
            snap = self.sampler.sample()
            series, errors = self.memo.series(snap, self._tenants())
            cgroups = len(snap.cgroups)
            self.errors.update(errors)
        except SlicectlError:
            self.errors["cgroupfs"] += 1
        for spec in SLICE_METRICS:
            yield _family(spec, series.get(spec.name, ()))
        if self.drift is not None:
            yield _family(DRIFT, self._drift())
        yield _family(CGROUPS, [((), float(cgroups))])
        yield _family(ERRORS, [((source,), float(n)) for source, n in sorted(self.errors.items())])
        yield _family(SCRAPE_DURATION, [((), time.perf_counter() - start)])

    def _tenants(self) -> Mapping[str, str]:
        if self.drift is not None:
            try:
                self.drift.refresh()
            except SlicectlError:
                self.errors["tenants"] += 1  # the last good plan stays in force
            return self.drift.tenants()
        return self.tenants()

    def _drift(self) -> list[Row]:
        assert self.drift is not None
        try:
            return [(key, value) for key, value in self.drift.rows()]
        except SlicectlError:
            self.errors["systemd"] += 1
            return []


def registry_of(collector: SliceCollector) -> CollectorRegistry:
    """A registry with the slices and the exporter's own process metrics (CPU, memory)."""
    registry = CollectorRegistry()
    registry.register(collector)
    ProcessCollector(registry=registry)
    return registry


def parse_listen(text: str) -> tuple[str, int]:
    """ADDR:PORT, :PORT or [IPv6]:PORT -> (address, port); raises ExporterError."""
    host, colon, port = text.rpartition(":")
    hint = f"give ADDR:PORT, e.g. 127.0.0.1:{DEFAULT_PORT}, :{DEFAULT_PORT} or [::1]:{DEFAULT_PORT}"
    if not colon or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ExporterError(f"--listen {text!r}: not ADDR:PORT with a port 0-65535", hint)
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host or "0.0.0.0", int(port)


def serve(registry: CollectorRegistry, listen: str) -> tuple[Callable[[], None], int]:
    """Serve /metrics on `listen` in a thread; returns its stop function and its port."""
    host, port = parse_listen(listen)
    try:
        server, thread = start_http_server(port, host, registry)
    except socket.gaierror as e:
        raise ExporterError(f"--listen {listen!r}: no such address ({e.strerror})",
                            "give an IP address of this host, or :PORT for all") from e
    except OSError as e:
        hint = ("another program (another exporter?) listens there: pick a free port with "
                "--listen ADDR:PORT" if e.errno == errno.EADDRINUSE else
                "give an address of this host (ip -brief address), or :PORT for all")
        raise ExporterError(f"cannot listen on {listen}: {e.strerror}", hint) from e

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(5)

    return stop, server.server_address[1]


def write_textfile(registry: CollectorRegistry, path: Path) -> None:
    """The text format into `path` at once (node_exporter's textfile collector reads it)."""
    data = generate_latest(registry)
    try:
        write_atomically(path, data, 0o644)
    except OSError as e:
        raise ExporterError(f"cannot write {path}: {e.strerror}",
                            "the textfile directory must exist and be writable "
                            "(node_exporter --collector.textfile.directory)") from e
