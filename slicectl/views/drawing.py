"""The CLI's tables and styled text, drawn by rich on a terminal and as plain text elsewhere.

`views` builds `Table`, `Styled` and `Group` values; `Output.print` draws them. On a terminal,
or where the environment asks rich for colour (FORCE_COLOR, TTY_COMPATIBLE), they become
rich's own Table and Text and rich draws them, as before. Piped or redirected, rich draws
plain text with no styles at all; this module draws that text itself, character for
character what rich would print (tests/test_drawing.py compares the two), because importing
rich and measuring every cell through it was most of the time `slicectl plan` took for a
large host (BENCHMARKS.md plan.256cpu). Whatever it cannot draw the same way goes to rich:
non-ASCII text, markup or emoji codes in plain strings, a table wider than the page.

Front-end code: the core never imports this module.
"""

from __future__ import annotations

import os
import re
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import IO, Any, Literal, TypeAlias

    from rich.console import Console

    Cell: TypeAlias = "str | Styled"
    Drawable: TypeAlias = "Table | Styled | Group | Any"
    Justify: TypeAlias = Literal["left", "right"]

# rich's box.HEAVY_HEAD (its tables' default) as (left, fill, between, right) per border line.
_TOP = ("┏", "━", "┳", "┓")
_HEAD = ("┃", " ", "┃", "┃")
_HEAD_RULE = ("┡", "━", "╇", "┩")
_ROW = ("│", " ", "│", "│")
_BOTTOM = ("└", "─", "┴", "┘")

# Plain strings are rich markup and may hold emoji codes: drawn by rich when they might.
_EMOJI = re.compile(r":\S*?:")
# Printable ASCII and a few characters rich also counts as one cell (views' titles use "×").
_PLAIN_ASCII = re.compile(r"[ -~×·…–—→←°µ]*")
_WORD = re.compile(r"\s*\S+\s*")  # rich._wrap's words: leading space, word, trailing space


class Styled:
    """Text with styles (a rich Text): a base style, and pieces appended with their own."""

    __slots__ = ("parts", "style")

    def __init__(self, text: str = "", style: str = "") -> None:
        self.style = style
        self.parts: list[tuple[str, str]] = [(text, "")] if text else []

    def append(self, text: str, style: str = "") -> Styled:
        self.parts.append((text, style))
        return self

    @property
    def plain(self) -> str:
        return "".join(text for text, _ in self.parts)

    def __bool__(self) -> bool:
        return bool(self.plain)

    def to_rich(self) -> Any:
        from rich.text import Text

        text = Text(style=self.style)
        for piece, style in self.parts:
            text.append(piece, style=style or None)
        return text


class Table:
    """A rich-style table (box HEAVY_HEAD, title and caption justified left)."""

    __slots__ = ("caption", "columns", "rows", "title")

    def __init__(self, title: str, caption: str | None = None) -> None:
        self.title = title
        self.caption = caption
        self.columns: list[tuple[str, Justify]] = []
        self.rows: list[tuple[Cell, ...]] = []

    def add_column(self, header: str, justify: Justify = "left") -> None:
        self.columns.append((header, justify))

    def add_row(self, *cells: Cell) -> None:
        self.rows.append(cells)

    def to_rich(self) -> Any:
        from rich.table import Table as RichTable

        t = RichTable(title=self.title, title_justify="left", caption=self.caption,
                      caption_justify="left")
        for header, justify in self.columns:
            t.add_column(header, justify=justify)
        for row in self.rows:
            t.add_row(*(c.to_rich() if isinstance(c, Styled) else c for c in row))
        return t


class Group:
    """Drawables one below the other (a rich Group)."""

    __slots__ = ("items",)

    def __init__(self, *items: Drawable) -> None:
        self.items = items

    def to_rich(self) -> Any:
        from rich.console import Group as RichGroup

        return RichGroup(*(to_rich(item) for item in self.items))


def to_rich(item: Drawable) -> Any:
    """The rich renderable for a drawable (rich's own renderables pass through)."""
    return item.to_rich() if isinstance(item, Table | Styled | Group) else item


def _ascii(text: str) -> bool:
    return _PLAIN_ASCII.fullmatch(text) is not None


def _plain_cell(cell: Cell) -> str | None:
    """A cell's text when rich prints it unchanged: printable ASCII, and for a plain string
    (rich markup) no `[` and nothing that looks like an emoji code."""
    if isinstance(cell, Styled):
        text = cell.plain
        return text if _ascii(text) else None
    if "[" in cell or not _ascii(cell) or _EMOJI.search(cell):
        return None
    return cell


