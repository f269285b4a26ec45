"""The overview's table widget (slicectl.tui.components.slice_table): rows drawn as padded
lines under a fixed header, columns that only widen, and a cursor that follows its row's key
when rows are reordered, added or removed."""

from __future__ import annotations

from textual.app import App, ComposeResult

from slicectl.tui.components.slice_table import SliceRow, SliceTable


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield SliceTable(("slice", "cpu"), frozenset({"cpu"}), id="t")


def rows(*pairs: tuple[str, str]) -> list[SliceRow]:
    return [SliceRow(f"/{name}", (name, cpu)) for name, cpu in pairs]


def drawn(table: SliceTable, y: int) -> str:
    return table.render_line(y).text.rstrip()


async def test_rows_under_a_header_right_aligned_where_asked() -> None:
    async with TableApp().run_test(size=(40, 10)) as pilot:
        table = pilot.app.query_one(SliceTable)
        table.show(rows(("system.slice", "0.25"), ("a", "12.50")))
        await pilot.pause()
        assert [drawn(table, y) for y in range(3)] == [
            "slice          cpu", "system.slice  0.25", "a            12.50"]
        assert table.row_count == 2 and table.get_row_at(1) == ["a", "12.50"]


async def test_columns_only_widen() -> None:
    async with TableApp().run_test(size=(40, 10)) as pilot:
        table = pilot.app.query_one(SliceTable)
        table.show(rows(("tenants-db1.slice", "1")))
        table.show(rows(("a", "1")))
        await pilot.pause()
        assert drawn(table, 1) == "a                   1"  # no jitter as names come and go


async def test_wide_characters_are_measured_in_cells() -> None:
    async with TableApp().run_test(size=(40, 10)) as pilot:
        table = pilot.app.query_one(SliceTable)
        table.show([SliceRow("/a", ("数据库", "1")), SliceRow("/b", ("ab", "2"))])
        await pilot.pause()
        assert drawn(table, 1) == "数据库   1"  # 6 cells wide, as "ab" is padded to
        assert drawn(table, 2) == "ab       2"


async def test_the_cursor_follows_its_row() -> None:
    async with TableApp().run_test(size=(40, 10)) as pilot:
        table = pilot.app.query_one(SliceTable)
        table.focus()
        table.show(rows(("a", "1"), ("b", "2"), ("c", "3")))
        await pilot.press("down")
        assert table.selected == "/b"
        table.show(rows(("c", "3"), ("b", "2"), ("a", "1")))  # re-sorted
        assert table.selected == "/b" and table.cursor == 1
        table.show(rows(("c", "3")))  # its row is gone: the cursor stays within the rows
        assert table.selected == "/c"
        table.show(rows(("a", "1"), ("b", "2"), ("c", "3")))
        await pilot.press("end")
        assert table.selected == "/c"
        await pilot.press("home")
        assert table.selected == "/a"
        table.move_to("/b")
        assert table.selected == "/b"


async def test_the_cursor_stays_on_top_until_it_is_put_on_a_row() -> None:
    """The first samples reorder the rows: the row on top at the start must not drag the
    cursor to the bottom before the user has moved it."""
    async with TableApp().run_test(size=(40, 10)) as pilot:
        table = pilot.app.query_one(SliceTable)
        table.focus()
        table.show(rows(("a", "-"), ("b", "-"), ("c", "-")))
        assert table.selected == "/a"
        table.show(rows(("c", "3"), ("b", "2"), ("a", "1")))  # sorted by figures now
        assert table.selected == "/c" and table.cursor == 0
        await pilot.press("down")
        table.show(rows(("a", "1"), ("b", "2"), ("c", "3")))
        assert table.selected == "/b"  # put on a row: it follows that row


async def test_no_rows_no_selection() -> None:
    async with TableApp().run_test(size=(40, 10)) as pilot:
        table = pilot.app.query_one(SliceTable)
        table.show([])
        await pilot.press("down")
        assert table.selected is None and table.row_count == 0
