#!/usr/bin/env python3
"""Benchmarks that need the real guest (run by bench/run through tests/testbed/run).

sampler.1000: CPU time per refresh of slicectl's sampler (sample + metrics) over a tree of
  1,000 slices, vs systemd-cgtop's CPU time per refresh on the same tree, same boot.
tui.100: CPU use of the TUI refreshing at 1 Hz over 100 slices (headless Textual), vs
  systemd-cgtop at 1 Hz on the same tree, as percent of one CPU.
apply.100: wall time of `slicectl apply` for 100 tenants, vs a shell loop of
  `systemctl set-property` + `systemctl start` per tenant producing the same slices.
Prints one line `BENCH-JSON {...}` for the host side.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CGROOT = Path("/sys/fs/cgroup")
ONLY = set(filter(None, os.environ.get("BENCH_ONLY",
                                       "sampler.1000,tui.100,apply.100").split(",")))
QUICK = os.environ.get("BENCH_QUICK") == "1"


def result(value: float, unit: str, anchor: str, anchor_value: float) -> dict[str, Any]:
    return {"value": round(value, 6), "unit": unit, "anchor": anchor,
            "anchor_value": round(anchor_value, 6), "ratio": round(value / anchor_value, 3)}


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


@contextmanager
def slice_tree(name: str, n: int) -> Iterator[int]:
    """N empty slices under /sys/fs/cgroup/NAME.slice with cpu, io, memory and pids enabled
    (plain cgroup directories: the sampler and systemd-cgtop read the same tree)."""
    tree = CGROOT / f"{name}.slice"
    for ctl in ("cpu", "io", "memory", "pids"):
        (CGROOT / "cgroup.subtree_control").write_text(f"+{ctl}\n")
    tree.mkdir(exist_ok=True)
    (tree / "cgroup.subtree_control").write_text("+cpu +io +memory +pids\n")
    for i in range(n):
        (tree / f"{name}-s{i:04d}.slice").mkdir(exist_ok=True)
    try:
        yield n
    finally:
        for d in sorted(tree.iterdir(), reverse=True):
            if d.is_dir():
                d.rmdir()
        tree.rmdir()


def bench_sampler() -> dict[str, Any]:
    refreshes = 10 if QUICK else 30
    with slice_tree("benchtree", 1000):
        sys.path.insert(0, os.environ.get("SLICECTL_CHECKOUT", "."))
        from slicectl.metrics import compute
        from slicectl.sampler import Sampler

        sampler = Sampler(CGROOT)
        prev = sampler.sample()
        time.sleep(0.1)
        n = len(prev.cgroups)
        start = time.process_time()
        for _ in range(refreshes):
            cur = sampler.sample()
            compute(prev, cur)
            prev = cur
        ours = (time.process_time() - start) / refreshes
        sampler.close()
        # systemd-cgtop on the same tree: batch mode, CPU time of the whole process / refreshes
        before = children_cpu()
        subprocess.run(["systemd-cgtop", "--batch", f"--iterations={refreshes}",
                        "--delay=0.05", "--depth=3"], check=True, stdout=subprocess.DEVNULL)
        cgtop = (children_cpu() - before) / refreshes
    r = result(ours, "s CPU/refresh", "systemd-cgtop", cgtop)
    r["cgroups"] = n
    return r


TUI_SCRIPT = """
import asyncio, sys, time
from pathlib import Path
from slicectl.sampler import Sampler
from slicectl.tui import tui_settings
from slicectl.tui.app import SlicectlApp

async def main() -> None:
    settings = tui_settings(None, Path("/sys/fs/cgroup"), 1.0)
    with Sampler(settings.cgroup_root) as sampler:
        app = SlicectlApp(settings, sampler)
        async with app.run_test(size=(120, 40)) as pilot:
            while app.samples < 2:
                await pilot.pause(0.1)
            t0, c0 = time.monotonic(), time.process_time()
            await pilot.pause(float(sys.argv[1]))
            print((time.process_time() - c0) / (time.monotonic() - t0) * 100)

asyncio.run(main())
"""


def bench_tui() -> dict[str, Any]:
    seconds = 10 if QUICK else 30
    with slice_tree("benchtui", 100):
        proc = subprocess.run([sys.executable, "-c", TUI_SCRIPT, str(seconds)], check=True,
                              capture_output=True, text=True)
        ours = float(proc.stdout.strip().splitlines()[-1])
        before = children_cpu()
        start = time.monotonic()
        subprocess.run(["systemd-cgtop", "--batch", f"--iterations={seconds}", "--delay=1",
                        "--depth=3"], check=True, stdout=subprocess.DEVNULL)
        cgtop = (children_cpu() - before) / (time.monotonic() - start) * 100
    return result(ours, "% of one CPU at 1 Hz", "systemd-cgtop at 1 Hz", cgtop)


def tenants_yaml(n: int) -> str:
    lines = ["version: 1", "housekeeping: {cpus: 2}", "tenants:"]
    for i in range(n):
        lines.append(f"  t{i:03d}: {{cpu_weight: {100 + i}, memory_max: {64 + i}M}}")
    return "\n".join(lines) + "\n"


def cleanup(n: int) -> None:
    units = ["tenants.slice"] + [f"tenants-t{i:03d}.slice" for i in range(n)]
    subprocess.run(["systemctl", "stop", *units], check=False, capture_output=True)
    etc = Path("/etc/systemd/system")
    for p in list(etc.glob("tenants*")) + [etc / ".slicectl-manifest.json"]:
        shutil.rmtree(p) if p.is_dir() else p.unlink(missing_ok=True)
    for d in ("/etc/systemd/system.control", "/run/systemd/system.control"):
        for p in Path(d).glob("tenants*"):
            shutil.rmtree(p)
    subprocess.run(["systemctl", "daemon-reload"], check=True)
    subprocess.run(["systemctl", "reset-failed"], check=False)


def bench_apply() -> dict[str, Any]:
    n = 100
    work = Path(tempfile.mkdtemp())
    (work / "tenants.yaml").write_text(tenants_yaml(n))
    plan = json.loads(subprocess.run(["slicectl", "plan", str(work / "tenants.yaml"),
                                      "--json"], check=True, capture_output=True,
                                     text=True).stdout)
    pool = plan["shared_pool"]
    cleanup(n)
    start = time.perf_counter()
    proc = subprocess.run(["slicectl", "apply", str(work / "tenants.yaml"), "--yes"],
                          capture_output=True, text=True)
    ours = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"apply failed: {proc.stdout}{proc.stderr}")
    cleanup(n)
    script = work / "loop.sh"
    script.write_text("set -e\n" + "".join(
        f"systemctl set-property tenants-t{i:03d}.slice AllowedCPUs={pool} "
        f"CPUWeight={100 + i} MemoryMax={64 + i}M\n"
        f"systemctl start tenants-t{i:03d}.slice\n" for i in range(n)))
    start = time.perf_counter()
    subprocess.run(["sh", str(script)], check=True, capture_output=True)
    loop = time.perf_counter() - start
    cleanup(n)
    return result(ours, "s", "systemctl set-property loop", loop)


def main() -> int:
    out: dict[str, Any] = {}
    if "sampler.1000" in ONLY:
        out["sampler.1000"] = bench_sampler()
    if "tui.100" in ONLY:
        out["tui.100"] = bench_tui()
    if "apply.100" in ONLY:
        out["apply.100"] = bench_apply()
    print("BENCH-JSON " + json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
