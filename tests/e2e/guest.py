"""Helpers for e2e tests that run inside the testbed guest (real systemd, real cgroup v2)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

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


# --- reboots ---------------------------------------------------------------------------------
# A test may reboot the guest (tests/testbed/README.md, "Reboots"): it records where it is and
# what it needs to remember in the results share (on the host, so it survives anything the
# guest does), asks the runner for another boot and reboots. The runner boots the guest again
# on the same disk and runs pytest again with the same arguments; the tests already done are
# left out (conftest.py) and the test that rebooted runs again, finds its record with
# `resumed()` and goes on from there.
RESUME = "resume.json"


def results() -> Path:
    return Path(os.environ.get("SLICECTL_RESULTS", "/tmp"))


def _current_test() -> str:
    return os.environ["PYTEST_CURRENT_TEST"].rsplit(" (", 1)[0]


def boot_number() -> int:
    """This boot's number in the testbed run: 1 for the first."""
    path = results() / "boot"
    return int(path.read_text()) if path.exists() else 1


def resuming() -> bool:
    """True if the running test rebooted the guest and goes on in this boot."""
    path = results() / RESUME
    return path.exists() and json.loads(path.read_text())["test"] == _current_test()


def resumed() -> tuple[str, dict[str, Any]] | None:
    """(phase, state) that the running test gave `reboot()` before the guest rebooted, or
    None on its first run."""
    path = results() / RESUME
    if not resuming():
        return None
    record = json.loads(path.read_text())
    path.unlink()
    return record["phase"], record["state"]


def _write(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.rename(path)


def reboot(phase: str, state: dict[str, Any], *, how: str = "reboot",
           cpus: int | None = None) -> NoReturn:
    """Reboot the guest and run the calling test again in the next boot, where `resumed()`
    returns (phase, state). `how`: "reboot" (`systemctl reboot`, an orderly one) or
    "power-cut" (sysrq `b`: reset at once, without syncing or unmounting anything).
    `cpus`: boot the next time with this many CPUs (the highest numbers left out)."""
    if how not in ("reboot", "power-cut"):
        raise ValueError(f"how must be 'reboot' or 'power-cut', not {how!r}")
    _write(results() / RESUME, {"test": _current_test(), "phase": phase, "state": state})
    _write(results() / "reboot", {"how": how, **({"cpus": cpus} if cpus else {})})
    if how == "power-cut":
        Path("/proc/sys/kernel/sysrq").write_text("1")
        Path("/proc/sysrq-trigger").write_text("b")
    else:
        run(["systemctl", "reboot", "--no-block"])
    while True:  # the guest goes down around this process
        time.sleep(60)
