"""The render layer of `slicectl status`, `slicectl top` and the TUI: JSON and table rows.

One render layer (`COLUMNS`, `row`, `render_table`) serves `status`, `top` and the TUI; their
sampling loops live in the CLI (slicectl/cli/watch.py). What each field is called, how a cell
shows it and its JSON value are slicectl.core.monitor.fields' table; here are the views'
choices: which columns, in which order, which go first when the terminal is narrow. rich is
imported lazily inside functions so importing this module stays cheap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from slicectl.core.monitor.field_values import json_float
from slicectl.core.monitor.fields import FIELDS, column, slice_json
from slicectl.core.monitor.metrics import SliceMetrics, Trouble

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

    from slicectl.core.balance.balance_state import BalanceState

JSON_VERSION = 1

# The table's columns, by field id (slicectl.core.monitor.fields holds each one's header
# and cell), in their order.
COLUMN_FIELDS = ("unit", "cpu.cores", "limits.cpu_quota_cores", "cpu.throttled_percent",
                 "memory.current", "pressure.cpu", "pressure.memory", "pressure.io", "events",
                 "tasks")
COLUMNS = tuple(column(f).title for f in COLUMN_FIELDS)
_CELLS = tuple(column(f).cell for f in COLUMN_FIELDS)
# status, top and the TUI's overview add it after the memory column(s) when memory.numa_stat
# was read (more than one memory node).
NUMA_COLUMN = column("numa").title
# status, top and the TUI's overview add it after the CPU column when any slice is a cpuset
# partition (cpuset.cpus.partition root or isolated).
PARTITION_COLUMN = column("partition").title
# status and top end with it when any slice read or wrote during the interval (io.stat).
IO_COLUMN = column("io").title
numa_cell = column("numa").cell
partition_cell = column("partition").cell
io_cell = column("io").cell

# Row styles by trouble, most serious first; the TUI maps the same flags to its classes.
TROUBLE_STYLE = {
    Trouble.OOM: "bold red",
    Trouble.PARTITION: "bold red",
    Trouble.NEAR_LIMIT: "red",
    Trouble.PRESSURE: "yellow",
    Trouble.THROTTLED: "magenta",
    Trouble.REMOTE_MEMORY: "cyan",
}


def status_json(metrics: Sequence[SliceMetrics], interval: float | None) -> dict[str, Any]:
    """The documented `status --json` object (docs/status-json.md), slices sorted by unit:
    each slice's fields as slicectl.core.monitor.fields says."""
    slices = [slice_json(m) for m in sorted(metrics, key=lambda m: (m.unit, m.cgroup))]
    return {"version": JSON_VERSION, "interval_s": json_float(interval, 3), "slices": slices}


def row(m: SliceMetrics) -> list[str]:
    """One slice as the cells of COLUMNS ("-" = not measured yet or not available)."""
    return [cell(m) for cell in _CELLS]


def alerts(metrics: Sequence[SliceMetrics]) -> list[str]:
    """What status prints below its table, a line and a hint per slice whose cpuset
    partition the kernel refused or took CPUs from, by unit."""
    out = []
    for m in sorted(metrics, key=lambda m: (m.unit, m.cgroup)):
        p = m.partition
        if p is not None and p.problem() is not None:
            out += [f"alert: {m.unit}: {p.describe()}", f"  hint: {p.hint()}"]
    return out


def row_style(m: SliceMetrics) -> str:
    """The rich style of the most serious trouble flag, or "" when all is well."""
    flags = m.trouble
    if not flags:
        return ""
    return next((style for t, style in TROUBLE_STYLE.items() if t in flags), "")


_LEFT = {f.column.title for f in FIELDS if f.column is not None and f.column.left}
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
