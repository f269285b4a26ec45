"""The one table of a slice's metrics and every output of each (pure).

Each `SliceField` row says, for one metric of a slice: its key in `slicectl status --json` (the
field id, dotted as object.key) and its value there; its column in `status`, `top` and the
TUI, and how a cell shows it. Everything else reads this table: the JSON object and the table's
cells (slicectl.views.monitor), the TUI's overview (its columns, by field id). Adding a metric
is one row here plus its tests; a view that shows it lists its id where it wants the column.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from operator import attrgetter
from typing import Any

from slicectl.core.cpulist import format_cpulist
from slicectl.core.frozen import frozen
from slicectl.core.human import human_limit, human_rate, human_size
from slicectl.core.monitor.metrics import NumaMetrics, PressureMetrics, PsiMetrics, SliceMetrics

# How a table cell says "no limit" (memory.high or memory.max "max"), in status, top, the TUI.
NO_LIMIT_CELL = "none"


@frozen
class Column:
    """A field's column in `status`, `top` and the TUI: its header and its cell."""

    title: str
    cell: Callable[[SliceMetrics], str]  # "-": not measured yet, or not available
    left: bool = False  # aligned left (text), else right (figures)


@frozen
class SliceField:
    """One metric of a slice and every output of it, keyed by `id`: its key in `status
    --json`, dotted as object.key ("cpu.cores" is {"cpu": {"cores": …}})."""

    id: str
    json: Callable[[SliceMetrics], Any]  # its value in `status --json`
    column: Column | None = None  # its column in status, top and the TUI (views pick them)


# --- JSON values -------------------------------------------------------------------------


def json_float(x: float | None, digits: int) -> float | None:
    """Rounded for JSON; None for unknown, and for nan or inf, which JSON cannot carry."""
    return None if x is None or not math.isfinite(x) else round(x, digits)


def rounded(attr: str, digits: int) -> Callable[[SliceMetrics], float | None]:
    """The value of SliceMetrics' `attr`, rounded to `digits` for JSON."""
    get = attrgetter(attr)
    return lambda m: json_float(get(m), digits)


def cpulist(attr: str) -> Callable[[SliceMetrics], str | None]:
    """The CPUs or nodes of SliceMetrics' `attr` as a cpulist ("0-3,8"); None: all."""
    get = attrgetter(attr)
    return lambda m: None if get(m) is None else format_cpulist(get(m))


def _psi_line_json(line: PsiMetrics) -> dict[str, float | None]:
    return {"avg10": json_float(line.avg10, 2), "rate": json_float(line.rate, 2)}


