"""apply/plan against a fake systemd on a private dbus-daemon (fast; the real check is e2e).

The fake records every call and mirrors settings into cgroup files under a temporary root, so
these tests see what a user would: files in the unit directory, calls made, cgroup values,
and the exact previous state after a rollback.

Why this module runs past 400 lines: each test is one apply scenario end to end (files, D-Bus
calls, cgroup values, rollback) on the fake systemd's set-up; the parts apply is made of are
tested in their own modules (test_unitdir, test_live_values, test_systemd, test_lock).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from slicectl.apply.applier import ApplyOptions, apply_plan, compute_diff
from slicectl.cli import main
from slicectl.core.config.config import load_yaml, parse_config
from slicectl.core.errors import ApplyError
from slicectl.core.placement.topology import Cpu, Node, Topology
from slicectl.demo.fakesystemd import FakeSystemd
from slicectl.host.systemd.systemd import Systemd

YAML = """\
version: 1
housekeeping: {cpus: 2}
confine:
  system.slice: {memory_max: 3G, cpu_weight: 50}
tenants:
  db1: {cpus: 2, cpu_weight: 300, memory_max: 512M, memory_low: 256M}
  db2: {cpus: 2, cpu_quota: 150%}
profiles:
  night:
    db1: {cpus: 4, numa: any}   # more than a node of 2 CPUs: it may span nodes
    db2: {cpus: 1, cpu_quota: 100%}
"""


def make_topology() -> Topology:
    """The testbed's shape: 8 CPUs in 4 nodes, interleaved (node0 = 0,4; node1 = 1,5; …)."""
    nodes = tuple(Node(n, frozenset({n, n + 4}), 1 << 30, {m: 10 if m == n else 20
                                                             for m in range(4)})
                  for n in range(4))
    cpus = tuple(Cpu(c, True, c % 4, package=c, core=0, siblings=frozenset({c}))
                 for c in range(8))
    return Topology(nodes, cpus, "testbed")


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def options(tmp_path: Path, dbus_daemon: str, fake_systemd: FakeSystemd) -> ApplyOptions:
    (tmp_path / "units").mkdir()
    return ApplyOptions(unit_dir=tmp_path / "units", cgroup_root=tmp_path / "cgroup",
                        bus_address=dbus_daemon, control_dir=tmp_path / "control")


def config(text: str = YAML, profile: str | None = None) -> object:
    return parse_config(load_yaml(text, "tenants.yaml"), "tenants.yaml").with_profile(profile)


def cgroup(options: ApplyOptions, path: str, name: str) -> str:
    return (options.cgroup_root / path / name).read_text().strip()


