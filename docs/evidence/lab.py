"""What every experiment in docs/evidence/ does in the testbed guest: apply a tenants.yaml with
slicectl, start workloads in units, read cgroup and proc files, write a CSV.

Runs as root inside the guest (tests/testbed/run, or tests/e2e/test_evidence.py); standard
library only. CSVs go to $SLICECTL_RESULTS/out/ (the host copies them back, docs/evidence/run).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

CGROUP = Path("/sys/fs/cgroup")
UNIT_DIR = Path("/etc/systemd/system")
MANIFEST = UNIT_DIR / ".slicectl-manifest.json"
WORK = Path("/run/slicectl-evidence")  # tenants.yaml files and counters (tmpfs)
PREFIX = "ev-"  # every unit an experiment starts
LOOP = "while :; do :; done"  # the cpu.shares experiments' CPU hog, in sh


def run(*cmd: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run a command; raise with its output when it fails."""
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}\n{proc.stdout}"
                           f"{proc.stderr}")
    return proc


def out_dir() -> Path:
    """Where CSVs go: $SLICECTL_RESULTS/out in the testbed, else ./evidence-out."""
    results = os.environ.get("SLICECTL_RESULTS")
    path = Path(results) / "out" if results else Path("evidence-out")
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_csv(name: str, rows: Sequence[Any]) -> Path:
    """Rows (dataclass instances of one type) as NAME.csv in out_dir(); floats with 4
    decimals, None as an empty cell."""
    path = out_dir() / f"{name}.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=[x.name for x in fields(rows[0])])
        writer.writeheader()
        for row in rows:
            writer.writerow({k: f"{v:.4f}" if isinstance(v, float) else "" if v is None else v
                             for k, v in asdict(row).items()})
    return path


# --- slicectl and systemd ------------------------------------------------------------------


def tenants_file(name: str, text: str) -> Path:
    WORK.mkdir(parents=True, exist_ok=True)
    path = WORK / f"{name}.yaml"
    path.write_text(text)
    return path


def apply(path: Path, *args: str) -> float:
    """`slicectl apply PATH --yes ARGS`; returns how long it took (s)."""
    start = time.monotonic()
    run("slicectl", "apply", str(path), "--yes", *args)
    return time.monotonic() - start


def plan_json(path: Path, *args: str) -> dict[str, Any]:
    """`slicectl plan PATH --json` on this host (competitors counted live)."""
    data: dict[str, Any] = json.loads(run("slicectl", "plan", str(path), "--json", *args).stdout)
    return data


def start(unit: str, slice_: str, command: str, *properties: str) -> int:
    """A transient service running `sh -c COMMAND` in SLICE; returns its main PID."""
    run(*start_command(unit, slice_, command, *properties))
    return main_pid(f"{PREFIX}{unit}.service")


def start_command(unit: str, slice_: str, command: str, *properties: str) -> list[str]:
    """The systemd-run command line of `start`, for a caller that must not wait for it."""
    props = [f"--property={p}" for p in properties]
    return ["systemd-run", "--quiet", "--collect", f"--unit={PREFIX}{unit}", f"--slice={slice_}",
            *props, "--", "/bin/sh", "-c", command]


def main_pid(unit: str) -> int:
    for _ in range(100):
        pid = int(run("systemctl", "show", "-p", "MainPID", "--value", unit).stdout or 0)
        if pid:
            return pid
        time.sleep(0.05)
    raise RuntimeError(f"{unit} has no main process")


def control_group(unit: str) -> Path:
    """A unit's cgroup (from its ControlGroup property; never built from its name)."""
    cgroup = run("systemctl", "show", "-p", "ControlGroup", "--value", unit).stdout.strip()
    if not cgroup:
        raise RuntimeError(f"{unit} has no control group")
    return CGROUP / cgroup.lstrip("/")


