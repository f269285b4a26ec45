"""Which node each counted exclusive tenant lands on (slicectl.core.placement.packing): local
tenants on one node each whenever some assignment allows it, spread tenants dealt a core per node,
and errors that say what was asked and what is free."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from slicectl.core.config.tenants import Tenant
from slicectl.core.errors import PlacementError
from slicectl.core.placement.cores import Claims
from slicectl.core.placement.packing import Ask, place_asks
from slicectl.core.placement.topology import Cpu, Node, Topology
from slicectl.core.properties.properties import Numa


def topology(sizes: Sequence[int], memory: int = 1 << 30) -> Topology:
    """Nodes of `sizes` CPUs numbered in a row, one thread per core."""
    nodes, cpus, first = [], [], 0
    for n, size in enumerate(sizes):
        ids = frozenset(range(first, first + size))
        first += size
        nodes.append(Node(n, ids, memory))
        cpus += [Cpu(c, True, n, package=n, core=c, siblings=frozenset({c})) for c in sorted(ids)]
    return Topology(tuple(nodes), tuple(cpus), "test")


def ask(name: str, count: int, candidates: tuple[int, ...] = (0, 1), *, numa: Numa = Numa.LOCAL,
        nodes: tuple[int, ...] | None = None, seed: frozenset[int] = frozenset(),
        protection: int = 0) -> Ask:
    tenant = Tenant(name, line=5, cpus=count, numa=numa, nodes=nodes)
    return Ask(tenant, "t.yaml", count, candidates, seed, protection)


def refusal(claims: Claims, asks: list[Ask]) -> PlacementError:
    with pytest.raises(PlacementError) as e:
        place_asks(claims, asks)
    return e.value


def test_local_tenants_each_on_one_node_where_best_fit_alone_strands_one() -> None:
    """Best fit puts the 4 on node 1 (1 left), then the 3s fill node 0 and the 2 fits
    nowhere; the search finds 4+3 | 3+2."""
    claims = Claims(topology([7, 5]))
    placed = place_asks(claims, [ask("a", 4), ask("b", 3), ask("c", 3), ask("d", 2)])
    assert placed == {"a": [0, 1, 2, 3], "b": [4, 5, 6], "c": [7, 8, 9], "d": [10, 11]}
    assert claims.free == set()


def test_a_tenant_no_node_can_hold_takes_the_fewest_fullest_nodes() -> None:
    assert place_asks(Claims(topology([7, 5])), [ask("big", 8)]) == {
        "big": [0, 1, 2, 3, 4, 5, 6, 7]}


def test_spread_deals_a_core_per_node_in_turn() -> None:
    assert place_asks(Claims(topology([7, 5])), [ask("s", 5, numa=Numa.SPREAD)]) == {
        "s": [0, 7, 1, 8, 2]}


def test_a_tenant_keeps_its_previous_cpus() -> None:
    assert place_asks(Claims(topology([7, 5])), [ask("k", 3, seed=frozenset({8, 9, 10}))]) == {
        "k": [8, 9, 10]}


def test_too_many_cpus() -> None:
    e = refusal(Claims(topology([4, 4])), [ask("x", 9)])
    assert e.message == ("t.yaml:5: tenants.x.cpus: asks for 9 CPUs but only 8 are free for "
                         "exclusive use")
    assert e.hint == ("free CPUs per node: node0: 4 free (0-3); node1: 4 free (4-7); lower the "
                      "count, free CPUs from another tenant, or reduce housekeeping.cpus")


def test_too_many_for_the_one_node_named() -> None:
    e = refusal(Claims(topology([7, 5])), [ask("p", 6, (1,), nodes=(1,))])
    assert e.message == "t.yaml:5: tenants.p.cpus: asks for 6 CPUs on node 1, which has 5 free"
    assert e.hint == "free CPUs per node: node0: 7 free (0-6); node1: 5 free (7-11)"


def test_room_for_the_cpus_but_not_the_memory_protection() -> None:
    e = refusal(Claims(topology([4, 4], memory=1 << 30)),
                [ask("m", 2, (0,), nodes=(0,), protection=2 << 30)])
    assert e.message == ("t.yaml:5: tenants.m.cpus: asks for 2 CPUs on node 0, which has 4 "
                         "free, but not the memory for its memory_low + memory_min")


def test_spread_too_big() -> None:
    e = refusal(Claims(topology([7, 5])), [ask("s", 13, numa=Numa.SPREAD)])
    assert e.message == ("t.yaml:5: tenants.s.cpus: asks for 13 CPUs spread over nodes 0, 1, "
                         "but only 12 are free there")


def test_spread_spans_nodes_when_the_locals_can_make_room() -> None:
    """Nodes with 2, 2 and 7 free CPUs (3, 2 and 7 with housekeeping on the first): three
    2-CPU local tenants and a 4-CPU spread tenant. Best fit puts the locals on the small
    nodes and leaves the spread tenant the big node alone; a local on the big node lets it
    span nodes."""
    trio = (0, 1, 2)
    asks = [ask("a", 2, trio), ask("b", 2, trio), ask("c", 2, trio),
            ask("s", 4, trio, numa=Numa.SPREAD)]
    claims = Claims(topology([2, 2, 7]))
    placed = place_asks(claims, asks)
    assert len({claims.node_of[c] for c in placed["s"]}) >= 2
    for name in "abc":
        assert len({claims.node_of[c] for c in placed[name]}) == 1


def test_spread_on_one_node_when_no_layout_leaves_room_on_two() -> None:
    claims = Claims(topology([2, 4]))
    placed = place_asks(claims, [ask("a", 4), ask("s", 2, numa=Numa.SPREAD)])
    assert {claims.node_of[c] for c in placed["a"]} == {1}
    assert {claims.node_of[c] for c in placed["s"]} == {0}
