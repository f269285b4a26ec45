"""How output fits a width (slicectl.views.page): CPU lists that wrap after a comma and are never
cut, columns that fold rather than end in "…", and `show` piped, with or without COLUMNS."""

from __future__ import annotations

import io

import pytest
from rich.console import Console, RenderableType
from rich.table import Table

from slicectl.views.page import CpuList, column, columns_asked, fits, memory_text, show, table


def plain(item: RenderableType, width: int = 80) -> list[str]:
    """What a pipe (or NO_COLOR) shows: no colour, no style."""
    out = io.StringIO()
    Console(file=out, width=width, color_system=None, no_color=True).print(item)
    return [line.rstrip() for line in out.getvalue().splitlines()]


def test_a_cpu_list_wraps_after_a_comma_and_is_never_cut() -> None:
    table = Table("CPUs")
    table.add_row(CpuList("0-3,8,10-11,16-19"))
    for width, lines in ((10, 3), (16, 2), (40, 1)):  # the cell: 4 cells narrower
        table.width = width
        cells = [line.strip("│ ") for line in plain(table) if line.startswith("│")]
        assert "".join(cells) == "0-3,8,10-11,16-19"  # whole, in order
        assert all(c.endswith(",") for c in cells[:-1])  # broken after commas only
        assert len(cells) == lines


def test_a_column_folds_a_long_word_rather_than_cut_it() -> None:
    t = table("Files")
    column(t, "file")
    t.add_row("tenants-a-very-long-tenant-name.slice.d/50-slicectl.conf")
    t.width = 24
    cells = [line.strip("│ ") for line in plain(t) if line.startswith("│")]
    assert "".join(cells) == "tenants-a-very-long-tenant-name.slice.d/50-slicectl.conf"
    assert not any("…" in line for line in plain(t))


def test_fits_measures_one_line_per_row() -> None:
    t = table("t")
    column(t, "cpus")
    t.add_row("0,2,4,6,8")
    assert fits(t, 20) and not fits(t, 8)


def test_memory_text() -> None:
    assert memory_text(0) == "-" and memory_text(96 << 30) == "96G"


@pytest.mark.parametrize(("value", "width"), [("120", 120), ("", None), ("0", None),
                                              ("wide", None)])
def test_columns_asked(monkeypatch: pytest.MonkeyPatch, value: str, width: int | None) -> None:
    monkeypatch.setenv("COLUMNS", value)
    assert columns_asked() == width


def test_show_piped_without_columns_gives_a_table_the_width_it_needs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    t = table("t")
    column(t, "cpus")
    t.add_row(CpuList(",".join(map(str, range(0, 256, 2)))))
    out = io.StringIO()
    show(t, out=out)
    lines = out.getvalue().splitlines()
    assert any(",".join(map(str, range(0, 256, 2))) in line for line in lines)  # one line
    assert all(line == line.rstrip() for line in lines)  # no padding at the ends
