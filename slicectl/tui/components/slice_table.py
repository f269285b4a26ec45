"""The overview table: one row per slice, limits beside usage, sparklines, trouble colours."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import RowDoesNotExist

from slicectl.metrics import SliceMetrics
from slicectl.monitor import COLUMNS, row, row_style
from slicectl.tui.model import History, spark

SPARK_WIDTH = 12
# The shared render layer's columns, with history sparklines after cpu and memory.
CPU_AT = COLUMNS.index("cpu cores/allowed") + 1
MEM_AT = COLUMNS.index("mem current/high/max") + 1
HEADERS = (*COLUMNS[:CPU_AT], "cpu history", *COLUMNS[CPU_AT:MEM_AT], "mem history",
           *COLUMNS[MEM_AT:])
RIGHT = {"cpu cores/allowed", "quota", "throttled", "psi cpu", "psi mem", "psi io", "tasks"}


class SliceTable(DataTable[Text]):
    """Slices in the order given; the row key is the slice's cgroup path."""

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.zebra_stripes = False

    @property
    def selected(self) -> str | None:
        """The cgroup path of the row under the cursor."""
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        except Exception:  # cursor outside the rows while the table is being rebuilt
            return None
        return key.value

    def show(self, metrics: Sequence[SliceMetrics], history: History) -> None:
        """Show these slices in this order, keeping the cursor and the scroll position."""
        rows = [(m.cgroup, _cells(m, history)) for m in metrics]
        have = {key.value: column.width for key, column in self.columns.items()}
        # Explicit column widths that only grow: DataTable's auto widths are measured on idle
        # and rows drawn before that stay truncated until the next change.
        want = {name: max([have.get(name, 0), len(name), *(cells[i].cell_len for _, cells in rows)])
                for i, name in enumerate(HEADERS)}
        if want == have and [key for key, _ in rows] == [key.value for key in self.rows]:
            # Same slices, same order: update in place (clear() would reset the scroll), and
            # only the cells that changed: every update_cell marks the table's dimensions dirty
            # and costs a layout pass (profiled: most of the TUI's CPU at 100 slices).
            for key, cells in rows:
                old = self.get_row(key)
                for name, cell, before in zip(HEADERS, cells, old, strict=True):
                    if cell.plain != before.plain or cell.style != before.style:
                        self.update_cell(key, name, cell)
            return
        keep, scroll_x = self.selected, self.scroll_x
        self.clear(columns=want != have)
        if not self.columns:
            for name in HEADERS:
                self.add_column(name, key=name, width=want[name])
        for key, cells in rows:
            self.add_row(*cells, key=key)
        if keep is not None:
            try:
                self.move_cursor(row=self.get_row_index(keep), animate=False)
            except RowDoesNotExist:
                pass
        self.call_after_refresh(self.scroll_to, x=scroll_x, animate=False)


def _cells(m: SliceMetrics, history: History) -> list[Text]:
    """The row of one slice: the shared render layer's cells plus two sparklines."""
    cells = row(m)
    h = history.of(m.cgroup)
    mem_top = float(m.memory_max or m.memory_high or 0) or None
    cells = [*cells[:CPU_AT], spark(h.cpu, SPARK_WIDTH, float(m.allowed_cpus)),
             *cells[CPU_AT:MEM_AT], spark(h.memory, SPARK_WIDTH, mem_top), *cells[MEM_AT:]]
    style = row_style(m)
    return [Text(c, style=style, justify="right" if name in RIGHT else "left")
            for name, c in zip(HEADERS, cells, strict=True)]
