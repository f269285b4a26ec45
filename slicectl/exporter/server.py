"""`slicectl exporter`: every slice's counters and limits for Prometheus (a front end).

The exporter is prometheus_client's: `SliceCollector` is a `Collector` that reads the cgroups
at scrape time with the sampler's kept file descriptors (Prometheus' guideline for exporters:
no background cache that makes rates jump) and yields `CounterMetricFamily` and
`GaugeMetricFamily` objects from the table in `families`; `registry_of` puts it in a
`CollectorRegistry` with the process metrics. The library negotiates the format
(`choose_encoder`: the text format, or OpenMetrics when the scraper asks), serves `name[]`
filters, other methods and paths (`make_wsgi_app`), runs the HTTP server
(`ThreadingWSGIServer`) and writes `--textfile` (`write_to_textfile`). Nothing here parses a
cgroup file: `cgroupfiles` does, once, for every reader.

One piece of the library is replaced for the scrapes Prometheus makes, a GET of every metric:
writing the per-slice samples, which `generate_latest` does one sample object at a time
(tens of thousands at 1,000 slices), far over the budget of `exporter.1000` (the
figures with and without, and the command: BENCHMARKS.md, "exporter.1000: the library's
writer"). `SliceText` writes the same lines, byte for byte (tests/test_exporter.py compares
them with the library's in both formats), once per cgroup, and keeps them while the cgroup
does not change; the library still writes every header, the exporter's own families and the
process metrics. The response is a list of pieces, one per family, never joined into one
buffer: gzipped (as `make_wsgi_app` gzips, when the scraper asks) a piece at a time
(`gzipped`); over plain HTTP the server sends them with one scatter-gather `sendmsg`
(`_Gather`). So each scrape in flight holds references to the kept text, or its own
compressed copy, never a copy of the whole text.

A value that cannot be read drops its series and counts in `slicectl_exporter_errors_total`;
a scrape never fails because of the host (the health metrics are always there).

Why this module runs past 400 lines: the collector (what the library's encoders and `name[]`
filters read), `SliceText` (the same samples written by hand) and the WSGI app that picks
between them must agree on one set of families and one order; they are kept together so a
change to one is seen next to the others. What stands alone is elsewhere: the metric table
(`families`), the process metrics (`process_metrics`), who may read them (`webconfig`:
the file, TLS and users; `access`: basic auth and the handshake at each request), the
command (`cli/exporter`).
"""

from __future__ import annotations

import errno
import functools
import io
import operator
import os
import re
import socket
import sys
import threading
import time
import zlib
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import accumulate
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import (
    ThreadingWSGIServer,
    choose_encoder,
    generate_latest,
    gzip_accepted,
    make_wsgi_app,
    write_to_textfile,
)
from prometheus_client.openmetrics.exposition import ALLOWUTF8, UNDERSCORES
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.utils import floatToGoString

from slicectl.core import defaults
from slicectl.core.balance.balance_state import BalanceState
from slicectl.core.errors import ExporterError, SlicectlError
from slicectl.core.monitor.metrics import NodeCpus
from slicectl.exporter.access import BasicAuth, TlsServer, require_auth
from slicectl.exporter.drift import DriftWatch
from slicectl.exporter.families import (
    BALANCE,
    CGROUPS,
    DRIFT,
    ERRORS,
    SCRAPE_DURATION,
    SLICE_METRICS,
    MetricSpec,
    MetricType,
    Out,
    Row,
    SeriesMemo,
    balance_series,
)
from slicectl.exporter.process_metrics import ProcessMetrics
from slicectl.exporter.webconfig import WebConfig
from slicectl.host.cgroup.sampler import Sampler

