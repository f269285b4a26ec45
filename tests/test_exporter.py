"""`slicectl exporter`: what Prometheus reads, checked by Prometheus' own tools.

Fake cgroup trees (slicectl/demo/cgtree.py) on the host; the real `promtool` validates the
output and a real Prometheus server scrapes the exporter; drift is compared against the fake
systemd on a private dbus-daemon. The exporter over real cgroups and systemd is
tests/e2e/test_exporter.py.

Why this module runs past 400 lines: the exporter is checked by several real tools (promtool, a
Prometheus server, `systemd-analyze security`) and against its docs, alert rules and dashboard,
each with its own set-up.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import operator
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cgtree import NOT_EXCLUSIVE, Motion, MovingTree, build_partition_fixture
from prometheus_client.exposition import generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.process_collector import ProcessCollector

from slicectl.apply.applier import ApplyOptions, apply_plan
from slicectl.demo.fakesystemd import FakeSystemd
from slicectl.exporter.drift import DriftWatch
from slicectl.exporter.families import METRICS, SLICE_METRICS, SeriesMemo
from slicectl.exporter.process_metrics import FdCounter, ProcessMetrics
from slicectl.exporter.server import Exposition, SliceCollector, manifest_tenants, registry_of
from slicectl.host.cgroup.sampler import Sampler
from slicectl.host.files.unitdir import MANIFEST_NAME, Manifest
from slicectl.host.planning import load_tenants

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "cgroup"
DB1 = "tenants.slice/tenants-db1.slice"
G = 1 << 30
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def slicectl() -> list[str]:
    beside = Path(sys.executable).with_name("slicectl")
    return [str(beside)] if beside.exists() else [sys.executable, "-m", "slicectl"]


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed (tests/run installs Debian's prometheus package)")
    return path


def parse(text: str) -> Samples:
    """Every sample of an exposition: (name, sorted labels) -> value."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def scrape(collector: SliceCollector) -> Samples:
    return parse(generate_latest(registry_of(collector)).decode())


def manifest(unit_dir: Path, *slices: str) -> None:
    unit_dir.mkdir(parents=True, exist_ok=True)
    (unit_dir / MANIFEST_NAME).write_text(json.dumps(
        Manifest(files=dict.fromkeys(slices, "0" * 64)).to_json()))


# --- what one scrape says ----------------------------------------------------------------


def test_fixture_tree_values_units_and_limits(tmp_path: Path) -> None:
    manifest(tmp_path / "units", "tenants.slice", "tenants-db1.slice", "tenants-web.slice")
    with Sampler(FIXTURE) as sampler:
        got = scrape(SliceCollector(
            sampler, tenants=lambda: manifest_tenants(tmp_path / "units")))
    db1 = {"slice": "tenants-db1.slice", "tenant": "db1"}
    web = {"slice": "tenants-web.slice", "tenant": "web"}
    system = {"slice": "system.slice", "tenant": ""}
    assert value(got, "slicectl_cpu_usage_seconds_total", **db1) == 5555.555555
    assert value(got, "slicectl_cpu_throttled_seconds_total", **db1) == 3.456789
    assert value(got, "slicectl_cpu_throttled_periods_total", **db1) == 1200
    assert value(got, "slicectl_cpu_quota_cpus", **db1) == 6.0
    assert value(got, "slicectl_cpu_quota_cpus", **web) == float("inf")
    assert value(got, "slicectl_cpu_allowed_cpus", **db1) == 8  # 0-3,8-11
    assert value(got, "slicectl_cpu_allowed_cpus", **system) == 16  # the host's
    assert value(got, "slicectl_memory_max_bytes", **db1) == 24 * G
    assert value(got, "slicectl_memory_high_bytes", **db1) == 22 * G
    assert value(got, "slicectl_memory_low_bytes", **db1) == 16 * G
    assert value(got, "slicectl_memory_swap_max_bytes", **db1) == 0
    assert value(got, "slicectl_memory_high_bytes", **web) == float("inf")
    assert value(got, "slicectl_memory_anon_bytes", **db1) == 16 * G
    assert value(got, "slicectl_memory_file_bytes", **db1) == 4 * G
    assert value(got, "slicectl_pressure_cpu_waiting_seconds_total", **db1) == 0.9
    assert value(got, "slicectl_pressure_cpu_stalled_seconds_total", **db1) == 0.3
    assert value(got, "slicectl_pressure_io_stalled_seconds_total", **db1) == 2.5
    assert value(got, "slicectl_memory_events_total", event="high", **db1) == 0
    assert value(got, "slicectl_tasks", **db1) == 212
    assert value(got, "slicectl_exporter_cgroups") == len(Sampler(FIXTURE).paths)
    # web has no cpuset controller: every CPU of the host
    assert value(got, "slicectl_cpu_allowed_cpus", **web) == 16
    assert ("slicectl_exporter_errors_total", (("source", "cpu.stat"),)) not in got


