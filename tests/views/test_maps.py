"""The NUMA maps (slicectl.views.maps): drawn without colour, as a pipe or NO_COLOR gets them,
each CPU carries its owner's letter and the legend names every letter."""

from __future__ import annotations

import io
from pathlib import Path

from cgtree import MovingTree
from rich.console import Console, RenderableType
from tuikit import make_topology

from slicectl.core.monitor.metrics import compute
from slicectl.core.monitor.numa_map import build_live_map
from slicectl.core.placement.layout import Layout, TenantPlacement
from slicectl.host.cgroup.sampler import Sampler
from slicectl.views.maps import live_map_view, numa_map


def plain(item: RenderableType, width: int = 80) -> list[str]:
    """What a pipe (or NO_COLOR) shows: no colour, no style."""
    out = io.StringIO()
    Console(file=out, width=width, color_system=None, no_color=True).print(item)
    return [line.rstrip() for line in out.getvalue().splitlines()]


def placement(tenant: str, cpus: set[int], node: int) -> TenantPlacement:
    return TenantPlacement(tenant, frozenset(cpus), (node,), (node,), exclusive=True,
                           pool=False)


def test_the_plan_map_reads_without_colour() -> None:
    """Each CPU carries its owner's letter; the legend names every letter."""
    topo = make_topology()  # node n = CPUs n, n+4
    layout = Layout(housekeeping=frozenset({3, 7}), shared_pool=frozenset({2, 5, 6}),
                    tenants=(placement("db1", {0, 4}, 0), placement("web", {1}, 1)))
    lines = plain(numa_map(topo, layout))
    rows = {line.split("│")[1].strip(): line.split("│")[2].split() for line in lines
            if line.startswith("│ node")}
    assert rows == {"node0": ["0A", "4A"], "node1": ["1B", "5."], "node2": ["2.", "6."],
                    "node3": ["3#", "7#"]}
    assert lines[-1] == "legend: A=db1 B=web #=housekeeping .=shared/free"


def test_the_live_map_marks_where_live_and_plan_differ(tmp_path: Path) -> None:
    tree = MovingTree(tmp_path / "cg", cpus="0-7", mems="0-3")
    tree.add("tenants.slice")
    tree.add("tenants.slice/tenants-a.slice", cpus="0,4", mems="0")
    tree.add("tenants.slice/tenants-b.slice", cpus="2,6", mems="2")  # planned on node 1
    with Sampler(tree.root) as sampler:
        metrics = compute(None, sampler.sample())
    live = build_live_map(make_topology(), metrics,
                          plan={"a": frozenset({0, 4}), "b": frozenset({1, 5})})
    lines = plain(live_map_view(live), width=100)
    node1 = next(line for line in lines if line.startswith("│ node1"))
    assert node1.split("│")[2].split() == ["1.!", "5.!"]  # live: the pool, differs
    assert node1.split("│")[3].split() == ["1B!", "5B!"]  # planned: b's
    legend = next(line for line in lines if line.startswith("legend:"))
    assert legend == "legend: A=a B=b #=housekeeping .=shared pool !=live and plan differ"
    assert "4 CPU(s) where live and plan differ:" in lines
