"""Planning grows with the number of tenants about linearly: the systemd generator plans at
every boot, and systemd kills a generator that runs too long.

Counted, not timed: the lines of slicectl's own code that run (a step that searches every
tenant for each tenant shows as a count growing with the square of their number). The times
are bench/run's `placement.scale` (BENCHMARKS.md).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import slicectl
from slicectl.core.advice.lint import lint
from slicectl.core.config.config import load_yaml, parse_config
from slicectl.core.plan import build_plan
from slicectl.core.render import render
from slicectl.host.files.templates import load_templates
from slicectl.host.files.unitdir import Manifest, manifest_text
from slicectl.host.topology.sysfs import load_topology_file
from slicectl.views.tables import plan_table

TOPOLOGY = Path(__file__).parent / "fixtures/topologies/epyc-nps4.json"  # 64 CPUs, 4 nodes
PACKAGE = str(Path(slicectl.__file__).parent)


def tenants_yaml(n: int) -> str:
    """`n` tenants of every kind: a few exclusive ones (a count, with memory_low and a
    service), shared counts, shared cpulists, bound to a node with memory_low, members, the
    rest on the shared pool; a profile overrides every tenant."""
    lines = ["version: 1", "housekeeping: {cpus: 2}", "tenants:"]
    for i in range(n):
        if i < 8:
            body = f"cpus: 2, memory_low: 1G, services: [db{i}.service]"
        elif i % 10 == 1:
            body = "cpus: 2, exclusive: false"
        elif i % 10 == 2:
            body = f"cpus: \"{40 + i % 8}\", exclusive: false, cpu_weight: 50"
        elif i % 10 == 3:
            body = f"nodes: [{i % 4}], memory_low: 1M, memory_max: 1G"
        elif i % 10 == 4:
            body = f"memory_max: 1G, services: [app{i}.service]"
        else:
            body = f"cpu_weight: {1 + i % 1000}, memory_max: 2G"
        lines.append(f"  t{i:05d}: {{{body}}}")
    lines += ["profiles:", "  night:"]
    lines += [f"    t{i:05d}: {{cpu_weight: 20}}" for i in range(n)]
    return "\n".join(lines) + "\n"


def lines_run(work: Callable[[], object]) -> int:
    """How many lines of slicectl's code `work` runs."""
    count = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def calls(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename.startswith(PACKAGE) else None

    before = sys.gettrace()
    sys.settrace(calls)
    try:
        work()
    finally:
        sys.settrace(before)
    return count


def plan_everything(n: int) -> Callable[[], object]:
    """What the generator and `slicectl plan` and `lint` do with `n` tenants: parse with a
    profile, plan keeping the last placement, render, the manifest, the table, lint."""
    topo = load_topology_file(str(TOPOLOGY))
    text = tenants_yaml(n)
    previous = build_plan(parse_config(load_yaml(text, "t.yaml"), "t.yaml"), topo,
                          shares=False).placements()

    def work() -> object:
        config = parse_config(load_yaml(text, "t.yaml"), "t.yaml").with_profile("night")
        plan = build_plan(config, topo, previous)
        files = render(plan, load_templates())
        manifest_text(files, Manifest(placements=plan.placements(), source="t.yaml"))
        return plan_table(plan), lint(config, topo)

    return work


@pytest.mark.long  # tracing every line: a few seconds
def test_planning_grows_about_linearly_with_tenants() -> None:
    small, large = lines_run(plan_everything(150)), lines_run(plan_everything(1200))
    # 8 times the tenants: 8 times the lines when linear, 64 when quadratic; the fixed costs
    # (templates, the topology) make the ratio a little lower than 8.
    assert large / small < 10, (small, large)
