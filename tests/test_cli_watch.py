"""The verbs that watch the host (slicectl.cli.watch): status takes its two samples one interval
apart, the TUI refuses to start without a terminal, and the host's NUMA nodes are read for
memory locality when they can be. What status and top print is in test_monitor.py; record in
test_recorder.py."""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path

import pytest

from slicectl.cli.watch import cmd_tui, host_node_cpus, run_status
from slicectl.core import defaults
from slicectl.core.errors import TopologyError, UsageError

FIXTURES = Path(__file__).parent / "fixtures"


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
