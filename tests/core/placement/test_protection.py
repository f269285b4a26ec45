"""Memory protection must fit (slicectl.core.placement.protection): in RAM minus housekeeping, and
in the memory of the nodes each tenant's memory is bound to."""

from __future__ import annotations

from slicectl.core.config.config import load_yaml, parse_config
from slicectl.core.config.tenants import Config, Tenant
from slicectl.core.config.values import INFINITY
from slicectl.core.placement.layout import Layout, TenantPlacement
from slicectl.core.placement.protection import (
    housekeeping_memory,
    node_overcommit,
    overcommit,
    protection,
    protects,
)
from slicectl.core.placement.topology import Cpu, Node, Topology

GiB = 1 << 30
# two nodes of 4 CPUs and 4G each
TOPO = Topology(
    (Node(0, frozenset(range(4)), 4 * GiB, {0: 10, 1: 20}),
     Node(1, frozenset(range(4, 8)), 4 * GiB, {0: 20, 1: 10})),
    tuple(Cpu(c, True, c // 4, package=c // 4, core=c, siblings=frozenset({c}))
          for c in range(8)), "test")


def config(tenants: str, confine: str = "") -> Config:
    text = f"version: 1\n{confine}tenants:\n{tenants}"
    return parse_config(load_yaml(text, "t.yaml"), "t.yaml")


def bound(memory_nodes: dict[str, tuple[int, ...] | None]) -> Layout:
    """A layout that binds each tenant's memory to the given nodes (None: unbound)."""
    return Layout(frozenset(), frozenset(), tuple(
        TenantPlacement(name, frozenset(), (), mems, True, False)
        for name, mems in memory_nodes.items()))


THREE = "  db1: {cpus: 2, memory_low: 3G}\n  db2: {cpus: 2, memory_min: 2G}\n" \
        "  web: {cpus: 2, memory_low: 2G}\n"


def test_housekeeping_memory_is_the_confined_host_units_memory_max() -> None:
    c = config("  a: {cpus: 1}\n", "confine:\n  system.slice: {memory_max: 1G}\n"
                                   "  user.slice: {memory_max: 512M}\n"
                                   "  cron.service: {memory_max: 1G}\n")
    assert housekeeping_memory(c, 8 * GiB) == GiB + 512 * 2**20  # cron is in system.slice
    shares = config("  a: {cpus: 1}\n", "confine:\n  system.slice: {memory_max: 25%}\n")
    assert housekeeping_memory(shares, 8 * GiB) == 2 * GiB  # a share of the host's RAM


def test_protection_beyond_ram_minus_housekeeping() -> None:
    c = config("  db1: {cpus: 2, memory_low: 3G}\n  db2: {cpus: 2, memory_low: 2G, "
               "memory_min: 1G}\n  web: {memory_low: 1G}\n",
               "confine:\n  system.slice: {memory_max: 1G}\n  user.slice: {memory_max: 1G}\n")
    found = overcommit(c, TOPO)
    assert found is not None
    assert found.located("t.yaml") == (
        "t.yaml:8: tenants.web.memory_low: memory_low + memory_min of all tenants is 7G but RAM "
        "minus housekeeping is 6G (8G - 2G); protection beyond RAM protects nobody (the total "
        "passes it at tenant web)")


def test_protection_that_fits_and_no_protection_at_all() -> None:
    assert overcommit(config(THREE), TOPO) is None  # 7G of 8G
    assert overcommit(config("  a: {cpus: 1}\n"), TOPO) is None


def test_infinity_protects_all_of_the_ram() -> None:
    c = config("  a: {cpus: 1, memory_low: infinity}\n  b: {cpus: 1, memory_min: 1M}\n")
    assert protection(c.tenant("a"), 8 * GiB) == 8 * GiB
    assert protects(c.tenant("a")) and protects(c.tenant("b"))
    assert not protects(Tenant("c"))
    found = overcommit(c, TOPO)
    assert found is not None and found.tenant.name == "b" and found.key == "memory_min"
    assert c.tenant("a").memory_low is INFINITY


def test_tenants_bound_to_one_node_protect_more_than_it_holds() -> None:
    c = config(THREE)
    found = node_overcommit(c, TOPO, bound({"db1": (0,), "db2": (0,), "web": (1,)}))
    assert found is not None
    assert found.located("t.yaml") == (
        "t.yaml:4: tenants.db2.memory_min: tenants db1, db2 protect 5G (memory_low + "
        "memory_min) with their memory bound to node 0, which has 4G: protection beyond the "
        "memory it can be given protects nobody")
    assert found.fix == ("lower memory_low/memory_min, bind the tenant to more or other nodes "
                         "(`nodes:`, numa: spread), or numa: any to leave its memory unbound")


def test_one_tenant_alone_too_big_for_its_node() -> None:
    c = config("  db1: {cpus: 2, memory_low: 5G}\n")
    found = node_overcommit(c, TOPO, bound({"db1": (1,)}))
    assert found is not None and found.message() == (
        "tenant db1 protects 5G (memory_low + memory_min) but its memory is bound to node 1, "
        "which has 4G: protection beyond the memory it can be given protects nobody")


def test_protection_that_fits_the_bound_nodes() -> None:
    c = config(THREE)
    assert node_overcommit(c, TOPO, bound({"db1": (0,), "db2": (0, 1), "web": (0, 1)})) is None
    # unbound memory can be given anywhere
    assert node_overcommit(c, TOPO, bound({"db1": None, "db2": (0,), "web": (0,)})) is None
