"""Generator mode on the real guest (systemd 252 as PID 1): `slicectl generator enable`, the
generator run by systemd at every daemon-reload, a member service pinned from its first
instruction, a broken tenants.yaml that leaves the tenants pinned, a CPU taken offline, apply
in generator mode, and disable putting back what was there.

What an operator would look at: the units' FragmentPath, cgroup files, /proc/PID/status of
the first process of a service, the journal, slicectl's output.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from slicectl.core.cpulist import format_cpulist

from . import guest

Run = Callable[..., subprocess.CompletedProcess[str]]

GENERATED = Path("/run/systemd/generator")
ETC = Path("/etc/systemd/system")
LINK = Path("/etc/systemd/system-generators/slicectl-generator")
TENANTS = """\
version: 1
tenants:
  db1: {cpus: 2, cpu_weight: 300, services: [probe.service]}
  db2: {cpus: 2, memory_max: 256M}
"""
PROBE = """\
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'grep Cpus_allowed_list /proc/self/status > /run/probe-cpus'
"""


def slicectl_files(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ("slicectl" in p.read_text(errors="replace") or
                                p.name.startswith(".slicectl"))}


def cpus_of(unit: str) -> list[int]:
    return guest.parse_cpulist(guest.cgroup_file(unit, "cpuset.cpus"))


@pytest.fixture
def generator_mode(slicectl: Run, tmp_path: Path) -> Iterator[Path]:
    """A tenants file; generator mode is switched off again when the test ends."""
    path = tmp_path / "tenants.yaml"
    path.write_text(TENANTS)
    (ETC / "probe.service").write_text(PROBE)
    yield path
    if LINK.is_symlink():
        slicectl("generator", "disable")
    guest.systemctl("stop", "probe.service", check=False)
    (ETC / "probe.service").unlink(missing_ok=True)
    Path("/run/probe-cpus").unlink(missing_ok=True)
    (ETC / ".slicectl-manifest.json").unlink(missing_ok=True)
    guest.systemctl("daemon-reload")


@pytest.mark.smoke
def test_enable_then_daemon_reload_places_tenants_from_the_generator(
        slicectl: Run, generator_mode: Path) -> None:
    # Files mode first, as a host that used apply before.
    assert slicectl("apply", str(generator_mode), "--yes").returncode == 0
    files_mode = slicectl_files(ETC)
    assert f"{ETC}/tenants-db1.slice" in files_mode
    placed = cpus_of("tenants-db1.slice")

    proc = slicectl("generator", "enable", str(generator_mode))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert LINK.is_symlink() and Path("/etc/slicectl/tenants.yaml").read_text() == TENANTS
    assert guest.unit_property("tenants-db1.slice", "FragmentPath") == \
        f"{GENERATED}/tenants-db1.slice"
    assert not (ETC / "tenants-db1.slice").exists()  # taken over: one owner per unit
    conf = (GENERATED / "tenants-db1.slice.d/50-slicectl.conf").read_text()
    assert f"AllowedCPUs={format_cpulist(frozenset(placed))}" in conf  # kept its CPUs
    assert cpus_of("tenants-db1.slice") == placed

    # A member service started now runs pinned from its first instruction.
    guest.systemctl("start", "probe.service")
    first = Path("/run/probe-cpus").read_text().split(":")[1].strip()
    assert guest.parse_cpulist(first) == placed

    # A daemon-reload runs the generator again: the same placement.
    guest.systemctl("daemon-reload")
    assert (GENERATED / "tenants-db1.slice.d/50-slicectl.conf").read_text() == conf

    # apply in generator mode: the file in /etc/slicectl replaced, the previous one kept.
    changed = generator_mode.with_name("changed.yaml")
    changed.write_text(TENANTS.replace("cpu_weight: 300", "cpu_weight: 500"))
    proc = slicectl("apply", str(changed), "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert Path("/etc/slicectl/tenants.yaml.previous").read_text() == TENANTS
    assert guest.cgroup_file("tenants-db1.slice", "cpu.weight").strip() == "500"
    assert "CPUWeight=500" in (GENERATED / "tenants-db1.slice.d/50-slicectl.conf").read_text()

    # disable: the files-mode units back exactly, the generator gone.
    proc = slicectl("generator", "disable")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not LINK.exists() and not Path("/etc/slicectl/tenants.yaml").exists()
    assert slicectl_files(ETC) == files_mode
    assert guest.unit_property("tenants-db1.slice", "FragmentPath") == \
        f"{ETC}/tenants-db1.slice"


def test_a_broken_tenants_file_leaves_the_tenants_pinned(slicectl: Run,
                                                         generator_mode: Path) -> None:
    proc = slicectl("generator", "enable", str(generator_mode))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    placed = {u: cpus_of(u) for u in ("tenants-db1.slice", "tenants-db2.slice")}
    since = guest.run(["date", "+%Y-%m-%d %H:%M:%S"]).stdout.strip()
    Path("/etc/slicectl/tenants.yaml").write_text(TENANTS.replace("cpus: 2, memory_max",
                                                                  "cpus: lots, memory_max"))
    guest.systemctl("daemon-reload")  # must not fail, whatever the file says
    assert guest.unit_property("tenants-db1.slice", "ActiveState") == "active"
    assert {u: cpus_of(u) for u in placed} == placed
    assert (GENERATED / "tenants-db2.slice").exists()  # the last good placement, whole
    journal = guest.run(["journalctl", "-b", "-k", "-t", "slicectl-generator", "--since",
                         since, "--no-pager", "-o", "cat"]).stdout
    assert "/etc/slicectl/tenants.yaml:4: tenants.db2.cpus:" in journal
    assert "wrote the last good placement instead" in journal
    proc = slicectl("plan", str(generator_mode))
    assert "warning: the generator's last run failed: /etc/slicectl/tenants.yaml:4:" in \
        proc.stderr


def test_a_cpu_taken_offline_is_left_out_at_the_next_reload(slicectl: Run,
                                                            generator_mode: Path) -> None:
    proc = slicectl("generator", "enable", str(generator_mode))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    victim = max(cpus_of("tenants-db1.slice") + cpus_of("tenants-db2.slice"))
    online = Path(f"/sys/devices/system/cpu/cpu{victim}/online")
    online.write_text("0")
    try:
        guest.systemctl("daemon-reload")
        conf = "".join((GENERATED / f"tenants-{t}.slice.d/50-slicectl.conf").read_text()
                       for t in ("db1", "db2"))
        allowed = [guest.parse_cpulist(line.split("=", 1)[1]) for line in conf.splitlines()
                   if line.startswith("AllowedCPUs=")]
        assert len(allowed) == 2 and all(len(c) == 2 for c in allowed)
        assert all(victim not in c for c in allowed)
    finally:
        online.write_text("1")


def placement() -> dict[str, list[int]]:
    """Each tenant's CPUs as the generator's drop-ins on this boot say."""
    placed = {}
    for tenant in ("db1", "db2"):
        conf = (GENERATED / f"tenants-{tenant}.slice.d/50-slicectl.conf").read_text()
        line = next(x for x in conf.splitlines() if x.startswith("AllowedCPUs="))
        placed[tenant] = guest.parse_cpulist(line.split("=", 1)[1])
    return placed


def first_instruction_cpus() -> list[int]:
    """The CPUs probe.service's first process was allowed to run on, started now."""
    guest.systemctl("restart", "probe.service")
    return guest.parse_cpulist(Path("/run/probe-cpus").read_text().split(":")[1])


