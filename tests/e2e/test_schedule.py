"""Profiles on a schedule in the real guest: systemd's timers switch a running process's CPUs
live, `systemctl list-timers` lists them, and a reboot-equivalent keeps the profile."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from . import guest

Run = Callable[..., subprocess.CompletedProcess[str]]
ETC = Path("/etc/systemd/system")
SLEEPER = "slicectl-sched-sleeper.service"


def calendar_in(seconds: int) -> str:
    """A calendar event `seconds` from now, in the guest's time zone (UTC)."""
    return time.strftime("*-*-* %H:%M:%S", time.localtime(time.time() + seconds))


@pytest.fixture
def tenants(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "tenants.yaml"
    path.write_text(f"""\
version: 1
tenants:
  db: {{cpus: 4, numa: any}}
profiles:
  night:
    db: {{cpus: 1}}
schedule:
  night: "{calendar_in(40)}"
  default: "*-*-* 00:00:00"
""")
    yield path
    (ETC / ".slicectl-manifest.json").unlink(missing_ok=True)


def allowed(pid: int) -> list[int]:
    status = Path(f"/proc/{pid}/status").read_text()
    line = next(x for x in status.splitlines() if x.startswith("Cpus_allowed_list:"))
    return guest.parse_cpulist(line.split(":", 1)[1])


def test_a_timer_switches_the_profile_live_and_a_reboot_keeps_it(
        slicectl: Run, tenants: Path, units: object,
        cgroup_file: Callable[[str, str], str]) -> None:
    units.track(SLEEPER, "slicectl-profile@night.timer",  # type: ignore[attr-defined]
                "slicectl-profile@default.timer", "tenants.slice")
    proc = slicectl("apply", str(tenants), "--yes")
    assert proc.returncode == 0, proc.stderr
    assert len(guest.parse_cpulist(cgroup_file("tenants-db.slice", "cpuset.cpus"))) == 4
    timers = guest.systemctl("list-timers", "--all", "--no-legend").stdout
    assert "slicectl-profile@night.timer" in timers
    assert "slicectl-profile@default.timer" in timers
    guest.run(["systemd-run", f"--unit={SLEEPER}", "--slice=tenants-db.slice", "sleep",
               "900"])
    pid = int(guest.unit_property(SLEEPER, "MainPID"))
    assert len(allowed(pid)) == 4
    # The night timer fires within a minute; its service applies the night profile live.
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and len(allowed(pid)) != 1:
        time.sleep(1)
    assert len(allowed(pid)) == 1, guest.run(
        ["journalctl", "--no-pager", "-n", "40", "-u", "slicectl-profile@night.service"],
        check=False).stdout
    assert int(guest.unit_property(SLEEPER, "MainPID")) == pid  # not restarted
    assert guest.unit_property("slicectl-profile@night.service", "Result") == "success"
    plan = slicectl("plan", str(tenants))
    assert "in force now: night" in plan.stdout, plan.stdout
    # A reboot-equivalent: stop everything, reload, start again: the files hold night.
    guest.systemctl("stop", "tenants.slice")
    guest.systemctl("daemon-reload")
    guest.systemctl("start", "tenants.slice")
    assert len(guest.parse_cpulist(cgroup_file("tenants-db.slice", "cpuset.cpus"))) == 1
    # And a timer of a profile that is not in force changes nothing (catch-up at boot).
    guest.systemctl("start", "slicectl-profile@default.service")
    assert len(guest.parse_cpulist(cgroup_file("tenants-db.slice", "cpuset.cpus"))) == 1
