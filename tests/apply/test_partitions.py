"""apply with `cpuset_partition:` against the fake systemd, whose kernel model (FakeSystemd.
partition_text) makes a partition below tenants.slice valid only once every cgroup down to it
lists its CPUs in cpuset.cpus.exclusive, as the kernel does for remote partitions: the
exclusive CPUs slicectl writes itself, the read-back of what the kernel made of the partition,
and rollback to the previous bytes."""

from __future__ import annotations

import errno
from dataclasses import replace
from pathlib import Path

import pytest
from test_apply import make_topology, snapshot

from slicectl.apply.applier import ApplyOptions, apply_plan, compute_diff
from slicectl.core.config.config import Config, load_yaml, parse_config
from slicectl.core.errors import ApplyError, ConfigError
from slicectl.core.properties.partition import KERNEL_REASONS
from slicectl.demo.fakesystemd import FakeSystemd, FakeUnit
from slicectl.host.cgroup.cgroupfs import write_cgroup_file

YAML = """\
version: 1
housekeeping: {cpus: 2}
tenants:
  db1: {cpus: 2, cpuset_partition: isolated}
  db2: {cpus: 2}
profiles:
  night:
    db1: {cpus: 1}
  member:
    db1: {cpuset_partition: member}
"""
DB1 = "tenants.slice/tenants-db1.slice"


@pytest.fixture
def options(tmp_path: Path, dbus_daemon: str, fake_systemd: FakeSystemd) -> ApplyOptions:
    (tmp_path / "units").mkdir()
    fake_systemd.version = "262.1-1"  # CPUSetPartition= came with systemd 261
    return ApplyOptions(unit_dir=tmp_path / "units", cgroup_root=tmp_path / "cgroup",
                        bus_address=dbus_daemon, control_dir=tmp_path / "control",
                        kernel="7.2.0-1-amd64", proc_root=tmp_path / "proc",
                        sysfs_root=tmp_path / "sys",
                        isolation_record=tmp_path / "run/slicectl/isolation.json",
                        runtime_unit_dir=tmp_path / "run/systemd/system")


def config(text: str = YAML, profile: str | None = None) -> Config:
    return parse_config(load_yaml(text, "tenants.yaml"), "tenants.yaml").with_profile(profile)


def read(options: ApplyOptions, path: str, name: str) -> str:
    return (options.cgroup_root / path / name).read_text()


