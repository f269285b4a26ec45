"""slicectl.core.placement.cache_groups: a node's last-level cache groups split its CPUs, or
the node stands in for them and says why (spans nodes, per core, unknown)."""

from __future__ import annotations

import pytest
from core.placement.test_topology import G, export, groups_of, with_caches

from slicectl.core.placement.topology import Cpu, Node, build_topology


@pytest.mark.parametrize(("lists", "node0", "warned"), [
    (("0", "1", "", ""), "per-core", False),  # each core its own: nothing to keep together
    (("0-1", "0-1", "", ""), "0,1", False),  # one group: the node's CPUs
    (("0-3", "0-3", "0-3", "0-3"), "spans-nodes", False),  # one L3, two nodes (SNC)
    (("0-1", "", "", ""), "unknown", True),  # CPU 1's list missing
    (("0-1", "1", "", ""), "unknown", True),  # CPU 0 names CPU 1, CPU 1 only itself
    (("1", "0-1", "", ""), "unknown", True),  # CPU 0's group lacks CPU 0
    (("0-1,100", "0-1,100", "", ""), "0,1", False),  # a CPU that does not exist is left out
])
def test_cache_groups_split_the_node_or_the_node_stands_in(
        lists: tuple[str, ...], node0: str, warned: bool) -> None:
    shown, warnings = groups_of(with_caches(*lists))
    assert shown[0] == node0
    assert bool(warnings) == warned
    if warned:
        assert warnings == ["node 0: its CPUs' last-level cache lists (cpuN/cache) contradict "
                            "each other or are missing for some CPUs; slicectl takes the node "
                            "as their group"]


def test_an_exports_reason_stands_when_its_cpus_carry_no_groups() -> None:
    """A host's export says why its nodes stand in (the spanning lists are not exported)."""
    data = export()
    for n in data["nodes"]:
        n["cache_sharing"] = "spans-nodes"
    assert groups_of(data) == ({0: "spans-nodes", 1: "spans-nodes"}, [])
    data["nodes"][0]["cache_sharing"] = "groups"  # but no CPU carries a group
    assert groups_of(data)[0][0] == "unknown"


def test_offline_cpus_leave_the_group() -> None:
    l3 = frozenset({0, 1, 2, 3})  # CPU 3 went offline after the list was written
    topo = build_topology([Node(0, frozenset({0, 1, 2}), G)],
                          [Cpu(c, True, 0, cache=l3) for c in range(3)]
                          + [Cpu(3, False, None, cache=l3)], "t")
    assert topo.cache_groups(0) == (frozenset({0, 1, 2}),)
    assert topo.cpu(3).cache == frozenset()
