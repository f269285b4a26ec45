"""Who holds which CPU during a placement run (slicectl.core.placement.cores): picks take whole free
cores first, complete a tenant's own cores, split at most one core, and take threads of a core that
housekeeping or another tenant holds only when allowed."""

from __future__ import annotations

import pytest

from slicectl.core.placement.cores import Claims, cores_of
from slicectl.core.placement.topology import Cpu, Node, Topology, build_topology


def smt_topology(cores_per_node: int = 4, nodes: int = 2, memory: int = 1 << 30) -> Topology:
    """Two threads per core, numbered like x86 (core k's threads are k and k + cores):
    node0 = 0-3 + 8-11, node1 = 4-7 + 12-15 by default."""
    total = cores_per_node * nodes
    cpus, node_list = [], []
    for n in range(nodes):
        ids: set[int] = set()
        for k in range(cores_per_node):
            first = n * cores_per_node + k
            pair = frozenset({first, first + total})
            ids |= pair
            cpus += [Cpu(c, True, n, package=n, core=k, siblings=pair) for c in sorted(pair)]
        node_list.append(Node(n, frozenset(ids), memory))
    return Topology(tuple(node_list), tuple(sorted(cpus, key=lambda c: c.id)), "test")


@pytest.fixture
def claims() -> Claims:
    """Housekeeping holds CPU 0, so core (0, 8) is half taken."""
    return Claims(smt_topology(), housekeeping=frozenset({0}))


def test_free_cpus_leave_out_housekeeping(claims: Claims) -> None:
    assert claims.free_count == {0: 7, 1: 8}
    assert claims.describe_free() == "node0: 7 free (1-3,8-11); node1: 8 free (4-7,12-15)"


def test_whole_cores_first(claims: Claims) -> None:
    """Not CPU 8, whose core-mate runs the host's daemons."""
    assert claims.pick("db", claims.node_cores[0], 2, shared=False) == [1, 9]


def test_an_odd_count_splits_one_core(claims: Claims) -> None:
    assert claims.pick("db", claims.node_cores[0], 3, shared=False) == [1, 9, 2]


def test_threads_beside_housekeeping_only_when_allowed(claims: Claims) -> None:
    assert claims.pick("db", claims.node_cores[0], 7, shared=False) is None
    assert claims.pick("db", claims.node_cores[0], 7, shared=True) == [1, 9, 2, 10, 3, 11, 8]


def test_a_tenant_completes_its_own_core_and_no_other_tenants(claims: Claims) -> None:
    claims.claim("db", [1])
    assert claims.pick("db", claims.node_cores[0], 1, shared=False) == [9]
    assert claims.pick("web", claims.node_cores[0], 1, shared=False) == [2]


def test_claim_release_and_owners(claims: Claims) -> None:
    claims.claim("web", [4, 12])
    claims.claim("db", [1])
    assert claims.free_count == {0: 6, 1: 6}
    assert claims.first_owner([12, 1, 2]) == "db"  # first by name
    assert claims.first_owner([2, 3]) is None
    claims.release([4, 12])
    assert claims.free_count == {0: 6, 1: 8} and claims.owner == {1: "db"}
    claims.withhold([5])
    assert claims.free_count[1] == 7 and 5 not in claims.owner


def test_save_and_restore(claims: Claims) -> None:
    saved = claims.save()
    claims.claim("db", [2, 10])
    claims.protected[0] += 1 << 20
    claims.restore(saved)
    assert (claims.free_count, claims.owner, claims.protected) == ({0: 7, 1: 8}, {}, {0: 0, 1: 0})
    claims.claim("db", [3])
    claims.restore(saved)  # usable again
    assert claims.free_count == {0: 7, 1: 8}


def test_who_shares_a_tenants_cores(claims: Claims) -> None:
    claims.claim("db", [1])
    assert claims.shares_core("web", [9, 8]) == {"db": ({9}, {1}), "housekeeping": ({8}, {0})}
    assert claims.shares_core("db", [9]) == {}


def test_whole_cores_and_cores_of_several_nodes(claims: Claims) -> None:
    claims.claim("db", [1])
    assert claims.whole_cores(0) == [(2, 10), (3, 11)]
    assert cores_of(claims, [1, 0])[:3] == [(0, 8), (1, 9), (2, 10)]  # in CPU order


def test_memory_protection_fits_the_node(claims: Claims) -> None:
    claims.protected[0] = 900 << 20
    assert claims.memory_fits(0, 124 << 20)
    assert not claims.memory_fits(0, 125 << 20)
    unknown = Claims(smt_topology(memory=0))
    assert unknown.memory_fits(0, 1 << 40)  # no memory size known: nothing to compare with


# --- last-level cache groups -----------------------------------------------------------------


def cached_topology(groups: list[int]) -> Topology:
    """One node of single-thread cores in last-level cache groups of the given sizes, CPUs
    numbered group after group (groups [4, 4]: 0-3 share a cache, 4-7 another)."""
    cpus, first = [], 0
    for size in groups:
        members = frozenset(range(first, first + size))
        cpus += [Cpu(c, True, 0, package=0, core=c, siblings=frozenset({c}), cache=members)
                 for c in sorted(members)]
        first += size
    return build_topology([Node(0, frozenset(range(first)), 1 << 30)], cpus, "test")


def test_a_pick_that_fits_one_cache_group_takes_the_fullest_such_group() -> None:
    claims = Claims(cached_topology([4, 4]))
    claims.claim("other", [0])  # group 0-3 has 3 free cores, group 4-7 all 4
    cores = claims.node_cores[0]
    assert claims.pick("t", cores, 3, shared=False) == [1, 2, 3]  # best fit: the 3 left
    assert claims.pick("t", cores, 4, shared=False) == [4, 5, 6, 7]


def test_a_pick_bigger_than_a_group_takes_the_fewest_groups() -> None:
    claims = Claims(cached_topology([2, 4, 3]))
    assert sorted(claims.pick("t", claims.node_cores[0], 6, shared=False) or []) == [
        2, 3, 4, 5, 6, 7]  # the 4-group and 2 of the 3-group: two groups, not three


def test_a_growing_tenant_stays_in_its_own_group() -> None:
    claims = Claims(cached_topology([4, 4]))
    claims.claim("other", [0, 1])
    claims.claim("t", [6, 7])  # 2 free in each group: best fit alone would take 2, 3
    assert claims.pick("t", claims.node_cores[0], 2, shared=False) == [2, 3]
    assert claims.pick("t", claims.node_cores[0], 2, shared=False, near=[6, 7]) == [4, 5]


def test_without_cache_groups_cores_are_taken_in_order() -> None:
    claims = Claims(smt_topology())
    assert claims.pick("t", claims.node_cores[1], 4, shared=False) == [4, 12, 5, 13]
