#!/usr/bin/env python3
"""Experiment (h): a latency tenant as a `member` and as an `isolated` cpuset partition.

A tenant pinned with `cpus` keeps the other tenants' tasks off its CPUs, not the kernel's:
load balancing, unbound workqueues and interrupts still reach them. `cpuset_partition:
isolated` (systemd 261, Linux 6.7) takes its CPUs out of load balancing and out of the
unbound workqueues' mask. Here the same tenant (`lat`, 2 CPUs) runs cyclictest (Debian's
rt-tests: one SCHED_FIFO thread per CPU, waking every millisecond) beside a noisy neighbour
(`noisy`, 4 CPUs: CPU hogs and a disk writer whose writeback runs in unbound kworkers) and
kernel work in housekeeping (`sync` in a loop), once as a member and once isolated, in one
boot. For each mode: the wake-up latency cyclictest measured (its histogram: median, 99th and
99.9th percentile, maximum), and the share of the tenant's CPUs' time spent in anything but
the tenant (/proc/stat's busy time of those CPUs minus the tenant's own cpu.stat usage:
kworkers, interrupts, softirqs, other tasks), and the interrupts those CPUs took.

Under qemu's TCG a vCPU is a host thread, descheduled whenever the host runs another: the
absolute latencies measure the emulator, not the kernel, and only the two modes side by side
in the same boot mean anything (docs/evidence/README.md).

    SLICECTL_TESTBED_SUITE=forky tests/testbed/run docs/evidence/h_isolated.py [--quick]
    (or: SLICECTL_TESTBED_SUITE=forky docs/evidence/run h)

Needs systemd 261 or later, Linux 6.7 or later and cyclictest (the testbed's images have
rt-tests). Writes h_isolated.csv (one row per mode) and h_isolated_hist.csv (mode,
latency_us, count: the histogram, merged over the threads).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(os.environ.get("SLICECTL_CHECKOUT", Path(__file__).parent.parent
                                           .parent)) / "docs" / "evidence"))
import lab  # noqa: E402

TENANTS = """\
version: 1
housekeeping: {cpus: 2}
tenants:
  lat: {cpus: 2%s}
  noisy: {cpus: 4, numa: any}   # 4 CPUs: more than a node of the testbed holds
