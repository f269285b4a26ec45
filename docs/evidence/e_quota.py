#!/usr/bin/env python3
"""Experiment (e), seed 003: the same CPU quotas with and without pinning (AllowedCPUs).

Four tenants, each `cpu_quota: 200%` (together exactly the 8 CPUs) and each running 4 busy
workers that count operations: more than its quota allows, so every tenant is throttled.
`unpinned`: the tenants share all 8 CPUs (003's cgroups with cfs_quota_us and no cpuset);
`pinned`: each has 2 CPUs of its own (slicectl's `cpus: 2`). For each: the machine's idle
time (/proc/stat) and the operations per second of each tenant.

    tests/testbed/run docs/evidence/e_quota.py [--quick]     (docs/evidence/run e)

Writes e_quota.csv: setup, tenant, ops_per_s, cpu_cores, throttled_pct, idle_pct.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(os.environ.get("SLICECTL_CHECKOUT", Path(__file__).parent.parent
                                           .parent)) / "docs" / "evidence"))
import lab  # noqa: E402

NAMES = ("t1", "t2", "t3", "t4")
WORKERS = 4
SETUPS = {
    "unpinned": "".join(f"  {n}: {{cpu_quota: 200%}}\n" for n in NAMES),
    "pinned": "".join(f"  {n}: {{cpus: 2, cpu_quota: 200%}}\n" for n in NAMES),
}
WINDOW, QUICK_WINDOW = 30.0, 8.0
WARMUP = 4.0


@dataclass(frozen=True)
class Row:
    setup: str
    tenant: str  # a tenant, or "all"
    ops_per_s: float
    cpu_cores: float  # cpu.stat usage over the window
    throttled_pct: float  # share of the window the tenant was throttled (cpu.stat)
    idle_pct: float  # the machine's idle time (the same for every row of a setup)


@dataclass(frozen=True)
class Result:
    idle_unpinned_pct: float
    idle_pinned_pct: float
    ops_unpinned: float
    ops_pinned: float
    spread_unpinned: float  # (max - min) / mean of the tenants' ops/s
    spread_pinned: float


def run_setup(setup: str, window: float) -> list[Row]:
    lab.apply(lab.tenants_file(f"e_{setup}", "version: 1\ntenants:\n" + SETUPS[setup]))
    counters = {n: lab.start_counting(n, WORKERS) for n in NAMES}
    time.sleep(WARMUP)
    cgroups = {n: lab.control_group(f"tenants-{n}.slice") for n in NAMES}

    def read() -> dict[str, tuple[int, dict[str, int]]]:
        return {n: (lab.operations(counters[n]), lab.keyed(cg / "cpu.stat"))
                for n, cg in cgroups.items()}
    before = read()
    cpu0, t0 = lab.cpu_times(), time.monotonic()
    time.sleep(window)
    after = read()
    cpu1, wall = lab.cpu_times(), time.monotonic() - t0
    lab.stop_units()
    idle = 100 * lab.idle_fraction(cpu0, cpu1)
    rows = []
    for n in NAMES:
        (o0, s0), (o1, s1) = before[n], after[n]
        rows.append(Row(setup, n, (o1 - o0) / wall, (s1["usage_usec"] - s0["usage_usec"]) / 1e6
                        / wall, 100 * (s1["throttled_usec"] - s0["throttled_usec"]) / 1e6 / wall,
                        idle))
    rows.append(Row(setup, "all", sum(r.ops_per_s for r in rows),
                    sum(r.cpu_cores for r in rows), 0.0, idle))
    return rows


def main(quick: bool = False) -> Result:
    rows: list[Row] = []
    with lab.experiment():
        for setup in SETUPS:
            rows += run_setup(setup, QUICK_WINDOW if quick else WINDOW)
            lab.reset()
    lab.write_csv("e_quota", rows)

    def total(setup: str) -> Row:
        return next(r for r in rows if r.setup == setup and r.tenant == "all")

    def spread(setup: str) -> float:
        values = [r.ops_per_s for r in rows if r.setup == setup and r.tenant != "all"]
        return (max(values) - min(values)) / (sum(values) / len(values))
    result = Result(total("unpinned").idle_pct, total("pinned").idle_pct,
                    total("unpinned").ops_per_s, total("pinned").ops_per_s,
                    spread("unpinned"), spread("pinned"))
    print(f"e_quota: {result}", flush=True)
    return result


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