def test_numa_bytes_and_locality(tmp_path: Path) -> None:
    tree = MovingTree(tmp_path / "cg", cpus="0-7", mems="0-1")
    tree.add("tenants.slice")
    tree.add(DB1, cpus="0-3", mems="0", numa={0: (30 << 20, 10 << 20), 1: (10 << 20, 0)})
    with Sampler(tree.root) as sampler:
        got = scrape(SliceCollector(sampler, node_cpus={0: frozenset(range(4)),
                                                         1: frozenset(range(4, 8))}))
    db1 = {"slice": "tenants-db1.slice", "tenant": ""}
    assert value(got, "slicectl_memory_numa_bytes", node="0", type="anon", **db1) == 30 << 20
    assert value(got, "slicectl_memory_numa_bytes", node="1", type="anon", **db1) == 10 << 20
    assert value(got, "slicectl_memory_local_ratio", **db1) == 0.8


def test_partitions_made_refused_and_short_of_cpus(tmp_path: Path) -> None:
    """A valid isolated partition, one the kernel refused (its reason a label), one that
    lost a CPU (Linux 7.0), and a tenant that is no partition (no series)."""
    tree = build_partition_fixture(tmp_path / "cg")
    manifest(tmp_path / "units", "tenants.slice", *(f"tenants-{t}.slice" for t in
                                                    ("iso", "broken", "lacking", "plain")))
    with Sampler(tree.root) as sampler:
        text = generate_latest(registry_of(SliceCollector(
            sampler, tenants=lambda: manifest_tenants(tmp_path / "units")))).decode()
    lines = [line for line in text.splitlines() if line.startswith("slicectl_cpuset_")]
    assert sorted(lines) == sorted([
        'slicectl_cpuset_partition{partition="isolated",slice="tenants-iso.slice",'
        'tenant="iso"} 1.0',
        'slicectl_cpuset_partition_invalid{partition="isolated",reason="",'
        'slice="tenants-iso.slice",tenant="iso"} 0.0',
        'slicectl_cpuset_partition_lost_cpus{slice="tenants-iso.slice",tenant="iso"} 0.0',
        'slicectl_cpuset_partition{partition="isolated",slice="tenants-broken.slice",'
        'tenant="broken"} 0.0',
        f'slicectl_cpuset_partition_invalid{{partition="isolated",reason="{NOT_EXCLUSIVE}",'
        'slice="tenants-broken.slice",tenant="broken"} 1.0',
        'slicectl_cpuset_partition{partition="root",slice="tenants-lacking.slice",'
        'tenant="lacking"} 1.0',
        'slicectl_cpuset_partition_invalid{partition="root",reason="",'
        'slice="tenants-lacking.slice",tenant="lacking"} 0.0',
        'slicectl_cpuset_partition_lost_cpus{slice="tenants-lacking.slice",tenant="lacking"} '
        '1.0',
    ])
    assert 'slice="tenants-plain.slice"' in text  # its other series are there


def test_garbage_drops_the_series_and_counts_an_error(tmp_path: Path) -> None:
    tree = MovingTree(tmp_path / "cg")
    tree.add("tenants.slice")
    tree.add(DB1, memory_max=str(G))
    with Sampler(tree.root) as sampler:
        collector = SliceCollector(sampler)
        (tree.root / DB1 / "memory.max").write_bytes(b"1.5G\n")
        (tree.root / DB1 / "cpu.stat").write_bytes(b"usage_usec abc\nnr_periods 7\n")
        got = scrape(collector)
        again = scrape(collector)
    db1 = (("slice", "tenants-db1.slice"), ("tenant", ""))
    assert ("slicectl_memory_max_bytes", db1) not in got  # dropped, not +Inf
    assert ("slicectl_cpu_usage_seconds_total", db1) not in got
    assert value(got, "slicectl_cpu_periods_total", slice="tenants-db1.slice", tenant="") == 7
    assert value(got, "slicectl_exporter_errors_total", source="memory.max") == 1
    assert value(got, "slicectl_exporter_errors_total", source="cpu.stat") == 1
    assert value(again, "slicectl_exporter_errors_total", source="cpu.stat") == 2  # a counter


def slice_series(samples: Samples) -> dict[str, set[tuple[str, tuple[tuple[str, str], ...]]]]:
    """Every per-slice series of a scrape, by its `slice` label."""
    out: dict[str, set[tuple[str, tuple[tuple[str, str], ...]]]] = {}
    for name, labels in samples:
        unit = dict(labels).get("slice")
        if unit is not None:
            out.setdefault(unit, set()).add((name, labels))
    return out