async def test_isolated_tenant_gets_exclusive_cpus_down_its_parents_and_is_read_back(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    report = await apply_plan(config(), make_topology(), options)
    assert "CPUSetPartition=isolated" in (
        options.unit_dir / "tenants-db1.slice.d/50-slicectl.conf").read_text()
    # systemd writes no cpuset.cpus.exclusive; without these the kernel refuses the partition
    assert read(options, "tenants.slice", "cpuset.cpus.exclusive") == "1,5\n"
    assert read(options, DB1, "cpuset.cpus.exclusive") == "1,5\n"
    assert read(options, DB1, "cpuset.cpus.partition") == "isolated\n"
    assert read(options, "tenants.slice/tenants-db2.slice", "cpuset.cpus.exclusive") == "\n"
    assert [c.control_group for c in report.exclusive] == ["/tenants.slice",
                                                         "/tenants.slice/tenants-db1.slice"]
    assert "tenants-db1.slice" in report.verified
    # The boot service that writes the same files after a reboot is written, not started:
    # rollback must find the files as they were before this apply.
    assert (options.unit_dir / "slicectl-partitions.service").is_file()
    assert (options.unit_dir / "multi-user.target.d/50-slicectl.conf").is_file()
    started = {args[0] for member, args in fake_systemd.calls if member == "StartUnit"}
    assert "slicectl-partitions.service" not in started and "tenants-db1.slice" in started
    again = await apply_plan(config(), make_topology(), options)
    assert not again.diff.changed and not again.exclusive


async def test_exclusive_cpus_lost_since_are_a_change_plan_shows_and_apply_makes(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    """After a reboot the cgroup files are new: systemd sets the partition from the unit
    files, nothing sets the exclusive CPUs, and the kernel refuses the partition."""
    await apply_plan(config(), make_topology(), options)
    for path in ("tenants.slice", DB1):
        (options.cgroup_root / path / "cpuset.cpus.exclusive").write_text("\n")
    (options.cgroup_root / DB1 / "cpuset.cpus.partition").write_text(
        "isolated invalid (Invalid cpu list in cpuset.cpus.exclusive)\n")
    diff = await compute_diff(config(), make_topology(), options)
    assert diff.drifted
    assert any("/tenants.slice/cpuset.cpus.exclusive: (empty) -> 1,5" in line
               for line in diff.lines(options.unit_dir))
    await apply_plan(config(), make_topology(), options)
    assert read(options, DB1, "cpuset.cpus.partition") == "isolated\n"
    assert read(options, "tenants.slice", "cpuset.cpus.exclusive") == "1,5\n"


async def test_back_to_member_empties_the_exclusive_cpus(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    await apply_plan(config(), make_topology(), options)
    await apply_plan(config(profile="member"), make_topology(), options)
    assert read(options, DB1, "cpuset.cpus.partition") == "member\n"
    assert not (options.unit_dir / "slicectl-partitions.service").exists()  # nothing at boot
    assert not (options.unit_dir / "multi-user.target.d").exists()
    assert read(options, "tenants.slice", "cpuset.cpus.exclusive") == "\n"
    assert read(options, DB1, "cpuset.cpus.exclusive") == "\n"


@pytest.mark.parametrize("reason", sorted(KERNEL_REASONS))
async def test_a_partition_the_kernel_refuses_fails_with_its_reason_and_rolls_back(
        options: ApplyOptions, fake_systemd: FakeSystemd, reason: str) -> None:
    member = config(profile="member")
    await apply_plan(member, make_topology(), options)
    files, cgroups = snapshot(options.unit_dir), snapshot(options.cgroup_root)
    fake_systemd.refuse_partition["tenants-db1.slice"] = reason
    with pytest.raises(ApplyError) as e:
        await apply_plan(config(), make_topology(), options)
    assert (f"tenants-db1.slice: the kernel refused the isolated partition: {reason} "
            f"(/{DB1}/cpuset.cpus.partition says 'isolated invalid ({reason})'); "
            f"{KERNEL_REASONS[reason]}") in e.value.message
    assert "rolled back to the previous state" in e.value.message
    # files, live properties and the exclusive CPUs slicectl wrote: byte for byte
    assert snapshot(options.unit_dir) == files
    assert snapshot(options.cgroup_root) == cgroups
    assert fake_systemd.units["tenants-db1.slice"].raw("CPUSetPartition") == "member"


async def test_rollback_restores_previous_exclusive_bytes_of_a_partition(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    await apply_plan(config(), make_topology(), options)
    cgroups = snapshot(options.cgroup_root)
    # night gives db1 one CPU: its exclusive CPUs shrink, then setting AllowedCPUs fails
    fake_systemd.fail_on("SetUnitProperties", "tenants-db1.slice")
    with pytest.raises(ApplyError, match="rolled back"):
        await apply_plan(config(profile="night"), make_topology(), options)
    assert snapshot(options.cgroup_root) == cgroups
    assert read(options, "tenants.slice", "cpuset.cpus.exclusive") == "1,5\n"
    assert read(options, DB1, "cpuset.cpus.partition") == "isolated\n"


async def test_a_partition_holding_fewer_cpus_than_planned_fails(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    """Since Linux 7.0 a sibling's conflict strips CPUs instead of invalidating: the
    partition reads valid, cpuset.cpus.effective holds fewer CPUs."""
    fake_systemd.cpus = frozenset(range(8)) - {5}  # what the kernel leaves the tenant
    with pytest.raises(ApplyError) as e:
        await apply_plan(config(), make_topology(), options)
    assert ("tenants-db1.slice: the isolated partition holds CPUs 1 of the planned 1,5 "
            f"(/{DB1}/cpuset.cpus.effective)") in e.value.message
    assert snapshot(options.unit_dir) == {}


async def test_an_exclusive_write_the_kernel_refuses_fails_and_rolls_back(
        options: ApplyOptions, fake_systemd: FakeSystemd,
        monkeypatch: pytest.MonkeyPatch) -> None:
    await apply_plan(config(profile="member"), make_topology(), options)
    cgroups = snapshot(options.cgroup_root)

    def refusing(root: Path, group: str, name: str, data: bytes) -> None:
        if group.endswith("tenants-db1.slice") and data != b"\n":
            raise OSError(errno.EINVAL, "Invalid argument")
        write_cgroup_file(root, group, name, data)

    monkeypatch.setattr("slicectl.apply.transaction.write_cgroup_file", refusing)
    with pytest.raises(ApplyError) as e:
        await apply_plan(config(), make_topology(), options)
    assert ("the kernel refused CPUs 1,5 in /tenants.slice/tenants-db1.slice/"
            "cpuset.cpus.exclusive: Invalid argument") in e.value.message
    assert snapshot(options.cgroup_root) == cgroups  # tenants.slice's 1,5 written back


async def test_rollback_reports_exclusive_bytes_it_could_not_restore(
        options: ApplyOptions, fake_systemd: FakeSystemd,
        monkeypatch: pytest.MonkeyPatch) -> None:
    fake_systemd.refuse_partition["tenants-db1.slice"] = "Parent is not a partition root"

    def no_way_back(root: Path, group: str, name: str, data: bytes) -> None:
        if data == b"\n" and name == "cpuset.cpus.exclusive":
            raise OSError(errno.EBUSY, "Device or resource busy")
        write_cgroup_file(root, group, name, data)

    monkeypatch.setattr("slicectl.apply.transaction.write_cgroup_file", no_way_back)
    with pytest.raises(ApplyError) as e:
        await apply_plan(config(), make_topology(), options)
    assert "the rollback could not restore" in e.value.message
    assert ("/tenants.slice/cpuset.cpus.exclusive: writing b'\\n' back: Device or resource "
            "busy") in e.value.message
    assert "/tenants.slice/cpuset.cpus.exclusive: reads b'1,5\\n', was b'\\n'" in e.value.message


async def test_systemd_before_261_refuses_the_key_before_anything_is_written(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    fake_systemd.version = "260.1-1"
    with pytest.raises(ConfigError) as e:
        await apply_plan(config(), make_topology(), options)
    assert "tenants.db1.cpuset_partition: needs systemd 261 or later and Linux 6.7 or later, " \
           "but the target runs systemd 260" in str(e.value)
    assert snapshot(options.unit_dir) == {}


async def test_a_kernel_without_remote_partitions_refuses_root_and_isolated(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    with pytest.raises(ConfigError) as e:
        await apply_plan(config(), make_topology(), replace(options, kernel="6.6.58-1"))
    assert ("tenants.db1.cpuset_partition: needs Linux 6.7 or later, but the target runs Linux "
            "6.6.58-1") in str(e.value)
    await apply_plan(config(profile="member"), make_topology(),
                     replace(options, kernel="6.1.0-28-amd64"))


async def test_rollback_puts_the_partition_state_back_when_systemd_leaves_it(
        options: ApplyOptions, fake_systemd: FakeSystemd,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Like AllowedCPUs= (systemd#43846), resetting a property may leave the kernel's state
    as it was: rollback reads cpuset.cpus.partition and writes the previous state itself."""
    await apply_plan(config(profile="member"), make_topology(), options)
    before = {f: read(options, path, f) for path in ("tenants.slice", DB1)
              for f in ("cpuset.cpus.exclusive", "cpuset.cpus.partition")}
    real = fake_systemd.partition_text

    def sticky(unit: FakeUnit) -> str:
        on_disk = options.cgroup_root / DB1 / "cpuset.cpus.partition"
        if on_disk.exists() and on_disk.read_text().startswith("isolated"):
            return on_disk.read_text().strip()  # systemd wrote member; the kernel kept it
        return real(unit)

    monkeypatch.setattr(fake_systemd, "partition_text", sticky)
    fake_systemd.cpus = frozenset(range(8)) - {5}  # the partition then holds too few CPUs
    with pytest.raises(ApplyError, match="rolled back to the previous state"):
        await apply_plan(config(), make_topology(), options)
    assert {f: read(options, path, f) for path in ("tenants.slice", DB1)
            for f in ("cpuset.cpus.exclusive", "cpuset.cpus.partition")} == before
    assert read(options, DB1, "cpuset.cpus.partition") == "member\n"
