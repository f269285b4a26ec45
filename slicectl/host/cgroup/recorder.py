"""`slicectl record`: sample every slice's memory footprint, pressure and CPU into SQLite.

Feeds `slicectl recommend` (docs/recommend.md). One row per cgroup per round, its columns
those the fields table (slicectl.core.monitor.fields) says a field is recorded as, in
RecorderRow's order; each round is committed on its own, so a killed recorder loses at most
the round in progress, and rows older than the retention are deleted every round. Reads
cgroupfs through `slicectl.host.cgroup.sampler`; the loop of `slicectl record` lives in the
CLI (slicectl/cli/watch.py).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import astuple, fields
from pathlib import Path
from typing import Any

from slicectl.core.advice.recommend import Sample
from slicectl.core.errors import RecordError
from slicectl.core.frozen import frozen
from slicectl.core.monitor.fields import FIELDS, Recorded
from slicectl.core.monitor.metrics import NodeCpus, NumaMetrics
from slicectl.core.monitor.samples import Snapshot
from slicectl.host.cgroup.sampler import Sampler

# 2: numa_local_percent and numa_outside_percent. A version-1 database gets the
# two columns added when it is opened, NULL in its old rows.
SCHEMA_VERSION = 2


@frozen
class RecorderRow:
    """One cgroup at one round; None where the kernel did not report a value. After unit and
    path, its fields are the samples table's columns in the file's order, each a column of a
    row of the fields table (slicectl.core.monitor.fields: its type, its comment and how it
    is read)."""

    unit: str
    path: str
    anon: int | None
    file: int | None
    active_file: int | None
    memory_current: int | None
    memory_some_avg10: float | None
    memory_some_total: int | None
    cpu_usage_usec: int | None
    numa_local_percent: float | None = None  # None: one memory node, or no memory yet
    numa_outside_percent: float | None = None


_BY_COLUMN = {r.column: r for f in FIELDS for r in f.recorded}
# The recorded columns in RecorderRow's order (a KeyError here: a field the table lacks).
_RECORDED: tuple[Recorded, ...] = tuple(_BY_COLUMN[f.name] for f in fields(RecorderRow)[2:])
# Columns added after version 1, with their types: ALTER TABLE adds them to older databases.
_ADDED = tuple((r.column, r.sql) for r in _RECORDED if r.since > 1)


def _schema() -> str:
    """The samples table and its indexes, each column with its comment."""
    columns = [("time", "REAL NOT NULL", "seconds since the epoch (UTC)"),
               ("unit", "TEXT NOT NULL", "cgroup name, e.g. tenants-web.slice"),
               ("path", "TEXT NOT NULL",
                "below the cgroup root, e.g. tenants.slice/tenants-web.slice"),
               *((r.column, r.sql, r.doc) for r in _RECORDED)]
    last = len(columns) - 1
    lines = [f"    {name} {sql}{',' if i < last else ''}".ljust(35) + f"-- {doc}"
             for i, (name, sql, doc) in enumerate(columns)]
    return "\n".join(["", "CREATE TABLE IF NOT EXISTS samples (", *lines, ");",
                      "CREATE INDEX IF NOT EXISTS samples_time ON samples (time);",
                      "CREATE INDEX IF NOT EXISTS samples_unit_time ON samples (unit, time);",
                      ""])


_SCHEMA = _schema()


def open_db(path: str | Path) -> sqlite3.Connection:
    """Open (creating if needed) the sample database and its schema."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=30)
        # WAL: `recommend` can read while the recorder writes.
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(_SCHEMA)
        have = {row[1] for row in conn.execute("PRAGMA table_info(samples)")}
        for column, kind in _ADDED:
            if column not in have:
                conn.execute(f"ALTER TABLE samples ADD COLUMN {column} {kind}")
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        conn.commit()
    except (OSError, sqlite3.Error) as e:
        raise RecordError(f"{path}: cannot open the sample database: {e}",
                          "check the path given to --db and that it is writable") from e
    return conn


def rows_from_snapshot(snapshot: Snapshot, node_cpus: NodeCpus | None = None) -> list[RecorderRow]:
    """The recorded values of every cgroup in a sampler snapshot; NUMA locality against the
    host's `node_cpus` (metrics.NumaMetrics)."""
    rows = []
    for path, s in sorted(snapshot.cgroups.items()):
        numa = NumaMetrics.from_sample(s, node_cpus, snapshot.host_mems)
        # (each read gives its column's type, as RecorderRow annotates it)
        values: list[Any] = [r.read(s, numa) for r in _RECORDED]
        rows.append(RecorderRow(s.unit, path, *values))
    return rows


def write_rows(conn: sqlite3.Connection, when: float, rows: Iterable[RecorderRow]) -> int:
    """Insert one round of rows taken at `when` (epoch seconds) and commit; returns the count."""
    data = [(when, *astuple(r)) for r in rows]
    columns = ", ".join(("time", *(f.name for f in fields(RecorderRow))))
    marks = ", ".join("?" * (len(fields(RecorderRow)) + 1))
    try:
        with conn:
            conn.executemany(f"INSERT INTO samples ({columns}) VALUES ({marks})", data)
    except sqlite3.Error as e:
        raise RecordError(f"cannot write samples: {e}", "is the disk full or read-only?") from e
    return len(data)


def prune(conn: sqlite3.Connection, before: float) -> int:
    """Delete rows older than `before` (epoch seconds); returns how many."""
    try:
        with conn:
            return conn.execute("DELETE FROM samples WHERE time < ?", (before,)).rowcount
    except sqlite3.Error as e:
        raise RecordError(f"cannot delete old samples: {e}", "is the disk read-only?") from e


def record_round(
    conn: sqlite3.Connection, sampler: Sampler, now: float, retention_days: float,
    *, node_cpus: NodeCpus | None = None,
) -> int:
    """Sample once, store the rows at `now`, delete rows past the retention."""
    count = write_rows(conn, now, rows_from_snapshot(sampler.sample(), node_cpus))
    prune(conn, now - retention_days * 86400)
    return count


def load_series(path: str | Path) -> dict[str, list[Sample]]:
    """unit → its footprint samples in time order, from a database `record` wrote."""
    path = Path(path)
    if not path.is_file():
        raise RecordError(f"{path}: no sample database",
                          "run `slicectl record` for a week first (or pass --samples CSV)")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
        try:
            cur = conn.execute(
                "SELECT unit, time, anon, active_file FROM samples "
                "WHERE anon IS NOT NULL AND active_file IS NOT NULL ORDER BY unit, time")
            series: dict[str, list[Sample]] = {}
            for unit, when, anon, active_file in cur:
                series.setdefault(unit, []).append(Sample(when, anon, active_file))
        finally:
            conn.close()
    except sqlite3.Error as e:
        raise RecordError(f"{path}: cannot read samples: {e}",
                          "is it a database written by `slicectl record`?") from e
    return series
