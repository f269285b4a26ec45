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
        for name in HEADERS:
            self.add_column(name, key=name)

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
        """Replace the rows, keeping the cursor on the same slice."""
        keep = self.selected
        self.clear()
        for m in metrics:
            cells = row(m)
            h = history.of(m.cgroup)
            top = float(m.allowed_cpus)
            mem_top = float(m.memory_max or m.memory_high or 0) or None
            cells = [*cells[:CPU_AT], spark(h.cpu, SPARK_WIDTH, top), *cells[CPU_AT:MEM_AT],
                     spark(h.memory, SPARK_WIDTH, mem_top), *cells[MEM_AT:]]
            style = row_style(m)
            self.add_row(*(Text(c, style=style, justify="right" if name in RIGHT else "left")
                           for name, c in zip(HEADERS, cells, strict=True)), key=m.cgroup)
        if keep is not None:
            try:
                self.move_cursor(row=self.get_row_index(keep), animate=False)
            except RowDoesNotExist:
                pass
