"""CPUs the firmware lists in several NUMA nodes (slicectl.core.placement.shared_cpus): each goes to
one node, by its SMT siblings, else its package, else the lowest node id, and the choice is said."""

from __future__ import annotations

from slicectl.core.placement.shared_cpus import assign_shared_cpus
from slicectl.core.placement.topology import Cpu, Node

WHY_KERNEL = ("(their cpulist files), but the kernel runs each CPU on one node (a firmware NUMA "
              "table error, or a CXL layout): slicectl puts")


def cpu(c: int, package: int, siblings: set[int] | None = None) -> Cpu:
    return Cpu(c, True, None, package=package, siblings=frozenset(siblings or {c}))


NODES = [Node(0, frozenset({0, 1, 2}), 1 << 30), Node(1, frozenset({2, 3, 4, 5}), 1 << 30)]


def test_no_cpu_in_two_nodes_changes_nothing() -> None:
    assert assign_shared_cpus([Node(0, frozenset({0, 1}), 1), Node(1, frozenset({2}), 1)],
                              []) == ({}, ())


def test_a_cpu_goes_where_its_smt_siblings_are() -> None:
    cpus = [cpu(0, 0), cpu(1, 0), cpu(2, 0, {2, 3}), cpu(3, 0, {2, 3}), cpu(4, 0), cpu(5, 0)]
    assert assign_shared_cpus(NODES, cpus) == ({2: 1}, (
        f"CPU 2 is listed in nodes 0 and 1 {WHY_KERNEL} it in node 1, where its SMT siblings "
        "are listed",))


def test_else_where_most_of_its_package_is() -> None:
    cpus = [cpu(0, 0), cpu(1, 0), cpu(2, 0), cpu(3, 1), cpu(4, 1), cpu(5, 1)]
    assert assign_shared_cpus(NODES, cpus) == ({2: 0}, (
        f"CPU 2 is listed in nodes 0 and 1 {WHY_KERNEL} it in node 0, where most of its "
        "package's other CPUs are listed",))


def test_else_the_lowest_node_and_one_warning_per_group() -> None:
    nodes = [Node(1, frozenset({2, 3, 6, 7}), 1), Node(0, frozenset({0, 1, 6, 7}), 1)]
    assert assign_shared_cpus(nodes, []) == ({6: 0, 7: 0}, (
        f"CPUs 6,7 are listed in nodes 0 and 1 {WHY_KERNEL} them in node 0, the "
        "lowest-numbered of them (nothing else tells them apart)",))
