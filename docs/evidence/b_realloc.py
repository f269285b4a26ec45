#!/usr/bin/env python3
"""Experiment (b), Red Hat reference architecture §4.3: live reallocation; throughput follows
the CPUs.

Two tenants run the same fixed CPU-bound workload (WORKERS processes each, counting
operations). By day `alpha` has 2 CPUs and `beta` 1; `slicectl apply --profile night` swaps
them live, without restarting anything. Operations per second and each tenant's
cpuset.cpus.effective are sampled every 0.25 s; "follows" is measured from the sample where a
tenant's cpuset changed, not from the start of the apply.

The sampler and slicectl run on the housekeeping CPUs (0,4), which the workers never use.
Only 3 of the 8 vCPUs are busy: under TCG the vCPUs are threads on the host's 2 cores, and
with all 8 busy the apply itself (a Python process on a vCPU getting a quarter of a host
core) took 120 s on a loaded host.

    tests/testbed/run docs/evidence/b_realloc.py [--quick]     (docs/evidence/run b)

Writes b_realloc.csv (t, tenant, ops_per_s, cpus) and b_realloc_events.csv (the apply and
the moment each tenant's CPUs moved).
"""

from __future__ import annotations

import os
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
housekeeping: {cpus: "0,4"}   # the sampler and slicectl run there, off the tenants' CPUs
tenants:
  alpha: {cpus: "1,5", numa: any, cpu_weight: 100}
  beta: {cpus: "2", numa: any, cpu_weight: 100}
profiles:
  night:                       # Red Hat reference architecture §4.3: swap CPU counts
    alpha: {cpus: "1"}
    beta: {cpus: "2,6"}
