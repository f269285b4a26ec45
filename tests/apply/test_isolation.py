"""apply with an isolated tenant against the fake systemd and fixture /proc and /sys trees:
IRQs and unbound work steered off the isolated CPUs, recorded before the change, put back
byte for byte when the tenant is a member again or an apply rolls back; through irqbalance's
banned CPUs where irqbalance runs."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from apply.test_partitions import config
from apply.test_partitions import options as options  # noqa: F401 - the fixture
from test_apply import make_topology, snapshot

from slicectl.apply.applier import ApplyOptions, apply_plan
from slicectl.core.errors import ApplyError
from slicectl.demo.fakesystemd import FakeSystemd
from slicectl.host.isolation.kernelfiles import write_kernel_file

# db1 is isolated on CPUs 1,5 (make_topology's node1).
IRQS = {0: "0\n", 24: "0-7\n", 25: "1,5\n", 26: "0-7\n", 27: "4-5\n"}
REFUSING = 26  # a managed IRQ: the kernel answers EIO
DROPIN = "run/systemd/system/irqbalance.service.d/50-slicectl-isolated.conf"
Write = Callable[[Path, bytes], None]


@pytest.fixture
def host(options: ApplyOptions, monkeypatch: pytest.MonkeyPatch) -> ApplyOptions:  # noqa: F811
    """The fixture trees: five IRQs, 8 online CPUs, the workqueue mask of a 6.7 kernel."""
    for irq, text in IRQS.items():
        folder = options.proc_root / "irq" / str(irq)
        folder.mkdir(parents=True)
        (folder / "smp_affinity_list").write_text(text)
    cpu = options.sysfs_root / "devices/system/cpu"
    cpu.mkdir(parents=True)
    (cpu / "online").write_text("0-7\n")
    wq = options.sysfs_root / "devices/virtual/workqueue"
    wq.mkdir(parents=True)
    (wq / "cpumask").write_text("ff\n")
    monkeypatch.setattr("slicectl.apply.transaction.write_kernel_file",
                        refusing(write_kernel_file))
    return replace(options, kernel="6.7.12-amd64")


def refusing(write: Write) -> Write:
    """The kernel's writes, where IRQ 26 refuses any new affinity as a managed IRQ does."""
    def kernel(path: Path, data: bytes) -> None:
        if path.parent.name == str(REFUSING) and data != IRQS[REFUSING].encode():
            raise OSError(errno.EIO, "Input/output error")
        write(path, data)

    return kernel


def affinity(options: ApplyOptions, irq: int) -> str:
    return (options.proc_root / "irq" / str(irq) / "smp_affinity_list").read_text()


def trees(options: ApplyOptions) -> dict[str, bytes]:
    return {**snapshot(options.proc_root), **snapshot(options.sysfs_root)}


async def test_isolated_cpus_lose_their_irqs_and_unbound_work_recorded_first(
        host: ApplyOptions, fake_systemd: FakeSystemd, monkeypatch: pytest.MonkeyPatch) -> None:
    before = trees(host)
    seen: list[bool] = []
    real = write_kernel_file

    def recorded_first(path: Path, data: bytes) -> None:
        seen.append(host.isolation_record.exists())
        real(path, data)

    monkeypatch.setattr("slicectl.apply.transaction.write_kernel_file",
                        refusing(recorded_first))
    report = await apply_plan(config(), make_topology(), host)
    assert affinity(host, 0) == "0\n"  # never on an isolated CPU: untouched
    assert affinity(host, 24) == "0,2-4,6,7\n"
    assert affinity(host, 27) == "4\n"
    assert affinity(host, 25) == "1,5\n"  # only isolated CPUs: left, and said
    assert affinity(host, REFUSING) == "0-7\n"
    assert (host.sysfs_root / "devices/virtual/workqueue/cpumask").read_text() == "dd\n"
    assert "IRQ 25: left on CPUs 1,5, it has no online CPU outside the isolated ones" \
        in report.notes
    assert ("IRQ 26: left on CPUs 0-7, the kernel refuses to move it (Input/output error: "
            "a per-CPU or managed IRQ)") in report.notes
    assert seen and all(seen)  # the record existed before every kernel write
    record = json.loads(host.isolation_record.read_text())
    assert record["isolated"] == "1,5"
    assert record["irqs"] == {"24": "0-7\n", "26": "0-7\n", "27": "4-5\n"}
    assert record["workqueue"] == "ff\n" and record["irqbalance"] is None
    # back to a member: every byte as before, the record gone
    back = await apply_plan(config(profile="member"), make_topology(), host)
    assert trees(host) == before
    assert not host.isolation_record.exists()
    assert back.notes == []