@pytest.mark.smoke
def test_a_reboot_brings_the_same_placement_back(slicectl: Run, generator_mode: Path) -> None:
    resumed = guest.resumed()
    if resumed is None:
        proc = slicectl("generator", "enable", str(generator_mode))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        guest.reboot("rebooted", {"placed": placement(), "boot_id": boot_id})
    phase, state = resumed
    assert phase == "rebooted"
    assert Path("/proc/sys/kernel/random/boot_id").read_text().strip() != state["boot_id"]
    # No slicectl command has run since the boot: systemd ran the generator on its own.
    assert guest.unit_property("tenants-db1.slice", "FragmentPath") == \
        f"{GENERATED}/tenants-db1.slice"
    assert placement() == state["placed"]
    assert first_instruction_cpus() == state["placed"]["db1"]
    assert cpus_of("tenants-db1.slice") == state["placed"]["db1"]


def test_a_reboot_with_cpus_gone_places_the_tenants_on_what_is_left(
        slicectl: Run, generator_mode: Path) -> None:
    """The guest boots again with CPUs 4-7 gone (one CPU per node left): the two tenants of two
    CPUs each no longer fit one node each and are placed across two, on CPUs that exist; a
    boot with all eight back places them again on what is there."""
    resumed = guest.resumed()
    if resumed is None:
        proc = slicectl("generator", "enable", str(generator_mode))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert all(len(cpus) == 2 for cpus in placement().values())
        guest.reboot("four cpus", {}, cpus=4)
    phase, _ = resumed
    online = guest.parse_cpulist(Path("/sys/devices/system/cpu/online").read_text())
    if phase == "four cpus":
        assert online == [0, 1, 2, 3]
        placed = placement()
        assert sorted(c for cpus in placed.values() for c in cpus) == [0, 1, 2, 3], placed
        assert first_instruction_cpus() == placed["db1"]
        journal = guest.run(["journalctl", "-b", "-k", "-t", "slicectl-generator",
                             "--no-pager", "-o", "cat"]).stdout
        assert "wrote the last good placement" not in journal
        guest.reboot("eight cpus again", {})  # the next tests need the whole guest
    assert phase == "eight cpus again"
    assert online == list(range(8))
    placed = placement()
    assert all(len(cpus) == 2 for cpus in placed.values())
    assert first_instruction_cpus() == placed["db1"]
