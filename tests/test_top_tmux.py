"""`slicectl top` in a real terminal: tmux runs it at 80, 100 and 160 columns on a fake cgroup
tree that keeps moving.

What a user would observe: one line per slice whatever the width (the columns that do not fit
are left out, least wanted first, and named), numbers that change, and q or Ctrl-C ending it
with status 0 and the terminal as it was.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from cgtree import MovingTree
from test_tui_tmux import moving  # noqa: F401 (a fixture)
from tuikit import TMUX, tmux, wait_screen

# After top: its status, and whether the terminal echoes again (top turns echo off).
AFTER = "echo TOP-EXIT-$?; stty -a | tr ' ' '\\n' | grep -qx echo && echo TERMINAL-ECHOES; sleep 60"
SLICES = ("tenants-db1.slice", "tenants-web.slice", "tenants.slice", "system.slice")


def top_command(root: Path) -> str:
    # as tui_command: top sizes itself to the terminal (a runner's COLUMNS removed, although
    # top on a terminal goes by the terminal's size anyway)
    return shlex.join(["env", "-u", "COLUMNS", "-u", "LINES", sys.executable, "-m", "slicectl",
                       "top", "--cgroup-root", str(root), "--interval", "0.2"])


def table_lines(screen: str) -> list[str]:
    """The table's rows: the lines between the rule under the header and the caption."""
    lines = screen.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("───"))
    rows = []
    for line in lines[rule + 1:]:
        if not line.strip() or line.startswith("left out"):
            break
        rows.append(line)
    return rows


def settled(screen: str) -> bool:
    """The table is drawn with every slice and db1 measured (its CPU cell is a number)."""
    if not all(name in screen for name in SLICES) or "───" not in screen:
        return False
    db1 = next(line for line in table_lines(screen) if line.startswith("tenants-db1.slice"))
    return "- /" not in db1


@pytest.mark.parametrize("width", [80, 100, 160])
def test_top_fits_the_terminal_and_q_quits(moving: MovingTree, width: int) -> None:  # noqa: F811
    session = f"slicectl-top-{uuid.uuid4().hex[:8]}"
    command = f"{top_command(moving.root)}; {AFTER}"
    tmux("new-session", "-d", "-s", session, "-x", str(width), "-y", "30", command)
    try:
        screen = wait_screen(session, settled)
        rows = table_lines(screen)
        # nothing wraps: every row is one slice's line, each slice once
        assert sorted(row.split()[0] for row in rows) == sorted(SLICES), screen
        header = screen.splitlines()[screen.splitlines().index(next(
            line for line in screen.splitlines() if line.startswith("───"))) - 1]
        lines = screen.splitlines()  # the title on one line (a long root shortened), then
        assert "every 0.2s  (q: quit)" in lines[0] and lines[2].startswith("slice "), screen
        if width == 80:  # the most wanted columns, the others named
            assert "psi" in screen and "cores/allowed" in screen and "current/high/max" in screen
            assert "left out for width:" in screen and "events" in screen.split("left out")[1]
        if width == 160:  # room for every column
            assert "left out" not in screen and "events" in header and "tasks" in header
        first = screen
        wait_screen(session, lambda s: settled(s) and s.splitlines()[0] != first.splitlines()[0])
        tmux("send-keys", "-t", session, "q")
        # status 0, and the terminal echoes again (top restored what it changed)
        wait_screen(session, lambda s: "TOP-EXIT-0" in s and "TERMINAL-ECHOES" in s, timeout=10)
    finally:
        subprocess.run([*TMUX, "kill-session", "-t", session], capture_output=True)


def test_top_ends_on_ctrl_c(moving: MovingTree) -> None:  # noqa: F811
    session = f"slicectl-top-{uuid.uuid4().hex[:8]}"
    command = f"{top_command(moving.root)}; {AFTER}"
    tmux("new-session", "-d", "-s", session, "-x", "80", "-y", "30", command)
    try:
        wait_screen(session, settled)
        tmux("send-keys", "-t", session, "C-c")
        wait_screen(session, lambda s: "TOP-EXIT-0" in s and "TERMINAL-ECHOES" in s, timeout=10)
    finally:
        subprocess.run([*TMUX, "kill-session", "-t", session], capture_output=True)