def test_one_bad_cgroup_costs_only_its_own_series(tmp_path: Path) -> None:
    """Garbage in one slice's cpu.stat and a memory.events that cannot be read at all (a
    directory in its place: EISDIR, which root gets too) in another: every other slice keeps
    all its series, the two keep all but the spoiled file's, and each counts an error."""
    tree = MovingTree(tmp_path / "cg", cpus="0-7", mems="0-1")
    tree.add("system.slice", Motion(cpu_cores=0.2, events={"high": 1}))
    tree.add("tenants.slice")
    tree.add(DB1, Motion(cpu_cores=1.5), memory_max=str(G))
    tree.add("tenants.slice/tenants-web.slice", Motion(cpu_cores=0.5))
    tree.add("tenants.slice/tenants-batch.slice", Motion(events={"max": 2}))
    web = tree.root / "tenants.slice/tenants-web.slice"
    with Sampler(tree.root) as sampler:
        clean = slice_series(scrape(SliceCollector(sampler)))
    (web / "memory.events").unlink()
    (web / "memory.events").mkdir()  # opens, but every read fails
    with Sampler(tree.root) as sampler:
        collector = SliceCollector(sampler)
        exposition = Exposition(collector)
        cpu_stat = tree.root / DB1 / "cpu.stat"  # usage_usec garbage, the rest as it was
        cpu_stat.write_bytes(re.sub(rb"^usage_usec \d+", b"usage_usec 12x", cpu_stat.read_bytes()))
        got = scrape(collector)
        served = parse(exposition.render().decode())
    for samples, errors in ((got, 1), (served, 2)):
        series = slice_series(samples)
        assert series.keys() == clean.keys()
        for unit in clean.keys() - {"tenants-db1.slice", "tenants-web.slice"}:
            assert series[unit] == clean[unit], unit
        lost_db1 = {name for name, _ in clean["tenants-db1.slice"] - series["tenants-db1.slice"]}
        assert lost_db1 == {"slicectl_cpu_usage_seconds_total"}
        lost_web = {name for name, _ in clean["tenants-web.slice"] - series["tenants-web.slice"]}
        assert lost_web == {"slicectl_memory_events_total"}
        assert value(samples, "slicectl_exporter_errors_total", source="cpu.stat") == errors
        assert value(samples, "slicectl_exporter_errors_total",  # its five values
                     source="memory.events") == 5 * errors
        assert ("slicectl_exporter_errors_total", (("source", "cgroupfs"),)) not in samples
        assert value(samples, "slicectl_exporter_cgroups") == len(clean)


def test_docs_list_exactly_the_metrics_exported(tmp_path: Path) -> None:
    """docs/metrics.md's table names every metric the exporter can emit, and no other."""
    text = (ROOT / "docs" / "metrics.md").read_text()
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", text, re.M))
    assert documented == {m.name for m in METRICS} | PROCESS_METRICS
    for m in METRICS:  # type and labels as the table says
        labels = ", ".join(f"`{x}`" for x in m.labels) or "—"
        assert f"| `{m.name}` | {m.type} | {labels} |" in text, m.name
    # and a scrape emits them all (drift needs --tenants: test_drift_*)
    manifest(tmp_path / "units", "tenants.slice", "tenants-db1.slice")
    tree = MovingTree(tmp_path / "cg", cpus="0-7", mems="0-1")
    tree.add("tenants.slice")
    tree.add(DB1, numa={0: (1, 1), 1: (1, 1)}, partition="isolated")
    with Sampler(tree.root) as sampler:
        (tree.root / DB1 / "pids.current").write_bytes(b"x\n")  # an error to count
        families = {f.name for f in text_string_to_metric_families(
            generate_latest(registry_of(SliceCollector(
                sampler, node_cpus={0: frozenset({0})}))).decode())}
    assert families == {m.name.removesuffix("_total") for m in METRICS
                        if m.name != "slicectl_drift"} | {
        p.removesuffix("_total") for p in PROCESS_METRICS}


OPENMETRICS: Callable[[object], bytes] = generate_openmetrics  # not annotated there
# Values that differ between two scrapes of a tree that did not move: the time taken, the
# process' own figures, and the errors counted so far (the library's collector is a new one).
VOLATILE = re.compile(rb"^((?:slicectl_exporter_scrape_duration_seconds|process_[a-z_]+|"
                      rb"slicectl_exporter_errors_total)(?:\{[^}]*\})?) .*$", re.M)


def library(collector: SliceCollector, om: bool) -> bytes:
    """What prometheus_client itself writes for `registry_of(collector)`."""
    registry = registry_of(collector)
    return OPENMETRICS(registry) if om else generate_latest(registry)


