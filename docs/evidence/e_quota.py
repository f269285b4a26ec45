#!/usr/bin/env python3
"""Experiment (e), Babulal, LKML 2011: the same CPU quotas with and without pinning (AllowedCPUs).

Babulal, LKML 2011: cgroups whose quotas add up to the machine, each with more CPU-bound
tasks than its quota allows; unpinned, the CPUs were 30-40 % idle while the groups were
throttled; pinned (a cpuset per group), idle was nearly zero. Here, in two shapes:

- `2cpu` (the measurement): two tenants, `cpu_quota: 100%` each (together the 2 CPUs they
  may use, 1 and 2; housekeeping holds the other six), 2 busy workers each. `unpinned`: both
  share CPUs 1-2 (the pool, no AllowedCPUs of their own); `pinned`: one CPU each (`cpus`).
  Two busy vCPUs on the host's two cores: each vCPU has a host core most of the time.
- `8cpu` (Babulal's shape, full run only): four tenants, `cpu_quota: 200%` each (together the
  8 vCPUs), 4 workers each; unpinned vs `cpus: 2` each. Eight busy vCPUs are threads
  time-sliced on two host cores, so this shape measures the emulator as much as the kernel
  (docs/evidence/README.md).

For each: idle time of the tenants' CPUs (/proc/stat, per CPU), each tenant's throttled time
and CPU use (cpu.stat), and its operations per second. Measured inside the guest: the guest's
clock runs while the host has a vCPU's thread descheduled, so a vCPU the host starves shows
as busy in the guest, never as idle.

    tests/testbed/run docs/evidence/e_quota.py [--quick]     (docs/evidence/run e)

Writes e_quota.csv: shape, setup, tenant, ops_per_s, cpu_cores, throttled_pct, idle_pct.
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


@dataclass(frozen=True)
class Shape:
    housekeeping: str  # tenants.yaml's housekeeping line ("" for none)
    cpus: list[int]  # the CPUs the tenants run on (whose idle time counts)
    tenants: dict[str, str]  # name: its cpus when pinned
    quota: str
    workers: int  # per tenant


SHAPES = {
    "2cpu": Shape('housekeeping: {cpus: "0,3-7"}\n', [1, 2], {"t1": "1", "t2": "2"}, "100%", 2),
    "8cpu": Shape("", list(range(8)), {"t1": "0,4", "t2": "1,5", "t3": "2,6", "t4": "3,7"},
                  "200%", 4),
}
QUICK_SHAPES = ("2cpu",)
SETUPS = ("unpinned", "pinned")
WINDOW, QUICK_WINDOW = 30.0, 10.0
WARMUP = 4.0


def tenants_yaml(shape: Shape, setup: str) -> str:
    lines = [f"  {n}: {{cpu_quota: {shape.quota}, numa: any"
             + (f', cpus: "{cpus}"' if setup == "pinned" else "") + "}\n"
             for n, cpus in shape.tenants.items()]
    return "version: 1\n" + shape.housekeeping + "tenants:\n" + "".join(lines)


@dataclass(frozen=True)
class Row:
    shape: str  # 2cpu or 8cpu
    setup: str  # unpinned or pinned
    tenant: str  # a tenant, or "all"
    ops_per_s: float
    cpu_cores: float  # cpu.stat usage over the window
    throttled_pct: float  # share of the window the tenant was throttled (cpu.stat)
    idle_pct: float  # idle time of the tenants' CPUs (the same for every row of a setup)


@dataclass(frozen=True)
class Result:
    idle_unpinned_pct: float  # the 2cpu shape
    idle_pinned_pct: float
    throttled_unpinned_pct: float  # the tenants' mean throttled time
    throttled_pinned_pct: float
    ops_unpinned: float
    ops_pinned: float
    cores_unpinned: float  # CPU the tenants used together (cores)
    cores_pinned: float


def run_setup(name: str, shape: Shape, setup: str, window: float) -> list[Row]:
    lab.apply(lab.tenants_file(f"e_{name}_{setup}", tenants_yaml(shape, setup)))
    counters = {n: lab.start_counting(n, shape.workers) for n in shape.tenants}
    time.sleep(WARMUP)
    cgroups = {n: lab.control_group(f"tenants-{n}.slice") for n in shape.tenants}

    def read() -> dict[str, tuple[int, dict[str, int]]]:
        return {n: (lab.operations(counters[n]), lab.keyed(cg / "cpu.stat"))
                for n, cg in cgroups.items()}
    before = read()
    cpu0, t0 = lab.cpu_times(shape.cpus), time.monotonic()
    time.sleep(window)
    after = read()
    cpu1, wall = lab.cpu_times(shape.cpus), time.monotonic() - t0
    lab.stop_units()
    idle = 100 * lab.idle_fraction(cpu0, cpu1)
    rows = []
    for n in shape.tenants:
        (o0, s0), (o1, s1) = before[n], after[n]
        rows.append(Row(name, setup, n, (o1 - o0) / wall,
                        (s1["usage_usec"] - s0["usage_usec"]) / 1e6 / wall,
                        100 * (s1["throttled_usec"] - s0["throttled_usec"]) / 1e6 / wall, idle))
    rows.append(Row(name, setup, "all", sum(r.ops_per_s for r in rows),
                    sum(r.cpu_cores for r in rows),
                    sum(r.throttled_pct for r in rows) / len(rows), idle))
    print(f"e_quota: {rows[-1]}", flush=True)
    return rows


def main(quick: bool = False) -> Result:
    rows: list[Row] = []
    with lab.experiment():
        for name in QUICK_SHAPES if quick else SHAPES:
            for setup in SETUPS:
                rows += run_setup(name, SHAPES[name], setup, QUICK_WINDOW if quick else WINDOW)
                lab.reset()
    lab.write_csv("e_quota", rows)

    def total(setup: str) -> Row:
        return next(r for r in rows if r.shape == "2cpu" and r.setup == setup
                    and r.tenant == "all")
    un, pin = total("unpinned"), total("pinned")
    result = Result(un.idle_pct, pin.idle_pct, un.throttled_pct, pin.throttled_pct,
                    un.ops_per_s, pin.ops_per_s, un.cpu_cores, pin.cpu_cores)
    print(f"e_quota: {result}", flush=True)
    return result


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