def in_root_cgroup(command: str, cpu: int | None = None) -> subprocess.Popen[bytes]:
    """A process moved into the root cgroup (the cpu.shares experiments' loop in the root
    group), pinned to `cpu` after the move: the move resets its affinity to the root's CPUs."""
    pin = f"taskset -c {cpu} " if cpu is not None else ""
    return subprocess.Popen(
        ["/bin/sh", "-c", f"echo $$ > {CGROUP}/cgroup.procs && exec {pin}/bin/sh -c '{command}'"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True)


# A fixed CPU-bound workload: each operation is the same amount of work; the count of
# operations done is written to a file (the argument) the experiment reads.
COUNTING = """\
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
n = 0
while True:
    for _ in range(2000):
        pass
    n += 1
    os.pwrite(fd, b"%20d" % n, 0)
"""


def start_counting(tenant: str, workers: int) -> list[Path]:
    """`workers` counting processes in the tenant's slice; returns their counter files."""
    script = WORK / "counting.py"
    WORK.mkdir(parents=True, exist_ok=True)
    script.write_text(COUNTING)
    paths = [WORK / "ops" / f"{tenant}-{i}" for i in range(workers)]
    paths[0].parent.mkdir(exist_ok=True)
    for i, path in enumerate(paths):
        path.unlink(missing_ok=True)
        start(f"{tenant}-{i}", f"tenants-{tenant}.slice", f"exec python3 {script} {path}")
    return paths


def operations(counters: Iterable[Path]) -> int:
    """Operations counted so far by these workers (0 for one not started yet)."""
    total = 0
    for path in counters:
        try:
            total += int(path.read_bytes() or 0)
        except (FileNotFoundError, ValueError):
            pass
    return total


def stop_units() -> None:
    """Stop every unit an experiment started."""
    units = run("systemctl", "list-units", "--all", "--plain", "--no-legend",
                f"{PREFIX}*").stdout.split()
    names = [u for u in units if u.startswith(PREFIX)]
    if names:
        run("systemctl", "stop", *names, check=False)


def reset() -> None:
    """Undo an experiment: its units, its tenants (slicectl's files, the manifest), caches."""
    stop_units()
    run("systemctl", "stop", "tenants.slice", check=False)
    if MANIFEST.exists():
        files = json.loads(MANIFEST.read_text()).get("files", {})
        for rel in files:
            path = UNIT_DIR / rel
            path.unlink(missing_ok=True)
            if path.parent != UNIT_DIR and path.parent.is_dir() and not any(
                    path.parent.iterdir()):
                path.parent.rmdir()
        MANIFEST.unlink()
    run("systemctl", "daemon-reload")
    run("systemctl", "reset-failed", check=False)


@contextmanager
def experiment() -> Iterator[None]:
    """Start from a clean host and leave one."""
    reset()
    try:
        yield
    finally:
        reset()


# --- readers --------------------------------------------------------------------------------


def runtime_ns(pid: int) -> int:
    """CPU time a task has run, in ns (/proc/PID/schedstat, the scheduler's own count)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


def keyed(path: Path) -> dict[str, int]:
    """A flat-keyed cgroup file (memory.stat, cpu.stat, memory.events)."""
    return {k: int(v) for k, v in (line.split() for line in path.read_text().splitlines())}


def pressure_total(path: Path, kind: str = "some") -> int:
    """The `total` (µs stalled) of a PSI file's `some` or `full` line."""
    for line in path.read_text().splitlines():
        if line.startswith(kind):
            return int(line.rsplit("total=", 1)[1])
    raise RuntimeError(f"{path}: no {kind} line")


def cpu_times(cpus: Iterable[int] | None = None) -> list[int]:
    """/proc/stat's times: user nice system idle iowait irq softirq steal (jiffies), of the
    whole machine (the `cpu` line) or summed over the lines of `cpus`."""
    lines = Path("/proc/stat").read_text().splitlines()
    wanted = {"cpu"} if cpus is None else {f"cpu{c}" for c in cpus}
    picked = [[int(x) for x in line.split()[1:9]] for line in lines
              if line.split(maxsplit=1)[0] in wanted]
    return [sum(col) for col in zip(*picked, strict=True)]


def idle_fraction(before: Sequence[int], after: Sequence[int]) -> float:
    """Share of CPU time idle (idle + iowait) between two cpu_times()."""
    delta = [b - a for a, b in zip(before, after, strict=True)]
    total = sum(delta)
    return (delta[3] + delta[4]) / total if total else 0.0


def numa_nodes() -> dict[int, list[int]]:
    """{node: CPUs} from sysfs."""
    return {int(path.name[4:]): sorted(parse_cpulist((path / "cpulist").read_text()))
            for path in sorted(Path("/sys/devices/system/node").glob("node[0-9]*"))}


def parse_cpulist(text: str) -> set[int]:
    """The CPUs of a kernel cpulist (`0-3,8`; empty: none)."""
    cpus: set[int] = set()
    for part in filter(None, text.strip().split(",")):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def numa_stat(cgroup: Path, key: str = "anon") -> dict[int, int]:
    """Bytes per node of one memory.numa_stat line: `anon N0=… N1=…`."""
    for line in (cgroup / "memory.numa_stat").read_text().splitlines():
        name, *fields = line.split()
        if name == key:
            return {int(f[1:f.index("=")]): int(f.split("=")[1]) for f in fields}
    raise RuntimeError(f"{cgroup}: no {key} in memory.numa_stat")


def drop_caches() -> None:
    run("sync")
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def sample_every(interval: float, duration: float) -> Iterable[float]:
    """Yield the time since start every `interval` seconds for `duration` seconds."""
    start = time.monotonic()
    n = 0
    while True:
        now = time.monotonic() - start
        if now > duration:
            return
        yield now
        n += 1
        time.sleep(max(0.0, start + n * interval - time.monotonic()))


def meminfo(key: str) -> int:
    """One /proc/meminfo value, in bytes (kB values) or as is (counts)."""
    info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    return _meminfo_value(info[key])


def _meminfo_value(value: str) -> int:
    """`  123 kB` in bytes, a count (`  12`) as is."""
    number, *unit = value.split()
    return int(number) * (1024 if unit == ["kB"] else 1)


def node_meminfo(node: int, key: str) -> int:
    """One value of a node's meminfo (`Node 1 MemFree:  123 kB`), in bytes."""
    for line in Path(f"/sys/devices/system/node/node{node}/meminfo").read_text().splitlines():
        name, _, value = line.partition(":")
        if name.split()[-1] == key:
            return _meminfo_value(value)
    raise RuntimeError(f"node {node}: no {key} in its meminfo")


def _node_hugepages(node: int) -> Path:
    size = meminfo("Hugepagesize") // 1024
    return Path(f"/sys/devices/system/node/node{node}/hugepages/hugepages-{size}kB/nr_hugepages")


@contextmanager
def ballast(keep_free: dict[int, int]) -> Iterator[int]:
    """Take the free memory of each node in `keep_free` but the bytes given for it, as the
    rest of a busy host would hold it, and give it back at the end; yields the bytes taken.

    Reserved as huge pages, node by node: the kernel moves free memory into the pool at once
    and zeroes a huge page only when a process maps it (a process allocating and touching
    the same 2.5 GiB took 137-276 s under TCG on a busy host). Node by node and no more than
    is free: asked for more than a node has free, or for a total (vm.nr_hugepages, which
    fills the nodes in turn), the kernel reclaims page cache to make huge pages, and would
    evict the very memory an experiment watches.
    """
    page = meminfo("Hugepagesize")
    files = {node: _node_hugepages(node) for node in keep_free}
    before = {node: int(f.read_text()) for node, f in files.items()}
    try:
        for node, f in files.items():
            take = max(0, node_meminfo(node, "MemFree") - keep_free[node]) // page
            f.write_text(f"{before[node] + take}\n")
        yield sum(int(f.read_text()) - before[node] for node, f in files.items()) * page
    finally:
        for node, f in files.items():
            f.write_text(f"{before[node]}\n")
