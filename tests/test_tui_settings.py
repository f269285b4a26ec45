"""What the TUI needs from the command line (slicectl.tui.settings): its defaults, settings
that share nothing between instances, and a module that loads without Textual (the CLI
resolves them before the app starts)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from slicectl.tui.settings import TuiSettings


def test_defaults() -> None:
    s = TuiSettings(cgroup_root=Path("/sys/fs/cgroup"))
    assert (s.interval, s.tenants, s.config, s.topology, s.options) == (1.0, None, None, None,
                                                                         None)
    assert s.proc_root == Path("/proc") and s.host_memory == 0


def test_lists_are_not_shared_between_settings() -> None:
    a, b = TuiSettings(cgroup_root=Path("a")), TuiSettings(cgroup_root=Path("b"))
    a.readonly.append("not root")
    a.notes.append("a note")
    assert b.readonly == [] and b.notes == []


def test_loads_without_textual() -> None:
    code = ("import sys, slicectl.tui.settings, slicectl.tui.state; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parent.parent).stdout
    assert out == "[]\n"
