"""apply/plan on the real guest: systemd 252 as PID 1, cgroup v2, 4 NUMA nodes.

Every assertion reads what an operator would: the cgroup files (through each unit's
ControlGroup), /proc/PID/status of a running process, slicectl's own output and exit code.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from . import guest

Run = Callable[..., subprocess.CompletedProcess[str]]

TENANTS = """\
version: 1
housekeeping: {cpus: 2}
confine:
  system.slice: {memory_max: 1G, cpu_weight: 50}
tenants:
  db1: {cpus: 2, cpu_weight: 300, memory_max: 256M, memory_high: 200M, memory_low: 64M}
  db2: {cpus: 2, cpu_quota: 150%, memory_max: 128M}
profiles:
  night:
    db1: {cpus: 4, cpu_weight: 100, numa: spread}   # more than a node (2 CPUs) holds
    db2: {cpus: 1, cpu_quota: 100%}
"""
ETC = Path("/etc/systemd/system")
RUNTIME_CONTROL = Path("/run/systemd/system.control")


@pytest.fixture
def tenants(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "tenants.yaml"
    path.write_text(TENANTS)
    yield path
    # Leave the guest as found: forget the manifest so the next test starts clean.
    (ETC / ".slicectl-manifest.json").unlink(missing_ok=True)


def apply(slicectl: Run, tenants: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = slicectl("apply", str(tenants), "--yes", *args)
    return proc


def planned(slicectl: Run, tenants: Path, *args: str) -> dict[str, str]:
    proc = slicectl("plan", str(tenants), "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return {t["name"]: t["cpus"] for t in json.loads(proc.stdout)["tenants"]}


def cpus(text: str) -> list[int]:
    return guest.parse_cpulist(text.strip())


def allowed(pid: str) -> list[int]:
    """The CPUs a process may run on, as the kernel says (1,3,5-6: ranges, not plan's 1,3,5,6)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return cpus(line.split(":", 1)[1])
    raise AssertionError(f"no Cpus_allowed_list for PID {pid}")


TENANTS_ONLY = """\
version: 1
tenants:
  web: {cpu_weight: 200, memory_max: 96M}
  batch: {cpus: 2, cpu_weight: 50}
"""


def loaded(unit: str) -> bool:
    """Whether systemd has the unit in memory (`list-units --all` does not load it)."""
    return bool(guest.systemctl("list-units", "--all", "--no-legend", unit).stdout.strip())


def test_first_apply_of_new_tenants_starts_them_from_their_files_without_a_reload(
        slicectl: Run, tmp_path: Path, cgroup_file: Callable[[str, str], str]) -> None:
    # An earlier test's tenants.slice is unloaded once systemd collects it. One that a boot
    # started (a test that rebooted the guest with slicectl's units in place) stays active
    # until it is stopped: this test is about units systemd has never loaded.
    if loaded("tenants.slice"):
        guest.systemctl("stop", "tenants.slice", check=False)
    guest.wait_until(lambda: not loaded("tenants.slice"),
                     "systemd to unload tenants.slice of an earlier test", interval=0.1)
    path = tmp_path / "tenants.yaml"
    path.write_text(TENANTS_ONLY)
    try:
        proc = slicectl("apply", str(path), "--yes", "--json")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        report = json.loads(proc.stdout)
        assert report["changes"]["reload"] is False and report["reloaded"] is False
        slices = {"tenants.slice", "tenants-web.slice", "tenants-batch.slice"}
        assert set(report["started"]) == slices
        assert cgroup_file("tenants-web.slice", "cpu.weight").strip() == "200"
        assert cgroup_file("tenants-web.slice", "memory.max").strip() == str(96 << 20)
        assert len(cpus(cgroup_file("tenants-batch.slice", "cpuset.cpus"))) == 2
        # systemd read exactly the files on disk: nothing waits for a daemon-reload
        for unit in sorted(slices):
            assert guest.unit_property(unit, "NeedDaemonReload") == "no", unit
            assert guest.unit_property(unit, "ActiveState") == "active", unit
        # Now the slices are loaded: changing one's files needs (and gets) a reload.
        path.write_text(TENANTS_ONLY.replace("cpu_weight: 200", "cpu_weight: 250"))
        proc = slicectl("apply", str(path), "--yes", "--json")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        report = json.loads(proc.stdout)
        assert report["changes"]["reload"] is True and report["reloaded"] is True
        assert cgroup_file("tenants-web.slice", "cpu.weight").strip() == "250"
        assert guest.unit_property("tenants-web.slice", "NeedDaemonReload") == "no"
    finally:
        (ETC / ".slicectl-manifest.json").unlink(missing_ok=True)


@pytest.mark.smoke
def test_values_land_in_cgroup_files(slicectl: Run, tenants: Path,
                                     cgroup_file: Callable[[str, str], str]) -> None:
    proc = apply(slicectl, tenants)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Applied" in proc.stdout
    plan = planned(slicectl, tenants)
    nodes = guest.numa_nodes()
    db1 = cpus(cgroup_file("tenants-db1.slice", "cpuset.cpus"))
    assert db1 == cpus(plan["db1"]) and len(db1) == 2
    node = next(n for n, c in nodes.items() if set(db1) <= set(c))  # one node, CPUs + memory
    assert cgroup_file("tenants-db1.slice", "cpuset.mems").strip() == str(node)
    assert cgroup_file("tenants-db1.slice", "cpu.weight").strip() == "300"
    assert cgroup_file("tenants-db1.slice", "memory.max").strip() == str(256 << 20)
    assert cgroup_file("tenants-db1.slice", "memory.high").strip() == str(200 << 20)
    assert cgroup_file("tenants-db1.slice", "memory.low").strip() == str(64 << 20)
    assert cgroup_file("tenants-db2.slice", "cpu.max").strip() == "150000 100000"
    assert cgroup_file("tenants.slice", "memory.low").strip() == str(64 << 20)
    # housekeeping: two CPUs from the lowest node pin system.slice, user.slice, init.scope
    hk = cpus(cgroup_file("system.slice", "cpuset.cpus"))
    assert hk == sorted(nodes[min(nodes)])
    assert cpus(cgroup_file("user.slice", "cpuset.cpus")) == hk
    assert cpus(cgroup_file("init.scope", "cpuset.cpus")) == hk
    assert cgroup_file("system.slice", "memory.max").strip() == str(1 << 30)
    assert cgroup_file("system.slice", "cpu.weight").strip() == "50"


def test_running_process_follows_live_reapply(slicectl: Run, tenants: Path, units: Any,
                                              systemctl: Run) -> None:
    assert apply(slicectl, tenants).returncode == 0
    guest.run(["systemd-run", "--unit=probe-db1", "--slice=tenants-db1.slice",
               "sleep", "infinity"], check=True)
    units.track("probe-db1.service")
    pid = guest.unit_property("probe-db1.service", "MainPID")
    day = planned(slicectl, tenants)["db1"]
    assert allowed(pid) == cpus(day)
    proc = apply(slicectl, tenants, "--profile", "night")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    night = planned(slicectl, tenants, "--profile", "night")["db1"]
    assert len(cpus(night)) == 4
    assert allowed(pid) == cpus(night)  # the same PID: nothing was restarted
    assert guest.unit_property("probe-db1.service", "MainPID") == pid
    # ... and back: the seed's day/night reallocation (000 §4.3)
    assert apply(slicectl, tenants).returncode == 0
    assert allowed(pid) == cpus(day)


@pytest.mark.smoke
def test_reapply_is_a_noop(slicectl: Run, tenants: Path) -> None:
    assert apply(slicectl, tenants).returncode == 0
    mtimes = {p: p.stat().st_mtime_ns for p in ETC.rglob("*slicectl*")}
    proc = slicectl("apply", str(tenants), "--yes", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["changes"]["changed"] is False and report["reloaded"] is False
    assert report["set_live"] == []
    assert {p: p.stat().st_mtime_ns for p in ETC.rglob("*slicectl*")} == mtimes
    assert slicectl("plan", str(tenants), "--exit-code").returncode == 0


def test_values_survive_reload_with_run_cleared(slicectl: Run, tenants: Path, systemctl: Run,
                                                cgroup_file: Callable[[str, str], str]) -> None:
    assert apply(slicectl, tenants).returncode == 0
    want = cgroup_file("tenants-db1.slice", "cpuset.cpus")
    # As after a reboot: nothing in /run survives; only the files in /etc remain.
    guest.run(["sh", "-c", "rm -rf /run/systemd/system.control/*"], check=True)
    systemctl("daemon-reload")
    assert cgroup_file("tenants-db1.slice", "cpuset.cpus") == want
    assert cgroup_file("tenants-db1.slice", "cpu.weight").strip() == "300"
    assert cgroup_file("tenants-db2.slice", "cpu.max").strip() == "150000 100000"
    assert slicectl("plan", str(tenants), "--exit-code").returncode == 0


def test_set_property_override_reported_and_corrected(
        slicectl: Run, tenants: Path, systemctl: Run,
        cgroup_file: Callable[[str, str], str]) -> None:
    assert apply(slicectl, tenants).returncode == 0
    systemctl("set-property", "tenants-db1.slice", "CPUWeight=50")
    assert cgroup_file("tenants-db1.slice", "cpu.weight").strip() == "50"
    proc = slicectl("plan", str(tenants), "--exit-code")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    control = "/etc/systemd/system.control/tenants-db1.slice.d/50-CPUWeight.conf"
    assert "tenants-db1.slice: CPUWeight 50 -> 300" in proc.stdout
    assert f"systemctl set-property ({control})" in proc.stdout
    proc = apply(slicectl, tenants)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert cgroup_file("tenants-db1.slice", "cpu.weight").strip() == "300"
    assert Path(control).exists()  # someone else's file: never edited
    systemctl("daemon-reload")  # our drop-in sorts after 50-CPUWeight.conf and wins
    assert cgroup_file("tenants-db1.slice", "cpu.weight").strip() == "300"
    Path(control).unlink()


def _live_snapshot() -> dict[str, str]:
    files = ("cpuset.cpus", "cpuset.mems", "cpu.weight", "cpu.max", "memory.max",
             "memory.high", "memory.low")
    out = {}
    for unit in ("tenants.slice", "tenants-db1.slice", "tenants-db2.slice", "system.slice"):
        for name in files:
            try:
                out[f"{unit}/{name}"] = guest.cgroup_file(unit, name)
            except (OSError, AssertionError):
                out[f"{unit}/{name}"] = "(none)"
    return out


def _etc_snapshot() -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(ETC.rglob("*"))
            if p.is_file() and ("slicectl" in p.read_text(errors="replace") or
                                p.name.startswith(".slicectl"))}


def test_read_only_unit_dir_leaves_live_state_unchanged(slicectl: Run, tenants: Path) -> None:
    assert apply(slicectl, tenants).returncode == 0
    live, files = _live_snapshot(), _etc_snapshot()
    guest.run(["mount", "--bind", str(ETC), str(ETC)], check=True)
    try:
        guest.run(["mount", "-o", "remount,bind,ro", str(ETC)], check=True)
        proc = apply(slicectl, tenants, "--profile", "night")
    finally:
        guest.run(["umount", str(ETC)], check=True)
    assert proc.returncode == 1
    assert "Read-only file system" in proc.stderr and "Traceback" not in proc.stderr
    assert _live_snapshot() == live
    assert _etc_snapshot() == files


def test_a_property_this_systemd_and_kernel_lack_is_refused_before_anything_changes(
        slicectl: Run, tenants: Path, tmp_path: Path) -> None:
    """MemoryZSwapWriteback= needs systemd 256 and Linux 6.8 (memory.zswap.writeback); the
    guest runs systemd 252 on Linux 6.1: apply says so and changes nothing."""
    assert apply(slicectl, tenants).returncode == 0
    live, files = _live_snapshot(), _etc_snapshot()
    newer = tmp_path / "zswap.yaml"
    newer.write_text(TENANTS.replace("memory_low: 64M}", "memory_low: 64M,\n"
                                     "        memory_zswap_writeback: false}"))
    proc = apply(slicectl, newer)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (f"{newer}:7: tenants.db1.memory_zswap_writeback: needs systemd 256 or later and "
            "Linux 6.8 or later, but the target runs systemd 252 (systemd on this host)"
            ) in proc.stderr
    assert "Traceback" not in proc.stderr
    assert _live_snapshot() == live
    assert _etc_snapshot() == files


@pytest.mark.smoke
def test_dbus_failure_midway_rolls_back(slicectl: Run, tenants: Path, tmp_path: Path) -> None:
    one = tmp_path / "one.yaml"
    one.write_text(TENANTS.replace("  db2: {cpus: 2, cpu_quota: 150%, memory_max: 128M}\n",
                                   "").replace(
                                       "    db2: {cpus: 1, cpu_quota: 100%}\n", ""))
    assert apply(slicectl, one).returncode == 0
    live, files = _live_snapshot(), _etc_snapshot()
    # A drop-in of the test's own makes systemd's StartUnit job for the new slice fail, after
    # slicectl has written its files and reloaded: a real failure from the real D-Bus path.
    trap = Path("/run/systemd/system/tenants-db2.slice.d/10-test-fail.conf")
    trap.parent.mkdir(parents=True, exist_ok=True)
    trap.write_text("[Unit]\nAssertPathExists=/nonexistent-slicectl-test\n")
    try:
        proc = apply(slicectl, tenants, "--profile", "night")  # db1 moves, db2 is added
    finally:
        trap.unlink()
        trap.parent.rmdir()
    assert proc.returncode == 1, proc.stdout
    assert "rolled back" in proc.stderr and "tenants-db2.slice" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert _etc_snapshot() == files
    assert _live_snapshot() == live
    assert not (ETC / "tenants-db2.slice").exists()


def test_profile_switch_moves_cpus_and_back(slicectl: Run, tenants: Path,
                                            cgroup_file: Callable[[str, str], str]) -> None:
    assert apply(slicectl, tenants).returncode == 0
    day = {t: cgroup_file(f"tenants-{t}.slice", "cpuset.cpus") for t in ("db1", "db2")}
    assert apply(slicectl, tenants, "--profile", "night").returncode == 0
    night = {t: cgroup_file(f"tenants-{t}.slice", "cpuset.cpus") for t in ("db1", "db2")}
    assert len(cpus(night["db1"])) == 4 and len(cpus(night["db2"])) == 1
    assert set(cpus(day["db1"])) <= set(cpus(night["db1"]))  # grew in place
    assert cgroup_file("tenants-db1.slice", "cpu.weight").strip() == "100"
    assert apply(slicectl, tenants).returncode == 0
    assert {t: cgroup_file(f"tenants-{t}.slice", "cpuset.cpus") for t in ("db1", "db2")} == day


SHARES = """\
version: 1
tenants:
  web: {memory_max: 50%, tasks_max: 10%}
"""


def test_shares_of_ram_and_of_the_task_limit_land_as_systemd_resolves_them(
        slicectl: Run, tmp_path: Path, cgroup_file: Callable[[str, str], str]) -> None:
    """`memory_max: 50%` and `tasks_max: 10%` from the unit file at the first apply; put
    back live over D-Bus (MemoryMaxScale, TasksMaxScale) after someone changed them at
    runtime; then changed in tenants.yaml: the cgroup holds what systemd made of them,
    slicectl resolves them alike (`plan --exit-code` 0), and a reload keeps them."""
    path = tmp_path / "tenants.yaml"
    meminfo = Path("/proc/meminfo").read_text().split()
    ram = int(meminfo[meminfo.index("MemTotal:") + 1]) * 1024
    page = 4096

    def landed(memory: int, tasks: int) -> None:
        memory_max = int(cgroup_file("tenants-web.slice", "memory.max"))
        assert abs(memory_max - ram * memory // 100) <= 2 * page, (memory_max, ram)
        limit = json.loads(slicectl("plan", str(path), "--json").stdout)["task_limit"]
        pids_max = int(cgroup_file("tenants-web.slice", "pids.max"))
        assert limit > 0 and abs(pids_max - limit * tasks // 100) <= 1, (pids_max, limit)
        assert guest.unit_property("tenants-web.slice", "TasksMax") == str(pids_max)
        plan = slicectl("plan", str(path), "--exit-code")
        assert plan.returncode == 0, plan.stdout + plan.stderr

    try:
        path.write_text(SHARES)
        proc = slicectl("apply", str(path), "--yes")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        landed(50, 10)
        guest.systemctl("set-property", "--runtime", "tenants-web.slice", "MemoryMax=1G",
                        "TasksMax=100")
        assert slicectl("plan", str(path), "--exit-code").returncode == 3
        proc = slicectl("apply", str(path), "--yes", "--json")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        live = {p["property"] for p in json.loads(proc.stdout)["set_live"]}
        assert {"MemoryMax", "TasksMax"} <= live, proc.stdout
        landed(50, 10)
        shutil.rmtree(RUNTIME_CONTROL / "tenants-web.slice.d")  # the set-property's files
        path.write_text(SHARES.replace("50%", "40%").replace("10%", "20%"))
        proc = slicectl("apply", str(path), "--yes")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        landed(40, 20)
        guest.systemctl("daemon-reload")
        landed(40, 20)
    finally:
        shutil.rmtree(RUNTIME_CONTROL / "tenants-web.slice.d", ignore_errors=True)
        (ETC / ".slicectl-manifest.json").unlink(missing_ok=True)
