"""The testbed guest is what slicectl expects of a host: systemd, cgroup v2, NUMA, PSI."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from . import guest
from .conftest import Units

CONTROLLERS = {"cpuset", "cpu", "io", "memory", "pids"}


@pytest.mark.smoke
def test_pid1_is_systemd_and_boot_finished_cleanly() -> None:
    assert Path("/proc/1/comm").read_text().strip() == "systemd"
    state = guest.run(["systemctl", "is-system-running", "--wait"], check=False).stdout.strip()
    failed = guest.systemctl("list-units", "--failed", "--no-legend").stdout
    assert state == "running", f"system is {state}; failed units:\n{failed}"


@pytest.mark.smoke
def test_cgroup_v2_unified_with_the_controllers_slicectl_uses(cgroup_root: Path) -> None:
    mounts = [line.split() for line in Path("/proc/self/mounts").read_text().splitlines()]
    cgroup_mounts = [(m[1], m[2]) for m in mounts if m[2].startswith("cgroup")]
    assert cgroup_mounts == [(str(cgroup_root), "cgroup2")]
    assert CONTROLLERS <= set((cgroup_root / "cgroup.controllers").read_text().split())


def test_numa_nodes_interleave_cpus_like_a_real_server() -> None:
    nodes = guest.numa_nodes()
    assert len(nodes) == 4
    cpus = sorted(cpu for node_cpus in nodes.values() for cpu in node_cpus)
    assert cpus == list(range(len(cpus)))
    for node, node_cpus in nodes.items():
        # node0 = 0,4; node1 = 1,5; ...: sibling CPUs of a node are len(nodes) apart.
        assert node_cpus == list(range(node, len(cpus), len(nodes)))
        distances = (guest.NODE_ROOT / f"node{node}" / "distance").read_text().split()
        assert [int(d) for d in distances] == [10 if n == node else 20 for n in sorted(nodes)]
    assert f"available: {len(nodes)} nodes" in guest.run(["numactl", "--hardware"]).stdout


def test_pressure_stall_information_is_on() -> None:
    for resource in ("cpu", "memory", "io"):
        text = Path("/proc/pressure", resource).read_text()
        assert text.startswith("some avg10="), text


def test_slice_properties_land_in_its_cgroup(units: Units) -> None:
    units.track("probe-props.slice", "probe.slice")
    guest.systemctl(
        "set-property",
        "--runtime",
        "probe-props.slice",
        "AllowedCPUs=1,5",
        "AllowedMemoryNodes=1",
        "CPUWeight=300",
        "CPUQuota=50%",
        "IOWeight=200",
        "MemoryMax=256M",
        "TasksMax=100",
    )
    guest.systemctl("start", "probe-props.slice")

    cgroup = guest.control_group("probe-props.slice")
    # The dash in the name nests the slice: never derive this path from the name yourself.
    assert cgroup.relative_to(guest.CGROUP_ROOT) == Path("probe.slice/probe-props.slice")
    assert CONTROLLERS <= set((cgroup / "cgroup.controllers").read_text().split())
    assert guest.cgroup_file("probe-props.slice", "cpuset.cpus") == "1,5"
    assert guest.cgroup_file("probe-props.slice", "cpuset.mems") == "1"
    assert guest.cgroup_file("probe-props.slice", "cpu.weight") == "300"
    assert guest.cgroup_file("probe-props.slice", "cpu.max") == "50000 100000"
    assert "default 200" in guest.cgroup_file("probe-props.slice", "io.weight")
    assert guest.cgroup_file("probe-props.slice", "memory.max") == str(256 * 1024 * 1024)
    assert guest.cgroup_file("probe-props.slice", "pids.max") == "100"
    assert (cgroup / "cpu.pressure").read_text().startswith("some avg10=")


def test_process_in_a_pinned_slice_runs_on_that_node_only(units: Units) -> None:
    nodes = guest.numa_nodes()
    node = max(nodes)
    cpulist = ",".join(map(str, nodes[node]))
    units.track("probe-pinned.slice", "probe.slice")
    guest.systemctl(
        "set-property",
        "--runtime",
        "probe-pinned.slice",
        f"AllowedCPUs={cpulist}",
        f"AllowedMemoryNodes={node}",
    )
    guest.systemctl("start", "probe-pinned.slice")

    status = guest.run(
        [
            "systemd-run",
            "--pipe",
            "--wait",
            "--quiet",
            "--slice=probe-pinned.slice",
            "grep",
            "-E",
            "^(Cpus|Mems)_allowed_list",
            "/proc/self/status",
        ]
    ).stdout
    fields = dict(line.split(":\t") for line in status.splitlines())
    assert guest.parse_cpulist(fields["Cpus_allowed_list"]) == nodes[node]
    assert guest.parse_cpulist(fields["Mems_allowed_list"]) == [node]
    assert guest.cgroup_file("probe-pinned.slice", "cpuset.cpus.effective") == cpulist


def test_checkout_and_dependencies_import_in_the_guest() -> None:
    guest.run(["python3", "-c", "import slicectl, dbus_fast, textual, jinja2, ruamel.yaml"])
    where = guest.run(["python3", "-c", "import slicectl; print(slicectl.__file__)"]).stdout
    assert where.startswith(os.environ["SLICECTL_CHECKOUT"])
    assert shutil.which("slicectl") == "/usr/local/bin/slicectl"


@pytest.mark.smoke
def test_slicectl_command_is_the_checkout_installed_on_the_guest_disk() -> None:
    # `slicectl` runs from /opt/slicectl/lib (unpacked at boot, like a pip install), not over
    # 9p: the installed files must be exactly the checkout's, templates included.
    installed = Path("/opt/slicectl/lib/slicectl")
    checkout = Path(os.environ["SLICECTL_CHECKOUT"])
    for source, dest in [(checkout / "slicectl", installed),
                         (checkout / "templates", installed / "templates")]:
        names = sorted(p.name for p in source.glob("*.py")) + sorted(
            p.name for p in source.glob("*.j2"))
        assert names
        for name in names:
            assert (dest / name).read_bytes() == (source / name).read_bytes(), name
    assert "usage: slicectl" in guest.slicectl("--help").stdout


@pytest.mark.smoke
def test_help_and_version_work_on_the_guests_python() -> None:
    """`--help` and `--version` of the installed command on the guest's own Python (3.14's
    argparse changed internals the parser once relied on)."""
    import slicectl

    for args in (["--help"], ["--version"], ["apply", "--help"]):
        proc = guest.slicectl(*args)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert slicectl.__version__ in guest.slicectl("--version").stdout
    assert "usage: slicectl apply" in guest.slicectl("apply", "--help").stdout


def test_unit_object_paths_are_computed_as_systemd_names_them() -> None:
    from slicectl.host.systemd.systemd import unit_object_path

    for unit in ("getty@tty1.service", "system.slice", "init.scope", "user.slice", "dbus.service",
                 "systemd-journald.service"):
        out = guest.run(["busctl", "call", "org.freedesktop.systemd1",
                         "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                         "LoadUnit", "s", unit]).stdout.split()
        assert out[0] == "o" and out[1].strip('"') == unit_object_path(unit), unit
