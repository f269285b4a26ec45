"""The TUI in a real terminal: tmux runs it on a fake cgroup tree that keeps moving.

What a user would observe: the slice names on screen, a number that changes while they
watch, and `q` ending the program with status 0.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from cgtree import Motion, MovingTree
from tuikit import TMUX, tmux, wait_screen


def tui_command(root: Path) -> str:
    """`slicectl tui` on the fake tree."""
    base = [sys.executable, "-m", "slicectl", "tui"]
    # Without the COLUMNS and LINES a test runner may export: the program sizes itself to
    # the terminal (Textual, like rich, would take them over the terminal's size).
    return shlex.join(["env", "-u", "COLUMNS", "-u", "LINES", *base, "--cgroup-root", str(root),
                       "--interval", "0.2"])


@pytest.fixture
def moving(tmp_path: Path) -> Iterator[MovingTree]:
    """A fake tree whose db1 slice burns 2 cores and grows by 1 MiB every 0.1 s."""
    tree = MovingTree(tmp_path / "cgroup")
    tree.add("system.slice", Motion(cpu_cores=0.2))
    tree.add("tenants.slice")
    tree.add("tenants.slice/tenants-db1.slice", Motion(cpu_cores=2.0, memory_bytes=1 << 20),
             cpus="0-3", memory_current=100 << 20)
    tree.add("tenants.slice/tenants-web.slice", Motion(cpu_cores=0.5))
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(0.1):
            tree.advance(0.1)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield tree
    finally:
        stop.set()
        thread.join()


def db1_memory(screen: str) -> float:
    line = next(line for line in screen.splitlines() if "tenants-db1.slice" in line)
    m = re.search(r"(\d+(?:\.\d)?)M /", line)
    assert m, line
    return float(m.group(1))


# What each width shows of the overview's header (whole columns only) before any scrolling.
HEADER = {80: ("cpu cores/allowed", "mem current/high/max", "psi mem"),
          100: ("mem current/high/max", "psi mem", "quota", "throttled", "psi cpu"),
          160: ("psi io", "cpu history", "mem history", "events", "tasks")}


@pytest.mark.parametrize("width", HEADER)
def test_tui_in_tmux_shows_moving_slices_and_quits(moving: MovingTree, width: int) -> None:
    session = f"slicectl-tui-{uuid.uuid4().hex[:8]}"
    command = f"{tui_command(moving.root)}; echo TUI-EXIT-$?; sleep 60"
    tmux("new-session", "-d", "-s", session, "-x", str(width), "-y", "30", command)
    try:
        screen = wait_screen(session, lambda s: "tenants-db1.slice" in s
                             and "tenants-web.slice" in s and "system.slice" in s)
        first = db1_memory(screen)
        screen = wait_screen(session, lambda s: db1_memory(s) > first + 2)  # it keeps changing
        header = next(line for line in screen.splitlines() if line.startswith("slice "))
        assert all(name in header for name in HEADER[width]), screen
        footer = screen.rstrip().splitlines()[-1]
        assert "? Help" in footer and "q Quit" in footer, screen
        if width == 80:  # the status line says how to see the rest; → shows the next group
            assert " → more columns" in screen, screen
            tmux("send-keys", "-t", session, "Right")
            screen = wait_screen(session, lambda s: "psi cpu" in s and "← → more columns" in s)
            header = next(line for line in screen.splitlines() if line.startswith("slice "))
            assert header.split()[:5] == ["slice", "quota", "throttled", "psi", "cpu"], screen
        tmux("send-keys", "-t", session, "q")
        wait_screen(session, lambda s: "TUI-EXIT-0" in s, timeout=10)
    finally:
        subprocess.run([*TMUX, "kill-session", "-t", session], capture_output=True)
