"""Confinement and protection on the real guest.

- A hog under cron.service is held at cron's MemoryMax.
- (MemoryLow keeping a tenant's page cache under a page-cache hog in system.slice is
  experiment (d) of docs/evidence/, asserted by test_evidence.py.)
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from . import guest

Run = Callable[..., subprocess.CompletedProcess[str]]
MiB = 1 << 20
PRESSURE = 4096  # pages the unprotected tenant must read back: 16 MiB of its working set


@pytest.fixture
def manifest_cleanup() -> Iterator[None]:
    yield
    Path("/etc/systemd/system/.slicectl-manifest.json").unlink(missing_ok=True)


def events(unit: str) -> dict[str, int]:
    return {k: int(v) for k, v in (line.split() for line in
                                   guest.cgroup_file(unit, "memory.events").splitlines())}


@pytest.mark.smoke
def test_cron_hog_is_held_at_its_memory_max(slicectl: Run, tmp_path: Path, units: Any,
                                            manifest_cleanup: None) -> None:
    (tmp_path / "t.yaml").write_text(
        "version: 1\nconfine:\n  cron.service: {memory_max: 64M, memory_swap_max: 0}\n"
        "tenants:\n  a: {}\n")
    was_active = guest.unit_property("cron.service", "ActiveState") == "active"
    guest.systemctl("start", "cron.service")
    if not was_active:
        units.track("cron.service")
    proc = slicectl("apply", str(tmp_path / "t.yaml"), "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert guest.cgroup_file("cron.service", "memory.max") == str(64 * MiB)
    procs = guest.control_group("cron.service") / "cgroup.procs"
    before = events("cron.service")
    # A job cron started: the process joins cron.service's cgroup, then grows 8 MiB at a time
    # (touching every page) towards 200 MiB, printing how much it holds.
    grow = ("import sys\nheld = []\nfor i in range(25):\n"
            "    held.append(bytearray(8 << 20))\n    print(8 * (i + 1), flush=True)\n")
    hog = subprocess.run(["sh", "-c", f"echo $$ > {procs} && exec python3 -c '{grow}'"],
                         capture_output=True, text=True, timeout=guest.HANG)
    after = events("cron.service")
    held = [int(x) for x in hog.stdout.split()]
    peak = int(guest.cgroup_file("cron.service", "memory.peak"))
    detail = f"rc={hog.returncode} held={held[-1:]} peak={peak} {before} -> {after} {hog.stderr}"
    assert hog.returncode != 0, detail  # it could not get its 200 MiB
    assert held and held[-1] <= 64, detail
    assert peak <= 64 * MiB, detail
    assert after["max"] > before["max"], detail  # it ran into cron's MemoryMax
    assert guest.unit_property("cron.service", "ActiveState") == "active"  # cron survives
