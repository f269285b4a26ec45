"""NUMA memory locality in `slicectl status --json` on the real guest (4 nodes, 1 GiB each).

A tenant bound to node 1 holding 200 MiB shows it there (≥ 90 % local, nothing outside); a
live profile switch to node 2 moves its CPUs and memory nodes, and the kernel migrates its
pages (cgroup v2 cpusets always do when cpuset.mems changes): status shows the memory follow.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from . import guest

Run = Callable[..., subprocess.CompletedProcess[str]]
MIB = 1 << 20

# Explicit CPUs: this test is about where the memory is; where a counted tenant's CPUs go
# after `nodes` changes is placement's business (tests/core/placement/test_placement.py).
TENANTS = """\
version: 1
tenants:
  near: {cpus: "1", nodes: [1], memory_max: 512M, memory_swap_max: 0}
profiles:
  moved:
    near: {cpus: "2", nodes: [2]}
"""


def near(slicectl: Run) -> dict[str, Any]:
    proc = slicectl("status", "--json", "--interval", "0.1")
    assert proc.returncode == 0, proc.stderr
    status = json.loads(proc.stdout, parse_constant=lambda name: pytest.fail(name))
    return next(s for s in status["slices"] if s["unit"] == "tenants-near.slice")


def wait_for(slicectl: Run, cond: Callable[[dict[str, Any]], bool], timeout: float
             ) -> tuple[dict[str, Any], float]:
    """Poll status until `cond` holds for the tenant; (its status, seconds it took)."""
    start = time.monotonic()
    while True:
        s = near(slicectl)
        if cond(s):
            return s, time.monotonic() - start
        assert time.monotonic() - start < timeout, s
        time.sleep(0.2)


def live_map(slicectl: Run) -> tuple[dict[int, str], dict[int, int]]:
    """`topology --live --json`: each CPU's live owner, and near's memory on each node."""
    proc = slicectl("topology", "--live", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    owners = {c["cpu"]: c["live"] for n in data["nodes"] for c in n["cpus"]}
    memory = {n["node"]: n["memory"].get("near", 0) for n in data["nodes"]}
    return owners, memory


def held(s: dict[str, Any]) -> int:
    return sum(n["anon"] + n["file"] for n in (s["numa"] or {}).get("nodes", []))


def test_a_bound_tenant_shows_its_memory_local_and_the_move_to_another_node(
        slicectl: Run, tenants_file: Callable[[str], Path], units: Any) -> None:
    assert len(guest.numa_nodes()) == 4
    tenants = tenants_file(TENANTS)
    proc = slicectl("apply", str(tenants), "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    guest.run(["systemd-run", "--unit=numa-near", "--slice=tenants-near.slice", "stress-ng",
               "--vm", "1", "--vm-bytes", "200M", "--vm-keep", "--timeout", "600s"], check=True)
    units.track("numa-near.service")
    s, _ = wait_for(slicectl, lambda s: held(s) >= 190 * MIB, timeout=300)
    numa = s["numa"]
    assert s["limits"]["mems"] == "1" and numa["bound"] is True and numa["local_nodes"] == "1"
    assert numa["local_percent"] >= 90, numa
    assert numa["outside_percent"] < 10 and "remote-memory" not in s["trouble"]
    owners, memory = live_map(slicectl)  # the live NUMA map agrees
    assert owners[1] == "near" and memory[1] >= 0.9 * held(s), (owners, memory)

    switched = time.monotonic()
    proc = slicectl("apply", str(tenants), "--profile", "moved", "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    applied = time.monotonic() - switched
    s = near(slicectl)
    assert s["limits"]["mems"] == "2" and s["numa"]["local_nodes"] == "2"  # at once
    first = s["numa"]
    owners, _ = live_map(slicectl)  # the map follows at once too
    assert owners[2] == "near" and owners[1] == "shared pool", owners
    # The pages follow: migrated by the kernel when cpuset.mems changed.
    s, waited = wait_for(slicectl, lambda s: s["numa"]["local_percent"] >= 90, timeout=300)
    assert s["numa"]["outside_percent"] < 10 and held(s) >= 190 * MIB
    assert "remote-memory" not in s["trouble"]
    print(f"\nnuma: apply of the profile took {applied:.1f} s; right after it {first} ; "
          f"90 % of 200 MiB local on the new node {waited:.1f} s after apply returned")
