"""The verbs that watch the host (slicectl.cli.watch): status takes its two samples one interval
apart, the TUI refuses to start without a terminal, and the host's NUMA nodes are read for
memory locality when they can be. What status and top print is in test_monitor.py; record in
test_recorder.py."""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cgtree import MovingTree
from paths import TESTS

from slicectl.cli.watch import cmd_tui, host_node_cpus, run_status
from slicectl.core import defaults
from slicectl.core.errors import TopologyError, UsageError

FIXTURES = TESTS / "fixtures"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def tui_refusal(monkeypatch: pytest.MonkeyPatch, stdin: io.StringIO,
                stdout: io.StringIO) -> UsageError:
    monkeypatch.setattr(sys, "stdin", stdin)
    monkeypatch.setattr(sys, "stdout", stdout)
    with pytest.raises(UsageError) as e:
        cmd_tui(argparse.Namespace())
    assert e.value.hint == ("for output to a pipe or a file use `slicectl status` (once, "
                            "`--json` for programs) or `slicectl top -n N`")
    return e.value


def test_the_tui_needs_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    e = tui_refusal(monkeypatch, io.StringIO(), io.StringIO())
    assert e.message == ("slicectl tui needs a terminal: standard input and standard output "
                         "are not terminals")
    e = tui_refusal(monkeypatch, Terminal(), io.StringIO())
    assert e.message == "slicectl tui needs a terminal: standard output is not a terminal"
    assert e.exit_code == 2


def test_status_samples_twice_one_interval_apart() -> None:
    slept: list[float] = []
    out = io.StringIO()
    assert run_status(FIXTURES / "cgroup", True, 0.25, out, sleep=slept.append) == 0
    assert slept == [0.25]
    units = {s["unit"] for s in json.loads(out.getvalue())["slices"]}
    assert {"system.slice", "tenants.slice"} <= units


def test_node_cpus_from_the_sysfs_asked_for() -> None:
    cpus = host_node_cpus(str(FIXTURES / "sysfs" / "xeon-2s-smt"))
    assert cpus is not None and sorted(cpus) == [0, 1]
    assert cpus[0].isdisjoint(cpus[1])


def test_an_unreadable_sysfs_asked_for_is_an_error_and_the_hosts_is_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(TopologyError):
        host_node_cpus(str(tmp_path))
    monkeypatch.setattr(defaults, "SYSFS", str(tmp_path))  # this host's /sys, unreadable
    assert host_node_cpus() is None


def test_status_does_not_block_on_a_fifo_in_the_tree(tmp_path: Path) -> None:
    """A FIFO in place of cgroup files (a broken tree): status still answers, at once."""
    tree = MovingTree(tmp_path / "cg")
    tree.add("tenants.slice")
    for fifo in (tree.root / "tenants.slice" / "cpu.stat",
                 tree.root / "tenants.slice" / "memory.current",
                 tree.root / "cpuset.cpus.effective"):
        fifo.unlink(missing_ok=True)
        os.mkfifo(fifo)
    proc = subprocess.run([sys.executable, "-m", "slicectl", "status", "--json", "--interval",
                           "0.1", "--cgroup-root", str(tree.root)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    units = {s["unit"] for s in json.loads(proc.stdout)["slices"]}
    assert "tenants.slice" in units