@pytest.mark.parametrize("om", [False, True], ids=["text", "openmetrics"])
def test_served_bytes_are_the_librarys_scrape_after_scrape(tmp_path: Path, om: bool) -> None:
    """/metrics writes the slices' samples itself, keeping the lines of
    cgroups that did not change: the bytes are what prometheus_client writes from the same
    families, in both formats, while some slices move, one is recreated and one appears, with
    limits, +Inf, garbage, NUMA rows, tenants, and names that need escaping."""
    tree = MovingTree(tmp_path / "cg", cpus="0-7", mems="0-1")
    tree.add("system.slice", Motion(cpu_cores=0.2, psi_some={"memory": 3.0}))
    tree.add("tenants.slice")
    tree.add(DB1, Motion(cpu_cores=1.5, throttled_fraction=0.1, events={"high": 2}),
             cpus="0-3", mems="0", cpu_max="200000 100000", memory_max=str(G),
             numa={0: (30 << 20, 10 << 20), 1: (10 << 20, 0)})
    tree.add("tenants.slice/tenants-idle.slice")
    tree.add("tenants.slice/tenants-a\\x2db.slice", memory_high="123456789")  # a\x2db: "a-b"
    names = {"tenants-db1.slice": "db1", "tenants-a\\x2db.slice": 'a"b\\c\nd'}
    with Sampler(tree.root) as sampler:
        ours = SliceCollector(sampler, node_cpus={0: frozenset(range(4)),
                                                  1: frozenset(range(4, 8))}, tenants=lambda: names)
        exposition = Exposition(ours)
        for step in range(5):
            served = exposition.render(om)
            # nothing moved since: the slices' text is the very bytes written a moment ago
            again = exposition.parts(om)
            assert all(map(operator.is_, again[:-1], exposition.parts(om)[:-1]))
            assert VOLATILE.sub(rb"\1", b"".join(again)) == VOLATILE.sub(rb"\1", served)
            # the library over the same state: the tree only moves between steps
            with Sampler(tree.root) as fresh:
                theirs = library(SliceCollector(fresh, node_cpus=ours.memo.node_cpus,
                                                tenants=lambda: names), om)
            assert VOLATILE.sub(rb"\1", served) == VOLATILE.sub(rb"\1", theirs), step
            assert served.count(b"# HELP slicectl_") >= len(SLICE_METRICS) + 3
            if step < 2:
                tree.advance(1.0)  # (rewrites every file of the tree)
            if step == 1:
                tree.recreate("tenants.slice/tenants-idle.slice")
                tree.add("tenants.slice/tenants-new.slice")
            if step == 2:
                (tree.root / DB1 / "memory.max").write_bytes(b"garbage\n")
            if step == 3:
                names["tenants-idle.slice"] = "idle"  # only a tenant changes, no file
    assert b'tenant="a\\"b\\\\c\\nd"' in served  # escaped as the formats say
    assert b'slicectl_tasks{slice="tenants-idle.slice",tenant="idle"}' in served
    assert b"+Inf" in served and b"slicectl_memory_numa_bytes{node=" in served


def test_kept_lines_are_those_of_the_last_scrape_only(tmp_path: Path) -> None:
    """Cgroups come and go (a new name each round, one recreated, one removed): what the
    exporter keeps between scrapes is the lines of the cgroups of the last scrape, no more,
    so its memory does not grow with the cgroups it has seen (BENCHMARKS.md, exporter.1000)."""
    tree = MovingTree(tmp_path / "cg", cpus="0-7", mems="0-1")
    tree.add("system.slice", Motion(cpu_cores=0.2))
    tree.add("tenants.slice")
    for i in range(20):
        tree.add(f"tenants.slice/tenants-t{i}.slice")
    with Sampler(tree.root) as sampler:
        collector = SliceCollector(sampler)
        exposition = Exposition(collector)
        for step in range(30):
            body = exposition.render()
            served = re.search(rb"^slicectl_exporter_cgroups (\S+)$", body, re.M)
            assert served and float(served[1]) == 22  # 2 slices, 20 tenants
            assert len(collector.text) == len(collector.memo) == 22, step
            tree.remove(f"tenants.slice/tenants-t{step}.slice")
            tree.add(f"tenants.slice/tenants-t{step + 20}.slice")
            tree.recreate(f"tenants.slice/tenants-t{step + 1}.slice")
            tree.advance(1.0)


def test_rows_of_a_few_changed_cgroups_are_those_of_a_fresh_memo(tmp_path: Path) -> None:
    """When only some cgroups changed, the memo makes their rows again and keeps the others'
    (and their errors): the rows and errors are what a memo that never saw the tree before
    makes, while values move and a file turns to garbage and back."""
    tree = MovingTree(tmp_path / "cg", cpus="0-7", mems="0-1")
    tree.add("system.slice", Motion(cpu_cores=0.2, psi_some={"memory": 3.0}))
    tree.add("tenants.slice")
    tree.add(DB1, Motion(cpu_cores=1.5, events={"high": 1}), memory_max=str(G))
    tree.add("tenants.slice/tenants-idle.slice")
    names = {"tenants-db1.slice": "db1"}
    memo = SeriesMemo()
    with Sampler(tree.root) as sampler:
        for step in range(6):
            snap = sampler.sample()
            out, errors = memo.rows(snap, names)
            assert (out, errors) == SeriesMemo().rows(snap, names), step
            assert sum(errors.values()) == (1 if step in (2, 3) else 0), step
            tree.advance(1.0)
            garbage = b"garbage\n" if step in (1, 2) else f"{G}\n".encode()
            (tree.root / DB1 / "memory.max").write_bytes(garbage)


PROCESS_METRICS = {"process_cpu_seconds_total", "process_virtual_memory_bytes",
                   "process_resident_memory_bytes", "process_start_time_seconds",
                   "process_open_fds", "process_max_fds"}


def open_fds_listed() -> int:
    """The open descriptors as prometheus_client counts them, less the one it lists with."""
    return len(os.listdir("/proc/self/fd")) - 1


