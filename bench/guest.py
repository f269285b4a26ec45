#!/usr/bin/env python3
"""Benchmarks that need the real guest (run by bench/run through tests/testbed/run).

sampler.1000: CPU time per refresh of slicectl's sampler (sample + metrics) over a tree of
  1,000 slices, vs systemd-cgtop's CPU time per refresh on the same tree, same boot.
exporter.1000: CPU time per scrape of `slicectl exporter` (the installed command, scraped over
  HTTP) over a tree of 1,000 slices, vs systemd-cgtop's CPU per refresh on the same tree, same
  boot; and the exporter's RSS after 10, 100 and 1,000 scrapes (10 and 100 with --quick).
tui.100: CPU use of the TUI refreshing at 1 Hz over 100 slices (headless Textual), vs
  systemd-cgtop at 1 Hz on the same tree, as percent of one CPU.
balance.100: CPU time per decision round of `slicectl balance --dry-run` (the installed
  command) over 100 elastic tenants whose slices are plain cgroups in the guest's tree, placed
  on a synthetic 416-CPU topology (the guest's 8 CPUs hold no 100 exclusive tenants), vs
  systemd-cgtop's CPU time per refresh on the same tree, same boot.
apply.100: wall time of `slicectl apply` of 100 new tenants on a clean host, vs a shell loop
  of `systemctl set-property` + `systemctl start` per slice producing the same live state.
apply.100.confined: the same with `housekeeping:` (system.slice, user.slice and init.scope
  pinned too: files of loaded units change, so apply reloads systemd).
apply.100.change: 100 applied tenants get new weights: apply (files + reload) vs a loop of
  `systemctl set-property` on each changed slice.
apply.100.floor: the same apply.100 rounds against the least systemd must do for the same end
  state, by hand with its own tools: the files `slicectl generate` writes copied into
  /etc/systemd/system and synced, one `systemctl daemon-reload`, one `systemctl start` naming
  every slice (for a change, a reload applies the changed files to the running slices:
  nothing more). apply.100.confined and apply.100.change carry their own floor too
  (`floor_value`, `floor_ratio`), and every apply row the median seconds of each phase of
  apply (`phases`, from `apply --json`).
Prints one line `BENCH-JSON {...}` for the host side.

Why this module runs past 400 lines: it is copied into the guest and run there alone, one
script with every benchmark of one boot and its anchors (the loop and systemd's floor).
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CGROOT = Path("/sys/fs/cgroup")
ONLY = set(filter(None, os.environ.get(
    "BENCH_ONLY",
    "sampler.1000,exporter.1000,tui.100,balance.100,apply.100,apply.100.confined,"
    "apply.100.change,apply.100.floor",
).split(",")))
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
    (plain cgroup directories: the sampler and systemd-cgtop read the same tree). Where the
    cgroup v2 root lacks some of them (a host with v1 hierarchies besides the unified one),
    the others only."""
    tree = CGROOT / f"{name}.slice"
    available = (CGROOT / "cgroup.controllers").read_text().split()
    controllers = [c for c in ("cpu", "io", "memory", "pids") if c in available]
    for ctl in controllers:
        (CGROOT / "cgroup.subtree_control").write_text(f"+{ctl}\n")
    tree.mkdir(exist_ok=True)
    if controllers:
        (tree / "cgroup.subtree_control").write_text(
            " ".join(f"+{c}" for c in controllers) + "\n")
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
        from slicectl.core.monitor.metrics import MetricsMemo
        from slicectl.host.cgroup.sampler import Sampler
        from slicectl.host.topology.sysfs import read_topology

        memo = MetricsMemo({n.id: n.cpus for n in read_topology().nodes})
        sampler = Sampler(CGROOT)
        prev = sampler.sample()
        time.sleep(0.1)
        n = len(prev.cgroups)
        start = time.process_time()
        for _ in range(refreshes):
            cur = sampler.sample()
            memo.compute(prev, cur)
            prev = cur
        ours = (time.process_time() - start) / refreshes
        sampler.close()
        cgtop = cgtop_cpu(refreshes)
    r = result(ours, "s CPU/refresh", "systemd-cgtop", cgtop)
    r["cgroups"] = n
    r["numa_stat"] = sampler.numa  # read memory.numa_stat (the host has several nodes)
    return r


