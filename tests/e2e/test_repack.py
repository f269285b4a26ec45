"""A grown tenant on the real guest (4 nodes of 2 CPUs): apply refuses to split it over nodes
and names the re-pack; `apply --repack` moves the one tenant in its way, whose running
process follows to its new CPUs and memory node without a restart; putting the old
tenants.yaml back converges, the moved tenant kept where it now is.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import guest

Run = Callable[..., subprocess.CompletedProcess[str]]

# c fills a node; a and b (one CPU each) share a second, best fit; d, e and f take three of the
# last four CPUs. Grown to 2 CPUs, a has no node with room for it alone: only moving b (to the
# one free CPU) keeps it on one node.
BEFORE = """\
version: 1
tenants:
  c: {cpus: 2}
  a: {cpus: 1}
  b: {cpus: 1}
  d: {cpus: 1}
  e: {cpus: 1}
  f: {cpus: 1}
"""
GROWN = BEFORE.replace("a: {cpus: 1}", "a: {cpus: 2}")


def plan(slicectl: Run, tenants: Path, *extra: str) -> dict[str, Any]:
    proc = slicectl("plan", str(tenants), "--json", *extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {t["name"]: t for t in json.loads(proc.stdout)["tenants"]}


def status_of(pid: int) -> dict[str, str]:
    """/proc/PID/status as the kernel shows it: where the process may run and allocate."""
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return dict(line.split(":\t", 1) for line in lines if ":\t" in line)


def test_a_grown_tenant_is_refused_then_repacked_live_and_the_moved_process_follows(
        slicectl: Run, tenants_file: Callable[[str], Path], units: Any,
        cgroup_file: Callable[[str, str], str]) -> None:
    nodes = guest.numa_nodes()
    tenants = tenants_file(BEFORE)
    proc = slicectl("apply", str(tenants), "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    before = plan(slicectl, tenants)
    shared = before["a"]["cpu_nodes"]
    assert shared == before["b"]["cpu_nodes"] and len(shared) == 1, before
    guest.run(["systemd-run", "--unit=repack-b", "--slice=tenants-b.slice", "sleep", "900"])
    units.track("repack-b.service")
    pid = int(guest.systemctl("show", "-P", "MainPID", "repack-b.service").stdout)
    assert status_of(pid)["Cpus_allowed_list"] == before["b"]["cpus"]

    tenants.write_text(GROWN)
    refused = slicectl("apply", str(tenants), "--yes")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "would split tenant a (numa: local)" in refused.stderr
    assert f"b: node {shared[0]} -> " in refused.stderr and "--repack" in refused.stderr
    assert cgroup_file("tenants-a.slice", "cpuset.cpus") == before["a"]["cpus"]  # untouched

    repacked = slicectl("apply", str(tenants), "--yes", "--repack")
    assert repacked.returncode == 0, repacked.stdout + repacked.stderr
    after = plan(slicectl, tenants)
    assert after["a"]["cpu_nodes"] == shared and after["a"]["cpu_count"] == 2
    (new_node,) = after["b"]["cpu_nodes"]
    assert new_node != shared[0]
    assert f"re-pack moves b: node {shared[0]} -> {new_node}" in repacked.stdout
    assert cgroup_file("tenants-a.slice", "cpuset.cpus") == after["a"]["cpus"]
    moved = status_of(pid)  # the same process: it kept running and followed
    assert guest.systemctl("is-active", "repack-b.service").stdout.strip() == "active"
    assert moved["Cpus_allowed_list"] == after["b"]["cpus"]
    assert set(guest.parse_cpulist(after["b"]["cpus"])) <= set(nodes[new_node])
    assert moved["Mems_allowed_list"] == str(new_node)
    exit_code = slicectl("plan", str(tenants), "--exit-code")
    assert exit_code.returncode == 0, exit_code.stdout + exit_code.stderr

    tenants.write_text(BEFORE)  # back: a shrinks where it is, b stays (stability)
    back = slicectl("apply", str(tenants), "--yes")
    assert back.returncode == 0, back.stdout + back.stderr
    again = plan(slicectl, tenants)
    assert again["a"]["cpu_nodes"] == shared and again["a"]["cpu_count"] == 1
    assert again["b"]["cpus"] == after["b"]["cpus"]
    assert status_of(pid)["Cpus_allowed_list"] == after["b"]["cpus"]
    assert slicectl("plan", str(tenants), "--exit-code").returncode == 0