# The `source` of an error reading the balancer's state file.
BALANCE_SOURCE = "balance-state"
DEFAULT_PORT = int(defaults.EXPORTER_LISTEN.rpartition(":")[2])
# Connections served at once (Prometheus holds one per scrape; a pair of them, promtool and a
# curl or two fit many times over); one past them is closed at once. Each is a thread and,
# while a scrape is written, a reference to its pieces: this bounds the exporter's memory
# whatever a client of the port does (README, "Exporter").
MAX_CONNECTIONS = 16
# Seconds a client has to send its request's head (request line and headers), all of it,
# before it is dropped: before basic auth is asked, so anyone who can reach the port could
# otherwise hold a connection (a thread) for ever by sending nothing, or a byte at a time.
REQUEST_DEADLINE = 5.0
# Seconds any later read or write of a connection may wait (a scraper that stops reading).
IO_TIMEOUT = 10.0
# Seconds a reply (over plain HTTP) may take to go out in full, however slowly the client
# reads: a scrape of 10,000 slices is about 30 MB.
WRITE_DEADLINE = 60.0
# The longest request head read (wsgiref's own line limit is 64 KiB).
MAX_REQUEST_HEAD = 65536
# The library's value format and OpenMetrics encoder (not annotated there).
go_float: Callable[[float], str] = floatToGoString
openmetrics_of: Callable[[Any], bytes] = generate_openmetrics


def _family(spec: MetricSpec, rows: Iterable[Row]) -> Metric:
    family: CounterMetricFamily | GaugeMetricFamily
    if spec.type is MetricType.COUNTER:
        family = CounterMetricFamily(spec.name, spec.help, labels=spec.labels)
    else:
        family = GaugeMetricFamily(spec.name, spec.help, labels=spec.labels)
    for labels, value in rows:
        family.add_metric(labels, value)
    return family


class _Families:
    """Families already made, as something the library's encoders can collect."""

    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> list[Metric]:
        return self.families


def encode(families: list[Metric], om: bool) -> bytes:
    """The text format (or OpenMetrics, ending in `# EOF`) of `families`, by the library."""
    return openmetrics_of(_Families(families)) if om else generate_latest(_Families(families))


def _escape(value: str) -> str:
    """A label value as both formats quote it (backslash, newline, double quote)."""
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r'\"')


