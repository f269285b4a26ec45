"""The isolation record file: absent, written and read back, damaged, or writable by another
user while slicectl runs as root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from slicectl.core.errors import StateError
from slicectl.core.properties.isolation import IsolationRecord
from slicectl.host.files.isolation_record import read_record, record_bytes


def test_no_record_is_none(tmp_path: Path) -> None:
    assert read_record(tmp_path / "isolation.json") is None


def test_a_record_reads_back_as_written(tmp_path: Path) -> None:
    record = IsolationRecord(frozenset({1, 5}), {24: "0-7\n"}, "ff\n")
    (tmp_path / "isolation.json").write_bytes(record_bytes(record))
    assert read_record(tmp_path / "isolation.json") == record


def test_a_damaged_record_is_refused_with_its_name(tmp_path: Path) -> None:
    (tmp_path / "isolation.json").write_text("{")
    with pytest.raises(StateError, match="isolation.json: not JSON"):
        read_record(tmp_path / "isolation.json")


def test_a_record_others_may_write_is_not_used_by_root(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "isolation.json"
    path.write_bytes(record_bytes(IsolationRecord(frozenset({1}), {})))
    os.chmod(path, 0o666)
    monkeypatch.setattr("slicectl.host.files.trust._enforced", lambda: True)
    with pytest.raises(StateError, match="not used: .*isolation.json"):
        read_record(path)
