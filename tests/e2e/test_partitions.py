"""cpuset partitions on the real guest.

On systemd 261 or later with Linux 6.7 or later (Debian forky in the release matrix): an
isolated tenant applied live while its member process runs, read back from the kernel, its
CPUs rid of every IRQ slicectl can move, taken back to a member with every IRQ's affinity as
before; then a partition the kernel cannot grant (another cgroup already holds one
of its CPUs exclusively) fails the apply with the kernel's answer and rolls back byte for byte.
On an older systemd or kernel (Debian 12: 252, 6.1; Debian 13: 257): the key is refused,
located, before anything changes. Each test runs only where its versions are: the other is
reported as skipped, with the versions that decided it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from . import guest

Run = Callable[..., subprocess.CompletedProcess[str]]

MEMBER = """\
version: 1
housekeeping: {cpus: 2}
tenants:
  lat: {cpus: 2}
  other: {cpus: 2}
"""
ISOLATED = MEMBER.replace("lat: {cpus: 2}", "lat: {cpus: 2, cpuset_partition: isolated}")
ETC = Path("/etc/systemd/system")
CGROUP = Path("/sys/fs/cgroup")
INTRUDER = CGROUP / "e2e-intruder"
FILES = ("cpuset.cpus", "cpuset.cpus.partition", "cpuset.cpus.exclusive")


def versions() -> tuple[int, tuple[int, int]]:
    systemd = int(guest.systemctl("--version").stdout.split()[1])
    kernel = os.uname().release.split("-")[0].split(".")
    return systemd, (int(kernel[0]), int(kernel[1]))


SYSTEMD, KERNEL = versions() if os.environ.get("SLICECTL_TESTBED") else (0, (0, 0))
PARTITIONS = SYSTEMD >= 261 and KERNEL >= (6, 7)
WHERE = f"this guest runs systemd {SYSTEMD} and Linux {KERNEL[0]}.{KERNEL[1]}"


IRQ = Path("/proc/irq")
RECORD = Path("/run/slicectl/isolation.json")


def affinities() -> dict[int, str]:
    """Every IRQ's requested affinity list, exactly as read."""
    return {int(d.name): (d / "smp_affinity_list").read_text()
            for d in IRQ.iterdir() if d.name.isdigit() and (d / "smp_affinity_list").exists()}


def irqs_left(output: str) -> set[int]:
    """The IRQs apply's notes say it left where they were (per-CPU, managed, or with no other
    online CPU)."""
    return {int(n) for n in re.findall(r"note: IRQ (\d+): left", output)}


def snapshot() -> dict[str, str]:
    """The partition's files of tenants.slice and the tenant, as bytes would compare, and the
    tenant's unit files."""
    found = {}
    for unit in ("tenants.slice", "tenants-lat.slice"):
        group = guest.control_group(unit)
        for name in FILES:
            path = group / name
            found[f"{unit}/{name}"] = path.read_text() if path.exists() else "(none)"
    for path in sorted(ETC.glob("tenants-lat.slice*/**/*")):
        if path.is_file():
            found[str(path)] = path.read_text()
    return found


@pytest.fixture
def tenants(tenants_file: Callable[[str], Path]) -> Iterator[Path]:
    path = tenants_file(MEMBER)
    yield path
    # Whatever a failure left: no partition, no exclusive CPUs (cgroupfs outlives the units,
    # whose files the `units` fixture removes), no foreign cgroup.
    if INTRUDER.exists():
        (INTRUDER / "cpuset.cpus.partition").write_text("member")
        INTRUDER.rmdir()
    for group in ("tenants.slice/tenants-lat.slice", "tenants.slice"):
        for name, value in (("cpuset.cpus.partition", "member"), ("cpuset.cpus.exclusive", "")):
            if (CGROUP / group / name).exists():
                (CGROUP / group / name).write_text(value)
    (ETC / ".slicectl-manifest.json").unlink(missing_ok=True)
    if RECORD.exists():  # IRQs a failure left steered: back as recorded
        for irq, text in json.loads(RECORD.read_text())["irqs"].items():
            with contextlib.suppress(OSError):
                (IRQ / irq / "smp_affinity_list").write_text(text)
        RECORD.unlink()


@pytest.mark.smoke
@pytest.mark.skipif(PARTITIONS, reason=f"partitions are available: {WHERE}")
def test_a_partition_is_refused_before_anything_changes_where_systemd_or_linux_lack_it(
        slicectl: Run, tenants: Path) -> None:
    assert slicectl("apply", str(tenants), "--yes").returncode == 0
    before = snapshot()
    tenants.write_text(ISOLATED)
    refused = slicectl("apply", str(tenants), "--yes")
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert "tenants.lat.cpuset_partition: needs " in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    assert snapshot() == before