"""
MODES = ("member", "isolated")
WINDOW, QUICK_WINDOW = 30, 10  # seconds cyclictest runs in each mode
WARMUP = 3.0
HIST_US = 20000  # cyclictest's histogram: 1 µs buckets up to 20 ms, the rest overflows
NOISE = {
    # unit: (slice, command)
    "hog": ("tenants-noisy.slice", "exec stress-ng --quiet --cpu 4 --timeout 0"),
    "writer": ("tenants-noisy.slice",
               "while :; do dd if=/dev/zero of=/var/tmp/ev-h-writer bs=1M count=32 "
               "conv=fsync status=none; done"),
    "sync": ("system.slice", "while :; do sync; sleep 0.05; done"),
}


class Unavailable(RuntimeError):
    """This guest cannot run the experiment (its versions or a missing tool)."""


def versions() -> tuple[int, tuple[int, int]]:
    systemd = int(lab.run("systemctl", "--version").stdout.split()[1])
    release = os.uname().release.split("-")[0].split(".")
    return systemd, (int(release[0]), int(release[1]))


def check() -> None:
    systemd, kernel = versions()
    if systemd < 261 or kernel < (6, 7):
        raise Unavailable(f"needs systemd 261 and Linux 6.7: this guest runs systemd {systemd} "
                          f"and Linux {kernel[0]}.{kernel[1]}")
    if shutil.which("cyclictest") is None:
        raise Unavailable("cyclictest is not installed (Debian's rt-tests)")


@dataclass(frozen=True)
class Row:
    mode: str  # member or isolated
    partition: str  # what the kernel reported in cpuset.cpus.partition
    cpus: str  # the tenant's CPUs
    samples: int
    p50_us: float
    p99_us: float
    p999_us: float
    max_us: float
    over_1ms_pct: float  # wake-ups later than 1 ms
    other_pct: float  # the tenant's CPUs' time spent in anything but the tenant
    irqs_per_s: float  # interrupts taken by the tenant's CPUs
    kernel_isolated: str  # the root cgroup's cpuset.cpus.isolated (the kernel's isolated CPUs)
    workqueue_cpus: str  # the CPUs unbound workqueues may run on (their cpumask)


@dataclass(frozen=True)
class Bucket:
    mode: str
    latency_us: int
    count: int


@dataclass(frozen=True)
class Result:
    member: Row
    isolated: Row


def interrupts(cpus: list[int]) -> int:
    """Interrupts the CPUs took so far (/proc/interrupts' columns of those CPUs)."""
    lines = Path("/proc/interrupts").read_text().splitlines()
    columns = {int(name[3:]): i for i, name in enumerate(lines[0].split())}
    total = 0
    for line in lines[1:]:
        fields = line.split()[1:]
        for cpu in cpus:
            i = columns.get(cpu)
            if i is not None and i < len(fields) and fields[i].isdigit():
                total += int(fields[i])
    return total


WORKQUEUE_MASK = Path("/sys/devices/virtual/workqueue/cpumask")


def mask_cpus(text: str) -> list[int]:
    """The CPUs of a kernel hex mask ("ff", "00000000,000000f3")."""
    bits = int(text.strip().replace(",", "") or "0", 16)
    return [cpu for cpu in range(bits.bit_length()) if bits >> cpu & 1]


def histogram(output: str) -> tuple[dict[int, int], int, float]:
    """cyclictest -h: ({latency µs: count} merged over threads, overflows, the max µs)."""
    counts: dict[int, int] = {}
    overflows, longest = 0, 0.0
    for line in output.splitlines():
        if line.startswith("# Histogram Overflows:"):
            overflows = sum(int(x) for x in line.split(":", 1)[1].split())
        elif line.startswith("# Max Latencies:"):
            longest = max(float(x) for x in line.split(":", 1)[1].split())
        elif line[:1].isdigit():
            us, *per_thread = (int(x) for x in line.split())
            if sum(per_thread):
                counts[us] = counts.get(us, 0) + sum(per_thread)
    return counts, overflows, longest


def percentile(counts: dict[int, int], overflows: int, longest: float, q: float) -> float:
    total = sum(counts.values()) + overflows
    seen = 0
    for us in sorted(counts):
        seen += counts[us]
        if seen >= q * total:
            return float(us)
    return longest  # in the overflow: at most the longest


def run_mode(mode: str, seconds: int) -> tuple[Row, list[Bucket]]:
    extra = "" if mode == "member" else ", cpuset_partition: isolated"
    lab.apply(lab.tenants_file(f"h_{mode}", TENANTS % extra))
    group = lab.control_group("tenants-lat.slice")
    partition = (group / "cpuset.cpus.partition").read_text().strip()
    if partition != mode:
        raise RuntimeError(f"tenants-lat.slice: the kernel reports {partition!r}, not {mode}")
    cpus = sorted(lab.parse_cpulist((group / "cpuset.cpus.effective").read_text()))
    for unit, (slice_, command) in NOISE.items():
        lab.start(unit, slice_, command)
    time.sleep(WARMUP)
    cmd = ["systemd-run", "--quiet", "--pipe", "--wait", "--collect", f"--unit={lab.PREFIX}cyclic",
           "--slice=tenants-lat.slice", "--", "cyclictest", "--mlockall", "--quiet",
           f"--threads={len(cpus)}", f"--affinity={','.join(map(str, cpus))}",
           "--priority=90", "--interval=1000", f"--duration={seconds}", f"--histogram={HIST_US}"]
    usage0 = lab.keyed(group / "cpu.stat")["usage_usec"]
    stat0, irq0, t0 = lab.cpu_times(cpus), interrupts(cpus), time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=seconds * 4 + 120)
    stat1, irq1, wall = lab.cpu_times(cpus), interrupts(cpus), time.monotonic() - t0
    usage1 = lab.keyed(group / "cpu.stat")["usage_usec"]
    lab.stop_units()
    if proc.returncode != 0:
        raise RuntimeError(f"cyclictest exited {proc.returncode}: {proc.stderr[-2000:]}")
    counts, overflows, longest = histogram(proc.stdout)
    samples = sum(counts.values()) + overflows
    if not samples:
        raise RuntimeError(f"cyclictest measured nothing:\n{proc.stdout[-2000:]}")
    delta = [b - a for a, b in zip(stat0, stat1, strict=True)]
    hz = os.sysconf("SC_CLK_TCK")
    busy_s = (sum(delta) - delta[3] - delta[4]) / hz
    other_s = max(0.0, busy_s - (usage1 - usage0) / 1e6)
    late = sum(n for us, n in counts.items() if us > 1000) + overflows
    isolated = (lab.CGROUP / "cpuset.cpus.isolated").read_text().strip()
    workqueues = ",".join(map(str, mask_cpus(WORKQUEUE_MASK.read_text())))
    row = Row(mode, partition, ",".join(map(str, cpus)), samples,
              percentile(counts, overflows, longest, 0.50),
              percentile(counts, overflows, longest, 0.99),
              percentile(counts, overflows, longest, 0.999), longest,
              100 * late / samples, 100 * other_s / (wall * len(cpus)),
              (irq1 - irq0) / wall, isolated, workqueues)
    print(f"h_isolated: {row}", flush=True)
    return row, [Bucket(mode, us, n) for us, n in sorted(counts.items())] + (
        [Bucket(mode, HIST_US, overflows)] if overflows else [])


def main(quick: bool = False) -> Result:
    check()
    rows: dict[str, Row] = {}
    buckets: list[Bucket] = []
    with lab.experiment():
        try:
            for mode in MODES:
                rows[mode], hist = run_mode(mode, QUICK_WINDOW if quick else WINDOW)
                buckets += hist
        finally:
            Path("/var/tmp/ev-h-writer").unlink(missing_ok=True)
            # a member again: apply puts the IRQs and the workqueue mask back as it found them
            lab.apply(lab.tenants_file("h_member", TENANTS % ""))
    lab.write_csv("h_isolated", list(rows.values()))
    lab.write_csv("h_isolated_hist", buckets)
    result = Result(rows["member"], rows["isolated"])
    print(f"h_isolated: {result}", flush=True)
    return result


if __name__ == "__main__":
    try:
        main(quick="--quick" in sys.argv)
    except Unavailable as e:
        sys.exit(f"h_isolated: {e}")
