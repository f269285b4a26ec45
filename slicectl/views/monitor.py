"""The render layer of `slicectl status`, `slicectl top` and the TUI: JSON and table rows.

One render layer (`COLUMNS`, `row`, `render_table`) serves `status`, `top` and the TUI; their
sampling loops live in the CLI (slicectl/cli/watch.py). rich is imported lazily inside
functions so importing this module stays cheap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from slicectl.core.cpulist import format_cpulist
from slicectl.core.human import human_limit, human_rate, human_size
from slicectl.core.monitor.cpuset_partition import PartitionMetrics
from slicectl.core.monitor.metrics import NumaMetrics, PressureMetrics, SliceMetrics, Trouble

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

    from slicectl.core.balance.balance_state import BalanceState

JSON_VERSION = 1

COLUMNS = (
    "slice", "cpu cores/allowed", "quota", "throttled", "mem current/high/max",
    "psi cpu", "psi mem", "psi io", "events", "tasks",
)  # fmt: skip
# status, top and the TUI's overview add it after the memory column(s) when memory.numa_stat
# was read (more than one memory node).
NUMA_COLUMN = "numa local"
# status, top and the TUI's overview add it after the CPU column when any slice is a cpuset
# partition (cpuset.cpus.partition root or isolated).
PARTITION_COLUMN = "partition"
# status and top end with it when any slice read or wrote during the interval (io.stat).
IO_COLUMN = "io r/w"  # bytes read, written per second

# Row styles by trouble, most serious first; the TUI maps the same flags to its classes.
TROUBLE_STYLE = {
    Trouble.OOM: "bold red",
    Trouble.PARTITION: "bold red",
    Trouble.NEAR_LIMIT: "red",
    Trouble.PRESSURE: "yellow",
    Trouble.THROTTLED: "magenta",
    Trouble.REMOTE_MEMORY: "cyan",
}


def _r(x: float | None, digits: int) -> float | None:
    """Rounded for JSON; None for unknown, and for nan or inf, which JSON cannot carry."""
    return None if x is None or not math.isfinite(x) else round(x, digits)


def _psi_json(p: PressureMetrics | None) -> dict[str, Any] | None:
    if p is None:
        return None
    full = p.full
    return {
        "some": {"avg10": _r(p.some.avg10, 2), "rate": _r(p.some.rate, 2)},
        "full": None if full is None else {"avg10": _r(full.avg10, 2), "rate": _r(full.rate, 2)},
    }


def _numa_json(n: NumaMetrics | None) -> dict[str, Any] | None:
    if n is None:
        return None
    return {
        "nodes": [{"node": x.node, "anon": x.anon, "file": x.file} for x in n.nodes],
        "local_nodes": None if n.local_nodes is None else format_cpulist(n.local_nodes),
        "local_percent": _r(n.local_percent, 2),
        "outside_percent": _r(n.outside_percent, 2),
        "bound": n.bound,
    }


def _partition_json(p: PartitionMetrics | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {
        "state": p.state.state,
        "valid": p.state.valid,
        "reason": p.state.reason or None,
        "lost_cpus": format_cpulist(p.lost_cpus) if p.lost_cpus else None,
        "problem": p.problem(),
    }


def status_json(metrics: Sequence[SliceMetrics], interval: float | None) -> dict[str, Any]:
    """The documented `status --json` object (docs/status-json.md), slices sorted by unit."""
    slices = []
    for m in sorted(metrics, key=lambda m: (m.unit, m.cgroup)):
        slices.append(
            {
                "unit": m.unit,
                "cgroup": m.cgroup,
                "limits": {
                    "cpus": None if m.cpus is None else format_cpulist(m.cpus),
                    "allowed_cpus": m.allowed_cpus,
                    "mems": None if m.mems is None else format_cpulist(m.mems),
                    "cpu_weight": m.cpu_weight,
                    "cpu_quota_cores": _r(m.quota_cores, 3),
                    "memory_min": m.memory_min,
                    "memory_low": m.memory_low,
                    "memory_high": m.memory_high,
                    "memory_max": m.memory_max,
                    "memory_swap_max": m.swap_max,
                },
                "cpu": {
                    "cores": _r(m.cpu_cores, 3),
                    "percent": _r(m.cpu_percent, 2),
                    "throttled_percent": _r(m.throttled_percent, 2),
                    "throttled_s": _r(m.throttled_s, 6),
                },
                "memory": {
                    "current": m.memory_current,
                    "percent": _r(m.memory_percent, 2),
                    "anon": m.anon,
                    "file": m.file,
                    "active_file": m.active_file,
                    "inactive_file": m.inactive_file,
                    "swap": m.swap_current,
                    "refaults_per_s": _r(m.refaults_per_s, 1),
                },
                "pressure": {
                    "cpu": _psi_json(m.cpu_pressure),
                    "memory": _psi_json(m.memory_pressure),
                    "io": _psi_json(m.io_pressure),
                },
                "events": {
                    "low": m.events_low,
                    "high": m.events_high,
                    "max": m.events_max,
                    "oom": m.events_oom,
                    "oom_kill": m.events_oom_kill,
                },
                "tasks": m.tasks,
                "io": {"read_bytes_per_s": _r(m.io_read_bps, 1),
                       "write_bytes_per_s": _r(m.io_write_bps, 1)},
                "trouble": sorted(m.trouble),
                "numa": _numa_json(m.numa),
                "partition": _partition_json(m.partition),
            }
        )
    return {"version": JSON_VERSION, "interval_s": _r(interval, 3), "slices": slices}


# How a table cell says "no limit" (memory.high or memory.max "max"), in status, top, the TUI.
NO_LIMIT_CELL = "none"


def _psi_cell(p: PressureMetrics | None) -> str:
    return "-" if p is None else f"{p.some.share():.1f}%"


def _events_cell(m: SliceMetrics) -> str:
    parts = [
        f"{name} +{n}"
        for name, n in (
            ("oom_kill", m.events_oom_kill),
            ("oom", m.events_oom),
            ("max", m.events_max),
            ("high", m.events_high),
        )
        if n
    ]
    return ", ".join(parts) or "-"


def row(m: SliceMetrics) -> list[str]:
    """One slice as the cells of COLUMNS ("-" = not measured yet or not available)."""
    cores = "-" if m.cpu_cores is None else f"{m.cpu_cores:.2f}"
    quota = "-" if m.quota_cores is None else f"{m.quota_cores:.2f}"
    throttled = "-" if m.throttled_percent is None else f"{m.throttled_percent:.1f}%"
    if m.quota_cores is None and not m.throttled_percent:
        throttled = "-"  # no quota, so nothing to throttle against
    if m.memory_current is None:
        mem = "-"
    else:
        mem = (f"{human_size(m.memory_current)} / {human_limit(m.memory_high, NO_LIMIT_CELL)}"
               f" / {human_limit(m.memory_max, NO_LIMIT_CELL)}")
    return [
        m.unit,
        f"{cores} / {m.allowed_cpus}",
        quota,
        throttled,
        mem,
        _psi_cell(m.cpu_pressure),
        _psi_cell(m.memory_pressure),
        _psi_cell(m.io_pressure),
        _events_cell(m),
        "-" if m.tasks is None else str(m.tasks),
    ]


def numa_cell(m: SliceMetrics) -> str:
    """The local share of the slice's memory, and the share outside its memory nodes when
    there is some: "97%", "25% (75% out)" ("-" = unknown)."""
    n = m.numa
    if n is None or n.outside_percent is None:
        return "-"
    local = "-" if n.local_percent is None else f"{n.local_percent:.0f}%"
    if n.outside_percent < 0.5:
        return local
    return f"{local} ({n.outside_percent:.0f}% out)"


def partition_cell(m: SliceMetrics) -> str:
    """The slice's cpuset partition: "isolated", "root invalid", "isolated lacks 3"
    ("-" = no partition)."""
    p = m.partition
    if p is None:
        return "-"
    if not p.state.valid:
        return f"{p.state.state} invalid"
    if p.lost_cpus:
        return f"{p.state.state} lacks {format_cpulist(p.lost_cpus)}"
    return p.state.state


def alerts(metrics: Sequence[SliceMetrics]) -> list[str]:
    """What status prints below its table, a line and a hint per slice whose cpuset
    partition the kernel refused or took CPUs from, by unit."""
    out = []
    for m in sorted(metrics, key=lambda m: (m.unit, m.cgroup)):
        p = m.partition
        if p is not None and p.problem() is not None:
            out += [f"alert: {m.unit}: {p.describe()}", f"  hint: {p.hint()}"]
    return out


def io_cell(m: SliceMetrics) -> str:
    """Bytes read and written per second: "1.5M/s 0B/s" ("-" = unknown)."""
    if m.io_read_bps is None or m.io_write_bps is None:
        return "-"
    return f"{human_rate(m.io_read_bps)} {human_rate(m.io_write_bps)}"


def row_style(m: SliceMetrics) -> str:
    """The rich style of the most serious trouble flag, or "" when all is well."""
    flags = m.trouble
    if not flags:
        return ""
    return next((style for t, style in TROUBLE_STYLE.items() if t in flags), "")


_LEFT = {"slice", "mem current/high/max", "events", PARTITION_COLUMN}
_NUMA_AFTER = COLUMNS.index("mem current/high/max") + 1
_PARTITION_AFTER = COLUMNS.index("cpu cores/allowed") + 1
# Which columns a narrow table keeps, most wanted first (systemd-cgtop's habit: the name, CPU,
# then what says a slice is in trouble); the ones at the end are left out first.
PRIORITY = ("slice", "cpu cores/allowed", "psi cpu", "mem current/high/max", "psi mem",
            "psi io", "throttled", "quota", PARTITION_COLUMN, NUMA_COLUMN, IO_COLUMN, "tasks",
            "events")
MIN_SLICE_WIDTH = 12  # a slice name is shortened ("…") before it gets narrower than this


def render_table(metrics: Sequence[SliceMetrics], title: str | Text | None = None,
                 width: int | None = None) -> Table:
    """A rich Table of the metrics, in the given order; with NUMA_COLUMN when any slice has
    NUMA figures, PARTITION_COLUMN when any is a cpuset partition, IO_COLUMN when any read or
    wrote. Within `width` (None: as wide as it
    needs), each row on one line: the columns least wanted (PRIORITY) are left out, named in
    the caption, and a header wraps at its spaces when its cells are narrower."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    numa = any(m.numa is not None for m in metrics)
    io = any(m.io_read_bps or m.io_write_bps for m in metrics)
    partitions = any(m.partition is not None for m in metrics)
    columns = list(COLUMNS)
    if numa:
        columns.insert(_NUMA_AFTER, NUMA_COLUMN)
    if partitions:
        columns.insert(_PARTITION_AFTER, PARTITION_COLUMN)
    if io:
        columns.append(IO_COLUMN)
    rows = []
    for m in metrics:
        cells = row(m)
        if numa:
            cells.insert(_NUMA_AFTER, numa_cell(m))
        if partitions:
            cells.insert(_PARTITION_AFTER, partition_cell(m))
        if io:
            cells.append(io_cell(m))
        rows.append(dict(zip(columns, cells, strict=True)))
    widths = {name: max([len(w) for w in name.split()] + [len(r[name]) for r in rows])
              for name in columns}
    shown = _fit(columns, widths, width)
    left_out = [name for name in columns if name not in shown]
    caption = f"left out for width: {', '.join(left_out)}" if left_out else None
    table = Table(title=title, title_justify="left", caption=caption, caption_justify="left",
                  box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for name in shown:
        table.add_column(name, justify="left" if name in _LEFT else "right", width=widths[name])
    for r, m in zip(rows, metrics, strict=True):
        # Cells never wrap: only a slice name narrowed to fit is shortened ("…").
        table.add_row(*(Text(r[name], no_wrap=True, overflow="ellipsis") for name in shown),
                      style=row_style(m))
    return table


def balance_labels(state: BalanceState | None, parent: str = "tenants") -> dict[str, str]:
    """Slice unit -> "[6/4 cpus]" (the CPUs it holds now / its declared ones) for each elastic
    tenant of the balancer's state; `parent` is tenants.yaml's `slice:`."""
    if state is None:
        return {}
    return {f"{parent}-{name}.slice": f"[{len(t.cpus)}/{len(t.declared)} cpus]"
            for name, t in state.tenants.items()}


def _fit(columns: list[str], widths: dict[str, int], width: int | None) -> list[str]:
    """The columns that fit `width` (in their order), leaving out the least wanted first;
    the slice column is narrowed (to MIN_SLICE_WIDTH at least) before anything but the
    four first of PRIORITY is left out."""
    if width is None:
        return columns
    shown = list(columns)

    def needed() -> int:  # SIMPLE_HEAD, no edge padding: one cell of padding each side
        return sum(widths[n] for n in shown) + 3 * (len(shown) - 1)

    for name in reversed(PRIORITY[1:]):  # the slice column always stays
        if needed() <= width or name not in shown:
            continue
        if PRIORITY.index(name) < 4 and widths["slice"] > MIN_SLICE_WIDTH:
            widths["slice"] = max(MIN_SLICE_WIDTH, widths["slice"] - (needed() - width))
            if needed() <= width:
                break
        shown.remove(name)
    if needed() > width:
        widths["slice"] = max(MIN_SLICE_WIDTH, widths["slice"] - (needed() - width))
    return shown