@pytest.mark.smoke
@pytest.mark.skipif(not PARTITIONS, reason=f"needs systemd 261 and Linux 6.7: {WHERE}")
def test_an_isolated_partition_is_applied_live_read_back_and_a_refused_one_rolled_back(
        slicectl: Run, tenants: Path, units: Any) -> None:
    assert slicectl("apply", str(tenants), "--yes").returncode == 0
    guest.run(["systemd-run", "--unit=lat-probe", "--slice=tenants-lat.slice", "sleep", "900"])
    units.track("lat-probe.service")
    pid = guest.unit_property("lat-probe.service", "MainPID")
    member = snapshot()
    irqs = affinities()

    tenants.write_text(ISOLATED)
    proc = slicectl("apply", str(tenants), "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr + str(snapshot())
    planned = guest.parse_cpulist(guest.cgroup_file("tenants-lat.slice", "cpuset.cpus"))
    # No IRQ slicectl could move asks for an isolated CPU any more. (The requested list:
    # x86 moves an IRQ's effective affinity at its next interrupt, so an idle one lags.)
    irqbalance = guest.systemctl("is-active", "irqbalance.service", check=False)
    if irqbalance.stdout.strip() != "active":  # else IRQs are irqbalance's to place
        left = irqs_left(proc.stdout + proc.stderr)
        on_isolated = {n for n, text in affinities().items()
                       if set(guest.parse_cpulist(text)) & set(planned)}
        assert on_isolated <= left, (on_isolated, left, proc.stdout)
    assert RECORD.exists()
    assert guest.cgroup_file("tenants-lat.slice", "cpuset.cpus.partition") == "isolated"
    effective = guest.cgroup_file("tenants-lat.slice", "cpuset.cpus.effective")
    assert guest.parse_cpulist(effective) == planned
    assert guest.parse_cpulist(guest.cgroup_file("tenants.slice", "cpuset.cpus.exclusive")) \
        == planned
    status = Path(f"/proc/{pid}/status").read_text()  # the same process, still running
    allowed = next(line for line in status.splitlines() if line.startswith("Cpus_allowed_list"))
    assert guest.parse_cpulist(allowed.split(":")[1]) == planned
    assert guest.systemctl("is-active", "lat-probe.service").stdout.strip() == "active"
    exit_code = slicectl("plan", str(tenants), "--exit-code")
    assert exit_code.returncode == 0, exit_code.stdout + exit_code.stderr

    tenants.write_text(MEMBER)  # back to a member: the exclusive CPUs emptied again
    proc = slicectl("apply", str(tenants), "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert guest.cgroup_file("tenants-lat.slice", "cpuset.cpus.partition") == "member"
    assert snapshot() == member
    assert affinities() == irqs  # every IRQ's list back, byte for byte
    assert not RECORD.exists()

    # Another cgroup (outside systemd's tree, as a script would make it) holds one of the
    # tenant's CPUs as a partition of its own: the kernel cannot grant the tenant's.
    INTRUDER.mkdir()
    (INTRUDER / "cpuset.cpus").write_text(str(planned[0]))
    (INTRUDER / "cpuset.cpus.exclusive").write_text(str(planned[0]))
    (INTRUDER / "cpuset.cpus.partition").write_text("root")
    intruder = (INTRUDER / "cpuset.cpus.partition").read_text().strip()
    before = snapshot()
    tenants.write_text(ISOLATED)
    refused = slicectl("apply", str(tenants), "--yes")
    assert refused.returncode != 0, refused.stdout + refused.stderr + intruder
    assert "rolled back" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    assert snapshot() == before, (refused.stderr, intruder)
    assert affinities() == irqs and not RECORD.exists()
    assert guest.systemctl("is-active", "lat-probe.service").stdout.strip() == "active"


@pytest.mark.skipif(not PARTITIONS, reason=f"needs systemd 261 and Linux 6.7: {WHERE}")
def test_an_isolated_partition_is_made_again_at_boot_without_an_apply(
        slicectl: Run, tenants: Path) -> None:
    """cgroupfs forgets cpuset.cpus.exclusive at a reboot and systemd has no setting for it:
    slicectl-partitions.service, which multi-user.target starts, writes it again, so the
    tenant boots isolated with no slicectl command run."""
    resumed = guest.resumed()
    if resumed is None:
        tenants.write_text(ISOLATED)
        proc = slicectl("apply", str(tenants), "--yes")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        # apply wrote the service and did the writes itself; it did not start the service
        assert guest.unit_property("slicectl-partitions.service", "ActiveState") == "inactive"
        planned = guest.cgroup_file("tenants-lat.slice", "cpuset.cpus.effective")
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        guest.reboot("rebooted", {"planned": planned, "boot_id": boot_id})
    phase, state = resumed
    assert phase == "rebooted"
    assert Path("/proc/sys/kernel/random/boot_id").read_text().strip() != state["boot_id"]
    service = "slicectl-partitions.service"
    guest.wait_until(lambda: guest.unit_property(service, "ExecMainExitTimestampMonotonic")
                     not in ("", "0") and guest.unit_property(service, "ActiveState")
                     in ("inactive", "failed"), f"{service} to have run at boot")
    assert guest.unit_property(service, "Result") == "success", guest.run(
        ["journalctl", "-b", "-u", service, "--no-pager"], check=False).stdout
    assert guest.cgroup_file("tenants-lat.slice", "cpuset.cpus.partition") == "isolated"
    assert guest.parse_cpulist(guest.cgroup_file("tenants-lat.slice", "cpuset.cpus.effective")) \
        == guest.parse_cpulist(state["planned"])
    tenants.write_text(ISOLATED)  # this boot's copy of the test's tenants.yaml
    exit_code = slicectl("plan", str(tenants), "--exit-code")
    assert exit_code.returncode == 0, exit_code.stdout + exit_code.stderr
