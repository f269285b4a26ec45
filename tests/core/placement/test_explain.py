"""`plan --explain TENANT` (slicectl.core.placement.explain): why a tenant got its CPUs, in
the order placement's rules decided, on a host with several last-level caches per node."""

from __future__ import annotations

import json

from paths import TESTS

from slicectl.core.config.config import Config, load_yaml, parse_config
from slicectl.core.placement.explain import explain
from slicectl.core.placement.layout import Layout
from slicectl.core.placement.placement import place
from slicectl.core.placement.topology import Topology

EPYC = TESTS / "fixtures" / "topologies" / "epyc-2s-nps1.json"
TEXT = ("version: 1\nhousekeeping: {cpus: 2}\ntenants:\n  a: {cpus: 8}\n  b: {cpus: 12}\n"
        "  c: {}\n  d: {cpus: 4, numa: spread}\n  e: {cpus: '20-21'}\n")


def setting() -> tuple[Config, Topology, Layout]:
    config = parse_config(load_yaml(TEXT, "t.yaml"), "t.yaml")
    topo = Topology.from_json(json.loads(EPYC.read_text()), "epyc")  # 4 L3 of 8 CPUs a node
    return config, topo, place(config, topo)


def test_a_tenant_that_fits_one_cache_group_is_placed_and_explained_inside_one() -> None:
    config, topo, layout = setting()
    assert explain(config, topo, layout, "a") == [
        "CPUs 12-15,44-47: placed afresh (no earlier placement of it was kept)",
        "on node 0, one node for its CPUs and memory (numa: local): of the nodes with room, "
        "the one left with the least (best fit), unless keeping it elsewhere strands another "
        "local tenant",
        "node 0: inside one last-level cache group (12-15,44-47)",
        "memory bound to node(s) 0 (AllowedMemoryNodes): local to its CPUs"]


def test_a_tenant_bigger_than_a_group_says_why_it_spans_two() -> None:
    config, topo, layout = setting()
    assert ("node 0: on 2 last-level cache groups (4-7,36-39 | 8-11,40-43): it has 12 CPUs "
            "there, more than a group's 8") in explain(config, topo, layout, "b")


def test_a_kept_tenant_says_stability_kept_it() -> None:
    config, topo, layout = setting()
    again = place(config, topo, {p.tenant: p.cpus for p in layout.tenants if not p.pool})
    assert explain(config, topo, again, "a")[0] == (
        "CPUs 12-15,44-47: kept where the last apply placed it (stability: a tenant keeps its "
        "CPUs while they still fit, so changing one tenant moves no other)")


def test_the_pool_spread_and_listed_tenants() -> None:
    config, topo, layout = setting()
    assert explain(config, topo, layout, "c")[0].startswith("runs on the shared pool (CPUs ")
    assert explain(config, topo, layout, "c")[-1].startswith("memory not bound")
    assert "numa: spread: a whole core per node in turn, over node(s) 0, 1" in \
        explain(config, topo, layout, "d")
    assert explain(config, topo, layout, "e")[0] == "CPUs 20,21: listed in tenants.yaml"