class SliceText:
    """The per-slice families as exposition text: what prometheus_client's `generate_latest`
    (and OpenMetrics' `generate_latest`) write for `SliceCollector.collect`'s per-slice
    families, written here because the library's per-sample writing is far over the
    budget of `exporter.1000` (BENCHMARKS.md, "exporter.1000: the library's writer").

    Kept between scrapes, once: each metric's samples of every cgroup (its column), and where
    each cgroup's lines lie in it. A cgroup whose rows are the same object (an unchanged
    cgroup: `SeriesMemo.rows`) is not written again; a column none of whose lines changed is
    the very bytes object of the last scrape, and one whose lines did is spliced around
    them. Nothing else holds the text: at 10,000 slices (30 MB of it) a second copy by
    cgroup would be as large again.

    A sample line is the same in the text format and in OpenMetrics (`name{labels} value`,
    labels sorted by name, the value as Go prints floats); only the families' headers differ,
    and those the library writes, once. Only the cgroups of the last scrape are kept.
    """

    def __init__(self) -> None:
        # metric -> (its position, (label name, its place in the row), sorted by name)
        self._index = {spec.name: (i, tuple(sorted((k, j) for j, k in enumerate(spec.labels))))
                       for i, spec in enumerate(SLICE_METRICS)}
        self._headers = {om: tuple(encode([_family(spec, ())], om).removesuffix(b"# EOF\n")
                                   for spec in SLICE_METRICS) for om in (False, True)}
        self._paths: list[str] = []  # the cgroups of the last scrape, in its order
        self._rows: list[Out] = []  # their rows, as written
        self._columns = [b""] * len(SLICE_METRICS)
        # by metric position, for each cgroup in order: its lines' length, and where they end
        self._lengths = [array("Q") for _ in SLICE_METRICS]
        self._ends = [array("Q") for _ in SLICE_METRICS]
        self._last: list[tuple[str, Out]] | None = None  # what the columns were written from

    def __len__(self) -> int:
        """The cgroups whose lines are kept: those of the last scrape."""
        return len(self._paths)

    def render(self, cgroups: list[tuple[str, Out]], om: bool) -> list[bytes]:
        """Every per-slice family, header then samples, in SLICE_METRICS order, as pieces to
        send one after the other: a column whose lines did not change is the very bytes
        object of the last scrape, and none is joined with the others into one buffer."""
        if cgroups is not self._last:
            moved = self._moved(cgroups)
            if moved is None:
                self._rewrite(cgroups)
            else:
                self._patch(cgroups, moved)
            self._last = cgroups
        headers = self._headers[om]
        return [piece for i, column in enumerate(self._columns) for piece in (headers[i], column)]

    def _moved(self, cgroups: list[tuple[str, Out]]) -> list[int] | None:
        """The places whose (path, rows) pair is not the last scrape's, or None when the
        cgroups are not the same ones. `SeriesMemo.rows` hands back the very pair of a cgroup
        that did not change, in the same place: only the pairs that are not the same count."""
        last = self._last
        if last is None or len(cgroups) != len(last):
            return None
        moved = [k for k, same in enumerate(map(operator.is_, cgroups, last)) if not same]
        if any(cgroups[k][0] != last[k][0] for k in moved):
            return None
        return moved

    def _kept(self, k: int) -> tuple[memoryview, ...]:
        """The lines of the last scrape's k-th cgroup, by metric position (views, no copy)."""
        return tuple(memoryview(column)[ends[k] - lengths[k]:ends[k]] for column, lengths, ends
                     in zip(self._columns, self._lengths, self._ends, strict=True))

    def _rewrite(self, cgroups: list[tuple[str, Out]]) -> None:
        """Every column written again, for other cgroups than last time's; the lines of a
        cgroup that was there and did not change are taken from the old columns as they are."""
        where = {path: k for k, path in enumerate(self._paths)}
        by_metric: list[list[bytes | memoryview]] = [[] for _ in SLICE_METRICS]
        for path, rows in cgroups:
            k = where.get(path)
            if k is None:
                text: tuple[bytes | memoryview, ...] = self._write(rows, None)
            elif self._rows[k] is rows:
                text = self._kept(k)
            else:
                text = self._write(rows, (self._rows[k], self._kept(k)))
            for pieces, piece in zip(by_metric, text, strict=True):
                pieces.append(piece)
        self._paths = [path for path, _ in cgroups]
        self._rows = [rows for _, rows in cgroups]
        for i, pieces in enumerate(by_metric):  # one column at a time, the pieces let go
            self._lengths[i] = array("Q", map(len, pieces))
            self._ends[i] = array("Q", accumulate(self._lengths[i]))
            self._columns[i] = b"".join(pieces)
            by_metric[i] = []

    def _patch(self, cgroups: list[tuple[str, Out]], moved: list[int]) -> None:
        """The same cgroups as last time, those at `moved` with new rows: their lines written
        again, and each column where one changed spliced around them."""
        changed: dict[int, list[tuple[int, bytes]]] = {}
        for k in moved:
            rows, before = cgroups[k][1], self._rows[k]
            if rows is before:
                continue
            old = self._kept(k)
            for i, (line, new) in enumerate(zip(old, self._write(rows, (before, old)),
                                                strict=True)):
                if line != new:
                    changed.setdefault(i, []).append((k, new))
            self._rows[k] = rows
        for i, lines in changed.items():
            self._splice(i, lines)

    def _splice(self, i: int, lines: list[tuple[int, bytes]]) -> None:
        """Column i with the lines of the cgroups at k (ascending) replaced by `lines`."""
        view, lengths, ends = memoryview(self._columns[i]), self._lengths[i], self._ends[i]
        pieces: list[bytes | memoryview] = []
        at = 0
        for k, text in lines:
            pieces += (view[at:ends[k] - lengths[k]], text)
            at = ends[k]
            lengths[k] = len(text)
        pieces.append(view[at:])
        self._columns[i] = b"".join(pieces)
        self._ends[i] = array("Q", accumulate(lengths))

    def _write(self, rows: Out, before: tuple[Out, tuple[memoryview, ...]] | None
               ) -> tuple[bytes, ...]:
        """One cgroup's sample lines, by metric position. A row equal to the one at the same
        place `before` (a limit, a counter that did not move) keeps its line, and a row whose
        value alone changed keeps its line's name and labels."""
        old_rows = before[0] if before is not None else []
        old_lines = self._lines(*before) if before is not None and len(old_rows) == len(rows) \
            else None
        by_metric: list[list[bytes]] = [[] for _ in SLICE_METRICS]
        for k, row in enumerate(rows):
            name, labels, value = row
            i, order = self._index[name]
            if old_lines is not None and old_rows[k] == row:
                line = old_lines[k]
            else:
                if old_lines is not None and old_rows[k][:2] == (name, labels):
                    old = old_lines[k]
                    prefix = old[:old.rindex(b" ") + 1]  # a value never holds a space
                else:
                    prefix = f"{name}{{{self._labels(order, labels)}}} ".encode()
                line = prefix + go_float(value).encode() + b"\n"
            by_metric[i].append(line)
        return tuple(b"".join(x) for x in by_metric)

    def _lines(self, rows: Out, text: tuple[memoryview, ...]) -> list[bytes]:
        """A cgroup's lines as written, one per row in row order (its columns' text split:
        each metric's lines are in the order of its rows)."""
        split = [iter(_LINE.findall(t)) for t in text]
        return [next(split[self._index[name][0]]) for name, _, _ in rows]

    @staticmethod
    def _labels(order: tuple[tuple[str, int], ...], labels: tuple[str, ...]) -> str:
        return ",".join(f'{k}="{_escape(labels[j])}"' for k, j in order)