def test_process_metrics_are_the_librarys_with_open_fds_counted_without_a_listing() -> None:
    """The same families, help, types and order as prometheus_client's ProcessCollector;
    process_open_fds is the number of open descriptors, counted whichever way the kernel
    allows (the size of /proc/self/fd since Linux 6.2, else poll()), holes and all."""
    held = [os.open("/dev/null", os.O_RDONLY) for _ in range(300)]
    try:
        for fd in held[::3]:
            os.close(fd)
        ours = {m.name: m for m in ProcessMetrics().collect()}
        listed = open_fds_listed()
        theirs = {m.name: m for m in ProcessCollector(registry=None).collect()}
        assert [(m.name, m.type, m.documentation) for m in ours.values()] == [
            (m.name, m.type, m.documentation) for m in theirs.values()]
        assert {m.name.removesuffix("_total") for m in ours.values()} == {
            p.removesuffix("_total") for p in PROCESS_METRICS}
        for name in ("process_start_time_seconds", "process_max_fds"):
            assert ours[name].samples[0].value == theirs[name].samples[0].value, name
        assert ours["process_open_fds"].samples[0].value == listed
        assert theirs["process_open_fds"].samples[0].value == listed + 1
        counter = FdCounter()
        assert counter.count() == counter.polled() == open_fds_listed()
        os.close(held.pop())
        assert counter.count() == counter.polled() == open_fds_listed()
    finally:
        for fd in held[1::3] + held[2::3]:
            os.close(fd)


def test_open_fds_without_ctypes_are_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where ctypes cannot load (a hardened unit, a stripped Python), poll() is out of reach:
    the descriptors are listed as prometheus_client lists them, the listing's own left out."""
    counter = FdCounter()

    def no_ctypes() -> None:
        raise MemoryError("ffi_closure_alloc failed")

    monkeypatch.setattr(counter, "_libc_poll", no_ctypes)
    assert counter.polled() == open_fds_listed()


def test_open_fds_by_poll_counts_a_descriptor_above_a_lowered_limit() -> None:
    """poll() takes no more entries than the soft RLIMIT_NOFILE; a descriptor opened before
    the limit was lowered lies above it, and is counted all the same."""
    script = (
        "import os, resource\n"
        "from slicectl.exporter.process_metrics import FdCounter\n"
        "high = os.dup2(os.open('/dev/null', os.O_RDONLY), 3000)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE,\n"
        "                   (1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n"
        "print(FdCounter().polled(), len(os.listdir('/proc/self/fd')) - 1)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=ROOT)
    assert proc.returncode == 0, (  # with what it said, and the limits it inherited
        proc.returncode, proc.stderr, resource.getrlimit(resource.RLIMIT_NOFILE))
    polled, listed = proc.stdout.split()
    assert polled == listed and int(listed) >= 4, proc.stdout


# --- the command: HTTP, OpenMetrics, textfile, promtool, bad input -------------------------


class Exporter:
    """`slicectl exporter` as a process, on 127.0.0.1 and a port the kernel picks."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([*slicectl(), "exporter", "--listen", "127.0.0.1:0",
                                      *args], stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        line = ""
        while "serving" not in line:
            line = self.proc.stderr.readline()
            if not line:
                pytest.fail(f"the exporter did not start (exit {self.proc.wait(10)})")
        match = re.search(r"(https?)://\S+?:(\d+)/metrics", line)
        assert match, line
        self.url = f"{match.group(1)}://127.0.0.1:{match.group(2)}/metrics"
        self.port = int(match.group(2))

    def get(self, accept: str | None = None) -> tuple[int, str, str]:
        request = urllib.request.Request(self.url, headers={"Accept": accept} if accept else {})
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, r.headers["Content-Type"], r.read().decode()

    def stop(self) -> int:
        self.proc.terminate()
        return self.proc.wait(30)


@pytest.fixture
def tree(tmp_path: Path) -> MovingTree:
    tree = MovingTree(tmp_path / "cg")
    tree.add("system.slice", Motion(cpu_cores=0.2))
    tree.add("tenants.slice")
    tree.add(DB1, Motion(cpu_cores=1.5, throttled_fraction=0.1, psi_some={"memory": 4.0}),
             cpus="0-3", mems="0", cpu_max="200000 100000", memory_max=str(G))
    return tree


@pytest.fixture
def exporter(tree: MovingTree) -> Iterator[Exporter]:
    exp = Exporter("--cgroup-root", str(tree.root), "--sysfs", "/nonexistent")
    try:
        yield exp
    finally:
        assert exp.stop() == 0  # SIGTERM: a clean stop


def test_http_text_and_openmetrics_and_garbage_is_still_200(
        exporter: Exporter, tree: MovingTree) -> None:
    with urllib.request.urlopen(exporter.url, timeout=30) as r:  # sent in pieces
        assert int(r.headers["Content-Length"]) == len(r.read()) > 0
    status, ctype, text = exporter.get()
    assert status == 200 and ctype.startswith("text/plain; version=0.0.4")
    assert 'slicectl_cpu_quota_cpus{slice="tenants-db1.slice",tenant=""} 2.0' in text
    status, ctype, text = exporter.get("application/openmetrics-text; version=1.0.0")
    assert status == 200 and ctype.startswith("application/openmetrics-text")
    assert text.endswith("# EOF\n")
    for name in ("cpu.stat", "memory.current", "io.pressure"):
        (tree.root / DB1 / name).write_bytes(b"\xff\xfe garbage")
    status, _, text = exporter.get()
    assert status == 200
    got = parse(text)
    assert value(got, "slicectl_exporter_errors_total", source="memory.current") >= 1
    assert ("slicectl_memory_current_bytes",
            (("slice", "tenants-db1.slice"), ("tenant", ""))) not in got
    assert value(got, "slicectl_memory_current_bytes", slice="system.slice", tenant="") > 0
    # gzip when asked, and the library's name[] filter
    request = urllib.request.Request(exporter.url + "?name[]=slicectl_tasks",
                                     headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(request, timeout=30) as r:
        assert r.headers["Content-Encoding"] == "gzip"
        only = parse(gzip.decompress(r.read()).decode())
    assert {name for name, _ in only} == {"slicectl_tasks"}
    with urllib.request.urlopen(urllib.request.Request(
            exporter.url, headers={"Accept-Encoding": "gzip"}), timeout=30) as r:
        assert "slicectl_tasks" in gzip.decompress(r.read()).decode()


def test_promtool_check_metrics_accepts_the_output(tmp_path: Path, tree: MovingTree) -> None:
    tree.add("tenants.slice/tenants-web.slice", numa={0: (5, 5), 1: (5, 5)})
    tree.add("tenants.slice/tenants-iso.slice", cpus="4-5",
             partition=f"isolated invalid ({NOT_EXCLUSIVE})")
    out = tmp_path / "slicectl.prom"
    proc = subprocess.run([*slicectl(), "exporter", "--cgroup-root", str(tree.root),
                           "--textfile", str(out), "--sysfs", str(ROOT / "tests/fixtures/sysfs"
                                                                   / "xeon-2s-smt")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "slicectl_memory_numa_bytes" in text and "+Inf" in text
    assert f'reason="{NOT_EXCLUSIVE}"' in text
    check = subprocess.run([tool("promtool"), "check", "metrics"], input=text,
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0 and not check.stdout + check.stderr, check.stdout + check.stderr


def test_textfile_every_interval_is_atomic(tmp_path: Path, tree: MovingTree) -> None:
    out = tmp_path / "textfile" / "slicectl.prom"
    out.parent.mkdir()
    proc = subprocess.run([*slicectl(), "exporter", "--cgroup-root", str(tree.root),
                           "--textfile", str(out), "--interval", "0.05", "-n", "3"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in out.parent.iterdir()] == ["slicectl.prom"]  # no temp files left
    assert "slicectl_exporter_cgroups 3.0" in out.read_text()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("args, message, hint", [
    (["--listen", "127.0.0.1:PORT"], "cannot listen on 127.0.0.1:", "pick a free port"),
    (["--listen", "nosuchhost.invalid:9"], "no such address", "IP address of this host"),
    (["--listen", "127.0.0.1:99999"], "not ADDR:PORT", "e.g. 127.0.0.1:19116"),
    (["--listen", "localhost"], "not ADDR:PORT", "e.g. 127.0.0.1:19116"),
    (["--listen", "192.0.2.1:19116"], "cannot listen on 192.0.2.1:19116", "address of this host"),
    (["--cgroup-root", "/nonexistent/cgroup"], "/nonexistent/cgroup does not exist",
     "--cgroup-root"),
    (["--textfile", "/nonexistent/dir/x.prom"], "cannot write /nonexistent/dir/x.prom",
     "textfile directory"),
    (["--tenants", "/nonexistent/tenants.yaml"], "tenants.yaml", ""),
])
def test_bad_input_is_an_error_with_a_hint_never_a_traceback(
        tree: MovingTree, args: list[str], message: str, hint: str) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        args = [a.replace("PORT", port) for a in args]
        if "--cgroup-root" not in args:
            args += ["--cgroup-root", str(tree.root)]
        proc = subprocess.run([*slicectl(), "exporter", *args], capture_output=True, text=True,
                              timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "error: " in proc.stderr and message in proc.stderr, proc.stderr
    assert "hint: " in proc.stderr and hint in proc.stderr, proc.stderr


# --- a real Prometheus scraping the exporter -----------------------------------------------


def wait_for(what: str, check: Callable[[], object], timeout: float = 120) -> object:
    """Poll `check` until it returns something true; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            got = check()
        except OSError:
            got = None
        if got:
            return got
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.2)