def _psi_json(p: PressureMetrics | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {"some": _psi_line_json(p.some),
            "full": None if p.full is None else _psi_line_json(p.full)}


def pressure_json(attr: str) -> Callable[[SliceMetrics], dict[str, Any] | None]:
    """PSI `some` and `full` of SliceMetrics' `attr`: the kernel's avg10 and our rate."""
    get = attrgetter(attr)
    return lambda m: _psi_json(get(m))


def _events_json(m: SliceMetrics) -> dict[str, int | None]:
    return {"low": m.events_low, "high": m.events_high, "max": m.events_max,
            "oom": m.events_oom, "oom_kill": m.events_oom_kill}


def _io_json(m: SliceMetrics) -> dict[str, float | None]:
    return {"read_bytes_per_s": json_float(m.io_read_bps, 1),
            "write_bytes_per_s": json_float(m.io_write_bps, 1)}


def _numa_json(m: SliceMetrics) -> dict[str, Any] | None:
    n: NumaMetrics | None = m.numa
    if n is None:
        return None
    return {
        "nodes": [{"node": x.node, "anon": x.anon, "file": x.file} for x in n.nodes],
        "local_nodes": None if n.local_nodes is None else format_cpulist(n.local_nodes),
        "local_percent": json_float(n.local_percent, 2),
        "outside_percent": json_float(n.outside_percent, 2),
        "bound": n.bound,
    }


def _partition_json(m: SliceMetrics) -> dict[str, Any] | None:
    p = m.partition
    if p is None:
        return None
    return {
        "state": p.state.state,
        "valid": p.state.valid,
        "reason": p.state.reason or None,
        "lost_cpus": format_cpulist(p.lost_cpus) if p.lost_cpus else None,
        "problem": p.problem(),
    }


# --- table cells -------------------------------------------------------------------------


def _cores_cell(m: SliceMetrics) -> str:
    cores = "-" if m.cpu_cores is None else f"{m.cpu_cores:.2f}"
    return f"{cores} / {m.allowed_cpus}"


def _quota_cell(m: SliceMetrics) -> str:
    return "-" if m.quota_cores is None else f"{m.quota_cores:.2f}"


def _throttled_cell(m: SliceMetrics) -> str:
    if m.throttled_percent is None or (m.quota_cores is None and not m.throttled_percent):
        return "-"  # not measured yet; or no quota, so nothing to throttle against
    return f"{m.throttled_percent:.1f}%"


def _memory_cell(m: SliceMetrics) -> str:
    if m.memory_current is None:
        return "-"
    return (f"{human_size(m.memory_current)} / {human_limit(m.memory_high, NO_LIMIT_CELL)}"
            f" / {human_limit(m.memory_max, NO_LIMIT_CELL)}")


def psi_cell(p: PressureMetrics | None) -> str:
    """The PSI `some` stall share of one resource as status, top and the TUI show it."""
    return "-" if p is None else f"{p.some.share():.1f}%"


def pressure_cell(attr: str) -> Callable[[SliceMetrics], str]:
    """The cell of the pressure of SliceMetrics' `attr` (`psi_cell`)."""
    get = attrgetter(attr)
    return lambda m: psi_cell(get(m))


def _events_cell(m: SliceMetrics) -> str:
    counts = (("oom_kill", m.events_oom_kill), ("oom", m.events_oom), ("max", m.events_max),
              ("high", m.events_high))  # the most serious first
    return ", ".join(f"{name} +{n}" for name, n in counts if n) or "-"


def _tasks_cell(m: SliceMetrics) -> str:
    return "-" if m.tasks is None else str(m.tasks)


def _io_cell(m: SliceMetrics) -> str:
    """Bytes read and written per second: "1.5M/s 0B/s"."""
    if m.io_read_bps is None or m.io_write_bps is None:
        return "-"
    return f"{human_rate(m.io_read_bps)} {human_rate(m.io_write_bps)}"


def _numa_cell(m: SliceMetrics) -> str:
    """The local share of the slice's memory, and the share outside its memory nodes when
    there is some: "97%", "25% (75% out)"."""
    n = m.numa
    if n is None or n.outside_percent is None:
        return "-"
    local = "-" if n.local_percent is None else f"{n.local_percent:.0f}%"
    if n.outside_percent < 0.5:
        return local
    return f"{local} ({n.outside_percent:.0f}% out)"


def _partition_cell(m: SliceMetrics) -> str:
    """The slice's cpuset partition: "isolated", "root invalid", "isolated lacks 3"
    ("-": no partition)."""
    p = m.partition
    if p is None:
        return "-"
    if not p.state.valid:
        return f"{p.state.state} invalid"
    if p.lost_cpus:
        return f"{p.state.state} lacks {format_cpulist(p.lost_cpus)}"
    return p.state.state


# --- the table ---------------------------------------------------------------------------

# In the order of the `status --json` object (docs/status-json.md).
FIELDS: tuple[SliceField, ...] = (
    SliceField(id="unit", json=attrgetter("unit"),
               column=Column(title="slice", cell=attrgetter("unit"), left=True)),
    SliceField(id="cgroup", json=attrgetter("cgroup")),
    # limits
    SliceField(id="limits.cpus", json=cpulist("cpus")),
    SliceField(id="limits.allowed_cpus", json=attrgetter("allowed_cpus")),
    SliceField(id="limits.mems", json=cpulist("mems")),
    SliceField(id="limits.cpu_weight", json=attrgetter("cpu_weight")),
    SliceField(id="limits.cpu_quota_cores", json=rounded("quota_cores", 3),
               column=Column(title="quota", cell=_quota_cell)),
    SliceField(id="limits.memory_min", json=attrgetter("memory_min")),
    SliceField(id="limits.memory_low", json=attrgetter("memory_low")),
    SliceField(id="limits.memory_high", json=attrgetter("memory_high")),
    SliceField(id="limits.memory_max", json=attrgetter("memory_max")),
    SliceField(id="limits.memory_swap_max", json=attrgetter("swap_max")),
    # cpu
    SliceField(id="cpu.cores", json=rounded("cpu_cores", 3),
               column=Column(title="cpu cores/allowed", cell=_cores_cell)),
    SliceField(id="cpu.percent", json=rounded("cpu_percent", 2)),
    SliceField(id="cpu.throttled_percent", json=rounded("throttled_percent", 2),
               column=Column(title="throttled", cell=_throttled_cell)),
    SliceField(id="cpu.throttled_s", json=rounded("throttled_s", 6)),
    # memory
    SliceField(id="memory.current", json=attrgetter("memory_current"),
               column=Column(title="mem current/high/max", cell=_memory_cell, left=True)),
    SliceField(id="memory.percent", json=rounded("memory_percent", 2)),
    SliceField(id="memory.anon", json=attrgetter("anon")),
    SliceField(id="memory.file", json=attrgetter("file")),
    SliceField(id="memory.active_file", json=attrgetter("active_file")),
    SliceField(id="memory.inactive_file", json=attrgetter("inactive_file")),
    SliceField(id="memory.swap", json=attrgetter("swap_current")),
    SliceField(id="memory.refaults_per_s", json=rounded("refaults_per_s", 1)),
    # pressure
    SliceField(id="pressure.cpu", json=pressure_json("cpu_pressure"),
               column=Column(title="psi cpu", cell=pressure_cell("cpu_pressure"))),
    SliceField(id="pressure.memory", json=pressure_json("memory_pressure"),
               column=Column(title="psi mem", cell=pressure_cell("memory_pressure"))),
    SliceField(id="pressure.io", json=pressure_json("io_pressure"),
               column=Column(title="psi io", cell=pressure_cell("io_pressure"))),
    # memory.events over the interval
    SliceField(id="events", json=_events_json,
               column=Column(title="events", cell=_events_cell, left=True)),
    SliceField(id="tasks", json=attrgetter("tasks"),
               column=Column(title="tasks", cell=_tasks_cell)),
    SliceField(id="io", json=_io_json,
               column=Column(title="io r/w", cell=_io_cell)),  # bytes read, written per second
    SliceField(id="trouble", json=lambda m: sorted(m.trouble)),
    SliceField(id="numa", json=_numa_json, column=Column(title="numa local", cell=_numa_cell)),
    SliceField(id="partition", json=_partition_json,
               column=Column(title="partition", cell=_partition_cell, left=True)),
)
FIELD: dict[str, SliceField] = {f.id: f for f in FIELDS}


def column(field_id: str) -> Column:
    """The column of the field `field_id` (KeyError: none)."""
    c = FIELD[field_id].column
    if c is None:
        raise KeyError(f"{field_id} has no column")
    return c


def slice_json(m: SliceMetrics) -> dict[str, Any]:
    """One slice's object of `status --json`: every field at its id, in the table's order."""
    out: dict[str, Any] = {}
    for f in FIELDS:
        *parents, key = f.id.split(".")
        at = out
        for p in parents:
            at = at.setdefault(p, {})
        at[key] = f.json(m)
    return out