# One sample line: a label value's newline is written escaped (`\n`), never as itself.
_LINE = re.compile(rb"[^\n]*\n")


def manifest_tenants(unit_dir: Path) -> dict[str, str]:
    """Unit name -> tenant of the slices slicectl generated in `unit_dir` (its manifest):
    PARENT-NAME.slice where PARENT.slice is slicectl's too. Empty when there is none."""
    from slicectl.core.config.tenants import slice_tenant
    from slicectl.host.files.unitdir import UnitDir

    try:
        files = UnitDir(unit_dir).manifest().files
    except (SlicectlError, OSError):
        return {}
    slices = {rel for rel in files if "/" not in rel and rel.endswith(".slice")}
    out = {}
    for unit in slices:
        parent = unit.removesuffix(".slice").rpartition("-")[0]
        if f"{parent}.slice" in slices and (name := slice_tenant(unit, parent)) is not None:
            out[unit] = name
    return out


class SliceCollector(Collector):
    """Reads every slice when Prometheus scrapes (one scrape at a time: the sampler is not
    thread-safe, and prometheus_client serves each request in a thread)."""

    def __init__(self, sampler: Sampler, *, node_cpus: NodeCpus | None = None,
                 tenants: Callable[[], Mapping[str, str]] = dict,
                 drift: DriftWatch | None = None,
                 balance_state: Path = Path(defaults.BALANCE_STATE)) -> None:
        self.sampler = sampler
        self.balance_state = balance_state
        self.memo = SeriesMemo(node_cpus)
        self.tenants = tenants
        self.drift = drift
        self.errors: Counter[str] = Counter()
        self.text = SliceText()
        self._lock = threading.Lock()

    def describe(self) -> Iterator[Metric]:
        """The families, without samples: what the registry's `name[]` filter selects by."""
        own = (DRIFT,) if self.drift is not None else ()
        for spec in (*SLICE_METRICS, *own, *BALANCE, CGROUPS, ERRORS, SCRAPE_DURATION):
            yield _family(spec, ())

    def collect(self) -> Iterator[Metric]:
        """Every family, for the library's encoders (name[] filters, tests)."""
        with self._lock:
            start = time.perf_counter()
            cgroups = self._read()
            series: dict[str, list[Row]] = {spec.name: [] for spec in SLICE_METRICS}
            for _, rows in cgroups:
                for name, labels, value in rows:
                    series[name].append((labels, value))
            for spec in SLICE_METRICS:
                yield _family(spec, series[spec.name])
            yield from self._own(start, len(cgroups))

    def exposition(self, om: bool) -> tuple[list[bytes], list[Metric]]:
        """The per-slice families as pieces of text (OpenMetrics if `om`; `SliceText.render`),
        and the exporter's own: what `collect` yields, written as the library would write it."""
        with self._lock:
            start = time.perf_counter()
            cgroups = self._read()
            pieces = self.text.render(cgroups, om)
            return pieces, list(self._own(start, len(cgroups)))

    def _read(self) -> list[tuple[str, Out]]:
        """Every cgroup's rows, now; none when the cgroup tree cannot be read at all."""
        try:
            snap = self.sampler.sample()
            cgroups, errors = self.memo.rows(snap, self._tenants())
        except SlicectlError:
            self.errors["cgroupfs"] += 1
            return []
        self.errors.update(errors)
        return cgroups

    def _own(self, start: float, cgroups: int) -> Iterator[Metric]:
        """Drift and the exporter's health; the scrape's duration last, so it counts the
        conversion of the slices' families."""
        if self.drift is not None:
            yield _family(DRIFT, self._drift())
        balance = balance_series(self._balance())
        for spec in BALANCE:
            yield _family(spec, balance[spec.name])
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

    def _balance(self) -> BalanceState | None:
        """The balancer's state; None (its series left out, an error counted) when the file
        cannot be read or is not a state."""
        from slicectl.host.files.balance_state_file import read_state

        try:
            return read_state(self.balance_state)
        except SlicectlError:
            self.errors[BALANCE_SOURCE] += 1
            return None

    def _drift(self) -> list[Row]:
        assert self.drift is not None
        try:
            return [(key, value) for key, value in self.drift.rows()]
        except SlicectlError as e:
            if not self.errors["systemd"]:  # the first one in the journal, the rest counted
                print(f"slicectl exporter: drift not read: {e.message}", file=sys.stderr,
                      flush=True)
            self.errors["systemd"] += 1
            return []


