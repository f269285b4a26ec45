#!/usr/bin/env python3
"""Experiment (b), seed 000 §4.3: live reallocation; throughput follows the CPUs.

Two tenants run the same fixed CPU-bound workload (WORKERS processes each, counting
operations). By day `alpha` has 4 CPUs and `beta` 2; `slicectl apply --profile night` swaps
them live, without restarting anything. Operations per second are sampled every 0.25 s.

    tests/testbed/run docs/evidence/b_realloc.py [--quick]     (docs/evidence/run b)

Writes b_realloc.csv (t, tenant, ops_per_s, cpus) and b_realloc_events.csv (the apply and
the moment the CPUs moved).
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
  alpha: {cpus: "1-2,5-6", numa: any, cpu_weight: 100}
  beta: {cpus: "3,7", numa: any, cpu_weight: 100}
profiles:
  night:                       # seed 000 §4.3: swap CPU counts between instances
    alpha: {cpus: "1,5"}
    beta: {cpus: "2-3,6-7"}
"""
TENANT_NAMES = ("alpha", "beta")
NIGHT_BETA = "2-3,6-7"  # beta's CPUs once the night profile is in force
WORKERS = 4  # per tenant: enough to fill 4 CPUs
INTERVAL = 0.25
BEFORE, AFTER = 20.0, 20.0
QUICK_BEFORE, QUICK_AFTER = 6.0, 6.0


def start_workers() -> dict[str, list[Path]]:
    return {t: lab.start_counting(t, WORKERS) for t in TENANT_NAMES}


def cpus(tenant: str) -> str:
    return (lab.control_group(f"tenants-{tenant}.slice") / "cpuset.cpus.effective").read_text(
        ).strip()


@dataclass(frozen=True)
class Sample:
    t: float  # seconds since the recording started
    tenant: str
    ops_per_s: float
    cpus: str  # cpuset.cpus.effective


@dataclass(frozen=True)
class Event:
    event: str  # apply_start, apply_end, cpus_moved
    t: float


@dataclass(frozen=True)
class Result:
    follow_s: float  # CPUs moved -> both tenants within 10% of their new level
    apply_s: float  # how long `slicectl apply --profile night` took
    day_ratio: float  # alpha's ops/s over beta's, by day (4 CPUs vs 2)
    night_ratio: float  # the same at night (2 vs 4)


class Recorder:
    """Ops per second of each tenant and its CPUs, every INTERVAL seconds."""

    def __init__(self, counters: dict[str, list[Path]]) -> None:
        self.counters = counters
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
                                       cpus(tenant)))
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
    """Apply the night profile in the background while sampling; when did the CPUs move?"""
    started = time.monotonic() - rec.start
    proc = subprocess.Popen(["slicectl", "apply", str(path), "--profile", "night", "--yes"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    moved = None
    while proc.poll() is None or moved is None:
        time.sleep(INTERVAL)
        rec.sample()
        if moved is None and rec.samples[-1].cpus == NIGHT_BETA:
            moved = rec.samples[-1].t
        if proc.poll() is not None and proc.returncode != 0:
            raise RuntimeError(f"apply --profile night failed:\n{proc.communicate()[0]}")
    assert moved is not None
    return [Event("apply_start", started), Event("apply_end", time.monotonic() - rec.start),
            Event("cpus_moved", moved)]


def follow_time(samples: list[Sample], moved: float) -> float:
    """Seconds from the CPUs moving until both tenants are within 10% of their new level
    (the mean of the last third of the run) and stay there for a second."""
    after = [s for s in samples if s.t > moved]
    level = {}
    for tenant in TENANT_NAMES:
        mine = [s.ops_per_s for s in after if s.tenant == tenant]
        tail = mine[len(mine) * 2 // 3:]
        level[tenant] = sum(tail) / len(tail)

    def settled(t: float) -> bool:
        return all(abs(s.ops_per_s - level[s.tenant]) <= 0.1 * level[s.tenant]
                   for s in after if t <= s.t <= t + 1.0)
    return next((t - moved for t in sorted({s.t for s in after}) if settled(t)), float("inf"))


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
    night = {n: rec.mean(n, t["cpus_moved"] + 2.0, 1e9) for n in TENANT_NAMES}
    result = Result(follow_time(rec.samples, t["cpus_moved"]),
                    t["apply_end"] - t["apply_start"], day["alpha"] / day["beta"],
                    night["alpha"] / night["beta"])
    print(f"b_realloc: {result}", flush=True)
    return result


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
