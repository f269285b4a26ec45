"""slicectl.views.drawing draws plain text exactly as rich prints the same table or text uncoloured,
and leaves to rich what it cannot draw the same way."""

from __future__ import annotations

import io

from examplecounts import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from slicectl.views.drawing import Group, Output, Styled, Table, draw, plain_wanted, to_rich


def rich_text(item: object, width: int) -> str:
    """What rich prints for `item` into a pipe at `width` (the CLI's console when piped)."""
    out = io.StringIO()
    Console(file=out, width=width, soft_wrap=False).print(to_rich(item))
    return out.getvalue()


# Words, runs of spaces and the characters the views put in tables.
pieces = st.sampled_from(["a", "node", "t00", " ", "  ", "   ", "12,13", "×", "-", "(shared)",
                          "MemoryMax=4G", "shared pool: 0-3"])
texts = st.lists(pieces, max_size=5).map("".join)
cells = st.one_of(texts, texts.map(lambda s: Styled(s, "dim")),
                  st.lists(texts, max_size=3).map(lambda parts: _styled(parts)))


def _styled(parts: list[str]) -> Styled:
    s = Styled()
    for i, part in enumerate(parts):
        s.append(part, "bold" if i % 2 else "")
    return s


@st.composite
def tables(draw_: st.DrawFn) -> Table:
    ncols = draw_(st.integers(1, 4))
    t = Table(draw_(texts.filter(bool) | st.sampled_from(["Plan for x.yaml", "NUMA map"])),
              draw_(st.none() | st.lists(texts, min_size=1, max_size=3).map("\n".join)))
    for _ in range(ncols):
        t.add_column(draw_(texts.filter(bool)), draw_(st.sampled_from(["left", "right"])))
    for _ in range(draw_(st.integers(0, 4))):
        t.add_row(*(draw_(cells) for _ in range(ncols)))
    return t


@settings(max_examples=examples(100), deadline=None)
@given(tables(), st.integers(10, 120))
def test_a_table_is_drawn_as_rich_prints_it(table: Table, width: int) -> None:
    text = draw(table, width)
    widths = [max(len(c.plain if isinstance(c, Styled) else c) for c in column) + 2
              for column in zip(*[[h for h, _ in table.columns], *table.rows], strict=True)]
    assert (text is None) == (sum(widths) + len(widths) + 1 > width)  # rich would shrink it
    if text is not None:
        assert text == rich_text(table, width)


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(texts, min_size=1, max_size=4).map("\n".join), st.integers(1, 40))
def test_text_wraps_as_rich_wraps_it(text: str, width: int) -> None:
    item = Group(Styled("legend: ").append(text, "cyan"), Styled(text))
    assert draw(item, width) == rich_text(item, width)


def test_the_views_tables_are_drawn_without_rich() -> None:
    """The shapes the CLI prints (a long wrapped caption, right-justified numbers, styled
    cells with trailing spaces, "×" in a title) are drawn here, not left to rich."""
    t = Table("NUMA map (node × CPU)", caption="shared pool: 0-3 (4 CPUs)\n" + "word " * 30)
    t.add_column("node", "right")
    t.add_column("CPUs")
    t.add_row("node0", Styled().append("  0", "cyan").append(" ").append("  1", "dim"))
    t.add_row("node1", Styled("(no CPUs)", "dim"))
    legend = Styled("legend: ").append(" t00 ", "cyan").append(" ")
    for item in (t, Group(t, legend), Styled("4 node(s), SMT off")):
        for width in (30, 60, 160):
            drawn = draw(item, width)
            assert drawn is not None
            assert drawn == rich_text(item, width)


def test_what_rich_would_change_goes_to_rich() -> None:
    for markup in ("[bold]x[/bold]", "a :smile: b", "naïve"):
        t = Table("Files")
        t.add_column("file")
        t.add_row(markup)  # rich prints "x", an emoji; "ï" is not drawn here
        assert draw(t, 80) is None
        t = Table(markup)
        t.add_column("file")
        assert draw(t, 80) is None
    t = Table("Files")
    t.add_column("file")
    t.add_row("a" * 100)  # wider than the page: rich shrinks and wraps the column
    assert draw(t, 80) is None
    assert draw(Styled("naïve"), 80) is None


def test_plain_only_where_rich_would_print_plain() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert plain_wanted(io.StringIO(), {})
    assert not plain_wanted(Tty(), {})
    assert not plain_wanted(io.StringIO(), {"FORCE_COLOR": "1"})
    assert not plain_wanted(io.StringIO(), {"TTY_COMPATIBLE": "1"})
    ascii_out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    assert not plain_wanted(ascii_out, {})  # rich draws ASCII boxes there


def test_output_prints_rich_renderables_through_rich() -> None:
    from rich.text import Text

    out = io.StringIO()
    Output(out, 40).print(Text("[not markup]"))
    assert out.getvalue() == "[not markup]\n"