def registry_of(collector: SliceCollector) -> CollectorRegistry:
    """A registry with the slices and the exporter's own process metrics (CPU, memory)."""
    registry = CollectorRegistry()
    registry.register(collector)
    registry.register(ProcessMetrics())
    return registry


class Exposition:
    """What /metrics gives Prometheus: the families of `registry_of(collector)`, in its
    order, with the slices' samples written by `SliceText`. `registry` is that registry, for
    the library (`name[]` filters, other methods, `--textfile`)."""

    def __init__(self, collector: SliceCollector) -> None:
        self.collector = collector
        self.registry = registry_of(collector)
        self.process = ProcessMetrics()

    def parts(self, om: bool = False) -> list[bytes]:
        """The exposition in pieces: the slices' families (`SliceText.render`: a family whose
        samples did not change is the same bytes object as last time), then the exporter's
        own and the process'. Served as they are, the megabytes of the slices are neither
        joined into one buffer nor copied again for every scrape."""
        slices, own = self.collector.exposition(om)
        return [*slices, encode([*own, *self.process.collect()], om)]

    def render(self, om: bool = False) -> bytes:
        """The whole exposition in one piece."""
        return b"".join(self.parts(om))


def _fast_format(encoder: Callable[..., bytes]) -> bool | None:
    """Whether `choose_encoder`'s pick is OpenMetrics 1.x (True) or the text format (False)
    with an escaping that leaves slicectl's names as they are; None for anything else."""
    func, keywords = encoder, {}
    if isinstance(encoder, functools.partial):
        func, keywords = encoder.func, encoder.keywords
    if keywords.get("escaping", UNDERSCORES) not in (UNDERSCORES, ALLOWUTF8):
        return None
    if func is generate_latest:
        return False
    if func is generate_openmetrics and str(keywords.get("version", "1.0.0")).startswith("1."):
        return True
    return None


