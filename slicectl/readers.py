"""Readers of host state and user files for the pure rules: an edge, like sysfs and sampler.

`crowded_cgroups` walks cgroupfs and procfs for `lint --live` (the root-tasks rule in
`slicectl.lint`); `read_samples_csv` reads the footprint samples `recommend --samples` sizes
from (`slicectl.recommend`). Each takes its root or path, so tests use fixture trees.
"""

from __future__ import annotations

import csv
import math
import os
from datetime import UTC, datetime
from pathlib import Path

from slicectl.lint import CrowdedCgroup
from slicectl.recommend import RecommendError, Sample

KTHREADD_PID = 2
CSV_COLUMNS = ("time", "unit", "anon", "active_file")


# --- cgroupfs and procfs: processes beside sub-trees (lint --live) ----------------------------


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None


def _is_kernel_thread(proc_root: Path, pid: int) -> bool:
    """Kernel threads have an empty cmdline and are children of kthreadd (PID 2)."""
    if pid == KTHREADD_PID:
        return True
    try:
        if (proc_root / str(pid) / "cmdline").read_bytes() == b"":
            return True
    except OSError:
        return True  # gone since cgroup.procs was read: nothing left to move
    status = _read_text(proc_root / str(pid) / "status") or ""
    for line in status.splitlines():
        if line.startswith("PPid:"):
            return line.split()[1:2] == [str(KTHREADD_PID)]
    return False


def _process_name(proc_root: Path, pid: int) -> str:
    comm = _read_text(proc_root / str(pid) / "comm")
    return comm.strip() if comm else "?"


def _user_processes(procs: Path, proc_root: Path) -> tuple[tuple[int, int, str], ...]:
    """(line in cgroup.procs, PID, name) of the processes that are not kernel threads."""
    text = _read_text(procs) or ""
    return tuple((lineno, int(raw), _process_name(proc_root, int(raw)))
                 for lineno, raw in enumerate(text.splitlines(), start=1)
                 if raw.strip().isdigit() and not _is_kernel_thread(proc_root, int(raw)))


def crowded_cgroups(cgroup_root: str | Path, proc_root: str | Path) -> list[CrowdedCgroup]:
    """The root cgroup and the slices that hold processes beside child cgroups."""
    root, proc = Path(cgroup_root), Path(proc_root)
    found: list[CrowdedCgroup] = []
    for directory, subdirs, _ in os.walk(root):
        here = Path(directory)
        if here != root and not here.name.endswith(".slice"):
            subdirs.clear()  # services and scopes: their own business
            continue
        if not subdirs:
            continue
        processes = _user_processes(here / "cgroup.procs", proc)
        if processes:
            found.append(CrowdedCgroup(str(here / "cgroup.procs"),
                                       None if here == root else here.name, len(subdirs),
                                       processes))
    return found


# --- footprint samples from CSV (recommend --samples) ------------------------------------------


# datetime's range, years 1 to 9999: any real time fits, and sums of two never overflow.
MIN_TIME, MAX_TIME = -62_135_596_800.0, 253_402_300_799.0


def _parse_time(text: str) -> float:
    """Epoch seconds or ISO 8601 (UTC when no zone is given); ValueError otherwise."""
    try:
        value = float(text)
    except ValueError:
        stamp = datetime.fromisoformat(text.strip())  # ValueError goes to the caller
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=UTC)  # documented: ISO times without a zone are UTC
        return stamp.timestamp()
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def _parse_bytes(text: str, column: str) -> int:
    if not text.strip().isdigit():
        raise ValueError(f"{column} {text!r} is not a whole number of bytes")
    return int(text)


def _columns(path: str | Path, header_row: list[str]) -> tuple[int, dict[str, int]]:
    """(number of fields, column → index) from the header line."""
    header = [h.strip() for h in header_row]
    missing = [c for c in CSV_COLUMNS if c not in header]
    if missing:
        raise RecommendError(
            f"{path}:1: the header lacks {', '.join(missing)}",
            "the first line must be `time,unit,anon,active_file` (sizes in bytes, "
            "time in epoch seconds or ISO 8601)")
    return len(header), {c: header.index(c) for c in CSV_COLUMNS}


def _time(where: str, text: str) -> float:
    try:
        when = _parse_time(text)
    except ValueError:
        raise RecommendError(f"{where}: time {text!r} is neither epoch seconds nor ISO 8601",
                             "e.g. 1718000000 or 2024-06-10T08:00:00Z") from None
    if not MIN_TIME <= when <= MAX_TIME:
        raise RecommendError(f"{where}: time {text!r} is out of range (years 1 to 9999)",
                             "times are epoch seconds (e.g. 1718000000) or ISO 8601")
    return when


def _sample(where: str, row: list[str], width: int, col: dict[str, int]) -> tuple[str, Sample]:
    """(unit, sample) of one data row; RecommendError located at `where` (FILE:LINE)."""
    if len(row) < width:
        raise RecommendError(f"{where}: expected {width} fields, got {len(row)}",
                             "every row needs time,unit,anon,active_file")
    when = _time(where, row[col["time"]])
    try:
        anon = _parse_bytes(row[col["anon"]], "anon")
        active = _parse_bytes(row[col["active_file"]], "active_file")
    except ValueError as e:
        raise RecommendError(f"{where}: {e}", "sizes are plain byte counts, e.g. 4294967296") \
            from None
    unit = row[col["unit"]].strip()
    if not unit:
        raise RecommendError(f"{where}: empty unit", "name the slice, e.g. tenants-web.slice")
    return unit, Sample(when, anon, active)


def _read_rows(path: str | Path) -> dict[str, list[Sample]]:
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.reader(f)
        width, col = _columns(path, next(reader, []))
        series: dict[str, list[Sample]] = {}
        for row in reader:
            if row and "".join(row).strip():
                unit, sample = _sample(f"{path}:{reader.line_num}", row, width, col)
                series.setdefault(unit, []).append(sample)
    return series


def read_samples_csv(path: str | Path) -> dict[str, list[Sample]]:
    """unit → samples from a CSV with the header `time,unit,anon,active_file`."""
    try:
        series = _read_rows(path)
    except OSError as e:
        raise RecommendError(f"{path}: cannot read: {e.strerror}",
                             "check the path given to --samples") from e
    except UnicodeDecodeError:
        raise RecommendError(f"{path}: is not UTF-8 text", "save the CSV as UTF-8") from None
    except csv.Error as e:
        raise RecommendError(f"{path}: malformed CSV: {e}", "check quoting") from e
    if not series:
        raise RecommendError(f"{path}: no samples", "add rows after the header line")
    return series


def oomd_running(proc_root: str | Path) -> bool:
    """Whether a systemd-oomd process runs (its comm in procfs)."""
    for entry in Path(proc_root).iterdir():
        if entry.name.isdigit() and _read_text(entry / "comm") == "systemd-oomd\n":
            return True
    return False
