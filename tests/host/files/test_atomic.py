"""Atomic file replacement (slicectl.host.files.atomic): a file is replaced whole or not at all,
keeps the mode of the file it replaces, and no temporary file is left behind, whatever fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from slicectl.host.files.atomic import write_atomically, write_many


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o7777


def test_write_atomically_new_file_text_or_bytes(tmp_path: Path) -> None:
    write_atomically(tmp_path / "a.conf", "text\n")
    write_atomically(str(tmp_path / "b.conf"), b"\x00bytes\n", mode=0o600)
    assert (tmp_path / "a.conf").read_text() == "text\n" and mode(tmp_path / "a.conf") == 0o644
    assert (tmp_path / "b.conf").read_bytes() == b"\x00bytes\n"
    assert mode(tmp_path / "b.conf") == 0o600


def test_write_atomically_keeps_the_replaced_files_mode(tmp_path: Path) -> None:
    path = tmp_path / "tenants.yaml"
    path.write_text("old\n")
    path.chmod(0o640)
    write_atomically(path, "new\n")
    assert path.read_text() == "new\n" and mode(path) == 0o640
    write_atomically(path, "newer\n", mode=0o600)  # a mode asked for wins
    assert path.read_text() == "newer\n" and mode(path) == 0o600


def test_write_atomically_failing_leaves_the_target_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "unit.d"
    target.mkdir()  # a folder: the rename over it fails
    with pytest.raises(IsADirectoryError):
        write_atomically(target, "x\n")
    assert target.is_dir() and [p.name for p in tmp_path.iterdir()] == ["unit.d"]


def test_write_many_replaces_all_files_keeping_modes_and_leaves_no_temporaries(
        tmp_path: Path) -> None:
    old = tmp_path / "a.conf"
    old.write_text("old\n")
    old.chmod(0o600)
    write_many([(old, b"new a\n"), (tmp_path / "b.conf", b"new b\n")],
               new=[tmp_path / "b.conf"])
    assert old.read_text() == "new a\n" and (tmp_path / "b.conf").read_text() == "new b\n"
    assert mode(old) == 0o600 and mode(tmp_path / "b.conf") == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.conf", "b.conf"]


def test_write_many_replaces_nothing_when_a_file_cannot_be_written(tmp_path: Path) -> None:
    first = tmp_path / "a.conf"
    first.write_text("old\n")
    with pytest.raises(FileNotFoundError):
        write_many([(first, b"new\n"), (tmp_path / "missing" / "b.conf", b"x\n")])
    assert first.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["a.conf"]  # no temporary left behind


def test_write_many_across_folders(tmp_path: Path) -> None:
    (tmp_path / "x.service.d").mkdir()
    write_many([(tmp_path / "x.service.d" / "50-slicectl.conf", b"[Service]\n"),
                (tmp_path / "tenants.slice", b"[Slice]\n")])
    assert (tmp_path / "x.service.d" / "50-slicectl.conf").read_bytes() == b"[Service]\n"
    assert (tmp_path / "tenants.slice").read_bytes() == b"[Slice]\n"
