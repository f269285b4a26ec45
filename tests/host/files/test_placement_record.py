"""The last good placement kept beside tenants.yaml for the generator
(slicectl.host.files.placement_record): the fingerprint changes with whatever a placement depends
on, and a saved record is read back whole, the previous one gone."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from paths import TESTS

from slicectl.host.files import placement_record as record

SYSFS = TESTS / "fixtures" / "sysfs" / "xeon-2s-smt"
FILES = {"tenants.slice": b"[Slice]\n", "tenants-db1.slice": b"[Slice]\nAllowedCPUs=0-3\n",
         "app.service.d/50-slicectl.conf": b"[Service]\nSlice=tenants-db1.slice\n",
         ".slicectl-manifest.json": b"{}\n"}


@pytest.fixture
def host(tmp_path: Path) -> tuple[Path, Path]:
    """tenants.yaml in its own folder, and a copy of a sysfs tree to change."""
    etc = tmp_path / "etc" / "slicectl"
    etc.mkdir(parents=True)
    (etc / "tenants.yaml").write_text("version: 1\ntenants:\n  db1: {cpus: 4}\n")
    shutil.copytree(SYSFS, tmp_path / "sys")
    return etc / "tenants.yaml", tmp_path / "sys"


def test_the_record_lives_beside_tenants_yaml(host: tuple[Path, Path]) -> None:
    tenants, _ = host
    assert record.record_dir(str(tenants)) == str(tenants.parent / "placement")


def test_the_fingerprint_changes_with_tenants_yaml_and_the_topology(
        host: tuple[Path, Path]) -> None:
    tenants, sysfs = host
    before = record.fingerprint(str(tenants), str(sysfs))
    assert before is not None and before == record.fingerprint(str(tenants), str(sysfs))
    tenants.write_text("version: 1\ntenants:\n  db1: {cpus: 2}\n")
    edited = record.fingerprint(str(tenants), str(sysfs))
    assert edited != before
    (sysfs / "devices/system/cpu/online").write_text("0-2\n")  # a CPU went offline
    assert record.fingerprint(str(tenants), str(sysfs)) not in (before, edited)


def test_the_fingerprint_changes_with_the_last_level_cache_groups(tmp_path: Path) -> None:
    """A kernel that starts listing caches, or lists them differently, places again."""
    tenants = tmp_path / "tenants.yaml"
    tenants.write_text("version: 1\ntenants:\n  db1: {cpus: 4}\n")
    sysfs = tmp_path / "sys"
    shutil.copytree(SYSFS.parent / "epyc-nps4", sysfs)
    before = record.fingerprint(str(tenants), str(sysfs))
    assert before is not None and before == record.fingerprint(str(tenants), str(sysfs))
    l3 = sysfs / "devices/system/cpu/cpu0/cache/index3/shared_cpu_list"
    l3.write_text("0-7,32-39\n")
    changed = record.fingerprint(str(tenants), str(sysfs))
    assert changed not in (None, before)
    shutil.rmtree(l3.parent)
    assert record.fingerprint(str(tenants), str(sysfs)) not in (None, before, changed)


def test_no_fingerprint_when_something_cannot_be_read(host: tuple[Path, Path]) -> None:
    tenants, sysfs = host
    assert record.fingerprint(str(tenants.parent / "missing.yaml"), str(sysfs)) is None
    (sysfs / "devices/system/cpu/online").unlink()
    assert record.fingerprint(str(tenants), str(sysfs)) is None


def test_nothing_recorded_yet(host: tuple[Path, Path]) -> None:
    assert record.recorded(str(host[0])) is None


def test_save_then_read_back_whole(host: tuple[Path, Path]) -> None:
    tenants, _ = host
    folder = record.save(str(tenants), FILES, b"print-1")
    found = record.recorded(str(tenants))
    assert found == (folder, b"print-1")
    assert record.recorded_files(folder) == FILES  # the fingerprint is not a unit file


def test_a_new_record_replaces_the_old_one(host: tuple[Path, Path]) -> None:
    tenants, _ = host
    old = record.save(str(tenants), FILES, b"print-1")
    new = record.save(str(tenants), {"tenants.slice": b"[Slice]\n"}, b"print-2")
    assert record.recorded(str(tenants)) == (new, b"print-2")
    assert not os.path.exists(old)
    base = Path(record.record_dir(str(tenants)))
    assert sorted(p.name for p in base.iterdir()) == ["current", os.path.basename(new)]
    assert (base / "current").is_symlink()
