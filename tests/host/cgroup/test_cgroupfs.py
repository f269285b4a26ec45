"""slicectl.host.cgroup.cgroupfs: reading a unit's cgroup files, and block devices as systemd names
them."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from slicectl.host.cgroup.cgroupfs import (
    block_device,
    populated,
    read_cgroup_file,
    read_cgroup_files,
)


def test_read_cgroup_files_through_the_control_group(tmp_path: Path) -> None:
    group = tmp_path / "tenants.slice" / "tenants-a.slice"
    group.mkdir(parents=True)
    (group / "cpu.weight").write_text("300\n")
    (group / "cgroup.events").write_text("populated 1\nfrozen 0\n")
    got = read_cgroup_files(tmp_path, "/tenants.slice/tenants-a.slice",
                            ["cpu.weight", "memory.max"])
    assert got == {"cpu.weight": "300\n", "memory.max": None}
    assert read_cgroup_file(tmp_path, "/gone.slice", "cpu.weight") is None
    assert populated(tmp_path, "/tenants.slice/tenants-a.slice")


@pytest.mark.parametrize(("events", "expected"), [
    ("populated 1\nfrozen 0\n", True), ("populated 0\nfrozen 0\n", False),
    (None, False),  # no cgroup.events: the cgroup is gone
    ("frozen 0\n", True),  # says nothing of it
    ("fifo", True),  # cannot be read: not a regular file
    ("loop", True),  # cannot be read: the folder is a symlink loop (ELOOP)
])
def test_populated_unless_cgroup_events_says_empty(tmp_path: Path, events: str | None,
                                                   expected: bool) -> None:
    """A cgroup that cannot be told empty counts as populated: apply then keeps an old slice
    running instead of stopping it (and its processes), the shares keep the unit."""
    group = tmp_path / "tenants-a.slice"
    if events == "loop":
        group.symlink_to(group)
    else:
        group.mkdir()
        if events == "fifo":
            os.mkfifo(group / "cgroup.events")
        elif events is not None:
            (group / "cgroup.events").write_text(events)
    assert populated(tmp_path, "/tenants-a.slice") is expected


def fake_sysfs(root: Path) -> Path:
    """sda with partitions sda1 and sda3, and a LUKS mapping dm-0 on sda3."""
    sysfs = root / "sys"
    disk = sysfs / "devices" / "pci0000:00" / "block" / "sda"
    for name, number, partition in (("sda1", "8:1", True), ("sda3", "8:3", True)):
        (disk / name).mkdir(parents=True)
        (disk / name / "dev").write_text(number + "\n")
        if partition:
            (disk / name / "partition").write_text("1\n")
    (disk / "dev").write_text("8:0\n")
    dm = sysfs / "devices" / "virtual" / "block" / "dm-0"
    (dm / "slaves").mkdir(parents=True)
    (dm / "dev").write_text("253:0\n")
    os.symlink(disk / "sda3", dm / "slaves" / "sda3")
    links = sysfs / "dev" / "block"
    links.mkdir(parents=True)
    for number, target in (("8:0", disk), ("8:1", disk / "sda1"), ("8:3", disk / "sda3"),
                           ("253:0", dm)):
        os.symlink(target, links / number)
    return sysfs


def test_partitions_and_mappings_resolve_to_the_whole_disk(tmp_path: Path) -> None:
    sysfs = fake_sysfs(tmp_path)
    assert block_device("/dev/block/8:1", sysfs) == "8:0"
    assert block_device("/dev/block/8:0", sysfs) == "8:0"
    assert block_device("/dev/block/253:0", sysfs) == "8:0"  # LUKS on sda3 -> sda
    assert block_device("/dev/block/9:9", sysfs) == "9:9"  # unknown to sysfs: as named


def test_files_and_non_block_devices(tmp_path: Path) -> None:
    assert block_device(str(tmp_path / "missing")) is None
    assert block_device("/dev/null") is None  # a character device
    # A file resolves to the device of its file system (None for tmpfs and the like).
    dev = os.stat(tmp_path).st_dev
    expected = None if os.major(dev) == 0 else f"{os.major(dev)}:{os.minor(dev)}"
    got = block_device(str(tmp_path))
    assert got == expected or (got is not None and expected is not None)


def test_a_fifo_reads_as_missing_and_never_blocks(tmp_path: Path) -> None:
    (tmp_path / "a.slice").mkdir()
    os.mkfifo(tmp_path / "a.slice" / "cgroup.events")
    (tmp_path / "a.slice" / "memory.max").write_text("max\n")
    got: list[dict[str, str | None]] = []
    thread = threading.Thread(target=lambda: got.append(read_cgroup_files(
        tmp_path, "/a.slice", ["cgroup.events", "memory.max"])), daemon=True)
    thread.start()
    thread.join(60)
    assert got == [{"cgroup.events": None, "memory.max": "max\n"}]
