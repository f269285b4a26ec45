"""The balancer's state file (slicectl.host.files.balance_state_file): read, written whole with its
folder and a mode every reader may read, a file that cannot be read told apart from none at
all, and apply's reset of it. The document inside is tested in test_balance_state_json.py."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from slicectl.core.balance.balance import ElasticRange
from slicectl.core.balance.balance_state import BalanceState, TenantBalance
from slicectl.core.errors import StateError
from slicectl.host.files.balance_state_file import (
    read_state,
    reset_state,
    state_or_none,
    write_state,
)

DECLARED = frozenset({3, 4, 19, 20})
MOVED = BalanceState({"web": TenantBalance(DECLARED, DECLARED | {2, 18}, grown=1,
                                           last_move=1.0, last_reason="starved")})
RANGES = (ElasticRange("web", DECLARED, 2, 8, frozenset({1, 2, 3, 4, 17, 18, 19, 20})),)


def test_no_file_is_no_state(tmp_path: Path) -> None:
    assert read_state(tmp_path / "balance.json") is None
    assert state_or_none(tmp_path / "balance.json") is None


def test_a_file_that_cannot_be_read_is_an_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "balance.json").mkdir()
    with pytest.raises(StateError) as e:
        read_state(tmp_path / "balance.json")
    assert e.value.message == f"{tmp_path}/balance.json: cannot read: Is a directory"
    assert e.value.hint == "run as root, or point --balance-state at a readable file"
    assert state_or_none(tmp_path / "balance.json") is None  # drift's view: no state


def test_not_json(tmp_path: Path) -> None:
    (tmp_path / "balance.json").write_bytes(b"\xff{")
    with pytest.raises(StateError) as e:
        read_state(tmp_path / "balance.json")
    assert e.value.message.startswith(f"{tmp_path}/balance.json: not JSON (")
    assert e.value.hint == "remove it: the balancer writes a new one after its next move"


def test_written_whole_readable_by_all_with_its_folder(tmp_path: Path) -> None:
    path = tmp_path / "run" / "slicectl" / "balance.json"
    old = os.umask(0o077)
    try:
        write_state(path, MOVED)
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644  # the exporter and the TUI run as others
    text = path.read_text()
    assert text.endswith("}\n") and json.loads(text) == MOVED.to_json()
    assert [p.name for p in path.parent.iterdir()] == ["balance.json"]


def test_reset_after_apply(tmp_path: Path) -> None:
    path = tmp_path / "balance.json"
    reset_state(path, RANGES)
    assert not path.exists()  # no balancer ran: no file made
    write_state(path, MOVED)
    reset_state(path, RANGES)
    web = read_state(path)
    assert web is not None and (web.tenants["web"].cpus, web.tenants["web"].grown) == (
        DECLARED, 1)  # back to the declared CPUs, the counters kept
    inode = path.stat().st_ino
    reset_state(path, RANGES)
    assert path.stat().st_ino == inode  # already so: not rewritten


def test_reset_replaces_an_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "balance.json"
    path.write_text("garbage")
    reset_state(path, RANGES)
    assert read_state(path) == BalanceState({"web": TenantBalance(DECLARED, DECLARED)})