def secured(tmp_path: Path) -> tuple[list[str], str]:
    """The exporter's --web-config (TLS, a required client certificate, a user) and the
    scrape config's lines that get Prometheus in."""
    from pki import bcrypt_hash, make_pki

    pki = make_pki(tmp_path / "pki")
    web = tmp_path / "web.yml"
    web.write_text(f"tls_server_config:\n  cert_file: {pki.server_cert}\n"
                   f"  key_file: {pki.server_key}\n"
                   "  client_auth_type: RequireAndVerifyClientCert\n"
                   f"  client_ca_file: {pki.ca}\n  min_version: TLS12\n"
                   f"basic_auth_users:\n  prometheus: '{bcrypt_hash('scrape-pw')}'\n")
    return ["--web-config", str(web)], (
        "    scheme: https\n"
        f"    tls_config: {{ca_file: {pki.ca}, cert_file: {pki.client_cert}, "
        f"key_file: {pki.client_key}}}\n"
        "    basic_auth: {username: prometheus, password: scrape-pw}\n")


@pytest.mark.external
@pytest.mark.parametrize("secure", [False, True], ids=["http", "https"])
def test_real_prometheus_rate_and_limit_match_the_tree(
        tmp_path: Path, tree: MovingTree, secure: bool) -> None:
    """Prometheus scrapes every second; PromQL's rate() of the CPU counter is the tree's 1.5
    cores within 5 %, and memory.max reads as the file says. Over plain HTTP, and over TLS
    with a client certificate and basic auth (--web-config)."""
    stop = threading.Event()
    started = time.monotonic()

    def move() -> None:  # the counters follow the wall clock, however late this thread runs
        done = 0.0
        while not stop.wait(0.05):
            now = time.monotonic() - started
            tree.advance(now - done)
            done = now

    mover = threading.Thread(target=move, daemon=True)
    mover.start()
    flags, scrape = secured(tmp_path) if secure else ([], "")
    exp = Exporter("--cgroup-root", str(tree.root), "--sysfs", "/nonexistent", *flags)
    assert exp.url.startswith("https://" if secure else "http://")
    web = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}\n"
        "scrape_configs:\n"
        f"  - job_name: slicectl\n    static_configs: [{{targets: ['127.0.0.1:{exp.port}']}}]\n"
        + scrape)
    prom = subprocess.Popen(
        [tool("prometheus"), f"--config.file={config}", f"--storage.tsdb.path={tmp_path}/data",
         f"--web.listen-address=127.0.0.1:{web}"],
        stdout=subprocess.DEVNULL, stderr=open(tmp_path / "prometheus.log", "w"))
    api = f"http://127.0.0.1:{web}/api/v1/query?query="

    def query(promql: str) -> list[dict[str, object]]:
        with urllib.request.urlopen(api + urllib.parse.quote(promql), timeout=10) as r:
            data = json.load(r)
        assert data["status"] == "success", data
        return list(data["data"]["result"])

    try:
        db1 = '{slice="tenants-db1.slice"}'
        wait_for("15 scrapes of the exporter", lambda: any(
            float(r["value"][1]) >= 15  # type: ignore[index]
            for r in query(f"count_over_time(slicectl_cpu_usage_seconds_total{db1}[30s])")))
        [rate] = query(f"rate(slicectl_cpu_usage_seconds_total{db1}[15s])")
        assert float(rate["value"][1]) == pytest.approx(1.5, rel=0.05)  # type: ignore[index]
        [limit] = query(f"slicectl_memory_max_bytes{db1}")
        assert float(limit["value"][1]) == int(  # type: ignore[index]
            (tree.root / DB1 / "memory.max").read_text())
        [up] = query('up{job="slicectl"}')
        assert up["value"][1] == "1"  # type: ignore[index]
    finally:
        prom.terminate()
        prom.wait(30)
        exp.stop()
        stop.set()
        mover.join(10)


