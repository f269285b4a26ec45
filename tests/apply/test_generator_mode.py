"""Generator mode (slicectl.apply.generator_mode) against the fake systemd, whose Reload runs
the real `slicectl-generator` into the generator folder as systemd does: enable takes over the
files-mode units, apply in generator mode and its rollback, disable puts back what was there."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from paths import ROOT

from slicectl.apply.applier import ApplyOptions, apply_plan
from slicectl.apply.generator_mode import (
    GeneratorPaths,
    apply_generated,
    disable,
    enable,
    enabled,
)
from slicectl.core.errors import ApplyError
from slicectl.demo.fakesystemd import FakeSystemd
from slicectl.host.files import placement_record
from slicectl.host.planning import load_tenants
from slicectl.host.topology.sysfs import read_topology

EXE = "/usr/local/bin/slicectl-generator"
TENANTS = """\
version: 1
tenants:
  db1: {cpus: 2, cpu_weight: 300, memory_max: 256M}
  db2: {cpus: 2, memory_max: 128M}
"""


def sysfs_tree(root: Path) -> Path:
    """A sysfs tree shaped like the testbed: 8 CPUs, 4 nodes, interleaved (node0 = 0,4)."""
    cpu = root / "devices/system/cpu"
    for c in range(8):
        top = cpu / f"cpu{c}/topology"
        top.mkdir(parents=True)
        (top / "thread_siblings_list").write_text(f"{c}\n")
        (top / "core_id").write_text("0\n")
        (top / "physical_package_id").write_text(f"{c}\n")
    (cpu / "online").write_text("0-7\n")
    for n in range(4):
        node = root / f"devices/system/node/node{n}"
        node.mkdir(parents=True)
        (node / "cpulist").write_text(f"{n},{n + 4}\n")
        (node / "meminfo").write_text(f"Node {n} MemTotal:        1048576 kB\n")
        (node / "distance").write_text(" ".join("10" if m == n else "20" for m in range(4))
                                       + "\n")
    (root / "devices/system/node/online").write_text("0-3\n")
    return root


def systemd_runs_the_generator(paths: GeneratorPaths, sysfs: Path) -> Callable[[], None]:
    """What systemd does at a reload: fresh output folders, the generator run into them."""
    def run() -> None:
        shutil.rmtree(paths.output, ignore_errors=True)
        paths.output.mkdir(parents=True)
        if not enabled(paths):
            return
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT),
               "SLICECTL_TENANTS": str(paths.tenants), "SLICECTL_SYSFS": str(sysfs),
               "SLICECTL_KMSG": str(paths.root / "kmsg")}
        subprocess.run([sys.executable, "-c", "from slicectl.generator import main; main()",
                        str(paths.output)], env=env, check=True, timeout=60)
    return run


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


@pytest.fixture
def host(tmp_path: Path, dbus_daemon: str, fake_systemd: FakeSystemd
         ) -> tuple[ApplyOptions, GeneratorPaths, Path]:
    paths = GeneratorPaths(tmp_path / "root")
    sysfs = sysfs_tree(tmp_path / "sys")
    unit_dir = paths.root / "etc/systemd/system"
    unit_dir.mkdir(parents=True)
    (unit_dir / "sshd.service").write_text("[Service]\nExecStart=/usr/sbin/sshd\n")  # not ours
    fake_systemd.on_reload.append(systemd_runs_the_generator(paths, sysfs))
    options = ApplyOptions(unit_dir=unit_dir, cgroup_root=tmp_path / "cgroup",
                           bus_address=dbus_daemon, control_dir=tmp_path / "control",
                           kernel="6.1.0")
    return options, paths, sysfs


def tenants_file(tmp_path: Path, text: str = TENANTS, name: str = "tenants.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


async def test_enable_takes_over_apply_in_generator_mode_and_disable_restores(
        host: tuple[ApplyOptions, GeneratorPaths, Path], tmp_path: Path,
        fake_systemd: FakeSystemd) -> None:
    options, paths, sysfs = host
    topology = read_topology(sysfs)
    first = tenants_file(tmp_path)
    await apply_plan(load_tenants(str(first)), topology, options)  # files mode
    files_mode = files(options.unit_dir)
    assert "tenants-db1.slice" in files_mode

    report = await enable(str(first), topology, str(sysfs), options, paths, EXE)
    assert os.readlink(paths.link) == EXE and enabled(paths)
    assert paths.tenants.read_text() == TENANTS
    left = files(options.unit_dir)
    assert sorted(left) == [".slicectl-manifest.json", "sshd.service"]  # ours taken over
    generated = files(paths.output)
    assert "AllowedCPUs=" in generated["tenants-db1.slice.d/50-slicectl.conf"].decode()
    # The generator kept the CPUs files mode had placed.
    assert generated["tenants-db1.slice.d/50-slicectl.conf"] == \
        files_mode["tenants-db1.slice.d/50-slicectl.conf"]
    assert not report.diff.changed  # the same settings: nothing live to change

    second = tenants_file(tmp_path, TENANTS.replace("cpu_weight: 300", "cpu_weight: 500"),
                          "second.yaml")
    report = await apply_generated(load_tenants(str(second)), topology, str(sysfs), options,
                                   paths)
    assert paths.previous.read_text() == TENANTS
    assert "CPUWeight=500" in (paths.output / "tenants-db1.slice.d/50-slicectl.conf"
                               ).read_text()
    assert "tenants-db1.slice" in report.verified
    assert (options.cgroup_root / "tenants.slice/tenants-db1.slice/cpu.weight"
            ).read_text().strip() == "500"

    await disable(options, paths)
    assert files(options.unit_dir) == files_mode
    assert not enabled(paths) and not paths.tenants.exists() and not paths.previous.exists()
    assert not (paths.etc / "placement").exists() and not (paths.etc / "files-mode").exists()
    assert fake_systemd.members()[-1] == "Reload"


@pytest.mark.parametrize("previous", [False, True])
async def test_disable_puts_back_the_tenants_yaml_enable_found(
        host: tuple[ApplyOptions, GeneratorPaths, Path], tmp_path: Path,
        previous: bool) -> None:
    """The operator's own /etc/slicectl/tenants.yaml (the balancer's and the exporter's
    default) was deleted by disable."""
    options, paths, sysfs = host
    topology = read_topology(sysfs)
    paths.etc.mkdir(parents=True)
    own = "# the operator's own\n" + TENANTS.replace("cpu_weight: 300", "cpu_weight: 100")
    paths.tenants.write_text(own)
    if previous:
        paths.previous.write_text("# older\n" + TENANTS)
    await enable(str(tenants_file(tmp_path)), topology, str(sysfs), options, paths, EXE)
    await apply_generated(load_tenants(str(tenants_file(
        tmp_path, TENANTS.replace("cpu_weight: 300", "cpu_weight: 500"), "second.yaml"))),
        topology, str(sysfs), options, paths)
    assert paths.tenants.read_text() != own
    done = await disable(options, paths)
    assert paths.tenants.read_text() == own
    assert f"restored {paths.tenants} as it was before generator mode" in done
    if previous:
        assert paths.previous.read_text() == "# older\n" + TENANTS
    else:
        assert not paths.previous.exists()
    assert sorted(p.name for p in paths.etc.iterdir()) == \
        ["tenants.yaml", "tenants.yaml.previous"][:1 + previous]


async def test_generator_mode_with_a_schedule_records_what_the_generator_writes(
        host: tuple[ApplyOptions, GeneratorPaths, Path], tmp_path: Path,
        fake_systemd: FakeSystemd) -> None:
    """The record was made by a second copy of the generator's builder: its profile timers ran
    `apply` on the file given to enable, not on /etc/slicectl/tenants.yaml, and the generator
    copies the record as it is while nothing changes."""
    options, paths, sysfs = host
    topology = read_topology(sysfs)
    text = TENANTS + "profiles:\n  night:\n    db1: {cpus: 1}\nschedule:\n  night: '22:00'\n"
    source = tenants_file(tmp_path, text, "given-to-enable.yaml")
    for timer in ("slicectl-profile@night.timer", "slicectl-profile@default.timer"):
        fake_systemd.add_unit(timer)  # loaded from the generator's folder by the reload
    installed = tmp_path / "bin"  # slicectl-generator and slicectl, installed side by side
    installed.mkdir()
    (installed / "slicectl-generator").write_text(
        f"#!{sys.executable}\nimport sys\nfrom slicectl.generator import main\nsys.exit(main())\n")
    (installed / "slicectl").write_text("#!/bin/sh\n")
    for name in ("slicectl-generator", "slicectl"):
        (installed / name).chmod(0o755)
    await enable(str(source), topology, str(sysfs), options, paths,
                 str(installed / "slicectl-generator"))
    folder, _ = placement_record.recorded(str(paths.tenants)) or ("", b"")
    recorded = placement_record.recorded_files(folder)
    service = recorded["slicectl-profile@.service"].decode()
    assert f"ExecStart={installed / 'slicectl'} apply " in service
    assert str(paths.tenants) in service and str(source) not in service
    # What the generator writes when it plans (the record set aside) is the record itself.
    shutil.move(folder, tmp_path / "aside")
    shutil.rmtree(paths.output)
    subprocess.run([str(paths.link), str(paths.output)], check=True, timeout=60, env={
        "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "SLICECTL_TENANTS": str(paths.tenants),
        "SLICECTL_SYSFS": str(sysfs), "SLICECTL_KMSG": str(tmp_path / "kmsg")})
    assert files(paths.output) == recorded


async def test_a_failed_enable_puts_everything_back(
        host: tuple[ApplyOptions, GeneratorPaths, Path], tmp_path: Path,
        fake_systemd: FakeSystemd) -> None:
    options, paths, sysfs = host
    topology = read_topology(sysfs)
    first = tenants_file(tmp_path)
    await apply_plan(load_tenants(str(first)), topology, options)
    before = files(options.unit_dir)
    changed = tenants_file(tmp_path, TENANTS.replace("cpu_weight: 300", "cpu_weight: 500"),
                           "changed.yaml")
    fake_systemd.fail_on("SetUnitProperties", "tenants-db1.slice")
    with pytest.raises(ApplyError) as e:
        await enable(str(changed), topology, str(sysfs), options, replace(paths), EXE)
    assert e.value.message.endswith("rolled back to the previous state")
    assert files(options.unit_dir) == before
    assert not enabled(paths) and not paths.tenants.exists()
    assert not (paths.etc / "placement").exists() and not (paths.etc / "files-mode").exists()


async def test_a_failed_apply_in_generator_mode_restores_the_previous_tenants_file(
        host: tuple[ApplyOptions, GeneratorPaths, Path], tmp_path: Path,
        fake_systemd: FakeSystemd) -> None:
    options, paths, sysfs = host
    topology = read_topology(sysfs)
    await enable(str(tenants_file(tmp_path)), topology, str(sysfs), options, paths, EXE)
    generated = files(paths.output)
    second = tenants_file(tmp_path, TENANTS.replace("cpu_weight: 300", "cpu_weight: 500"),
                          "second.yaml")
    fake_systemd.fail_on("SetUnitProperties", "tenants-db1.slice")
    with pytest.raises(ApplyError):
        await apply_generated(load_tenants(str(second)), topology, str(sysfs), options, paths)
    assert paths.tenants.read_text() == TENANTS
    assert files(paths.output) == generated  # reloaded: the generator placed the old file
