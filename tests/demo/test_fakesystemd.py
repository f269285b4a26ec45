"""The fake systemd itself (slicectl.demo.fakesystemd), without a bus: systemd's object paths
and masks, its checks of values (all or nothing), and the cgroup files it writes for a unit's
settings. Over a private bus, against slicectl's client: tests/host/systemd/test_systemd.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from dbus_fast import DBusError, Variant

from slicectl.demo.fakesystemd import UINT64_MAX, FakeSystemd, padded, unit_path


def test_object_paths_escape_as_systemd_does() -> None:
    assert unit_path("tenants-db1.slice") == "/org/freedesktop/systemd1/unit/tenants_2ddb1_2eslice"
    assert unit_path("0a.slice").startswith("/org/freedesktop/systemd1/unit/_30a")


def test_masks_are_padded_to_eight_bytes() -> None:
    assert padded({0, 9}) == bytes([1, 2, 0, 0, 0, 0, 0, 0])
    assert padded(set()) == b""


def test_slices_sit_in_the_slice_their_name_says() -> None:
    fake = FakeSystemd()
    assert fake.load("tenants-db.slice").parent_slice() == "tenants.slice"
    assert fake.load("tenants.slice").parent_slice() == "-.slice"
    assert fake.add_unit("x.service", slice="tenants-db.slice").parent_slice() == \
        "tenants-db.slice"


def test_settings_are_checked_all_or_nothing(tmp_path: Path) -> None:
    fake = FakeSystemd(tmp_path)
    unit = fake.add_unit("a.slice", active_state="active")
    for properties, error in (
            ([["MemoryHigh", Variant("t", 1 << 30)], ["CPUWeight", Variant("t", 0)]],
             "InvalidArgs"),
            ([["MemoryHigh", Variant("u", 1)]], "InvalidArgs"),
            ([["Nice", Variant("i", 1)]], "PropertyReadOnly")):
        with pytest.raises(DBusError) as caught:
            fake.set_properties(unit, properties)
        assert caught.value.type == f"org.freedesktop.DBus.Error.{error}"
    assert unit.raw("MemoryHigh") == UINT64_MAX  # nothing of a refused call was kept
    fake.add_unit("m.slice", load_state="masked")
    with pytest.raises(DBusError, match="is masked"):
        fake.set_properties(fake.units["m.slice"], [["MemoryHigh", Variant("t", 1)]])


def test_settings_are_written_into_the_units_cgroup(tmp_path: Path) -> None:
    fake = FakeSystemd(tmp_path, cpus=range(4), nodes=range(2))
    unit = fake.add_unit("a.slice", active_state="active")
    fake.set_properties(unit, [["MemoryHigh", Variant("t", 1 << 30)],
                               ["AllowedCPUs", Variant("ay", bytes([0b0110]))],
                               ["CPUQuotaPerSecUSec", Variant("t", 1_500_000)]])
    folder = tmp_path / "a.slice"
    assert (folder / "memory.high").read_text() == f"{1 << 30}\n"
    assert (folder / "cpuset.cpus.effective").read_text() == "1,2\n"
    assert (folder / "cpuset.mems.effective").read_text() == "0,1\n"  # unset: every node
    assert (folder / "cpu.max").read_text() == "150000 100000\n"
    inactive = fake.add_unit("b.slice")  # no cgroup yet: nothing written
    fake.set_properties(inactive, [["MemoryHigh", Variant("t", 1)]])
    assert not (tmp_path / "b.slice").exists()
