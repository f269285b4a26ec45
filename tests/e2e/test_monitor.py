"""`slicectl status --json` on the real guest: pressure, memory.high events and throttling;
the sampler told by the kernel when a task enters an idle slice.

A tenant running a memory hog under MemoryHigh must show memory pressure and `high` events
while a quiet tenant shows none; a CPU-bound tenant under a quota must show throttling.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from . import guest

Run = Callable[..., subprocess.CompletedProcess[str]]

TENANTS = """\
version: 1
tenants:
  hog: {memory_high: 48M, memory_max: 96M, memory_swap_max: 0}
  quiet: {memory_max: 256M}
  burner: {cpus: 1, cpu_quota: 30%}
"""


@pytest.fixture
def tenants(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "tenants.yaml"
    path.write_text(TENANTS)
    yield path
    Path("/etc/systemd/system/.slicectl-manifest.json").unlink(missing_ok=True)


def counter(unit: str, name: str, key: str) -> int:
    """One counter of a flat-keyed cgroup file (`memory.events`, `cpu.stat`)."""
    rows = dict(line.split() for line in guest.cgroup_file(unit, name).splitlines())
    return int(rows.get(key, 0))


def by_unit(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["unit"]: s for s in status["slices"]}


@pytest.mark.smoke
def test_status_shows_pressure_high_events_and_throttling(
        slicectl: Run, tenants: Path, units: Any) -> None:
    proc = slicectl("apply", str(tenants), "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The loads run until the test stops them (the `units` fixture): however slow the guest is
    # today, they are still running when status samples them.
    jobs = {
        "hog": ["stress-ng", "--vm", "1", "--vm-bytes", "80M", "--vm-keep"],
        "quiet": ["sleep", "infinity"],
        "burner": ["stress-ng", "--cpu", "2"],
    }
    for name, cmd in jobs.items():
        guest.run(["systemd-run", f"--unit=mon-{name}", f"--slice=tenants-{name}.slice", *cmd],
                  check=True)
        units.track(f"mon-{name}.service")
    guest.wait_until(lambda: counter("tenants-hog.slice", "memory.events", "high") > 0,
                     "the hog to reach its memory.high")
    guest.wait_until(lambda: counter("tenants-burner.slice", "cpu.stat", "nr_throttled") > 0,
                     "the burner to exhaust its quota")
    proc = slicectl("status", "--json", "--interval", "3")
    assert proc.returncode == 0, proc.stderr
    s = by_unit(json.loads(proc.stdout))
    hog, quiet, burner = s["tenants-hog.slice"], s["tenants-quiet.slice"], s["tenants-burner.slice"]
    assert hog["limits"]["memory_high"] == 48 << 20
    assert hog["events"]["high"] > 0, hog
    assert hog["pressure"]["memory"]["some"]["rate"] > 0, hog["pressure"]
    assert quiet["events"]["high"] == 0 and quiet["events"]["max"] == 0
    assert quiet["pressure"]["memory"]["some"]["rate"] == 0
    assert burner["limits"]["cpu_quota_cores"] == pytest.approx(0.3)
    assert burner["cpu"]["throttled_percent"] > 0, burner["cpu"]
    assert burner["cpu"]["cores"] <= 0.4  # held at its 30% quota
    assert "throttled" in burner["trouble"]
    # the human view shows the same slices
    top = slicectl("top", "-n", "2", "--interval", "1")
    assert top.returncode == 0, top.stderr
    assert "tenants-hog.slice" in top.stdout and "tenants-burner.slice" in top.stdout


def test_a_task_entering_an_idle_slice_is_seen_at_the_next_sample() -> None:
    """The sampler does not read an empty cgroup's files: the kernel's inotify event on its
    cgroup.events (kernfs marks it modified when a task comes or goes) is what tells. On the
    real kernel: the event comes when a task enters and when it leaves, and the sample after
    it shows the task, then none."""
    from slicectl.host.cgroup.inotify import Modified
    from slicectl.host.cgroup.sampler import Sampler

    cg = Path("/sys/fs/cgroup/evtest.slice")
    cg.mkdir()
    sleeper: subprocess.Popen[bytes] | None = None
    watch = Modified()
    try:
        wd = watch.add(str(cg / "cgroup.events"))
        assert wd >= 0
        with Sampler(Path("/sys/fs/cgroup"), slices=frozenset({"evtest.slice"})) as sampler:
            for _ in range(3):
                assert sampler.sample().cgroups["evtest.slice"].tasks == 0
            sleeper = subprocess.Popen(["sleep", "600"])
            (cg / "cgroup.procs").write_text(f"{sleeper.pid}\n")
            # kernfs sends the event from a work queue: it comes soon after, not at once
            guest.wait_until(lambda: wd in (watch.changed() or ()), "cgroup.events written",
                             interval=0.05)
            assert sampler.sample().cgroups["evtest.slice"].tasks == 1
            sleeper.kill()
            sleeper.wait()
            guest.wait_until(lambda: wd in (watch.changed() or ()), "cgroup.events written",
                             interval=0.05)
            assert sampler.sample().cgroups["evtest.slice"].tasks == 0
    finally:
        watch.close()
        if sleeper is not None and sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait()
        guest.wait_until(lambda: b"populated 0" in (cg / "cgroup.events").read_bytes(),
                         "evtest.slice empty")
        cg.rmdir()
