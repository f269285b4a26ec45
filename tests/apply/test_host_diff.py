"""What the host has now against the plan (slicectl.apply.host_diff): the diff `plan` shows and
apply acts on, its notes, and the read-back of cgroup files apply verifies with; against the
fake systemd on a private bus."""

from __future__ import annotations

from pathlib import Path

import pytest

from slicectl.apply.applier import ApplyOptions, load_plan
from slicectl.apply.host_diff import Diff, PropChange, cgroup_problems, host_diff, unit_of
from slicectl.core.config.config import load_yaml, parse_config
from slicectl.core.placement.topology import Cpu, Node, Topology
from slicectl.core.plan import Plan
from slicectl.core.properties.kinds import CgroupExpectation, same_cpus
from slicectl.demo.fakesystemd import FakeSystemd
from slicectl.host.files.unitdir import FileChanges, Manifest, UnitDir
from slicectl.host.systemd.systemd import Systemd

YAML = """\
version: 1
tenants:
  db1: {cpus: 2, cpu_weight: 300, services: [app.service]}
"""
# 8 CPUs in 4 nodes, interleaved like the testbed (node0 = 0,4; node1 = 1,5; ...)
TOPO = Topology(
    tuple(Node(n, frozenset({n, n + 4}), 1 << 30, {m: 10 if m == n else 20 for m in range(4)})
          for n in range(4)),
    tuple(Cpu(c, True, c % 4, package=c, core=0, siblings=frozenset({c})) for c in range(8)),
    "testbed")


def test_diff_lines_one_per_change() -> None:
    diff = Diff(files=FileChanges(created=("tenants.slice",), updated=("a.slice",),
                                  removed=("old.slice",)),
                props=[PropChange("system.slice", "CPUWeight", 100, 50,
                                  "/etc/systemd/system.control/system.slice.d/50-CPUWeight.conf")],
                start=["tenants.slice"], stop=["tenants-old.slice"], reload=True)
    assert diff.changed
    assert diff.lines(Path("/etc/systemd/system")) == [
        "create /etc/systemd/system/tenants.slice",
        "update /etc/systemd/system/a.slice",
        "remove /etc/systemd/system/old.slice",
        "reload systemd (daemon-reload: files of loaded units change)",
        "set    system.slice: CPUWeight 100 -> 50  "
        "[/etc/systemd/system.control/system.slice.d/50-CPUWeight.conf]",
        "start  tenants.slice",
        "stop   tenants-old.slice"]


def test_a_diff_of_notes_alone_changes_nothing() -> None:
    assert not Diff(files=FileChanges(unchanged=("a.slice",)), notes=["a note"]).changed


@pytest.mark.parametrize(("rel", "unit"), [
    ("tenants.slice", "tenants.slice"),
    ("tenants-db1.slice.d/50-slicectl.conf", "tenants-db1.slice"),
    ("app.service.d/50-slicectl.conf", "app.service")])
def test_unit_of_a_generated_file(rel: str, unit: str) -> None:
    assert unit_of(rel) == unit


def test_cgroup_problems_name_the_file_and_both_values(tmp_path: Path) -> None:
    group = tmp_path / "tenants.slice" / "tenants-db1.slice"
    group.mkdir(parents=True)
    (group / "cpuset.cpus").write_text("0-1\n")
    (group / "cpu.weight").write_text("100\n")
    expectations = [CgroupExpectation("cpuset.cpus", "0,1", same_cpus),
                    CgroupExpectation("cpu.weight", "300"),
                    CgroupExpectation("memory.max", "536870912")]
    assert cgroup_problems(tmp_path, "tenants-db1.slice", "/tenants.slice/tenants-db1.slice",
                           expectations) == [
        "tenants-db1.slice: /tenants.slice/tenants-db1.slice/cpu.weight is '100', expected '300'",
        "tenants-db1.slice: /tenants.slice/tenants-db1.slice/memory.max is (missing), expected "
        "'536870912'"]


@pytest.fixture
def options(tmp_path: Path, dbus_daemon: str, fake_systemd: FakeSystemd) -> ApplyOptions:
    (tmp_path / "units").mkdir()
    return ApplyOptions(unit_dir=tmp_path / "units", cgroup_root=tmp_path / "cgroup",
                        bus_address=dbus_daemon, control_dir=tmp_path / "control")


async def diff_of(options: ApplyOptions) -> tuple[Diff, Plan]:
    config = parse_config(load_yaml(YAML, "t.yaml"), "t.yaml")
    plan, files = load_plan(config, TOPO, options)
    async with await Systemd.connect(options.bus_address) as sd:
        diff, _ = await host_diff(sd, plan, files, UnitDir(options.unit_dir),
                                  options.cgroup_root)
    return diff, plan


async def test_a_first_apply_creates_files_and_starts_the_slices(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    diff, _ = await diff_of(options)
    assert diff.files.created == ("app.service.d/50-slicectl.conf", "tenants-db1.slice",
                                  "tenants-db1.slice.d/50-slicectl.conf", "tenants.slice")
    assert diff.start == ["tenants.slice", "tenants-db1.slice"] and diff.stop == []
    assert not diff.reload  # no unit whose files change is loaded: no daemon-reload


async def test_a_running_member_service_is_told_to_restart_itself_and_reloads(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    fake_systemd.add_unit("app.service", active_state="active", sub_state="running",
                          slice="system.slice")
    diff, _ = await diff_of(options)
    assert diff.notes == ["app.service runs in system.slice; restart it to move it into "
                          "tenants-db1.slice (slicectl never restarts services)"]
    assert diff.reload  # its drop-in changes and it is loaded


def old_tenant(options: ApplyOptions, fake: FakeSystemd, populated: bool) -> None:
    """A tenant slicectl generated before (in the manifest), running, no longer planned."""
    UnitDir(options.unit_dir).write({"tenants-old.slice": "[Slice]\n"}, Manifest())
    fake.add_unit("tenants.slice", active_state="active", sub_state="active")
    fake.add_unit("tenants-old.slice", active_state="active", sub_state="active")
    events = options.cgroup_root / "tenants.slice" / "tenants-old.slice" / "cgroup.events"
    events.parent.mkdir(parents=True, exist_ok=True)
    events.write_text(f"populated {int(populated)}\nfrozen 0\n")


async def test_a_tenant_no_longer_planned_is_stopped_when_empty(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    old_tenant(options, fake_systemd, populated=False)
    diff, _ = await diff_of(options)
    assert diff.stop == ["tenants-old.slice"] and diff.files.removed == ("tenants-old.slice",)


async def test_a_tenant_no_longer_planned_with_processes_is_left_running(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    old_tenant(options, fake_systemd, populated=True)
    diff, _ = await diff_of(options)
    assert diff.stop == []
    assert diff.notes == ["tenants-old.slice is no longer planned but still has processes: not "
                          "stopped (move them out, then `systemctl stop` it)"]