def wsgi_app(exposition: Exposition) -> Callable[..., Iterable[bytes]]:
    """The library's /metrics app (`make_wsgi_app`), but a GET of every metric in the text
    format or OpenMetrics 1.x (what Prometheus asks for) is written by `Exposition.parts`:
    the library's app can only write the body with `generate_latest` (see `SliceText`). Its
    format is the library's pick (`choose_encoder`), and it is gzipped as the library's app
    gzips (`gzip_accepted`, level 9) when the scraper asks, a piece at a time (`gzipped`)."""
    library = make_wsgi_app(exposition.registry)

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        encoder, content_type = choose_encoder(environ.get("HTTP_ACCEPT", ""))
        om = _fast_format(encoder)
        if (environ["REQUEST_METHOD"] != "GET" or environ.get("PATH_INFO") == "/favicon.ico"
                or "name[]" in parse_qs(environ.get("QUERY_STRING", "")) or om is None):
            return library(environ, start_response)  # type: ignore[no-any-return]
        output = exposition.parts(om)
        headers = [("Content-Type", content_type)]
        if gzip_accepted(environ.get("HTTP_ACCEPT_ENCODING", "")):
            output = gzipped(output)
            headers.append(("Content-Encoding", "gzip"))
        # (wsgiref counts the length of a one-piece body only)
        headers.append(("Content-Length", str(sum(map(len, output)))))
        start_response("200 OK", headers)
        return output

    return app


def gzipped(pieces: list[bytes]) -> list[bytes]:
    """`pieces` as one gzip stream (at gzip.compress's level, as the library's app gzips),
    compressed a piece at a time: the exposition is never joined into one buffer, so each
    scrape that asks for gzip (every Prometheus scrape) holds only its compressed copy."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # 16+: a gzip header
    out = [deflate.compress(piece) for piece in pieces]
    out.append(deflate.flush())
    return [piece for piece in out if piece]


class _Gather:
    """A request's `wfile` that keeps what wsgiref writes (status line, headers, the body's
    pieces) and sends it all with one `sendmsg` (scatter-gather) when the request ends: the
    megabytes of the exposition are neither joined nor copied in the process, and go out in as
    few system calls as the socket takes them. (A `sendall` per piece, as wsgiref writes, and
    joining the pieces first, whose fresh megabytes fault in page by page, both cost the
    exporter markedly more CPU per scrape: BENCHMARKS.md, "exporter.1000".) wsgiref flushes
    after every write: `flush` waits for `close`, which `StreamRequestHandler.finish` calls."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._pieces: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> int:
        self._pieces.append(data if type(data) is bytes else bytes(data))
        return len(data)

    def flush(self) -> None:
        """Nothing yet: the response is sent whole by `close`."""

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        pieces, self._pieces = self._pieces, []
        try:
            send_pieces(self._sock, pieces, time.monotonic() + WRITE_DEADLINE)
        except OSError:
            pass  # the scraper went away: nobody to tell (as `finish` does with a flush)


_IOV_MAX = os.sysconf("SC_IOV_MAX") if "SC_IOV_MAX" in os.sysconf_names else 1024


def send_pieces(sock: socket.socket, pieces: list[bytes], deadline: float | None = None) -> None:
    """Send `pieces` one after the other, in as few `sendmsg` calls as the kernel takes them
    (IOV_MAX pieces at most each time); by `deadline` (time.monotonic()) if given, else
    raises TimeoutError: a client that reads slowly holds its connection that long at most."""
    views = [memoryview(p) for p in pieces if p]
    first = 0
    while first < len(views):
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the client did not read the reply in time")
            sock.settimeout(left)
        sent = sock.sendmsg(views[first:first + _IOV_MAX])
        while sent and sent >= len(views[first]):
            sent -= len(views[first])
            first += 1
        if sent:
            views[first] = views[first][sent:]


class _Quiet(WSGIRequestHandler):
    """wsgiref's handler, with the request's head read within REQUEST_DEADLINE (before
    basic auth is asked) and every later read or write within IO_TIMEOUT."""

    timeout = IO_TIMEOUT  # (StreamRequestHandler sets it on the connection)

    def setup(self) -> None:
        super().setup()
        if type(self.connection) is socket.socket:  # TLS (an SSLSocket) has no sendmsg
            self.wfile = _Gather(self.connection)  # type: ignore[assignment]

    def handle(self) -> None:
        """One request, as wsgiref handles it, from a head read in time; a client that
        sends it too slowly (a byte at a time, or nothing) or too long is dropped."""
        head = read_head(self.connection, time.monotonic() + REQUEST_DEADLINE)
        if head is None:
            self.close_connection = True
            return
        self.connection.settimeout(IO_TIMEOUT)
        self.rfile.close()  # (nothing read through it: the head is read from the socket)
        self.rfile = io.BytesIO(head)
        super().handle()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        """No line per request."""


