"""The one-line bars (slicectl.tui.components.banner): the read-only banner says every reason
editing is off and hides when there is none; the status line shows the text it is given."""

from __future__ import annotations

from textual.app import App, ComposeResult

from slicectl.tui.components.banner import ReadOnlyBanner, StatusLine


class Bars(App[None]):
    def compose(self) -> ComposeResult:
        yield ReadOnlyBanner(id="banner")
        yield StatusLine(id="status")


async def test_the_banner_lists_the_reasons_or_hides() -> None:
    async with Bars().run_test() as pilot:
        banner = pilot.app.query_one(ReadOnlyBanner)
        banner.set_reasons(["not root", "no system bus"])
        assert banner.display
        assert str(banner.content) == "READ-ONLY (monitoring only): not root; no system bus"
        banner.set_reasons([])
        assert not banner.display and str(banner.content) == ""


async def test_the_status_line_shows_its_text() -> None:
    async with Bars().run_test() as pilot:
        status = pilot.app.query_one(StatusLine)
        status.show_text("4 slices  sort: cpu ↓  every 1s")
        await pilot.pause()
        assert str(status.content) == "4 slices  sort: cpu ↓  every 1s"
        status.show_text("3 of 4 slices  sort: cpu ↓  every 1s  filter: db")
        assert str(status.content) == "3 of 4 slices  sort: cpu ↓  every 1s  filter: db"
