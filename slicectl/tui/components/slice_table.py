"""The overview table: one line per row, a fixed header, a row cursor (Textual's Line API).

Sideways, the first column (the slice) stays and the others scroll by groups of columns
(left and right move to the previous or next group); only whole columns are drawn, so a
value is never shown cut at either edge.

Why not Textual's DataTable: it renders every visible cell through rich (a Text, a Padding and
a line split per cell) whenever a row changes, and each `update_cell` costs a layout pass; with
100 slices that all change every second that was most of the TUI's CPU (BENCHMARKS.md,
tui.100.host). Here a row is one string in one style: `show` compares the new rows with the
old ones and repaints only the lines whose text or style changed, and a line is drawn as a
single segment, cropped to the horizontal scroll.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from functools import lru_cache
from itertools import groupby
from typing import NamedTuple

from rich.cells import cell_len, get_character_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.events import Click
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

GAP = 1  # blank cells between columns


class SliceRow(NamedTuple):
    """One line of the table: its key (a cgroup path), its cells, its rich style."""

    key: str
    cells: tuple[str, ...]
    style: str = ""


class Line(NamedTuple):
    """A row as drawn: its cells padded to the column widths and joined."""

    text: str
    narrow: bool  # every character takes one cell (so characters and cells agree)


def _narrow(text: str) -> bool:
    return (text.isascii() and text.isprintable()) or all(
        get_character_cell_size(c) == 1 for c in set(text))


# `_narrow` of a cell that is not ASCII, remembered: those (sparklines, the tree's marks) repeat
# from refresh to refresh, and testing each character's width is most of drawing a line.
_narrow_cell = lru_cache(maxsize=4096)(_narrow)


def _width(column: Sequence[str]) -> int:
    """The cells the widest of these texts takes (a column of printable ASCII, most of them,
    is measured in one pass)."""
    joined = "".join(column)
    if joined.isascii() and joined.isprintable():
        return max(map(len, column))
    return max(map(cell_len, column))


def _pad(text: str, width: int, right: bool) -> str:
    """`text` in `width` cells, cut when longer, aligned left or right."""
    n = len(text) if text.isascii() else cell_len(text)
    if n > width:
        return text[:width]  # column widths only grow, so this is the header's edge case
    return " " * (width - n) + text if right else text + " " * (width - n)


class SliceTable(ScrollView, can_focus=True):
    """Rows in the order given, under a header that stays put when the rows scroll."""

    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "cursor_to(0)", "First", show=False),
        Binding("end", "cursor_to(-1)", "Last", show=False),
    ]
    COMPONENT_CLASSES = {"slice-table--header", "slice-table--cursor"}
    DEFAULT_CSS = """
    SliceTable { background: $surface; }
    SliceTable > .slice-table--header { text-style: bold; background: $panel; }
    SliceTable > .slice-table--cursor { background: $block-cursor-background;
                                        color: $block-cursor-foreground; }
    """

    class ColumnsShown(Message):
        """The columns in view changed (a scroll sideways, a resize, wider cells)."""

    class Selected(Message):
        """A double click on a row (enter is the screen's to bind, so its footer shows it)."""

        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    def __init__(self, headers: Sequence[str], right: frozenset[str] = frozenset(),
                 groups: Sequence[str] = (), *, id: str | None = None) -> None:
        """`groups`: the first column of each group that scrolls sideways together (by
        default each column but the first is a group)."""
        super().__init__(id=id)
        self.headers = tuple(headers)
        self.right = tuple(h in right for h in self.headers)
        self.group_columns = [self.headers.index(g) for g in groups] or list(
            range(1, len(self.headers)))
        self._starts: list[int] = []  # each column's first cell in a line
        self._ends: list[int] = []  # each column's last cell + 1
        self.widths = [cell_len(h) for h in self.headers]
        self.rows: list[SliceRow] = []
        self.cursor = 0
        self._lines: list[Line | None] = []  # each row's text, padded to the column widths
        self._header = Line("", True)
        self._styles: dict[tuple[str, bool], Style] = {}
        self._hint: str | None = None  # the columns_hint last announced
        self._placed = False  # the cursor was put on a row (a key, a click, move_to)
        self._layout()

    # -- what callers use -------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        """Number of rows (the header not counted)."""
        return len(self.rows)

    @property
    def selected(self) -> str | None:
        """The key of the row under the cursor."""
        return self.rows[self.cursor].key if self.rows else None

    def show(self, rows: Sequence[SliceRow]) -> None:
        """Show these rows in this order; the cursor stays on its key when it still exists,
        once it was put on a row: until then it stays on the top row (the first samples
        reorder the rows, and the row first on top may sort to the bottom)."""
        was = self.selected
        keep = was if self._placed else None
        old_rows, old_lines = self.rows, self._lines
        self.rows = list(rows)
        # An unchanged row is the same object (OverviewRows): its line is as well, and only
        # new rows can widen a column. Lines are drawn when first painted (most rows are off
        # screen).
        known = dict(zip(map(id, old_rows), old_lines, strict=True))
        new = [r.cells for r in self.rows if id(r) not in known]
        widths = self.widths
        if new:
            widths = [max(w, _width(column))
                      for w, column in zip(widths, zip(*new, strict=True), strict=True)]
        keys = [r.key for r in self.rows]
        if keep is not None and keep in keys:
            self.cursor = keys.index(keep)
        self.cursor = max(0, min(self.cursor, len(self.rows) - 1))
        if widths != self.widths:
            self.widths = widths
            self._layout()
            self.refresh()
            self._columns_moved()
        else:
            self._lines = [known.get(id(r)) for r in self.rows]
            self._refresh_changed(old_rows)
        self.virtual_size = Size(len(self._header[0]), len(self.rows) + 1)
        if was != self.selected:
            self._scroll_to_cursor()

    def get_row_at(self, index: int) -> list[str]:
        """The cells of one row, as shown."""
        return list(self.rows[index].cells)

    def row_style_at(self, index: int) -> str:
        """The rich style of one row ("" when all is well)."""
        return self.rows[index].style

    def move_to(self, key: str) -> None:
        """Put the cursor on the row of `key` (if there is one)."""
        for i, r in enumerate(self.rows):
            if r.key == key:
                self._set_cursor(i)
                return

    # -- drawing ---------------------------------------------------------------------------

    def _layout(self) -> None:
        self._header = self._line(self.headers)
        self._lines = [None] * len(self.rows)
        self._starts, at = [], 0
        for w in self.widths:
            self._starts.append(at)
            at += w + GAP
        self._ends = [start + w for start, w in zip(self._starts, self.widths, strict=True)]

    @property
    def fixed_width(self) -> int:
        """The cells of the column that stays when the others scroll (and its gap)."""
        return self._starts[1] if len(self._starts) > 1 else len(self._header.text)

    def shown_columns(self) -> range:
        """The columns drawn whole at the current scroll (the first one always)."""
        if len(self._starts) < 2:
            return range(len(self._starts))
        lo = self.fixed_width + int(self.scroll_x)
        hi = lo + max(self.size.width - self.fixed_width, 0)
        return range(max(1, bisect_left(self._starts, lo)), bisect_right(self._ends, hi))

    def columns_hint(self) -> str:
        """How to see the columns out of view: "→ more columns", "← → more columns",
        "← more columns", or "" when all are shown."""
        shown = self.shown_columns()
        left = len(self.headers) > 1 and shown.start > 1
        right = shown.stop < len(self.headers)
        arrows = " ".join(a for a, hidden in (("←", left), ("→", right)) if hidden)
        return f"{arrows} more columns" if arrows else ""

    def _columns_moved(self) -> None:
        hint = self.columns_hint()
        if hint != self._hint:
            self._hint = hint
            self.post_message(self.ColumnsShown())

    def watch_scroll_x(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_x(old_value, new_value)
        self._columns_moved()

    def on_resize(self) -> None:
        self._columns_moved()

    def group_offsets(self) -> list[int]:
        """The scroll positions at which a group starts right after the first column."""
        return [self._starts[c] - self.fixed_width for c in self.group_columns]

    def action_scroll_right(self) -> None:
        """Scroll to the next group of columns."""
        x = int(self.scroll_x)
        nxt = [o for o in self.group_offsets() if o > x]
        if nxt and self.shown_columns().stop < len(self.headers):
            self.scroll_to(x=nxt[0], animate=False)

    def action_scroll_left(self) -> None:
        """Scroll to the previous group of columns."""
        x = int(self.scroll_x)
        prev = [o for o in self.group_offsets() if o < x]
        self.scroll_to(x=prev[-1] if prev else 0, animate=False)

    def _line(self, cells: Sequence[str]) -> Line:
        gap = " " * GAP
        text = gap.join([_pad(c, w, r) for c, w, r in zip(cells, self.widths, self.right,
                                                          strict=True)])
        # A line is narrow when each of its cells is (the gap and padding are spaces).
        return Line(text, all([c.isprintable() if c.isascii() else _narrow_cell(c)
                               for c in cells]))

    def _line_at(self, index: int) -> Line:
        """The drawn line of row `index` (drawn now if it was not yet)."""
        line = self._lines[index]
        if line is None:
            line = self._lines[index] = self._line(self.rows[index].cells)
        return line

    def _refresh_changed(self, old_rows: list[SliceRow]) -> None:
        """Repaint the lines whose cells, style or cursor changed (all of them when the
        number of rows did)."""
        if len(old_rows) != len(self.rows):
            self.refresh()
            return
        top = int(self.scroll_y)
        end = min(len(self.rows), top + max(self.size.height - 1, 0))
        rows = self.rows
        changed = [i for i in range(top, end) if rows[i] is not old_rows[i] and (
            rows[i].cells != old_rows[i].cells or rows[i].style != old_rows[i].style)]
        # Consecutive changed lines are repainted as one region (one refresh, not one each).
        for _, run in groupby(enumerate(changed), key=lambda pair: pair[1] - pair[0]):
            lines = [i for _, i in run]
            self.refresh_lines(lines[0] + 1, len(lines))

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()

    def _style(self, row_style: str, cursor: bool) -> Style:
        key = (row_style, cursor)
        style = self._styles.get(key)
        if style is None:
            base = self.rich_style
            if row_style:
                base += Style.parse(row_style)
            if cursor:
                base += self.get_component_rich_style("slice-table--cursor")
            style = self._styles[key] = base
        return style

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        x = int(self.scroll_x)
        if y == 0:
            style = self._styles.get(("#header", False))
            if style is None:
                style = self._styles[("#header", False)] = (
                    self.rich_style + self.get_component_rich_style("slice-table--header"))
            line = self._header
        else:
            index = int(self.scroll_y) + y - 1
            if index >= len(self.rows):
                return Strip.blank(width, self.rich_style)
            style = self._style(self.rows[index].style, index == self.cursor and self.has_focus)
            line = self._line_at(index)
        text, narrow = line
        fixed = self.fixed_width
        shown = self.shown_columns()
        # The first column, then the whole columns in view from the scroll position on.
        lo, hi = (self._starts[shown.start], self._ends[shown.stop - 1]) if shown else (0, 0)
        pad = max(lo - fixed - x, 0)
        if narrow:  # a character per cell: cut and padded as a string, one segment
            text = (text[:fixed] + " " * pad + text[lo:hi])[:width]
            return Strip([Segment(text + " " * (width - len(text)), style)], width)
        strip = Strip([Segment(text, style)])
        return Strip.join([strip.crop_extend(0, fixed, style), Strip.blank(pad, style),
                           strip.crop(lo, hi)]).crop_extend(0, width, style)

    # -- the cursor ------------------------------------------------------------------------

    def _set_cursor(self, index: int) -> None:
        if not self.rows:
            return
        self._placed = True
        index = max(0, min(index, len(self.rows) - 1))
        if index == self.cursor:
            return
        old, self.cursor = self.cursor, index
        self._repaint(old)
        self._repaint(index)
        self._scroll_to_cursor()

    def _scroll_to_cursor(self) -> None:
        rows_visible = max(1, self.size.height - 1)
        top = int(self.scroll_y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + rows_visible:
            self.scroll_to(y=self.cursor - rows_visible + 1, animate=False)

    def _repaint(self, index: int) -> None:
        """Repaint the line of row `index` (ScrollView's lines are virtual: row i is line
        i + 1, under the header)."""
        self.refresh_lines(index + 1)

    def action_cursor(self, step: int) -> None:
        self._set_cursor(self.cursor + step)

    def action_page(self, direction: int) -> None:
        self._set_cursor(self.cursor + direction * max(1, self.size.height - 2))

    def action_cursor_to(self, index: int) -> None:
        self._set_cursor(index if index >= 0 else len(self.rows) - 1)

    def action_select(self) -> None:
        if self.selected is not None:
            self.post_message(self.Selected(self.selected))

    def on_click(self, event: Click) -> None:
        if event.y >= 1:
            index = int(self.scroll_y) + event.y - 1
            if index < len(self.rows):
                if index == self.cursor and event.chain > 1:
                    self.action_select()
                self._set_cursor(index)

    def on_focus(self) -> None:
        self._repaint(self.cursor)

    def on_blur(self) -> None:
        self._repaint(self.cursor)
