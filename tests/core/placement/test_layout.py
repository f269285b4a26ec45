"""The layout's data (slicectl.core.placement.layout): a re-pack's moves as plan says them and
as `plan --json` writes them, the split local tenants, and where a tenant may take CPUs."""

from __future__ import annotations

import json

from paths import TESTS

from slicectl.core.config.config import load_yaml, parse_config
from slicectl.core.placement.layout import (
    Layout,
    RepackMove,
    TenantPlacement,
    cpu_nodes_for,
    split_locals,
)
from slicectl.core.placement.topology import Topology

TOPOLOGIES = TESTS / "fixtures" / "topologies"


def test_a_move_to_another_node_says_its_memory_follows() -> None:
    m = RepackMove("pg3", frozenset({7, 23}), frozenset({12, 28}), (0,), (1,))
    assert m.cpus_moved == 2
    assert m.describe() == ("pg3: node 0 -> 1 (2 CPUs, 7,23 -> 12,28; its memory moves with "
                            "it: a changed cpuset.mems migrates its pages)")
    assert RepackMove.from_json(json.loads(json.dumps(m.to_json()))) == m


def test_a_move_within_its_node_moves_no_memory() -> None:
    m = RepackMove("pg2", frozenset({5, 6}), frozenset({6, 7}), (0,), (0,))
    assert m.cpus_moved == 0
    assert m.describe() == "pg2: CPUs 5,6 -> 6,7, on node 0"
    layout = Layout(frozenset(), frozenset(), (), moves=(m,))
    assert layout.repack_notes() == ["re-pack moves pg2: CPUs 5,6 -> 6,7, on node 0"]


def test_split_locals_names_counted_local_tenants_on_two_nodes_only() -> None:
    config = parse_config(load_yaml(
        "version: 1\ntenants:\n  a: {cpus: 4}\n  b: {cpus: 4, numa: any}\n  c: {cpus: '0-3'}\n",
        "t.yaml"), "t.yaml")
    two = TenantPlacement("a", frozenset({0, 8}), (0, 1), (0, 1), True, False)
    layout = Layout(frozenset(), frozenset(), (
        two, TenantPlacement("b", frozenset({1, 9}), (0, 1), None, True, False),
        TenantPlacement("c", frozenset({0, 1, 2, 3}), (0, 1), (0, 1), True, False)))
    assert [t.name for t in split_locals(config, layout)] == ["a"]


def test_a_tenant_naming_a_cpu_less_node_takes_cpus_from_the_nearest() -> None:
    topo = Topology.from_json(json.loads((TOPOLOGIES / "cpuless-memory-node.json").read_text()),
                              "t")  # node 2 has memory, no CPUs; node 0 is 17 away, node 1 28
    config = parse_config(load_yaml(
        "version: 1\ntenants:\n  a: {cpus: 1, nodes: [2]}\n  b: {cpus: 1}\n", "t.yaml"),
        "t.yaml")
    assert cpu_nodes_for(topo, config.tenants[0]) == [0]
    assert cpu_nodes_for(topo, config.tenants[1]) == [0, 1]
