"""One apply's changes and putting them back (slicectl.apply.transaction): live properties back
to exactly what they were (unset included), started units stopped, systemd's runtime drop-in
folder as it was found, and every step that could not be undone reported."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from slicectl.apply.transaction import ControlDir, Transaction
from slicectl.demo.fakesystemd import FakeSystemd
from slicectl.host.files.unitdir import Manifest, UnitDir
from slicectl.host.systemd.systemd import Systemd

UNIT = "tenants-db1.slice"


def test_control_dir_is_put_back_as_found(tmp_path: Path) -> None:
    folder = tmp_path / f"{UNIT}.d"
    folder.mkdir()
    (folder / "50-CPUWeight.conf").write_text("[Slice]\nCPUWeight=50\n")
    snapshot = ControlDir(tmp_path, UNIT)
    (folder / "50-CPUWeight.conf").write_text("[Slice]\nCPUWeight=300\n")  # runtime call
    (folder / "50-MemoryMax.conf").write_text("[Slice]\nMemoryMax=1G\n")
    snapshot.restore()
    assert {p.name: p.read_text() for p in folder.iterdir()} == {
        "50-CPUWeight.conf": "[Slice]\nCPUWeight=50\n"}


def test_a_control_dir_that_was_absent_is_removed_again(tmp_path: Path) -> None:
    snapshot = ControlDir(tmp_path, UNIT)
    (tmp_path / f"{UNIT}.d").mkdir()
    (tmp_path / f"{UNIT}.d" / "50-CPUWeight.conf").write_text("x")
    snapshot.restore()
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
async def sd(systemd_client: Systemd, fake_systemd: FakeSystemd) -> Systemd:
    fake_systemd.add_unit("tenants.slice", active_state="active", sub_state="active")
    fake_systemd.add_unit(UNIT, active_state="active", sub_state="active")
    return systemd_client


def transaction(sd: Systemd, tmp_path: Path) -> Transaction:
    (tmp_path / "units").mkdir(exist_ok=True)
    return Transaction(sd, UnitDir(tmp_path / "units"), tmp_path / "control")


async def test_rollback_unsets_what_was_unset(sd: Systemd, tmp_path: Path) -> None:
    tx = transaction(sd, tmp_path)
    before = await sd.get_unit_properties(UNIT)
    tx.touch(UNIT, before)
    await tx.set_live(UNIT, {"CPUWeight": 300, "MemoryMax": 1 << 30})
    changed = await sd.get_unit_properties(UNIT)
    assert (changed.props["CPUWeight"], changed.props["MemoryMax"]) == (300, 1 << 30)
    tx.touch(UNIT, changed)  # only the state before the first change counts
    assert await tx.rollback() == []
    after = await sd.get_unit_properties(UNIT)
    assert (after.props["CPUWeight"], after.props["MemoryMax"]) == (None, None)
    assert after.props == before.props


async def test_rollback_restores_files_and_reloads(sd: Systemd, tmp_path: Path,
                                                   fake_systemd: FakeSystemd) -> None:
    tx = transaction(sd, tmp_path)
    units = tmp_path / "units"
    tx.unit_dir.write({"tenants.slice": "[Slice]\n# earlier\n"}, Manifest())  # an earlier run
    before = {p.name: p.read_bytes() for p in units.iterdir()}
    files = {"tenants.slice": "[Slice]\n", UNIT: "[Slice]\nCPUWeight=300\n"}
    await tx.write_files(files, Manifest(), tx.unit_dir.diff(files), reload=False)
    assert (units / UNIT).exists() and (units / "tenants.slice").read_text() == "[Slice]\n"
    assert not tx.reloaded and "Reload" not in fake_systemd.members()
    assert await tx.rollback() == []
    assert {p.name: p.read_bytes() for p in units.iterdir()} == before
    assert fake_systemd.members().count("Reload") == 1  # units loaded since forget the files


async def test_rollback_stops_the_units_this_apply_started(sd: Systemd, tmp_path: Path,
                                                           fake_systemd: FakeSystemd) -> None:
    tx = transaction(sd, tmp_path)
    timer = "slicectl-profile@night.timer"
    fake_systemd.add_unit(timer, active_state="active", sub_state="waiting")
    tx.started.append(timer)
    assert await tx.rollback() == []
    assert fake_systemd.units[timer].active_state == "inactive"


async def test_every_step_that_fails_is_reported_and_the_others_still_run(
        sd: Systemd, tmp_path: Path, fake_systemd: FakeSystemd) -> None:
    tx = transaction(sd, tmp_path)
    tx.touch(UNIT, await sd.get_unit_properties(UNIT))
    await tx.set_live(UNIT, {"CPUWeight": 300})
    tx.started += ["a.timer", "b.timer"]
    fake_systemd.add_unit("b.timer", active_state="active", sub_state="waiting")
    fake_systemd.fail_on("SetUnitProperties", UNIT, message="no")
    fake_systemd.fail_on("StopUnit", "a.timer", message="refused")
    failures = await tx.rollback()
    assert failures == [
        f"{UNIT}: setting CPUWeight on {UNIT} failed: systemd answered "
        "org.freedesktop.DBus.Error.Failed (no)",
        "a.timer: stopping a.timer failed: systemd answered org.freedesktop.DBus.Error.Failed "
        "(refused)"]
    assert fake_systemd.units["b.timer"].active_state == "inactive"


async def test_kernel_and_own_files_are_put_back_byte_for_byte(sd: Systemd,
                                                               tmp_path: Path) -> None:
    """An IRQ's affinity written in place and a record file made and a drop-in removed: all
    back as before, the new record's folder gone, the removed file's folder back."""
    irq = tmp_path / "proc/irq/24/smp_affinity_list"
    irq.parent.mkdir(parents=True)
    irq.write_bytes(b"0-7\n")
    record = tmp_path / "run/slicectl/isolation.json"
    dropin = tmp_path / "run/systemd/system/irqbalance.service.d/50-slicectl-isolated.conf"
    dropin.parent.mkdir(parents=True)
    dropin.write_bytes(b"[Service]\n")
    tx = transaction(sd, tmp_path)
    tx.replace_file(record, b"{}\n")
    tx.write_kernel(irq, b"0,2-4,6,7\n")
    tx.write_kernel(irq, b"0\n")  # only the bytes before the first write count
    tx.replace_file(dropin, None)
    assert not dropin.parent.exists()  # its folder went with it, empty
    with pytest.raises(FileNotFoundError):
        tx.write_kernel(tmp_path / "proc/irq/99/smp_affinity_list", b"0\n")
    assert await tx.rollback() == []
    assert irq.read_bytes() == b"0-7\n"
    assert dropin.read_bytes() == b"[Service]\n"
    assert not record.exists() and not record.parent.exists()


async def test_own_files_are_put_back_by_the_one_undo_and_only_folders_made_go(
        sd: Systemd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder that was there before the apply stays, even empty; a file that cannot be
    put back is named, and read again, while the other files are still put back."""
    kept = tmp_path / "run/slicectl"
    kept.mkdir(parents=True)  # there before, empty (made by another of slicectl's runs)
    record = kept / "isolation.json"
    dropin = tmp_path / "run/systemd/system/irqbalance.service.d/50-slicectl-isolated.conf"
    tx = transaction(sd, tmp_path)
    tx.replace_file(record, b"{}\n")
    tx.replace_file(dropin, b"[Service]\n")
    assert await tx.rollback() == []
    assert kept.is_dir() and not record.exists()
    assert not (tmp_path / "run/systemd").exists()  # made by the apply: gone again

    record.write_bytes(b"old\n")
    tx = transaction(sd, tmp_path)
    tx.replace_file(record, b"new\n")
    tx.replace_file(dropin, b"[Service]\n")

    def refused(path: object, data: bytes | str, mode: int | None = None) -> None:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr("slicectl.host.files.owned.write_atomically", refused)
    assert await tx.rollback() == [
        f"{record}: putting it back: Read-only file system",
        f"{record}: reads b'new\\n', was b'old\\n'"]
    assert not dropin.exists()  # put back (removed) all the same


async def test_kernel_files_that_cannot_be_put_back_are_reported(
        sd: Systemd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    irq = tmp_path / "proc/irq/24/smp_affinity_list"
    irq.parent.mkdir(parents=True)
    irq.write_bytes(b"0-7\n")
    tx = transaction(sd, tmp_path)
    tx.write_kernel(irq, b"0\n")

    def refused(path: Path, data: bytes) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr("slicectl.apply.transaction.write_kernel_file", refused)
    assert await tx.rollback() == [
        f"{irq}: writing b'0-7\\n' back: Input/output error",
        f"{irq}: reads b'0\\n', was b'0-7\\n'"]