def cgtop_cpu(refreshes: int) -> float:
    """systemd-cgtop over the tree as it is: batch mode, the CPU time of the whole process
    divided by its refreshes."""
    before = children_cpu()
    subprocess.run(["systemd-cgtop", "--batch", f"--iterations={refreshes}",
                    "--delay=0.05", "--depth=3"], check=True, stdout=subprocess.DEVNULL)
    return (children_cpu() - before) / refreshes


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a running process (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_rss(pid: int) -> int:
    """Resident set size of a running process in bytes (/proc/PID/status VmRSS)."""
    match = re.search(r"^VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    assert match, f"no VmRSS for {pid}"
    return int(match.group(1)) * 1024


def bench_exporter() -> dict[str, Any]:
    """`slicectl exporter` as installed, on 127.0.0.1, scraped back to back over HTTP in the
    text format (what `curl` or a Prometheus asking for it gets; no gzip): its CPU time per
    scrape, from /proc, after one scrape that opens the files; its RSS along the way."""
    scrapes = 100 if QUICK else 1000
    marks = [m for m in (10, 100, 1000) if m <= scrapes]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with slice_tree("benchexp", 1000):
        cmd = [shutil.which("slicectl") or "slicectl", "exporter", "--listen",
               f"127.0.0.1:{port}"]
        proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stderr is not None
            while "serving" not in (line := proc.stderr.readline()):
                if not line:
                    raise SystemExit(f"{' '.join(cmd)} did not start (exit {proc.wait(10)})")
            url = f"http://127.0.0.1:{port}/metrics"

            def scrape() -> bytes:
                with urllib.request.urlopen(url, timeout=600) as r:
                    return bytes(r.read())

            first = scrape()
            start = process_cpu(proc.pid)
            rss = {}
            for i in range(1, scrapes + 1):
                body = scrape()
                if i in marks:
                    rss[i] = process_rss(proc.pid)
            ours = (process_cpu(proc.pid) - start) / scrapes
        finally:
            proc.terminate()
            proc.wait(60)
        cgroups = re.search(rb"^slicectl_exporter_cgroups (\S+)$", body, re.M)
        cgtop = cgtop_cpu(10 if QUICK else 30)
    r = result(ours, "s CPU/scrape", "systemd-cgtop", cgtop)
    r.update(cgroups=int(float(cgroups[1])) if cgroups else None, scrapes=scrapes,
             bytes=len(first), rss_mib={str(k): round(v / 2**20, 1) for k, v in rss.items()})
    return r


# The TUI measured by tui.100 (here) and tui.100.host (bench/run): headless Textual, argv:
# SECONDS CGROUP_ROOT [PROFILE_OUT]. It prints its CPU time / wall time (% of one CPU) over
# SECONDS once two samples are on screen; with PROFILE_OUT, cProfile's stats of that window.
TUI_SCRIPT = """
import asyncio, sys, time
from pathlib import Path
from slicectl.tui import tui_sampler, tui_settings
from slicectl.tui.app import SlicectlApp

async def main() -> None:
    settings = tui_settings(None, Path(sys.argv[2]), 1.0)
    with tui_sampler(settings.cgroup_root) as sampler:  # as `slicectl tui` samples
        app = SlicectlApp(settings, sampler)
        async with app.run_test(size=(120, 40)) as pilot:
            while app.samples < 2:
                await pilot.pause(0.1)
            profile = None
            if len(sys.argv) > 3:
                import cProfile
                profile = cProfile.Profile()
                profile.enable()
            t0, c0 = time.monotonic(), time.process_time()
            await pilot.pause(float(sys.argv[1]))
            print((time.process_time() - c0) / (time.monotonic() - t0) * 100)
            if profile is not None:
                profile.disable()
                profile.dump_stats(sys.argv[3])

asyncio.run(main())
"""


def bench_tui() -> dict[str, Any]:
    seconds = 10 if QUICK else 30
    with slice_tree("benchtui", 100):
        proc = subprocess.run([sys.executable, "-c", TUI_SCRIPT, str(seconds), str(CGROOT)],
                              check=True, capture_output=True, text=True)
        ours = float(proc.stdout.strip().splitlines()[-1])
        before = children_cpu()
        start = time.monotonic()
        subprocess.run(["systemd-cgtop", "--batch", f"--iterations={seconds}", "--delay=1",
                        "--depth=3"], check=True, stdout=subprocess.DEVNULL)
        cgtop = (children_cpu() - before) / (time.monotonic() - start) * 100
    return result(ours, "% of one CPU at 1 Hz", "systemd-cgtop at 1 Hz", cgtop)


def balance_inputs(work: Path, tenants: int) -> tuple[Path, Path]:
    """A synthetic host of 4 nodes x 52 cores x 2 threads (416 CPUs, Linux numbering: thread
    siblings c and c+208) as topology JSON, and a tenants.yaml of `tenants` elastic tenants
    s0000... of 4 CPUs (2 to 8) beside 2 housekeeping cores: 25 tenants a node."""
    sys.path.insert(0, os.environ.get("SLICECTL_CHECKOUT", "."))
    from slicectl.core.placement.topology import Cpu, Node, Topology

    nodes, cpus = [], []
    for n in range(4):
        cores = range(n * 52, n * 52 + 52)
        nodes.append(Node(n, frozenset([*cores, *(c + 208 for c in cores)]), 64 << 30,
                          {m: 10 if m == n else 21 for m in range(4)}))
        for c in cores:
            for t in (c, c + 208):
                cpus.append(Cpu(t, True, n, package=n, die=0, core=c,
                                siblings=frozenset({c, c + 208})))
    topo = work / "topology.json"
    topo.write_text(json.dumps(Topology(tuple(nodes), tuple(cpus), "synthetic").to_json()))
    yaml = work / "tenants.yaml"
    yaml.write_text("version: 1\nhousekeeping: {cpus: 4}\n"
                    "balance: {interval: 1s, window: 3s, cooldown: 10s}\ntenants:\n" + "".join(
                        f"  s{i:04d}: {{cpus: 4, cpus_min: 2, cpus_max: 8}}\n"
                        for i in range(tenants)))
    return yaml, topo


def bench_balance() -> dict[str, Any]:
    """`slicectl balance --dry-run --json` over 100 elastic tenants: its CPU time (/proc) per
    decision round, over the rounds after its first window (each tenant then has a window of
    readings to judge); the tenants' slices are the empty cgroups tenants.slice/tenants-sNNNN
    .slice, so every tenant is idle and no move is decided (the balancer's usual round)."""
    rounds = 10 if QUICK else 30
    work = Path(tempfile.mkdtemp())
    yaml, topo = balance_inputs(work, 100)
    with slice_tree("tenants", 100):
        cmd = [shutil.which("slicectl") or "slicectl", "balance", str(yaml), "--dry-run",
               "--json", "--topology", str(topo)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        try:
            def decision() -> dict[str, Any]:
                if not (line := proc.stdout.readline() if proc.stdout else ""):
                    raise SystemExit(f"{' '.join(cmd)} stopped (exit {proc.wait(10)})")
                return dict(json.loads(line))

            for _ in range(4):  # interval 1 s, window 3 s: a window of readings
                decision()
            start = process_cpu(proc.pid)
            moves = sum(len(decision()["moves"]) for _ in range(rounds))
            ours = (process_cpu(proc.pid) - start) / rounds
        finally:
            proc.terminate()
            proc.wait(60)
        cgtop = cgtop_cpu(rounds)
        cgroups = sum(1 for _ in CGROOT.rglob("cgroup.procs"))
    shutil.rmtree(work, ignore_errors=True)
    r = result(ours, "s CPU/round", "systemd-cgtop", cgtop)
    r.update(tenants=100, rounds=rounds, moves=moves, cgroups=cgroups)
    return r


def tenants_yaml(n: int, *, confined: bool = False, weight: int = 100) -> str:
    lines = ["version: 1"] + (["housekeeping: {cpus: 2}"] if confined else []) + ["tenants:"]
    for i in range(n):
        lines.append(f"  t{i:03d}: {{cpu_weight: {weight + i}, memory_max: {64 + i}M}}")
    return "\n".join(lines) + "\n"


def cleanup() -> None:
    """Back to a clean host: no tenant slices loaded, no slicectl or set-property files.
    (Stopping tenants.slice stops the slices in it: they Require= their parent.)"""
    subprocess.run(["systemctl", "stop", "tenants.slice"], check=False, capture_output=True)
    etc = Path("/etc/systemd/system")
    for p in list(etc.glob("tenants*")) + [etc / ".slicectl-manifest.json"] + [
            etc / f"{u}.d" for u in ("system.slice", "user.slice", "init.scope")]:
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink(missing_ok=True)
    for d in ("/etc/systemd/system.control", "/run/systemd/system.control"):
        for p in Path(d).glob("*"):
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    subprocess.run(["systemctl", "daemon-reload"], check=True)
    subprocess.run(["systemctl", "reset-failed"], check=False)


def plan_units(yaml: Path) -> dict[str, dict[str, Any]]:
    """The plan's units and their properties (unit-file spelling), from `plan --json`."""
    out = subprocess.run(["slicectl", "plan", str(yaml), "--json"], check=True,
                         capture_output=True, text=True).stdout
    return {u["unit"]: u["properties"] for u in json.loads(out)["units"]}


def set_property_line(unit: str, props: dict[str, Any]) -> str:
    values = " ".join(f"{k}={v}%" if k == "CPUQuota" else f"{k}={v}"
                      for k, v in sorted(props.items()))
    return f"systemctl set-property {unit} {values}\n"


def loop_script(units: dict[str, dict[str, Any]], before: dict[str, dict[str, Any]]) -> str:
    """The anchor: what an operator would type to reach the same live state with systemctl.
    From nothing (`before` empty): set-property every unit's properties, start each slice.
    From `before`: set-property only what changed."""
    lines = ["set -e\n"]
    for unit, props in units.items():
        changed = {k: v for k, v in props.items() if before.get(unit, {}).get(k) != v}
        if changed:
            lines.append(set_property_line(unit, changed))
        if not before and unit.startswith("tenants") and unit.endswith(".slice"):
            lines.append(f"systemctl start {unit}\n")
    return "".join(lines)


def timed(cmd: list[str]) -> float:
    return timed_json(cmd)[0]


def timed_json(cmd: list[str]) -> tuple[float, Any]:
    """Wall seconds of `cmd`, and what it printed as JSON (None when it printed none)."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stdout}{proc.stderr}")
    print(f"bench: {elapsed:7.2f} s  {' '.join(cmd)}", file=sys.stderr, flush=True)
    try:
        return elapsed, json.loads(proc.stdout)
    except ValueError:
        return elapsed, None


def floor_script(work: Path, target: Path, change: bool) -> Path:
    """The floor: what systemd itself must do to reach apply's end state. The files
    `slicectl generate` writes (the same bytes apply writes) copied and synced, one
    daemon-reload, and from a clean host one `systemctl start` naming every slice."""
    staging = work / "floor-files"
    subprocess.run(["slicectl", "generate", str(target), "--out", str(staging)], check=True,
                   capture_output=True)
    slices = sorted(p.name for p in staging.glob("tenants*.slice") if p.is_file())
    lines = ["set -e\n", f"cp -a {staging}/. /etc/systemd/system/\n", "sync\n",
             "systemctl daemon-reload\n"]
    if not change:
        lines.append(f"systemctl start {' '.join(slices)}\n")
    script = work / "floor.sh"
    script.write_text("".join(lines))
    return script


def bench_apply(confined: bool = False, change: bool = False) -> dict[str, Any]:
    """`slicectl apply --yes` vs the systemctl loop and vs systemd's floor reaching the same
    state, same boot, interleaved; the median of 3 rounds (1 with --quick). From a clean host
    (no slicectl files, no tenant slices), or with `change` from 100 applied tenants to new
    weights. The result carries the floor (`floor_value`, `floor_ratio`) and the median of
    each of apply's phases (`phases`)."""
    n = 100
    work = Path(tempfile.mkdtemp())
    base, target = work / "base.yaml", work / "tenants.yaml"
    base.write_text(tenants_yaml(n, confined=confined))
    target.write_text(tenants_yaml(n, confined=confined, weight=200 if change else 100))
    cleanup()
    before = plan_units(base) if change else {}
    script = work / "loop.sh"
    script.write_text(loop_script(plan_units(target), before))
    floor = floor_script(work, target, change)
    ours, loop, least = [], [], []
    reached: list[bool] = []
    phases: dict[str, list[float]] = {}
    for _ in range(1 if QUICK else 3):
        for which in ("ours", "loop", "floor"):
            cleanup()
            if change:
                timed(["slicectl", "apply", str(base), "--yes"])
            if which == "ours":
                took, report = timed_json(["slicectl", "apply", str(target), "--yes", "--json"])
                ours.append(took)
                for phase, seconds in (report or {}).get("phases", {}).items():
                    phases.setdefault(phase, []).append(seconds)
            elif which == "loop":
                loop.append(timed(["sh", str(script)]))
            else:
                least.append(timed(["sh", str(floor)]))
                # The floor counts only if it reached apply's end state (plan finds nothing).
                reached.append(subprocess.run(["slicectl", "plan", str(target), "--exit-code"],
                                              capture_output=True).returncode == 0)
    cleanup()
    what = "set-property changes" if change else "set-property + start"
    r = result(statistics.median(ours), "s", f"systemctl {what} loop", statistics.median(loop))
    r["floor_value"] = round(statistics.median(least), 6)
    r["floor_ratio"] = round(statistics.median(ours) / statistics.median(least), 3)
    r["phases"] = {k: round(statistics.median(v), 3) for k, v in phases.items()}
    r["runs"] = {"apply": ours, "loop": loop, "floor": least}
    r["floor_reached_the_same_state"] = all(reached)
    return r


def floor_row(r: dict[str, Any]) -> dict[str, Any]:
    """apply.100.floor: apply.100's rounds against systemd's floor (files, one reload, one
    start) instead of the loop."""
    f = result(r["value"], "s", "systemd's floor: the files copied and synced, one "
               "daemon-reload, one systemctl start of every slice", r["floor_value"])
    f["phases"] = r["phases"]
    f["floor_reached_the_same_state"] = r["floor_reached_the_same_state"]
    return f


def main() -> int:
    benches: dict[str, Callable[[], dict[str, Any]]] = {
        "sampler.1000": bench_sampler, "exporter.1000": bench_exporter, "tui.100": bench_tui,
        "balance.100": bench_balance, "apply.100": bench_apply,
        "apply.100.confined": lambda: bench_apply(confined=True),
        "apply.100.change": lambda: bench_apply(change=True)}
    out: dict[str, Any] = {}
    for name, bench in benches.items():
        if name in ONLY or (name == "apply.100" and "apply.100.floor" in ONLY):
            out[name] = bench()
            # a line as each one ends: the testbed takes a long silence for a stuck guest
            print(f"bench: {name} done", file=sys.stderr, flush=True)
    if "apply.100.floor" in ONLY:
        out["apply.100.floor"] = floor_row(out["apply.100"])
        if "apply.100" not in ONLY:
            del out["apply.100"]
    print("BENCH-JSON " + json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