async def test_apply_writes_files_starts_slices_and_sets_cgroups(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    report = await apply_plan(config(), make_topology(), options)  # type: ignore[arg-type]
    units = options.unit_dir
    assert (units / "tenants-db1.slice").exists()
    assert "AllowedCPUs=1,5" in (units / "tenants-db1.slice.d/50-slicectl.conf").read_text()
    assert report.reloaded and "Reload" in fake_systemd.members()
    assert set(report.started) >= {"tenants.slice", "tenants-db1.slice", "tenants-db2.slice"}
    # what the kernel would show, through each unit's ControlGroup
    assert cgroup(options, "tenants.slice/tenants-db1.slice", "cpuset.cpus") == "1,5"
    assert cgroup(options, "tenants.slice/tenants-db1.slice", "cpuset.mems") == "1"
    assert cgroup(options, "tenants.slice/tenants-db1.slice", "cpu.weight") == "300"
    assert cgroup(options, "tenants.slice/tenants-db1.slice", "memory.max") == str(512 << 20)
    assert cgroup(options, "tenants.slice/tenants-db2.slice", "cpu.max") == "150000 100000"
    assert cgroup(options, "system.slice", "cpuset.cpus") == "0,4"
    assert cgroup(options, "system.slice", "memory.max") == str(3 << 30)
    assert cgroup(options, "tenants.slice", "memory.low") == str(256 << 20)
    assert "tenants-db1.slice" in report.verified and "system.slice" in report.verified


async def test_second_apply_changes_nothing_and_does_not_reload(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    await apply_plan(config(), make_topology(), options)  # type: ignore[arg-type]
    files = snapshot(options.unit_dir)
    calls = len(fake_systemd.calls)
    report = await apply_plan(config(), make_topology(), options)  # type: ignore[arg-type]
    assert not report.diff.changed and not report.reloaded
    new_calls = [m for m, _ in fake_systemd.calls[calls:]]
    assert "Reload" not in new_calls and "SetUnitProperties" not in new_calls
    assert snapshot(options.unit_dir) == files


async def test_dbus_failure_midway_rolls_back_files_and_live_state(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    await apply_plan(config(), make_topology(), options)  # type: ignore[arg-type]
    files = snapshot(options.unit_dir)
    cgroups = snapshot(options.cgroup_root)
    fake_systemd.fail_on("SetUnitProperties", "tenants-db2.slice",
                         error="org.freedesktop.DBus.Error.AccessDenied")
    with pytest.raises(ApplyError) as e:
        await apply_plan(config(profile="night"), make_topology(),  # type: ignore[arg-type]
                         options)
    assert "rolled back" in e.value.message and "tenants-db2.slice" in e.value.message
    assert snapshot(options.unit_dir) == files
    assert snapshot(options.cgroup_root) == cgroups  # db1 went back to 1,5 live too


async def test_failure_on_first_apply_leaves_properties_unset(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    fake_systemd.fail_on("SetUnitProperties", "tenants-db2.slice")
    with pytest.raises(ApplyError):
        await apply_plan(config(), make_topology(), options)  # type: ignore[arg-type]
    assert snapshot(options.unit_dir) == {}
    db1 = fake_systemd.units["tenants-db1.slice"]
    assert db1.active_state == "inactive"  # started by the apply, stopped by the rollback
    assert "AllowedCPUs" not in db1.settings or db1.raw("AllowedCPUs") == b""
    assert fake_systemd.units["system.slice"].raw("MemoryMax") == 2**64 - 1  # unset again


async def test_write_failure_midway_restores_files_and_touches_nothing_live(
        options: ApplyOptions, fake_systemd: FakeSystemd,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    import slicectl.host.files.owned as owned

    await apply_plan(config(), make_topology(), options)  # type: ignore[arg-type]
    files = snapshot(options.unit_dir)
    cgroups = snapshot(options.cgroup_root)
    calls = len(fake_systemd.calls)
    real = owned.write_atomically

    def read_only_after_one(writes: list[tuple[Path, bytes]], new: object = ()) -> None:
        real(*writes[0])  # the unit directory turns read-only mid-way
        raise OSError(errno.EROFS, "Read-only file system", str(writes[1][0]))

    monkeypatch.setattr(owned, "write_many", read_only_after_one)
    with pytest.raises(Exception) as e:
        await apply_plan(config(profile="night"), make_topology(),  # type: ignore[arg-type]
                         options)
    assert "Read-only file system; nothing was changed" in str(e.value)
    assert snapshot(options.unit_dir) == files
    assert snapshot(options.cgroup_root) == cgroups
    assert not {"Reload", "SetUnitProperties"} & {m for m, _ in fake_systemd.calls[calls:]}


async def test_verification_mismatch_rolls_back(
        options: ApplyOptions, fake_systemd: FakeSystemd,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import slicectl.apply.host_diff as host_diff
    import slicectl.host.cgroup.cgroupfs as cgroupfs

    real = cgroupfs.read_cgroup_files

    def lying(root: Path, control_group: str, names: list[str]) -> dict[str, str | None]:
        got = real(root, control_group, names)
        if control_group.endswith("tenants-db2.slice") and "cpuset.cpus" in names:
            got["cpuset.cpus"] = "0-7\n"  # e.g. the kernel refused the new cpuset
        return got

    monkeypatch.setattr(host_diff, "read_cgroup_files", lying)
    with pytest.raises(ApplyError) as e:
        await apply_plan(config(), make_topology(), options)  # type: ignore[arg-type]
    assert "verification failed" in e.value.message
    assert "cpuset.cpus is '0-7'" in e.value.message
    assert snapshot(options.unit_dir) == {}


async def test_set_property_override_is_reported_and_corrected(
        options: ApplyOptions, fake_systemd: FakeSystemd, tmp_path: Path) -> None:
    await apply_plan(config(), make_topology(), options)  # type: ignore[arg-type]
    # `systemctl set-property tenants-db1.slice CPUWeight=50` done by someone else:
    control = (tmp_path / "etc/systemd/system.control/tenants-db1.slice.d/50-CPUWeight.conf")
    control.parent.mkdir(parents=True)
    control.write_text("[Slice]\nCPUWeight=50\n")
    db1 = fake_systemd.units["tenants-db1.slice"]
    db1.drop_in_paths = [str(control),
                         str(options.unit_dir / "tenants-db1.slice.d/50-slicectl.conf")]
    db1.settings["CPUWeight"] = 50
    diff = await compute_diff(config(), make_topology(), options)  # type: ignore[arg-type]
    [change] = diff.props
    assert (change.unit, change.prop, change.live, change.want) == (
        "tenants-db1.slice", "CPUWeight", 50, 300)
    assert change.source == f"systemctl set-property ({control})"
    report = await apply_plan(config(), make_topology(), options)  # type: ignore[arg-type]
    assert not report.reloaded  # files were already right
    assert cgroup(options, "tenants.slice/tenants-db1.slice", "cpu.weight") == "300"
    assert control.read_text() == "[Slice]\nCPUWeight=50\n"  # never edits others' files


async def test_profile_switch_moves_cpus_and_back(options: ApplyOptions) -> None:
    await apply_plan(config(), make_topology(), options)  # type: ignore[arg-type]
    db1 = "tenants.slice/tenants-db1.slice"
    assert cgroup(options, db1, "cpuset.cpus") == "1,5"
    await apply_plan(config(profile="night"), make_topology(),  # type: ignore[arg-type]
                     options)
    night = cgroup(options, db1, "cpuset.cpus")
    assert len(night.split(",")) == 4 or "-" in night
    assert {"1", "5"} <= set(night.replace("-", ",").split(","))  # kept its CPUs, grew
    await apply_plan(config(), make_topology(), options)  # type: ignore[arg-type]
    assert cgroup(options, db1, "cpuset.cpus") == "1,5"


async def test_removed_tenant_files_removed_and_empty_slice_stopped(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    await apply_plan(config(), make_topology(), options)  # type: ignore[arg-type]
    smaller = YAML.replace("  db2: {cpus: 2, cpu_quota: 150%}\n", "").replace(
        "    db2: {cpus: 1, cpu_quota: 100%}\n", "")
    report = await apply_plan(config(smaller), make_topology(),  # type: ignore[arg-type]
                              options)
    assert not (options.unit_dir / "tenants-db2.slice").exists()
    assert not (options.unit_dir / "tenants-db2.slice.d").exists()
    assert report.stopped == ["tenants-db2.slice"]
    assert fake_systemd.units["tenants-db2.slice"].active_state == "inactive"


async def test_dry_run_changes_nothing(options: ApplyOptions,
                                       fake_systemd: FakeSystemd) -> None:
    report = await apply_plan(config(), make_topology(), options,  # type: ignore[arg-type]
                              dry_run=True)
    assert report.diff.changed and report.diff.files.created
    assert snapshot(options.unit_dir) == {}
    assert not {"Reload", "SetUnitProperties", "StartUnit"} & set(fake_systemd.members())


async def test_apply_gives_up_on_a_unit_directory_another_run_holds(
        options: ApplyOptions) -> None:
    """One lock per unit directory, whoever writes it: a generate, an apply, a balancer move."""
    from dataclasses import replace

    from slicectl.core.errors import OutputError
    from slicectl.host.files.lock import locked_dir

    with locked_dir(options.unit_dir, 1.0), pytest.raises(OutputError) as e:
        await apply_plan(config(), make_topology(),  # type: ignore[arg-type]
                         replace(options, lock_timeout=0.2))
    assert e.value.message.startswith(f"{options.unit_dir} is in use by pid {os.getpid()}")
    assert e.value.message.endswith("gave up after waiting 0.2 s")
    assert snapshot(options.unit_dir) == {}


async def test_apply_waits_for_the_run_that_holds_its_unit_directory(
        options: ApplyOptions) -> None:
    import asyncio
    import threading

    from slicectl.host.files.lock import locked_dir

    waiting = threading.Event()

    def progress(line: str) -> None:
        if line.startswith("waiting for pid"):
            waiting.set()

    def apply() -> object:
        return asyncio.run(apply_plan(config(), make_topology(),  # type: ignore[arg-type]
                                      options, progress=progress))

    with locked_dir(options.unit_dir, 1.0):
        task = asyncio.ensure_future(asyncio.to_thread(apply))
        assert await asyncio.to_thread(waiting.wait, 60)
        assert snapshot(options.unit_dir) == {}  # nothing written while the other run holds it
    report = await task
    assert report.verified  # type: ignore[attr-defined]
    assert (options.unit_dir / "tenants-db1.slice").exists()


async def test_cli_apply_and_plan_exit_code(options: ApplyOptions, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio
    import json

    (tmp_path / "tenants.yaml").write_text(YAML)
    topo = tmp_path / "topology.json"
    topo.write_text(json.dumps(make_topology().to_json()))
    host = ["--unit-dir", str(options.unit_dir), "--cgroup-root", str(options.cgroup_root),
            "--bus", str(options.bus_address), "--topology", str(topo)]

    def run(*args: str) -> int:
        return main([args[0], str(tmp_path / "tenants.yaml"), *host, *args[1:]])

    # main() runs its own event loop: call it from a worker thread.
    assert await asyncio.to_thread(run, "plan", "--exit-code") == 3
    capsys.readouterr()
    assert await asyncio.to_thread(run, "apply", "--yes", "--control-dir",
                                   str(options.control_dir)) == 0
    out = capsys.readouterr().out
    assert "Applied" in out and "verified" in out
    assert await asyncio.to_thread(run, "plan", "--exit-code") == 0
    assert "This host matches the plan." in capsys.readouterr().out


TENANTS_ONLY = """\
version: 1
tenants:
  db1: {cpus: 2, cpu_weight: 300, memory_max: 512M}
  db2: {cpu_weight: 50}
"""


async def test_new_tenants_are_started_from_their_files_without_a_reload(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    # None of the units is loaded, so systemd reads their new files when they start: the
    # first apply costs no daemon-reload (which re-reads every unit on the host).
    diff = await compute_diff(config(TENANTS_ONLY), make_topology(),  # type: ignore[arg-type]
                              options)
    assert diff.files.created and not diff.reload
    assert "tenants-db1.slice" not in fake_systemd.units  # looked up, not loaded
    report = await apply_plan(config(TENANTS_ONLY), make_topology(),  # type: ignore[arg-type]
                              options)
    assert not report.reloaded and "Reload" not in fake_systemd.members()
    assert {"tenants.slice", "tenants-db1.slice", "tenants-db2.slice"} <= set(report.started)
    assert cgroup(options, "tenants.slice/tenants-db1.slice", "cpu.weight") == "300"
    assert cgroup(options, "tenants.slice/tenants-db2.slice", "cpu.weight") == "50"
    assert set(report.verified) == {"tenants.slice", "tenants-db1.slice", "tenants-db2.slice"}


async def test_one_listing_finds_which_tenant_slices_are_loaded(
        options: ApplyOptions, fake_systemd: FakeSystemd,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Unloaded tenant slices cost no call of their own (one ListUnitsByPatterns for all);
    # loaded ones are read in full, and so is every unit slicectl only adds a drop-in to.
    # A listed slice's object path and states come from its row: no GetUnit, and of the
    # Unit interface only its files are asked for.
    slices = ["tenants-db1.slice", "tenants-db2.slice", "tenants.slice"]
    await compute_diff(config(), make_topology(), options)  # type: ignore[arg-type]
    assert ("ListUnitsByPatterns", ([], slices)) in fake_systemd.calls
    looked_up = {args[0] for member, args in fake_systemd.calls if member == "GetUnit"}
    assert looked_up == {"system.slice", "user.slice", "init.scope"}
    fake_systemd.add_unit("tenants-db2.slice", active_state="active")  # e.g. by a member
    assert "tenants.slice" in fake_systemd.units  # its parent comes with it, as in systemd
    fake_systemd.calls.clear()
    sent: list[tuple[str, list[Any]]] = []  # every call slicectl sends (Get included)
    real_call = Systemd._call

    async def spy(self: Systemd, member: str, signature: str = "", body: Any = (),
                  **kw: Any) -> list[Any]:
        sent.append((member, list(body)))
        return await real_call(self, member, signature, body, **kw)

    monkeypatch.setattr(Systemd, "_call", spy)
    diff = await compute_diff(config(), make_topology(), options)  # type: ignore[arg-type]
    looked_up = {args[0] for member, args in fake_systemd.calls if member == "GetUnit"}
    assert looked_up == {"system.slice", "user.slice", "init.scope"}
    asked = sorted(body[1] for member, body in sent
                   if member == "Get" and body[0] == "org.freedesktop.systemd1.Unit")
    assert asked == sorted(["ActiveState", "LoadState", "SubState", "FragmentPath",
                            "DropInPaths"] * 3 + ["FragmentPath", "DropInPaths"] * 2)
    assert "tenants-db2.slice" not in diff.start and "tenants-db1.slice" in diff.start
    assert diff.reload  # tenants-db2.slice is loaded and its files are new


async def test_changing_a_loaded_units_files_reloads(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    await apply_plan(config(TENANTS_ONLY), make_topology(), options)  # type: ignore[arg-type]
    changed = TENANTS_ONLY.replace("cpu_weight: 50", "cpu_weight: 70")
    diff = await compute_diff(config(changed), make_topology(),  # type: ignore[arg-type]
                              options)
    assert diff.files.updated == ("tenants-db2.slice.d/50-slicectl.conf",) and diff.reload
    assert "reload systemd (daemon-reload: files of loaded units change)" in diff.lines(
        options.unit_dir)
    report = await apply_plan(config(changed), make_topology(),  # type: ignore[arg-type]
                              options)
    assert report.reloaded and "Reload" in fake_systemd.members()
    assert cgroup(options, "tenants.slice/tenants-db2.slice", "cpu.weight") == "70"


async def test_confining_system_slice_reloads_because_it_is_loaded(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    diff = await compute_diff(config(), make_topology(), options)  # type: ignore[arg-type]
    assert "system.slice.d/50-slicectl.conf" in diff.files.created and diff.reload


async def test_a_slice_the_parent_did_not_bring_up_is_started_and_its_failure_rolls_back(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    # The fake's parent job does not pull in Wants=, so every tenant slice goes through the
    # individual start; a failed job there fails the apply and is rolled back.
    fake_systemd.fail_job("tenants-db2.slice")
    with pytest.raises(ApplyError) as e:
        await apply_plan(config(TENANTS_ONLY), make_topology(),  # type: ignore[arg-type]
                         options)
    assert "starting tenants-db2.slice failed" in e.value.message
    assert snapshot(options.unit_dir) == {}
    assert fake_systemd.units["tenants-db1.slice"].active_state == "inactive"
    assert "ListUnitsByNames" in fake_systemd.members()


async def test_a_rollback_that_cannot_restore_everything_says_what(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    await apply_plan(config(), make_topology(), options)  # type: ignore[arg-type]
    grown = YAML.replace("  db2: {cpus: 2, cpu_quota: 150%}\n",
                         "  db2: {cpus: 2, cpu_quota: 150%}\n  db3: {cpus: 1}\n")
    fake_systemd.fail_job("tenants-db3.slice")  # the apply fails ...
    # ... and so does the reload of the rollback (the apply's own reload is the first): the
    # user must learn what is left.
    fake_systemd.fail_on("Reload", error="org.freedesktop.DBus.Error.AccessDenied", nth=2)
    with pytest.raises(ApplyError) as e:
        await apply_plan(config(grown), make_topology(), options)  # type: ignore[arg-type]
    message = e.value.message
    assert message.startswith("apply failed: starting tenants-db3.slice failed")
    assert "the rollback could not restore: reloading systemd: reloading systemd failed: " \
           "permission denied" in message
    assert "rolled back to the previous state" not in message
    assert "slicectl plan" in e.value.hint
    # The files were restored all the same (only the reload failed).
    assert not (options.unit_dir / "tenants-db3.slice").exists()


async def test_hand_edited_unit_file_is_refused_unless_apply_force(
        options: ApplyOptions, tmp_path: Path, fake_systemd: FakeSystemd,
        capsys: pytest.CaptureFixture[str]) -> None:
    """apply writes the unit directory through the same UnitDir as generate: a file edited
    since slicectl wrote it is neither replaced nor removed, and nothing else happens, until
    `apply --force`."""
    import asyncio
    import json

    (tmp_path / "tenants.yaml").write_text(YAML)
    topo = tmp_path / "topology.json"
    topo.write_text(json.dumps(make_topology().to_json()))

    def apply(*more: str) -> int:
        return main(["apply", str(tmp_path / "tenants.yaml"), "--yes", "--profile", "night",
                     "--unit-dir", str(options.unit_dir), "--cgroup-root",
                     str(options.cgroup_root), "--bus", str(options.bus_address),
                     "--topology", str(topo),
                     "--control-dir", str(options.control_dir), *more])

    await apply_plan(config(), make_topology(), options)  # type: ignore[arg-type]
    edited = options.unit_dir / "tenants-db1.slice.d/50-slicectl.conf"
    edited.write_text(edited.read_text() + "CPUWeight=1\n")
    before, calls = snapshot(options.unit_dir), len(fake_systemd.members())
    capsys.readouterr()
    assert await asyncio.to_thread(apply) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {edited} was changed since slicectl generated it"), err
    assert "run again with --force" in err and "slicectl apply --force" in err
    assert snapshot(options.unit_dir) == before
    assert not {"Reload", "SetUnitProperties", "StartUnit"} & set(
        fake_systemd.members()[calls:])
    assert await asyncio.to_thread(apply, "--force") == 0, capsys.readouterr().err
    assert "CPUWeight=1" not in edited.read_text()
    assert "AllowedCPUs=" in edited.read_text()


ZSWAP = """\
version: 1
tenants:
  db1:
    cpus: 2
    memory_zswap_writeback: false
"""


async def test_apply_refuses_a_property_the_kernel_lacks_before_changing_anything(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    """systemd 256 takes MemoryZSwapWriteback=, but a kernel before 6.8 has no
    memory.zswap.writeback and would ignore it: refused, located, nothing changed."""
    from dataclasses import replace

    from slicectl.core.errors import ConfigError

    fake_systemd.version = "256.7-1"
    with pytest.raises(ConfigError) as e:
        await apply_plan(config(ZSWAP), make_topology(),  # type: ignore[arg-type]
                         replace(options, kernel="6.1.0-28-amd64"))
    assert str(e.value) == ("tenants.yaml:5: tenants.db1.memory_zswap_writeback: needs Linux "
                            "6.8 or later, but the target runs Linux 6.1.0-28-amd64")
    assert e.value.hint == "remove the key, or upgrade the kernel on the target"
    assert snapshot(options.unit_dir) == {}
    assert not {"Reload", "SetUnitProperties", "StartUnit"} & set(fake_systemd.members())
    fake_systemd.version = "252.38-1~deb12u1"  # the testbed's: systemd refuses it first
    with pytest.raises(ConfigError) as e:
        await apply_plan(config(ZSWAP), make_topology(),  # type: ignore[arg-type]
                         replace(options, kernel="6.1.0-28-amd64"))
    assert str(e.value) == (
        "tenants.yaml:5: tenants.db1.memory_zswap_writeback: needs systemd 256 or later and "
        "Linux 6.8 or later, but the target runs systemd 252 (systemd on this host)")


async def test_apply_sets_zswap_writeback_where_systemd_and_kernel_take_it(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    from dataclasses import replace

    fake_systemd.version = "256.7-1"
    report = await apply_plan(config(ZSWAP), make_topology(),  # type: ignore[arg-type]
                              replace(options, kernel="6.8.0-1-amd64"))
    assert "tenants-db1.slice" in report.verified
    dropin = (options.unit_dir / "tenants-db1.slice.d/50-slicectl.conf").read_text()
    assert "MemoryZSwapWriteback=no\n" in dropin
    assert cgroup(options, "tenants.slice/tenants-db1.slice", "memory.zswap.writeback") == "0"



SHARES = """\
version: 1
tenants:
  db1: {cpus: 2, memory_max: 50%, memory_high: 33.33%, memory_low: 250‰, memory_swap_max: 0}
  db2: {cpus: 2, memory_low: 10%}
"""


async def test_apply_sets_a_share_of_ram_as_systemd_does(options: ApplyOptions,
                                                          fake_systemd: FakeSystemd) -> None:
    """MemoryMax=50% stays a share in the unit file; live, slicectl sends MemoryMaxScale (as
    `systemctl set-property MemoryMax=50%` does), systemd makes bytes of the host's 4G, and
    the diff and the read-back compare those bytes: a second apply changes nothing."""
    report = await apply_plan(config(SHARES), make_topology(), options)  # type: ignore[arg-type]
    dropin = (options.unit_dir / "tenants-db1.slice.d/50-slicectl.conf").read_text()
    assert "MemoryLow=250‰\nMemoryHigh=33.33%\nMemoryMax=50%\n" in dropin
    assert "MemoryLow=35%\n" in (options.unit_dir / "tenants.slice.d/50-slicectl.conf").read_text()
    sent = {k: v for call in fake_systemd.properties_set("tenants-db1.slice")
            for k, v in call.items()}
    assert sent["MemoryMaxScale"] == 2**31 and sent["MemoryLowScale"] == 2**30
    assert "MemoryMax" not in sent
    db1 = "tenants.slice/tenants-db1.slice"
    assert cgroup(options, db1, "memory.max") == str(2 << 30)
    assert cgroup(options, db1, "memory.low") == str(1 << 30)
    # 33.33% of 4G = 349490.38 pages of 4K, rounded down to whole pages, as systemd does
    assert cgroup(options, db1, "memory.high") == str(349490 * 4096)
    assert cgroup(options, "tenants.slice", "memory.low") == str(int(4 * 0.35 * 2**30) // 4096
                                                                 * 4096)
    assert "tenants-db1.slice" in report.verified
    again = await apply_plan(config(SHARES), make_topology(), options)  # type: ignore[arg-type]
    assert not again.diff.changed


async def test_a_change_of_tenants_yaml_is_said_to_be_one(options: ApplyOptions) -> None:
    """A value just edited in tenants.yaml was explained as "slicectl's file is not loaded
    yet (daemon-reload pending)"."""
    await apply_plan(config(), make_topology(), options)  # type: ignore[arg-type]
    edited = config(YAML.replace("cpu_weight: 300", "cpu_weight: 500"))
    diff = await compute_diff(edited, make_topology(), options)  # type: ignore[arg-type]
    assert [c.describe() for c in diff.props] == [
        "tenants-db1.slice: CPUWeight 300 -> 500  [tenants.yaml changed: apply writes and "
        "sets it]"]


async def test_plan_shows_a_share_of_ram_that_differs_live(options: ApplyOptions,
                                                            fake_systemd: FakeSystemd) -> None:
    await apply_plan(config(SHARES), make_topology(), options)  # type: ignore[arg-type]
    unit = fake_systemd.units["tenants-db1.slice"]
    unit.settings["MemoryMax"] = (2 << 30) + 4096 * 2  # two pages off: not what 50% makes
    diff = await compute_diff(config(SHARES), make_topology(), options)  # type: ignore[arg-type]
    assert [c.describe() for c in diff.props] == [
        "tenants-db1.slice: MemoryMax 2097160K -> 50% of RAM (2G)"  # 2G + 8K: exact
        "  [slicectl's file is not loaded yet (daemon-reload pending)]"]


@pytest.fixture
def read_only_units(options: ApplyOptions) -> Iterator[Path]:
    """The unit directory on a tmpfs of its own, mounted read-only after the first apply
    (what a read-only /etc does: EROFS, which chmod cannot make for root)."""
    import subprocess

    folder = options.unit_dir
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(folder)],
                      capture_output=True).returncode != 0:
        pytest.fail("mounting a tmpfs needs root (tests/run runs as root)")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


async def test_apply_to_a_read_only_unit_directory_fails_clearly_and_changes_nothing(
        options: ApplyOptions, fake_systemd: FakeSystemd, read_only_units: Path,
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio
    import json
    import subprocess

    await apply_plan(config(), make_topology(), options)  # type: ignore[arg-type]
    subprocess.run(["mount", "-o", "remount,ro", str(read_only_units)], check=True)
    files = snapshot(read_only_units)
    live = {name: dict(unit.settings) for name, unit in fake_systemd.units.items()}
    calls = len(fake_systemd.calls)
    (tmp_path / "tenants.yaml").write_text(YAML.replace("cpu_weight: 300", "cpu_weight: 400"))
    topo = tmp_path / "topology.json"
    topo.write_text(json.dumps(make_topology().to_json()))
    code = await asyncio.to_thread(main, [
        "apply", str(tmp_path / "tenants.yaml"), "--yes", "--unit-dir", str(options.unit_dir),
        "--cgroup-root", str(options.cgroup_root), "--bus", str(options.bus_address),
        "--topology", str(topo), "--control-dir", str(options.control_dir)])
    err = capsys.readouterr().err
    assert code == 1
    assert f"error: apply failed: cannot write {read_only_units}/" in err
    assert ": Read-only file system; nothing was changed" in err, err
    assert f"hint: check that {read_only_units} is writable" in err
    assert "internal error" not in err and "Traceback" not in err
    assert snapshot(read_only_units) == files
    assert {name: dict(unit.settings) for name, unit in fake_systemd.units.items()} == live
    assert "SetUnitProperties" not in [m for m, _ in fake_systemd.calls[calls:]]


TASKS = """\
version: 1
tenants:
  db1: {cpus: 2, tasks_max: 50%}
  db2: {cpus: 2, tasks_max: 100%}
"""


async def test_apply_sets_a_share_of_the_task_limit_as_systemd_does(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    """TasksMax=50% stays a share in the unit file; live, slicectl sends TasksMaxScale (as
    `systemctl set-property TasksMax=50%` does), systemd makes a count of the host's task
    limit, and the diff compares that count: a second apply and plan see no drift. 100% is
    sent as the count (systemd refuses a TasksMaxScale of UINT32_MAX)."""
    from dataclasses import replace

    topo = replace(make_topology(), task_limit=fake_systemd.tasks)
    report = await apply_plan(config(TASKS), topo, options)  # type: ignore[arg-type]
    dropin = (options.unit_dir / "tenants-db1.slice.d/50-slicectl.conf").read_text()
    assert "TasksMax=50%\n" in dropin
    sent = {k: v for call in fake_systemd.properties_set("tenants-db1.slice")
            for k, v in call.items()}
    assert sent["TasksMaxScale"] == 2**31
    assert "TasksMax" not in sent
    full = {k: v for call in fake_systemd.properties_set("tenants-db2.slice")
            for k, v in call.items()}
    assert full["TasksMax"] == 32767 and "TasksMaxScale" not in full
    assert cgroup(options, "tenants.slice/tenants-db1.slice", "pids.max") == "16383"
    assert cgroup(options, "tenants.slice/tenants-db2.slice", "pids.max") == "32767"
    assert "tenants-db1.slice" in report.verified
    again = await apply_plan(config(TASKS), topo, options)  # type: ignore[arg-type]
    assert not again.diff.changed
    diff = await compute_diff(config(TASKS), topo, options)  # type: ignore[arg-type]
    assert not diff.props


async def test_plan_shows_a_share_of_the_task_limit_and_its_count(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    from dataclasses import replace

    topo = replace(make_topology(), task_limit=fake_systemd.tasks)
    await apply_plan(config(TASKS), topo, options)  # type: ignore[arg-type]
    fake_systemd.units["tenants-db1.slice"].settings["TasksMax"] = 4096
    diff = await compute_diff(config(TASKS), topo, options)  # type: ignore[arg-type]
    assert [c.describe() for c in diff.props] == [
        "tenants-db1.slice: TasksMax 4096 -> 50% of the task limit (16383)"
        "  [slicectl's file is not loaded yet (daemon-reload pending)]"]


async def test_the_report_says_where_the_time_went(options: ApplyOptions,
                                                   fake_systemd: FakeSystemd) -> None:
    """apply --json's `phases`: each phase that ran, in seconds, adding up to the apply."""
    import time

    start = time.monotonic()
    report = await apply_plan(config(), make_topology(), options)  # type: ignore[arg-type]
    took = time.monotonic() - start
    assert list(report.phases) == ["plan", "connect", "diff", "write", "start", "stop",
                                   "verify"]
    assert all(v >= 0 for v in report.phases.values()) and sum(report.phases.values()) <= took
    dry = await apply_plan(config(profile="night"), make_topology(), options,  # type: ignore[arg-type]
                           dry_run=True)
    assert list(dry.phases) == ["plan", "connect", "diff"]


async def test_a_cgroup_that_missed_a_reload_is_set_live_and_verified(
        options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    """systemd 257 took a daemon-reload's new values into the unit but not into its running
    cgroup (the release matrix found it): systemd reports the plan's values, the cgroup file
    does not hold them. plan calls it drift; apply sets it live once and verifies."""
    from slicectl.apply.host_diff import STALE

    await apply_plan(config(), make_topology(), options)  # type: ignore[arg-type]
    weight = options.cgroup_root / "tenants.slice/tenants-db1.slice/cpu.weight"
    weight.write_text("100\n")  # what the cgroup kept; systemd says 300
    diff = await compute_diff(config(), make_topology(), options)  # type: ignore[arg-type]
    assert diff.changed
    assert [(c.unit, c.prop, c.source) for c in diff.props] == [
        ("tenants-db1.slice", "CPUWeight", STALE)]
    report = await apply_plan(config(), make_topology(), options)  # type: ignore[arg-type]
    # Only what the cgroup lacks is set again: a property this systemd cannot take is never
    # sent (all of a unit's properties once were, and systemd 252 refused MemoryZSwapMax).
    assert [(c.unit, c.prop) for c in report.set_live] == [("tenants-db1.slice", "CPUWeight")]
    assert weight.read_text().strip() == "300" and "tenants-db1.slice" in report.verified
    assert not (await compute_diff(config(), make_topology(), options)).changed  # type: ignore[arg-type]
