"""Readers of host state and user files for the pure rules: an edge, like sysfs and sampler.

`crowded_cgroups` walks cgroupfs and procfs for `lint --live` (the root-tasks rule in
`slicectl.core.advice.lint`); `read_competition` finds what competes with the tenants for CPU at the
root and in their parent slice (`slicectl.core.shares.contention`: plan, lint --live, the TUI);
`read_samples_csv` reads the footprint samples `recommend --samples` sizes
from (`slicectl.core.advice.recommend`). Each takes its root or path, so tests use fixture trees.
"""

from __future__ import annotations

import csv
import math
import os
import stat
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from slicectl.core.advice.lint import CrowdedCgroup
from slicectl.core.advice.recommend import Sample
from slicectl.core.config.tenants import Config
from slicectl.core.cpulist import parse_cpulist
from slicectl.core.errors import RecommendError, SlicectlError
from slicectl.core.shares.contention import ROOT_UNIT, CgroupLevel, Competition, Competitor
from slicectl.core.shares.shares import IDLE_WEIGHT, ShareKind, cgroup_weight, nice_weight
from slicectl.host.cgroup.cgroupfs import populated

KTHREADD_PID = 2
CSV_COLUMNS = ("time", "unit", "anon", "active_file")


# --- cgroupfs and procfs: processes beside sub-trees (lint --live) ----------------------------


def _read_text(path: Path) -> str | None:
    """A file's text; None when it cannot be read or is not a regular file: opened
    non-blocking, a FIFO in place of a cgroup file (a broken tree) never blocks."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        with open(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            return f.read().decode(errors="replace")
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


# --- cgroupfs and procfs: what competes with the tenants for CPU (plan, lint --live, TUI) ----


# /proc/PID/stat field 19 (nice), counted from field 3 (state), the first after the ")" that
# ends the command name (which may hold spaces and parentheses itself).
NICE_INDEX = 19 - 3


def _controllers(cgroup: Path) -> set[str]:
    return set((_read_text(cgroup / "cgroup.subtree_control") or "").split())


def _cgroup_weight(cgroup: Path) -> int | None:
    """The cgroup's weight in the kernel's unit (None: no cpu controller on it)."""
    if (_read_text(cgroup / "cpu.idle") or "0").strip() == "1":
        return IDLE_WEIGHT
    text = (_read_text(cgroup / "cpu.weight") or "").strip()
    return cgroup_weight(int(text)) if text.isdigit() else None


def _cpus(text: str | None) -> frozenset[int] | None:
    if not text or not text.strip():
        return None
    try:
        return parse_cpulist(text.strip())
    except SlicectlError:
        return None


def _unit(cgroup: Path) -> Competitor | None:
    """A child cgroup as a competitor; None for one that is empty and cannot fill up (a
    finished service, a mount helper's cgroup): slices always count, they get new members."""
    if not cgroup.name.endswith(".slice") and not populated(cgroup, ""):
        return None
    weight = _cgroup_weight(cgroup)
    return Competitor(cgroup.name.removeprefix("_"), ShareKind.UNIT,
                      weight if weight is not None else cgroup_weight(100),
                      _cpus(_read_text(cgroup / "cpuset.cpus.effective")))


def _task(proc_root: Path, tid: int) -> Competitor | None:
    """A task (thread) directly in a cgroup; None for kernel threads and vanished tasks."""
    if _is_kernel_thread(proc_root, tid):
        return None
    stat = _read_text(proc_root / str(tid) / "stat")
    status = _read_text(proc_root / str(tid) / "status")
    if stat is None or status is None:
        return None  # exited meanwhile
    fields = stat.rpartition(")")[2].split()
    nice = int(fields[NICE_INDEX]) if len(fields) > NICE_INDEX else 0
    allowed = next((line.split(":", 1)[1] for line in status.splitlines()
                    if line.startswith("Cpus_allowed_list:")), None)
    return Competitor(f"PID {tid} ({_process_name(proc_root, tid)})", ShareKind.PROCESS,
                      nice_weight(nice), _cpus(allowed))


def _level(cgroup: Path, unit: str, skip: set[str], proc_root: Path) -> CgroupLevel:
    if not cgroup.is_dir():
        return CgroupLevel(unit)
    members: list[Competitor] = []
    for child in sorted(p for p in cgroup.iterdir() if p.is_dir()):
        if child.name.removeprefix("_") not in skip:
            found = _unit(child)
            if found is not None:
                members.append(found)
    for raw in (_read_text(cgroup / "cgroup.threads") or "").split():
        if raw.isdigit():
            task = _task(proc_root, int(raw))
            if task is not None:
                members.append(task)
    return CgroupLevel(unit, tuple(members), "cpu" in _controllers(cgroup),
                 None if unit == ROOT_UNIT else _cgroup_weight(cgroup))


def _child(cgroup: Path, unit: str) -> Path:
    """A unit's cgroup below `cgroup`; systemd prefixes names that clash with controller
    files with `_` (cpu.slice -> _cpu.slice)."""
    plain = cgroup / unit
    return plain if plain.is_dir() or not (cgroup / f"_{unit}").is_dir() else cgroup / f"_{unit}"


def read_competition(config: Config, cgroup_root: str | Path,
                     proc_root: str | Path = "/proc") -> Competition:
    """The competitors of `config`'s tenants on this host, at the root and in the parent;
    raises SlicectlError when `cgroup_root` is no cgroup v2 hierarchy."""
    root = Path(cgroup_root)
    if not (root / "cgroup.controllers").is_file():
        raise SlicectlError(f"{root} is not a cgroup v2 hierarchy (no cgroup.controllers)",
                            "CPU shares assume the standard competitors; point --cgroup-root "
                            "at the cgroup2 mount")
    proc, parent = Path(proc_root), config.slice_unit()
    tenants = {config.slice_unit(t.name) for t in config.tenants}
    return Competition(True, _level(root, ROOT_UNIT, {parent}, proc),
                       _level(_child(root, parent), parent, tenants, proc))


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


def cpu_overrides(units: Mapping[str, str], control_dirs: Sequence[str | Path]
                  ) -> dict[str, str]:
    """Which of `units` (key -> unit name) have their CPUs set by `systemctl set-property`:
    key -> the `50-AllowedCPUs.conf` it left in a `system.control` directory."""
    found: dict[str, str] = {}
    for key, unit in units.items():
        for folder in control_dirs:
            path = Path(folder) / f"{unit}.d" / "50-AllowedCPUs.conf"
            if path.is_file():
                found[key] = str(path)
                break
    return found