async def test_linux_6_8_keeps_unbound_work_off_isolated_cpus_itself(
        host: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    await apply_plan(config(), make_topology(), replace(host, kernel="6.8.0-1-amd64"))
    assert (host.sysfs_root / "devices/virtual/workqueue/cpumask").read_text() == "ff\n"
    assert affinity(host, 24) == "0,2-4,6,7\n"
    assert json.loads(host.isolation_record.read_text())["workqueue"] is None


async def test_a_failed_apply_puts_back_irqs_and_the_record_byte_for_byte(
        host: ApplyOptions, fake_systemd: FakeSystemd, monkeypatch: pytest.MonkeyPatch) -> None:
    """night gives db1 CPU 1 alone: apply puts back what the record holds, steers anew for
    CPU 1, then the kernel refuses the new workqueue mask: everything as before that apply."""
    await apply_plan(config(), make_topology(), host)
    before, record = trees(host), host.isolation_record.read_bytes()

    def no_mask(path: Path, data: bytes) -> None:
        if path.name == "cpumask" and data == b"fd\n":
            raise OSError(errno.EINVAL, "Invalid argument")
        refusing(write_kernel_file)(path, data)

    monkeypatch.setattr("slicectl.apply.transaction.write_kernel_file", no_mask)
    with pytest.raises(ApplyError) as e:
        await apply_plan(config(profile="night"), make_topology(), host)
    assert "the kernel refused fd in" in e.value.message
    assert "rolled back to the previous state" in e.value.message
    assert trees(host) == before
    assert host.isolation_record.read_bytes() == record


async def test_a_restore_that_does_not_read_back_fails_and_rolls_back(
        host: ApplyOptions, fake_systemd: FakeSystemd, monkeypatch: pytest.MonkeyPatch) -> None:
    await apply_plan(config(), make_topology(), host)
    before, record = trees(host), host.isolation_record.read_bytes()

    def sticky(path: Path, data: bytes) -> None:  # the kernel keeps IRQ 24 where it is
        if path.parent.name != "24":
            refusing(write_kernel_file)(path, data)

    monkeypatch.setattr("slicectl.apply.transaction.write_kernel_file", sticky)
    with pytest.raises(ApplyError) as e:
        await apply_plan(config(profile="member"), make_topology(), host)
    assert ("the values recorded before isolation did not read back: /proc/irq/24/"
            "smp_affinity_list: reads '0,2-4,6,7\\n', was '0-7\\n'") in e.value.message
    assert trees(host) == before
    assert host.isolation_record.read_bytes() == record


def irqbalance(fake: FakeSystemd, options: ApplyOptions, *, file_sets: str | None = None
               ) -> None:
    """irqbalance.service, running and enabled; a restart writes its new process's
    environment as systemd would make it: the drop-in's Environment=, unless an
    EnvironmentFile= sets the variable (`file_sets`), which wins (systemd.exec(5))."""
    fake.add_unit("irqbalance.service", active_state="active", sub_state="running",
                  unit_file_state="enabled", main_pid=1000)

    def started(name: str) -> None:
        pid = fake.units[name].main_pid
        dropin = options.runtime_unit_dir / "irqbalance.service.d/50-slicectl-isolated.conf"
        env = {"PATH": "/usr/bin"}
        for line in dropin.read_text().splitlines() if dropin.exists() else []:
            if line.startswith("Environment="):
                name, _, value = line.removeprefix("Environment=").partition("=")
                env[name] = value
        if file_sets is not None:
            env["IRQBALANCE_BANNED_CPULIST"] = file_sets
        (options.proc_root / str(pid)).mkdir(exist_ok=True)
        (options.proc_root / str(pid) / "environ").write_bytes(
            b"".join(f"{k}={v}".encode() + b"\0" for k, v in env.items()))

    fake.on_restart.append(started)


async def test_where_irqbalance_runs_a_dropin_bans_the_cpus_and_goes_again(
        host: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    irqbalance(fake_systemd, host)
    before = trees(host)
    await apply_plan(config(), make_topology(), host)
    dropin = host.runtime_unit_dir.parents[2] / DROPIN
    assert dropin.read_text().endswith(
        "[Service]\nEnvironment=IRQBALANCE_BANNED_CPULIST=1,5\n")
    assert fake_systemd.members().count("RestartUnit") == 1
    assert affinity(host, 24) == "0-7\n"  # irqbalance's to place, not slicectl's
    record = json.loads(host.isolation_record.read_text())
    assert record["irqbalance"] == {"dropin": str(dropin), "restart": True}
    assert record["irqs"] == {}

    await apply_plan(config(profile="member"), make_topology(), host)
    assert not dropin.exists() and not dropin.parent.exists()
    assert fake_systemd.members().count("RestartUnit") == 2
    assert not host.isolation_record.exists()
    assert {k: v for k, v in trees(host).items() if "irq" in k or "devices" in k} == before


async def test_an_environment_file_that_wins_over_the_dropin_fails_the_apply(
        host: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    """/etc/default/irqbalance sets IRQBALANCE_BANNED_CPULIST=0: systemd gives it precedence
    over the drop-in's Environment=, so irqbalance would still use CPUs 1 and 5."""
    irqbalance(fake_systemd, host, file_sets="0")
    await apply_plan(config(profile="member"), make_topology(), host)
    with pytest.raises(ApplyError) as e:
        await apply_plan(config(), make_topology(), host)
    assert ("irqbalance (PID 1001) runs with IRQBALANCE_BANNED_CPULIST=0, not the isolated "
            "CPUs 1,5") in e.value.message
    assert "precedence over a drop-in's Environment=" in e.value.hint
    assert "rolled back" in e.value.message
    assert not (host.runtime_unit_dir.parents[2] / DROPIN).exists()
    assert not host.isolation_record.exists()
    # rollback restarted irqbalance without the drop-in
    assert fake_systemd.members().count("RestartUnit") == 2


async def test_a_dropin_slicectl_did_not_write_is_left_and_the_apply_refused(
        host: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    irqbalance(fake_systemd, host)
    dropin = host.runtime_unit_dir.parents[2] / DROPIN
    dropin.parent.mkdir(parents=True)
    dropin.write_text("[Service]\nEnvironment=SOMEONE=else\n")
    with pytest.raises(ApplyError, match="slicectl's record does not name it"):
        await apply_plan(config(), make_topology(), host)
    assert dropin.read_text() == "[Service]\nEnvironment=SOMEONE=else\n"


async def test_an_apply_on_another_cgroup_tree_never_steers_the_hosts_irqs(
        options: ApplyOptions, fake_systemd: FakeSystemd,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The demo and the tests apply to a cgroup tree of their own: with the isolation paths
    # left at the host's (/proc, /sys, /run), an isolated tenant there must not move one of
    # this machine's IRQs, nor read or write its isolation record.
    on_the_host = replace(options, proc_root=Path("/proc"), sysfs_root=Path("/sys"),
                          isolation_record=Path("/run/slicectl/isolation.json"),
                          runtime_unit_dir=Path("/run/systemd/system"))
    assert on_the_host.isolation_paths() is None
    touched: list[Path] = []
    monkeypatch.setattr("slicectl.apply.transaction.write_kernel_file",
                        lambda path, data: touched.append(path))
    report = await apply_plan(config(), make_topology(), on_the_host)
    assert "tenants-db1.slice" in report.verified and touched == []
    assert "isolation" not in report.phases
    # given paths of its own (the tests' trees), another tree's apply does steer them
    assert options.isolation_paths() is not None


@pytest.mark.parametrize("refusal", [errno.EPERM, errno.ENOSPC])
async def test_an_irq_the_kernel_will_not_move_is_left_and_any_other_error_is_named(
        host: ApplyOptions, fake_systemd: FakeSystemd, monkeypatch: pytest.MonkeyPatch,
        refusal: int) -> None:
    # Linux 7.2 answers EPERM for an IRQ whose affinity userspace may not set (the testbed's
    # per-CPU and managed IRQs): left where it is, and said. Any other error fails the apply
    # naming the file, rolled back.
    def kernel(path: Path, data: bytes) -> None:
        if path.parent.name == str(REFUSING) and data != IRQS[REFUSING].encode():
            raise OSError(refusal, os.strerror(refusal))
        write_kernel_file(path, data)

    monkeypatch.setattr("slicectl.apply.transaction.write_kernel_file", kernel)
    before = trees(host)
    if refusal == errno.EPERM:
        report = await apply_plan(config(), make_topology(), host)
        assert affinity(host, REFUSING) == "0-7\n" and affinity(host, 27) == "4\n"
        assert ("IRQ 26: left on CPUs 0-7, the kernel refuses to move it (Operation not "
                "permitted: a per-CPU or managed IRQ)") in report.notes
        return
    with pytest.raises(ApplyError) as failed:
        await apply_plan(config(), make_topology(), host)
    assert f"{host.proc_root}/irq/26/smp_affinity_list" in failed.value.message
    assert "No space left on device" in failed.value.message
    assert trees(host) == before and not host.isolation_record.exists()
