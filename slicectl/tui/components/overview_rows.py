"""The overview's rows: the shared render layer's cells of each slice, with history
sparklines and limits inherited from a parent, in the column groups the overview scrolls by
(SliceTable draws them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from slicectl.core.monitor.fields import column
from slicectl.tui.components.slice_table import SliceRow
from slicectl.tui.model import History, cpu_scale, memory_scale
from slicectl.tui.tree import TreeLine, limit_cells
from slicectl.views.monitor import COLUMN_FIELDS, row, row_style

SPARK_WIDTH = 12
CPU_HISTORY, MEM_HISTORY = "cpu history", "mem history"  # the overview's own columns
# The shared render layer's columns (by field id, slicectl.core.monitor.fields) with history
# sparklines, in groups that scroll sideways together (the slice column stays): the headline
# (CPU, memory and memory pressure, what an 80-column terminal shows first), the CPU limit and
# the other pressures, [NUMA locality], history, events. Each group fits beside the slice
# column at 80 columns.
GROUPS: tuple[tuple[str, ...], ...] = (
    ("cpu.cores", "memory.current", "pressure.memory"),
    ("limits.cpu_quota_cores", "cpu.throttled_percent", "pressure.cpu", "pressure.io"),
    ("numa",),
    (CPU_HISTORY, MEM_HISTORY),
    ("events", "tasks"),
)
_SPARKS = (CPU_HISTORY, MEM_HISTORY)


def _title(name: str) -> str:
    return name if name in _SPARKS else column(name).title


RIGHT = frozenset(_title(name) for group in GROUPS for name in group
                  if name not in _SPARKS and not column(name).left)
_MEM_CELL, _QUOTA_CELL = (COLUMN_FIELDS.index("memory.current"),
                          COLUMN_FIELDS.index("limits.cpu_quota_cores"))


def overview_fields(numa: bool) -> tuple[str, ...]:
    """The overview's columns by field id (or sparkline); with `numa`, the local share of
    memory after the pressure."""
    return ("unit", *(name for group in GROUPS for name in group if numa or name != "numa"))


def overview_headers(numa: bool) -> tuple[str, ...]:
    """The headers of `overview_fields`."""
    return tuple(_title(name) for name in overview_fields(numa))


def overview_groups(numa: bool) -> tuple[str, ...]:
    """The first column of each group the overview scrolls sideways by."""
    return tuple(_title(group[0]) for group in GROUPS if numa or group != ("numa",))


class OverviewRows:
    """The overview's row of each line of the slice tree, rebuilt only when its metrics,
    sparklines or place in the tree changed (the metrics memo hands back the same object for
    a slice that did not move)."""

    def __init__(self, numa: bool = False) -> None:
        self.numa = numa
        self.fields = overview_fields(numa)
        self.headers = overview_headers(numa)
        self._last: dict[str, tuple[tuple[object, ...], SliceRow]] = {}

    def rows(self, lines: Sequence[TreeLine], history: History, host_memory: int,
             balance: Mapping[str, str] | None = None) -> list[SliceRow]:
        """One row per line, in the order given; memory without a limit is drawn against
        `host_memory`; an elastic tenant's name is followed by its label in `balance`
        (the CPUs it holds now and its declared ones)."""
        balance = balance or {}
        last, out = self._last, []
        now: dict[str, tuple[tuple[object, ...], SliceRow]] = {}
        for line in lines:
            m = line.metrics
            h = history.of(m.cgroup)
            cpu = h.spark("cpu", SPARK_WIDTH, cpu_scale(m))
            mem = h.spark("memory", SPARK_WIDTH, memory_scale(m, host_memory))
            name = line.name
            if m.unit in balance:
                name = f"{name} {balance[m.unit]}"
            was = last.get(m.cgroup)
            token = (m, cpu, mem, name, line.effective)
            if was is not None and was[0][0] is m and was[0][1:] == token[1:]:
                r = was[1]
            else:
                cells = row(m)
                cells[0] = name
                limits = limit_cells(m, line.effective)
                if limits is not None:
                    cells[_MEM_CELL], cells[_QUOTA_CELL] = limits
                by_id = dict(zip(COLUMN_FIELDS, cells, strict=True))
                by_id.update({CPU_HISTORY: cpu, MEM_HISTORY: mem})
                if self.numa:
                    by_id["numa"] = column("numa").cell(m)
                r = SliceRow(m.cgroup, tuple(by_id[f] for f in self.fields), row_style(m))
            now[m.cgroup] = (token, r)
            out.append(r)
        self._last = now
        return out
