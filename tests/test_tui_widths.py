"""The TUI's overview at 80, 100 and 160 columns, in colour and with NO_COLOR: SVG snapshots
(tests/snapshots/; update with `pytest --snapshot-update`) whose text is also checked."""

from __future__ import annotations

from typing import Any

import pytest
from test_tui import settled_screenshot, snapshot_settings
from tuikit import running


def screen_text(svg: str) -> list[str]:
    """The text lines of a Textual SVG screenshot, as a terminal shows them."""
    import html
    import re

    lines: dict[str, list[tuple[float, str]]] = {}
    for m in re.finditer(r'<text class="[^"]*" x="([\d.]+)" y="[\d.]+" textLength="[\d.]+" '
                         r'clip-path="url\(#[\w-]+-line-(\d+)\)">([^<]*)</text>', svg):
        lines.setdefault(m[2], []).append((float(m[1]), html.unescape(m[3])))
    out = []
    for key in sorted(lines, key=int):
        text = ""
        for x, part in sorted(lines[key]):
            text = text.ljust(round(x / 12.2)) + part
        out.append(text.replace("\xa0", " ").rstrip())
    return out


WIDTHS = {80: ("cpu cores/allowed", "mem current/high/max", "psi mem"),
          100: ("mem current/high/max", "psi mem", "quota", "throttled", "psi cpu"),
          160: ("psi io", "cpu history", "mem history", "events", "tasks")}


@pytest.mark.parametrize("colour", [True, False], ids=["colour", "no-colour"])
@pytest.mark.parametrize("width", WIDTHS)
async def test_snapshot_widths(width: int, colour: bool, svg_snapshot: Any,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The overview at 80, 100 and 160 columns, in colour and with NO_COLOR: whole columns
    only (memory pressure at 80, everything at 160, the status line saying when some are
    out of view), and the footer's keys up to Help and Quit at every width."""
    if not colour:
        monkeypatch.setenv("NO_COLOR", "1")
    async with running(snapshot_settings(), size=(width, 24)) as (app, pilot):
        svg = await settled_screenshot(app, pilot)
    assert svg_snapshot == svg
    lines = screen_text(svg)
    header = next(line for line in lines if line.startswith("slice "))
    assert all(name in header for name in WIDTHS[width])
    status = next(line for line in lines if "sort:" in line)
    assert ("→ more columns" in status) == (width < 160), status
    assert "? Help" in lines[-1] and "q Quit" in lines[-1]