def wrap(text: str, width: int, pad: bool) -> list[str] | None:
    """Lines of ASCII `text` as rich's Text.wrap folds them into `width` (justify "left" pads
    them to the width, "default" does not); None for text rich would draw differently."""
    if not _ascii(text.replace("\n", " ")):
        return None
    out: list[str] = []
    for line in text.split("\n"):
        breaks: list[int] = []
        offset = 0
        for m in _WORD.finditer(line):
            start, word = m.start(), m.group(0)
            length = len(word.rstrip())
            if width - offset >= length:
                offset += len(word)
            elif length > width:  # folded across lines
                chunks = [word[i:i + width] for i in range(0, len(word), width)]
                for i, chunk in enumerate(chunks):
                    if start:
                        breaks.append(start)
                    if i == len(chunks) - 1:
                        offset = len(chunk)
                    else:
                        start += len(chunk)
            elif offset and start:
                breaks.append(start)
                offset = len(word)
        for a, b in zip([0, *breaks], [*breaks, len(line)], strict=True):
            piece = line[a:b]
            if len(piece) > width:  # rich's rstrip_end: whitespace beyond the width goes
                trail = len(piece) - len(piece.rstrip())
                piece = piece[:len(piece) - min(trail, len(piece) - width)]
            out.append(piece.ljust(width) if pad else piece)
    return out


def _border(widths: list[int], parts: tuple[str, str, str, str]) -> str:
    left, fill, between, right = parts
    return left + between.join(fill * w for w in widths) + right


def draw_table(table: Table, width: int) -> str | None:
    """The table as rich prints it without colour at console width `width`; None when rich
    would lay it out otherwise (too wide: it would shrink columns) or it holds text rich
    might transform."""
    if not table.columns or width < 1:
        return None
    header = tuple(h for h, _ in table.columns)
    texts: list[list[str]] = []
    for row in (header, *table.rows):
        cells = [text for text in map(_plain_cell, row) if text is not None]
        if len(cells) != len(header):  # a row of another length, or text rich may change
            return None
        texts.append(cells)
    widths = [max(len(row[i]) for row in texts) + 2 for i in range(len(header))]
    table_width = sum(widths) + len(widths) + 1
    if table_width > width:
        return None
    if "[" in table.title or _EMOJI.search(table.title):
        return None
    caption = table.caption
    if caption is not None and ("[" in caption or _EMOJI.search(caption)):
        return None
    title = wrap(table.title, table_width, pad=True) if table.title else []
    below = wrap(caption, table_width, pad=True) if caption else []
    if title is None or below is None:
        return None
    lines = [*title, _border(widths, _TOP)]
    for n, line in enumerate(texts):
        cells = []
        for text, w, (_, justify) in zip(line, widths, table.columns, strict=True):
            inner = text.ljust(w - 2) if justify == "left" else text.rstrip().rjust(w - 2)
            cells.append(f" {inner} ")
        sides = _HEAD if n == 0 else _ROW
        lines.append(sides[0] + sides[2].join(cells) + sides[3])
        if n == 0:
            lines.append(_border(widths, _HEAD_RULE))
    lines.append(_border(widths, _BOTTOM))
    lines.extend(below)
    return "\n".join(lines) + "\n"


def draw(item: Drawable, width: int) -> str | None:
    """A drawable as rich prints it without colour at width `width`, or None (rich must)."""
    if isinstance(item, Table):
        return draw_table(item, width)
    if isinstance(item, Styled):
        lines = wrap(item.plain, width, pad=False)
        return None if lines is None else "\n".join(lines) + "\n"
    if isinstance(item, Group):
        parts = [text for text in (draw(i, width) for i in item.items) if text is not None]
        return "".join(parts) if len(parts) == len(item.items) else None
    return None


def plain_wanted(stream: IO[str], environ: dict[str, str] | os._Environ[str]) -> bool:
    """Whether rich would print to `stream` without colour or escape codes, in UTF-8 (its
    box characters; an ASCII stream gets ASCII boxes): not a terminal, and neither
    FORCE_COLOR nor TTY_COMPATIBLE set (rich's overrides), on a POSIX system."""
    if "FORCE_COLOR" in environ or "TTY_COMPATIBLE" in environ or sys.platform == "win32":
        return False
    encoding = (getattr(stream, "encoding", "utf-8") or "utf-8").lower()
    try:
        return encoding.startswith("utf") and not stream.isatty()
    except ValueError:  # a closed stream: let rich decide
        return False


class Output:
    """Where the CLI prints human output: plain text when rich would print it plain, rich's
    Console otherwise (made when first needed)."""

    def __init__(self, stream: IO[str], width: int | None) -> None:
        self.stream = stream
        self.width = width
        self.plain = width is not None and plain_wanted(stream, os.environ)
        self._console: Console | None = None

    @property
    def console(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(file=self.stream, width=self.width, soft_wrap=False)
        return self._console

    def print(self, item: Drawable) -> None:
        text = draw(item, self.width) if self.plain and self.width is not None else None
        if text is None:
            self.console.print(to_rich(item))
        else:
            self.stream.write(text)
            self.stream.flush()

    def print_all(self, items: Iterable[Drawable]) -> None:
        for item in items:
            self.print(item)
