"""What the TUI needs from the command line (slicectl.tui.settings): its defaults, settings
that share nothing between instances, and a module that loads without Textual (the CLI
resolves them before the app starts)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from paths import ROOT

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
                         check=True, cwd=ROOT).stdout
    assert out == "[]\n"


def test_target_systemd_from_the_flag_else_the_topology_file(tmp_path: Path) -> None:
    from slicectl.demo.cgtree import make_root
    from slicectl.tui import tui_settings

    make_root(tmp_path / "cgroup")
    host = str(ROOT / "slicectl" / "demo" / "host.json")
    recorded = tui_settings(None, tmp_path / "cgroup", topology_file=host)
    assert (recorded.systemd_version, recorded.systemd_source) == (252, f"recorded in {host}")
    asked = tui_settings(None, tmp_path / "cgroup", topology_file=host, systemd_version=256)
    assert (asked.systemd_version, asked.systemd_source) == (256, "--systemd-version")