"""
TENANT_NAMES = ("alpha", "beta")
NIGHT = {"alpha": "1", "beta": "2,6"}  # cpuset.cpus.effective once the night profile is in force
WORKERS = 2  # per tenant: enough to fill 2 CPUs
INTERVAL = 0.25
BEFORE, AFTER = 20.0, 20.0
QUICK_BEFORE, QUICK_AFTER = 6.0, 6.0


def start_workers() -> dict[str, list[Path]]:
    return {t: lab.start_counting(t, WORKERS) for t in TENANT_NAMES}




@dataclass(frozen=True)
class Sample:
    t: float  # seconds since the recording started
    tenant: str
    ops_per_s: float
    cpus: str  # cpuset.cpus.effective


@dataclass(frozen=True)
class Event:
    event: str  # apply_start, apply_end, moved_alpha, moved_beta (cpuset.cpus.effective)
    t: float


@dataclass(frozen=True)
class Result:
    follow_s: float  # the first cpuset change -> alpha's share of the ops past the midpoint
    apply_s: float  # how long `slicectl apply --profile night` took
    move_s: float  # from the start of the apply until both cpusets had changed
    day_ratio: float  # alpha's ops/s over beta's, by day (2 CPUs vs 1)
    night_ratio: float  # the same at night (2 vs 4)


class Recorder:
    """Ops per second of each tenant and its CPUs, every INTERVAL seconds."""

    def __init__(self, counters: dict[str, list[Path]]) -> None:
        self.counters = counters
        self.cpusets = {t: lab.control_group(f"tenants-{t}.slice") / "cpuset.cpus.effective"
                        for t in TENANT_NAMES}
        self.samples: list[Sample] = []
        self.start = time.monotonic()
        self.last = {t: lab.operations(counters[t]) for t in TENANT_NAMES}
        self.last_t = self.start

    def sample(self) -> None:
        now = time.monotonic()
        for tenant in TENANT_NAMES:
            count = lab.operations(self.counters[tenant])
            self.samples.append(Sample(now - self.start, tenant,
                                       (count - self.last[tenant]) / (now - self.last_t),
                                       self.cpusets[tenant].read_text().strip()))
            self.last[tenant] = count
        self.last_t = now

    def record(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            time.sleep(INTERVAL)
            self.sample()

    def mean(self, tenant: str, t0: float, t1: float) -> float:
        values = [s.ops_per_s for s in self.samples if s.tenant == tenant and t0 <= s.t < t1]
        return sum(values) / len(values)


def apply_night(rec: Recorder, path: Path) -> list[Event]:
    """Apply the night profile in the background while sampling; when did each tenant's
    CPUs move (the first sample showing its night cpuset)?"""
    started = time.monotonic() - rec.start
    proc = subprocess.Popen(["slicectl", "apply", str(path), "--profile", "night", "--yes"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    moved: dict[str, float] = {}
    ended = None
    while ended is None or len(moved) < len(TENANT_NAMES):
        time.sleep(INTERVAL)
        rec.sample()
        for s in rec.samples[-len(TENANT_NAMES):]:
            if s.tenant not in moved and s.cpus == NIGHT[s.tenant]:
                moved[s.tenant] = s.t
        if ended is None and proc.poll() is not None:
            if proc.returncode != 0:
                raise RuntimeError(f"apply --profile night failed:\n{proc.communicate()[0]}")
            ended = time.monotonic() - rec.start
        if ended is not None and len(moved) < len(TENANT_NAMES) and (
                time.monotonic() - rec.start > ended + 10):
            raise RuntimeError(f"the apply ended but the cpusets did not move: {moved}")
    return [Event("apply_start", started), Event("apply_end", ended),
            *(Event(f"moved_{t}", moved[t]) for t in TENANT_NAMES)]


def alpha_share(samples: list[Sample], window: float = 1.0) -> list[tuple[float, float]]:
    """(t, alpha's share of both tenants' operations over the `window` seconds up to t).

    A share, not ops/s: under TCG the host starves all vCPUs at once (other load on its two
    cores, slicectl's own apply on a housekeeping vCPU), which moves both tenants' ops/s
    together by up to 2x between samples but hardly their ratio."""
    ops = {t: [(s.t, s.ops_per_s) for s in samples if s.tenant == t] for t in TENANT_NAMES}
    out = []
    for i, (t, _) in enumerate(ops["alpha"]):
        mine = {n: [v for u, v in ops[n][:i + 1] if u > t - window] for n in TENANT_NAMES}
        total = sum(map(sum, mine.values()))
        if total:
            out.append((t, sum(mine["alpha"]) / total))
    return out


def follow_time(samples: list[Sample], moved: float) -> float:
    """Seconds from the first cpuset change until alpha's share (alpha_share) has crossed
    the midpoint between its day share (2 CPUs of 3: 2/3) and its night share (1/3), and
    stays past it for a second: the throughput has followed the CPUs."""
    share = [(t, v) for t, v in alpha_share(samples) if t >= moved]
    for t, _ in share:
        if all(v < 0.5 for u, v in share if t <= u <= t + 1.0):
            return t - moved
    return float("inf")


def main(quick: bool = False) -> Result:
    before, after = (QUICK_BEFORE, QUICK_AFTER) if quick else (BEFORE, AFTER)
    with lab.experiment():
        path = lab.tenants_file("b_realloc", TENANTS)
        lab.apply(path)
        counters = start_workers()
        time.sleep(3.0)  # the workers' interpreters start
        rec = Recorder(counters)
        rec.record(before)
        events = apply_night(rec, path)
        rec.record(after)
    lab.write_csv("b_realloc", rec.samples)
    lab.write_csv("b_realloc_events", events)
    t = {e.event: e.t for e in events}
    day = {n: rec.mean(n, 1.0, t["apply_start"]) for n in TENANT_NAMES}
    night = {n: rec.mean(n, t[f"moved_{n}"] + 2.0, 1e9) for n in TENANT_NAMES}
    result = Result(follow_time(rec.samples, min(t[f"moved_{n}"] for n in TENANT_NAMES)),
                    t["apply_end"] - t["apply_start"],
                    max(t[f"moved_{n}"] for n in TENANT_NAMES) - t["apply_start"],
                    day["alpha"] / day["beta"], night["alpha"] / night["beta"])
    print(f"b_realloc: {result}", flush=True)
    return result


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