# --- drift against tenants.yaml (fake systemd) ---------------------------------------------

async def test_drift_goes_to_one_after_set_property_and_back_after_apply(
        tmp_path: Path, dbus_daemon: str, fake_systemd: FakeSystemd) -> None:
    from test_apply import TENANTS_ONLY as TENANTS
    from test_apply import make_topology

    (tmp_path / "units").mkdir()
    options = ApplyOptions(unit_dir=tmp_path / "units", cgroup_root=tmp_path / "cgroup",
                           bus_address=dbus_daemon, control_dir=tmp_path / "control")
    tenants = tmp_path / "tenants.yaml"
    tenants.write_text(TENANTS)
    topo = make_topology()
    await apply_plan(load_tenants(str(tenants)), topo, options)
    watch = await asyncio.to_thread(DriftWatch, tenants, topo, options)
    try:
        rows = dict(await asyncio.to_thread(watch.rows))
        assert rows[("tenants-db1.slice", "CPUWeight")] == 0
        assert rows[("tenants-db1.slice", "ActiveState")] == 0
        assert set(rows.values()) == {0.0}
        assert watch.tenants() == {"tenants-db1.slice": "db1", "tenants-db2.slice": "db2"}
        # `systemctl set-property tenants-db1.slice CPUWeight=50`
        from dbus_fast import Variant

        fake_systemd.set_properties(fake_systemd.units["tenants-db1.slice"],
                                    [["CPUWeight", Variant("t", 50)]])
        rows = dict(await asyncio.to_thread(watch.rows))
        assert rows[("tenants-db1.slice", "CPUWeight")] == 1
        assert sum(rows.values()) == 1
        # tenants.yaml changes: placed again (its mtime), drift against the new file
        tenants.write_text(TENANTS.replace("cpu_weight: 300", "cpu_weight: 50"))
        os.utime(tenants, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
        await asyncio.to_thread(watch.refresh)
        rows = dict(await asyncio.to_thread(watch.rows))
        assert rows[("tenants-db1.slice", "CPUWeight")] == 0
        assert rows[("tenants-db1.slice", "UnitFile")] == 1  # not applied yet
        await apply_plan(load_tenants(str(tenants)), topo, options)
        rows = dict(await asyncio.to_thread(watch.rows))
        assert set(rows.values()) == {0.0}
    finally:
        await asyncio.to_thread(watch.close)


# --- the shipped unit ----------------------------------------------------------------------

UNIT = ROOT / "units" / "slicectl-exporter.service"


def test_unit_is_read_only_and_rated_3_or_better_by_systemd_analyze_security(
        tmp_path: Path) -> None:
    from unitcheck import parse_unit

    service = parse_unit(UNIT.read_text())["Service"]
    assert service["ExecStart"] == "/usr/local/bin/slicectl exporter --listen :19116"
    assert service["ProtectSystem"] == "strict" and service["ProtectControlGroups"] == "yes"
    assert service["DynamicUser"] == "yes" and service["CapabilityBoundingSet"] == ""
    assert service["User"] == "slicectl-exporter"  # the static user, below
    assert not {"ReadWritePaths", "StateDirectory", "LogsDirectory"} & set(service)
    (tmp_path / UNIT.name).write_text(UNIT.read_text())
    proc = subprocess.run([tool("systemd-analyze"), "security", "--offline=yes",
                           "--no-pager", str(tmp_path / UNIT.name)],
                          capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "SYSTEMD_COLORS": "0"})
    match = re.search(r"Overall exposure level for \S+: ([0-9.]+)", proc.stdout)
    assert match, proc.stdout + proc.stderr
    assert float(match.group(1)) <= 3.0, proc.stdout


