"""`slicectl record`: rows from a fake cgroup tree, retention, and the shipped service unit."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from cgtree import NUMA_HOSTS, MovingTree, build_numa_fixture
from paths import ROOT
from unitcheck import parse_unit

from slicectl.cli import main
from slicectl.cli.watch import run_record
from slicectl.core.errors import RecordError
from slicectl.host.cgroup.recorder import RecorderRow, load_series, open_db, write_rows
from slicectl.host.topology.sysfs import read_topology

UNIT = ROOT / "units" / "slicectl-record.service"
SYSFS = ROOT / "tests" / "fixtures" / "sysfs"
G = 1 << 30


def _tree(tmp_path: Path) -> MovingTree:
    tree = MovingTree(tmp_path / "cgroup")
    tree.add("system.slice")
    tree.add("tenants.slice")
    psi = {"cpu": [0.0] * 4, "memory": [1.5, 4242.0, 0.5, 100.0], "io": [0.0] * 4}
    tree.add("tenants.slice/tenants-web.slice", anon=3 * G, active_file=G, file=2 * G,
             memory_current=5 * G, usage_usec=777, psi=psi)
    return tree


def _rows(db: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(db)
    try:
        return list(conn.execute("SELECT * FROM samples ORDER BY unit"))
    finally:
        conn.close()


def test_record_once_writes_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = _tree(tmp_path)
    db = tmp_path / "state" / "record.db"
    before = time.time()
    assert run_record(str(tree.root), str(db), 60, 14, True) == 0
    assert "recorded 3 cgroup(s)" in capsys.readouterr().out
    rows = {r[1]: r for r in _rows(db)}
    assert set(rows) == {"system.slice", "tenants.slice", "tenants-web.slice"}
    web = rows["tenants-web.slice"]
    assert before <= float(str(web[0])) <= time.time()
    # two memory nodes, no node map: the share outside its memory nodes only
    assert web[2:] == ("tenants.slice/tenants-web.slice", 3 * G, 2 * G, G, 5 * G, 1.5, 4242, 777,
                       None, 0.0)
    assert load_series(db)["tenants-web.slice"][0][1:] == (3 * G, G)


def test_record_stores_numa_locality_with_the_node_map_of_sysfs(tmp_path: Path) -> None:
    node_cpus = {n.id: n.cpus for n in read_topology(SYSFS / NUMA_HOSTS[2]).nodes}
    tree = build_numa_fixture(tmp_path / "cg", node_cpus)
    db = tmp_path / "record.db"
    assert main(["record", "--once", "--cgroup-root", str(tree.root), "--db", str(db),
                 "--sysfs", str(SYSFS / NUMA_HOSTS[2])]) == 0
    conn = sqlite3.connect(db)
    try:
        got = dict(((u, (lo, out)) for u, lo, out in conn.execute(
            "SELECT unit, numa_local_percent, numa_outside_percent FROM samples")))
    finally:
        conn.close()
    assert got["tenants-moved.slice"] == (25.0, 75.0)
    assert got["tenants-local.slice"] == (100.0, 0.0)
    assert got["tenants-empty.slice"] == (None, None)  # no memory charged yet


def test_a_version_1_database_stays_readable_and_gains_the_numa_columns(tmp_path: Path) -> None:
    db = tmp_path / "record.db"
    conn = sqlite3.connect(db)
    conn.executescript("""
        CREATE TABLE samples (time REAL NOT NULL, unit TEXT NOT NULL, path TEXT NOT NULL,
            anon INTEGER, file INTEGER, active_file INTEGER, memory_current INTEGER,
            memory_some_avg10 REAL, memory_some_total INTEGER, cpu_usage_usec INTEGER);
        INSERT INTO samples VALUES (1000.0, 'old.slice', 'old.slice', 5, 1, 2, 6, 0.0, 0, 9);
        PRAGMA user_version=1;
    """)
    conn.commit()
    conn.close()
    tree = _tree(tmp_path)
    assert run_record(str(tree.root), str(db), 60, 100000, True) == 0
    rows = {r[1]: r for r in _rows(db)}
    assert rows["old.slice"][2:] == ("old.slice", 5, 1, 2, 6, 0.0, 0, 9, None, None)
    assert rows["tenants-web.slice"][-1] == 0.0
    assert load_series(db)["old.slice"][0][1:] == (5, 2)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone() == (2,)
    conn.close()


def test_record_iterations(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    db = tmp_path / "record.db"
    assert run_record(str(tree.root), str(db), 0.01, 14, False, iterations=3) == 0
    assert len(_rows(db)) == 9


def test_retention_deletes_old_rows(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    db = tmp_path / "record.db"
    conn = open_db(db)
    old = RecorderRow("old.slice", "old.slice", 1, 1, 1, 1, 0.0, 0, 0)
    write_rows(conn, time.time() - 15 * 86400, [old])
    write_rows(conn, time.time() - 13 * 86400, [RecorderRow("kept.slice", "kept.slice", 1, 1, 1, 1,
                                                    0.0, 0, 0)])
    conn.close()
    run_record(str(tree.root), str(db), 60, 14, True)
    units = {r[1] for r in _rows(db)}
    assert "old.slice" not in units and "kept.slice" in units and "system.slice" in units


@pytest.mark.parametrize("flag", ["--interval", "--retention"])
@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_bad_interval_or_retention_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str) -> None:
    with pytest.raises(SystemExit) as e:
        main(["record", "--cgroup-root", str(tmp_path), "--db", str(tmp_path / "db"), flag,
              value])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: slicectl record") and f"argument {flag}: " in err
    assert not (tmp_path / "db").exists()


def test_errors(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="no sample database"):
        load_series(tmp_path / "missing.db")
    (tmp_path / "dir.db").mkdir()
    with pytest.raises(RecordError, match="cannot open"):
        open_db(tmp_path / "dir.db")


def test_unit_is_confined() -> None:
    service = parse_unit(UNIT.read_text())["Service"]
    assert service["ExecStart"].startswith("/usr/local/bin/slicectl record ")
    assert service["Slice"] == "system.slice"
    assert service["MemoryMax"] == "64M" and service["CPUQuota"] == "5%"
    assert service["ProtectSystem"] == "strict" and service["StateDirectory"] == "slicectl"


