"""Helpers for e2e tests that run inside the testbed guest (real systemd, real cgroup v2)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

CGROUP_ROOT = Path("/sys/fs/cgroup")
NODE_ROOT = Path("/sys/devices/system/node")
# Tests wait on conditions, never on a time budget: a wait returns as soon as its condition
# holds, however slow the guest is today (TCG on a host busy with other work). This bound only
# turns a hang into a failure; the testbed's own timeout is the last resort.
HANG = 900.0
T = TypeVar("T")


def wait_until(cond: Callable[[], T], what: str, interval: float = 0.5,
               timeout: float = HANG) -> T:
    """Poll `cond()` until it returns something true, and return that; fail naming `what`
    if it never does (only a hang gets that far, see HANG)."""
    deadline = time.monotonic() + timeout
    while not (value := cond()):
        if time.monotonic() > deadline:
            raise AssertionError(f"still waiting after {timeout:g} s for {what}")
        time.sleep(interval)
    return value


def run(
    cmd: Sequence[str], check: bool = True, timeout: float = HANG
) -> subprocess.CompletedProcess[str]:
    """Run a command, capturing stdout and stderr as text; raise with both if it fails."""
    proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)} exited with {proc.returncode}\n"
            f"--- stdout ---\n{proc.stdout}--- stderr ---\n{proc.stderr}"
        )
    return proc


def slicectl(*args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run the `slicectl` on PATH (the checkout under test) as a user would."""
    return run(["slicectl", *args], check=check)


def systemctl(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run `systemctl ARGS...` against the guest's system manager."""
    return run(["systemctl", *args], check=check)


def unit_property(unit: str, name: str) -> str:
    """One property of a unit as `systemctl show` prints it."""
    return systemctl("show", "-p", name, "--value", unit).stdout.strip()


def control_group(unit: str) -> Path:
    """The cgroup directory of a unit, from its ControlGroup property.

    Never build it from the unit name: `tenant-a.slice` lives in `tenant.slice/tenant-a.slice`
    and names that clash with controllers are escaped (`cpu-d.slice` is in `_cpu.slice/`).
    """
    cgroup = unit_property(unit, "ControlGroup")
    if not cgroup:
        raise AssertionError(f"{unit} has no control group (is it active?)")
    return CGROUP_ROOT / cgroup.lstrip("/")


def cgroup_file(unit: str, name: str) -> str:
    """The stripped contents of the cgroup file NAME (e.g. `cpuset.cpus`) of UNIT."""
    return (control_group(unit) / name).read_text().strip()


def parse_cpulist(text: str) -> list[int]:
    """Expand a kernel cpulist (`0-2,4`) into sorted CPU numbers."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return sorted(cpus)


def numa_nodes() -> dict[int, list[int]]:
    """The guest's NUMA nodes and their CPUs, read from sysfs."""
    return {
        int(path.name.removeprefix("node")): parse_cpulist((path / "cpulist").read_text())
        for path in sorted(NODE_ROOT.glob("node[0-9]*"))
    }
