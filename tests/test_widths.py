"""The human output of plan, topology, the live map, status and top at 80, 100 and 160 columns,
piped without colour (NO_COLOR, a pipe) and with FORCE_COLOR, against golden files in
tests/golden/widths/ (UPDATE_GOLDEN=1 rewrites them).

Each width is COLUMNS, as a pipe gets it: every line within it, none ending in spaces, no
"…"; in colour the text is the same, only styled. The maps read without colour (letters and
a legend naming them: tests/views/test_tables.py checks them cell by cell).
"""

from __future__ import annotations

import io
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from slicectl.cli import main
from slicectl.core.monitor.metrics import MetricsMemo
from slicectl.host.cgroup.sampler import Sampler

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "widths"
XEON = "tests/fixtures/topologies/xeon-2s-smt.json"  # relative: the golden files name it
EPYC = "tests/fixtures/topologies/epyc-2s-nps1.json"
NEHALEM = "tests/fixtures/sysfs/nehalem-ex-4node"
CGROUP = ROOT / "tests" / "fixtures" / "cgroup"  # read before chdir: absolute
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def status() -> int:
    """status's table of the static fixture tree (two samples; the title fixed, as the
    interval measured varies)."""
    import time

    from slicectl.views.monitor import render_table
    from slicectl.views.page import output_width, show

    with Sampler(CGROUP) as sampler:
        first = sampler.sample()
        time.sleep(0.05)  # under 30 ms there are no rates (CPU "-")
        second = sampler.sample()
    metrics = sorted(MetricsMemo().compute(first, second), key=lambda m: m.unit)
    show(render_table(metrics, title="tests/fixtures/cgroup over 1.00s", width=output_width()))
    return 0


def top() -> int:
    """top -n 1 piped, on the static fixture tree (the clock in its title fixed)."""
    import time
    from unittest import mock

    from slicectl.cli.watch import run_top

    with mock.patch.object(time, "strftime", lambda _format: "12:00:00"):
        # a real interval: under 30 ms there are no rates (CPU "-")
        return run_top(Path("tests/fixtures/cgroup"), 0.05, 1, sys.stdout)


VIEWS: dict[str, Callable[[], int]] = {
    "top": top,
    "plan": lambda: main(["plan", "examples/web-batch.yaml", "--topology", XEON]),
    "topology": lambda: main(["topology", "--topology", XEON]),
    # An EPYC host whose nodes each hold four L3 groups: the groups' table and the map by group.
    "topology-cache": lambda: main(["topology", "--topology", EPYC]),
    "live-map": lambda: main(["topology", "--live", "--sysfs", NEHALEM, "--cgroup-root",
                              str(CGROUP)]),
    "status": status,
}


def draw(view: str, width: int, colour: bool, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> str:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", str(width))
    for name in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(*(("FORCE_COLOR", "1") if colour else ("NO_COLOR", "1")))
    assert VIEWS[view]() == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("colour", [False, True], ids=["plain", "colour"])
@pytest.mark.parametrize("width", [80, 100, 160])
@pytest.mark.parametrize("view", VIEWS)
def test_output_fits(view: str, width: int, colour: bool, monkeypatch: pytest.MonkeyPatch,
                     capsys: pytest.CaptureFixture[str]) -> None:
    out = draw(view, width, colour, monkeypatch, capsys)
    golden = GOLDEN / f"{view}-{width}{'-colour' if colour else ''}.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(out)
    assert out == golden.read_text()
    text = ANSI.sub("", out)
    lines = text.splitlines()
    assert max(map(len, lines)) <= width and "…" not in text
    if colour:
        assert "\x1b[" in out  # styled: the same text, see below
        plain = io.StringIO()
        with pytest.MonkeyPatch.context() as m:
            plain.write(draw(view, width, False, m, capsys))
        assert [line.rstrip() for line in lines] == plain.getvalue().splitlines()
    else:
        assert "\x1b[" not in out and all(line == line.rstrip() for line in lines)
