"""How human output fits a page: a terminal's width, or a pipe's (COLUMNS when it is set).

Nothing is cut to fit: table cells fold rather than end in "…" (`column`), and CPU lists, or
settings holding them, wrap at a space or after a comma, never inside a range (`CpuList`);
paths wrap after a "/" (`FilePath`).
`show` prints for people: styled on a terminal, plain and without trailing spaces piped.
Front-end code, like the tables and maps that use it: the CLI imports it inside the verbs that
print, so `--help` and `generate` never load rich.
"""

from __future__ import annotations

import io
import os
import re
import sys
from typing import Literal, TextIO

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from slicectl.core.human import human_size

# Wider than any table: piped, a table is drawn at the width it needs (tables do not expand).
_UNLIMITED = 1 << 16

PAGE_WIDTH = 80  # text piped without COLUMNS


class CpuList:
    """Text in a table cell with CPU lists in it ("0-3,8,10-11", "AllowedCPUs=0,16
    MemoryMax=3G"): as wide as the column allows, wrapped at a space or after a comma, never
    inside a range, never cut with "…" ("0-3,8,10-11" in 6 cells: "0-3,8," "10-11")."""

    def __init__(self, text: str, style: str = "") -> None:
        self.text = text
        self.style = style

    def _parts(self) -> list[str]:
        return re.split(r"(?<=[ ,])(?=[^ ])", self.text)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(max(cell_len(p.rstrip()) for p in self._parts()),
                           cell_len(self.text))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        line = ""
        for part in self._parts():
            if line and cell_len(line) + cell_len(part.rstrip()) > options.max_width:
                yield Text(line.rstrip(), self.style, overflow="fold")
                line = ""
            line += part
        yield Text(line.rstrip(), self.style, overflow="fold")


class FilePath(CpuList):
    """A path in a table cell ("postgresql@15-main.service.d/50-slicectl.conf"): wrapped
    after a "/" when the column is narrower, so a unit's name is never cut in two."""

    def _parts(self) -> list[str]:
        return re.split(r"(?<=/)(?=.)", self.text)


def memory_text(n: int) -> str:
    """A node's or a host's memory: "96G", "-" for none."""
    return human_size(n) if n else "-"


def table(title: str, caption: str | None = None) -> Table:
    """A table with its title and caption justified left, as all of slicectl's are; add its
    columns with `column` (nothing is cut to fit)."""
    return Table(title=title, title_justify="left", caption=caption, caption_justify="left")


def column(t: Table, header: str, justify: Literal["left", "right"] = "left", *,
           wrap: bool = True) -> None:
    """A column whose cells wrap, and fold a word longer than the column, rather than end
    in "…": piped or on a narrow terminal, a name or a setting is never cut. Short names
    (`wrap=False`) keep their width while the others wrap, unless nothing else can give."""
    t.add_column(header, justify=justify, overflow="fold", no_wrap=not wrap)


def fits(t: Table, width: int) -> bool:
    """Whether each row of `t` fits `width` on one line (rich's measure is clamped to the
    console's width: measured on an unlimited one)."""
    console = Console(width=_UNLIMITED, file=io.StringIO())
    return Measurement.get(console, console.options, t).maximum <= width


def columns_asked() -> int | None:
    """COLUMNS when it is set to a width (the user, or a script, asked for it), else None."""
    value = os.environ.get("COLUMNS", "")
    return int(value) if value.isdigit() and int(value) > 0 else None


def _console(out: TextIO | None = None) -> Console:
    out = out or sys.stdout
    return Console(file=out, width=None if out.isatty() else columns_asked() or PAGE_WIDTH,
                   soft_wrap=False)


def output_width(out: TextIO | None = None) -> int | None:
    """The width `show` draws tables in on `out` (stdout): the terminal's, COLUMNS piped,
    None (as wide as they need) piped without COLUMNS."""
    console = _console(out)
    return console.width if console.is_terminal else columns_asked()


def show(*items: RenderableType, out: TextIO | None = None) -> None:
    """Print `items` on stdout for people. On a terminal rich draws them to its width.
    Piped or redirected, where rich draws plain text: at COLUMNS when it is set, every line
    within it (cells wrap, CPU lists after a comma; nothing is cut with "…"); without
    COLUMNS a table takes the width it needs (a row per line for grep) and text wraps at
    80. Piped lines end without the spaces rich pads titles and cells with."""
    asked = columns_asked()
    out = out or sys.stdout
    console = _console(out)
    if console.is_terminal:  # a terminal, or FORCE_COLOR: styled, COLUMNS wide
        for item in items:
            console.print(item)
        return
    for item in items:
        for part in item.renderables if isinstance(item, Group) else (item,):
            console.width = asked or (_UNLIMITED if isinstance(part, Table) else PAGE_WIDTH)
            with console.capture() as captured:
                console.print(part)
            out.write("".join(f"{line.rstrip()}\n" for line in captured.get().splitlines()))
    out.flush()