def test_sysusers_file_creates_the_units_user_and_group(tmp_path: Path) -> None:
    """The system bus refuses dynamic users (systemd #22737), so the unit names a static user:
    slicectl-exporter.sysusers must create exactly that user and its group, with no login."""
    from unitcheck import parse_unit

    user = parse_unit(UNIT.read_text())["Service"]["User"]
    (tmp_path / "etc").mkdir()
    proc = subprocess.run([tool("systemd-sysusers"), f"--root={tmp_path}",
                           str(UNIT.with_suffix(".sysusers"))],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    passwd = {line.split(":")[0]: line.split(":")
              for line in (tmp_path / "etc" / "passwd").read_text().splitlines()}
    groups = {line.split(":")[0] for line in (tmp_path / "etc" / "group").read_text().splitlines()}
    assert user in passwd and user in groups, (passwd, groups)
    uid, shell = int(passwd[user][2]), passwd[user][6]
    assert 0 < uid < 1000 and shell.endswith("nologin"), passwd[user]


# --- examples/prometheus: scrape config, alert rules, Grafana dashboard -----------------------

EXAMPLES = ROOT / "examples" / "prometheus"


def test_alert_rules_pass_promtool_check_and_test() -> None:
    for args in (["check", "rules", "slicectl-alerts.yml"],
                 ["test", "rules", "slicectl-alerts.test.yml"],
                 ["check", "config", "prometheus.yml"]):
        proc = subprocess.run([tool("promtool"), *args], cwd=EXAMPLES, capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0 and "SUCCESS" in proc.stdout + proc.stderr, (
            args, proc.stdout + proc.stderr)


def test_every_alert_cites_a_study_and_uses_exported_metrics() -> None:
    text = (EXAMPLES / "slicectl-alerts.yml").read_text()
    alerts = re.findall(r"- alert: (\w+)", text)
    cited = re.findall(r'source: "([^"]+)"', text)
    assert len(alerts) == 6 and len(cited) == len(alerts)
    # the studies of docs/background.md, by their short citations
    background = (ROOT / "docs" / "background.md").read_text()
    assert all(c.split(",")[0] in background for c in cited), cited
    for c in cited:  # and the comment above the rule cites the same one
        assert text.count(c) >= 2, c
    exported = {m.name for m in METRICS}
    assert set(re.findall(r"slicectl_[a-z_]+", text)) <= exported


def test_grafana_dashboard_is_json_over_exported_metrics_only() -> None:
    dashboard = json.loads((EXAMPLES / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    exprs += [v["query"] for v in dashboard["templating"]["list"]]
    used = set(re.findall(r"slicectl_[a-z_]+", " ".join(exprs)))
    assert used <= {m.name for m in METRICS}, used - {m.name for m in METRICS}
    assert {"slicectl_cpu_usage_seconds_total", "slicectl_memory_max_bytes",
            "slicectl_pressure_memory_stalled_seconds_total",
            "slicectl_memory_local_ratio"} <= used


def test_a_fifo_in_the_tree_is_counted_and_the_scrape_still_completes(tmp_path: Path) -> None:
    """A FIFO where a cgroup file should be would block a plain open for ever: the scrape
    (in a thread, so a regression fails instead of hanging) still answers, and counts it."""
    tree = MovingTree(tmp_path / "cg")
    tree.add("tenants.slice")
    tree.add(DB1, memory_max=str(G))
    for fifo in (tree.root / DB1 / "cpu.stat", tree.root / "cpuset.cpus.effective",
                 tree.root / "cgroup.stat"):
        fifo.unlink(missing_ok=True)
        os.mkfifo(fifo)
    got: list[Samples] = []

    def scrape_twice() -> None:
        with Sampler(tree.root) as sampler:
            collector = SliceCollector(sampler)
            scrape(collector)
            got.append(scrape(collector))

    thread = threading.Thread(target=scrape_twice, daemon=True)
    thread.start()
    thread.join(60)
    assert got, "the scrape blocked on a FIFO"
    db1 = {"slice": "tenants-db1.slice", "tenant": ""}
    assert value(got[0], "slicectl_memory_max_bytes", **db1) == G
    assert ("slicectl_cpu_usage_seconds_total", tuple(db1.items())) not in got[0]
    assert value(got[0], "slicectl_exporter_errors_total", source="cpu.stat") > 0