def read_head(sock: socket.socket, deadline: float) -> bytes | None:
    """The request line and headers (and whatever came with them) by `deadline`
    (time.monotonic()); None when the client closes, is too slow or sends more than
    MAX_REQUEST_HEAD bytes without ending its headers. The deadline holds for the whole
    head: a per-read timeout alone lets a client send a byte every few seconds for ever."""
    data = bytearray()
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or len(data) > MAX_REQUEST_HEAD:
            return None
        sock.settimeout(left)
        try:
            chunk = sock.recv(4096)
        except OSError:  # timed out, reset
            return None
        if not chunk:
            return None
        seen = max(0, len(data) - 3)
        data += chunk
        if b"\r\n\r\n" in data[seen:] or b"\n\n" in data[seen:]:
            return bytes(data)


class BoundedServer(ThreadingWSGIServer):
    """prometheus_client's threading server with at most `max_connections` connections
    (each a thread) served at once: one more is closed as soon as it is accepted, so
    clients that connect and wait cannot pile up threads and memory without bound."""

    max_connections = MAX_CONNECTIONS
    # The kernel's queue of connections not yet accepted (socketserver's default, 5, drops a
    # scraper's SYN while a flood of connections is accepted and closed).
    request_queue_size = 128

    def server_activate(self) -> None:
        super().server_activate()
        self._slots = threading.BoundedSemaphore(self.max_connections)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def parse_listen(text: str) -> tuple[str, int]:
    """ADDR:PORT, :PORT or [IPv6]:PORT -> (address, port); raises ExporterError."""
    host, colon, port = text.rpartition(":")
    hint = f"give ADDR:PORT, e.g. 127.0.0.1:{DEFAULT_PORT}, :{DEFAULT_PORT} or [::1]:{DEFAULT_PORT}"
    if not colon or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ExporterError(f"--listen {text!r}: not ADDR:PORT with a port 0-65535", hint)
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host or "0.0.0.0", int(port)


def serve(exposition: Exposition, listen: str,
          web: WebConfig | None = None) -> tuple[Callable[[], None], int]:
    """Serve /metrics on `listen` in a thread, with the TLS and users of `web`
    (`--web-config`); returns its stop function and its port."""
    host, port = parse_listen(listen)
    app = wsgi_app(exposition)
    if web is not None and web.users:
        app = require_auth(app, BasicAuth(web.users))
    try:
        family, _, _, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        server_class = type("Server", (TlsServer, BoundedServer), {
            "address_family": family,
            "tls": web.tls.context() if web is not None and web.tls is not None else None})
        server: ThreadingWSGIServer = make_server(
            str(address[0]), port, app, server_class, handler_class=_Quiet)
    except socket.gaierror as e:
        raise ExporterError(f"--listen {listen!r}: no such address ({e.strerror})",
                            "give an IP address of this host, or :PORT for all") from e
    except OSError as e:
        hint = ("another program (another exporter?) listens there: pick a free port with "
                "--listen ADDR:PORT" if e.errno == errno.EADDRINUSE else
                "give an address of this host (ip -brief address), or :PORT for all")
        raise ExporterError(f"cannot listen on {listen}: {e.strerror}", hint) from e

    thread = threading.Thread(target=server.serve_forever, name="slicectl-http", daemon=True)
    thread.start()

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(5)

    return stop, server.server_address[1]


def write_textfile(exposition: Exposition, path: Path) -> None:
    """The text format into `path` at once (node_exporter's textfile collector reads it), by
    the library's `write_to_textfile`; readable by node_exporter's user whatever the umask."""
    try:
        write_to_textfile(str(path), exposition.registry)
        os.chmod(path, 0o644)
    except OSError as e:
        raise ExporterError(f"cannot write {path}: {e.strerror}",
                            "the textfile directory must exist and be writable "
                            "(node_exporter --collector.textfile.directory)") from e
