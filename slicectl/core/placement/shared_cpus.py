"""CPUs the firmware lists in several NUMA nodes: each given to one node, said why (pure).

The kernel runs every CPU on one node (`cpu_to_node`), but buggy firmware tables and some CXL
layouts make `nodeN/cpulist` list a CPU in more than one node. Nodes listing exactly the same
CPUs are merged before this (`slicectl.core.placement.topology.merge_shared_cpus`); what is left is
a few CPUs in several otherwise distinct nodes. Merging those whole nodes would turn a 2-socket
machine into one node for the sake of one CPU, so each such CPU goes to one of its nodes
instead, the choice and its reason reported in the topology's `warnings`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Protocol

from slicectl.core.cpulist import format_cpulist


class CpuWithPackage(Protocol):
    """What is read of a topology's CPU (slicectl.core.placement.topology.Cpu; no import: it calls
    us)."""

    @property
    def id(self) -> int: ...
    @property
    def package(self) -> int | None: ...
    @property
    def siblings(self) -> frozenset[int]: ...


class NodeWithCpus(Protocol):
    """What is read of a topology's node (slicectl.core.placement.topology.Node)."""

    @property
    def id(self) -> int: ...
    @property
    def cpus(self) -> frozenset[int]: ...

# Why a node was chosen ({its}: "its" or "their").
_SIBLINGS = "where {its} SMT siblings are listed"
_PACKAGE = "where most of {its} package's other CPUs are listed"
_LOWEST = "the lowest-numbered of them (nothing else tells them apart)"


def assign_shared_cpus(nodes: Sequence[NodeWithCpus], cpus: Sequence[CpuWithPackage]
                       ) -> tuple[dict[int, int], tuple[str, ...]]:
    """The one node of every CPU listed in several `nodes` (CPU -> node id), and one warning
    per group of CPUs with the same nodes, choice and reason."""
    listed: dict[int, list[int]] = defaultdict(list)  # CPU -> the nodes listing it
    for n in sorted(nodes, key=lambda n: n.id):
        for c in n.cpus:
            listed[c].append(n.id)
    shared = {c: ids for c, ids in listed.items() if len(ids) > 1}
    if not shared:
        return {}, ()
    only = {c: ids[0] for c, ids in listed.items() if len(ids) == 1}  # the CPUs not in doubt
    by_id = {c.id: c for c in cpus}
    chosen: dict[int, int] = {}
    said: dict[tuple[tuple[int, ...], int, str], set[int]] = defaultdict(set)
    for c, ids in sorted(shared.items()):
        node, why = _choose(by_id.get(c), ids, only, by_id)
        chosen[c] = node
        said[(tuple(ids), node, why)].add(c)
    return chosen, tuple(_warning(c, ids, node, why) for (ids, node, why), c in said.items())


def _choose(cpu: CpuWithPackage | None, ids: list[int], only: Mapping[int, int],
            by_id: Mapping[int, CpuWithPackage]) -> tuple[int, str]:
    """The node for a CPU listed in `ids`: its SMT siblings' node, else its package's, else
    the lowest id."""
    if cpu is not None:
        siblings = [only[s] for s in cpu.siblings if s != cpu.id and only.get(s) in ids]
        if siblings:
            return _most(siblings), _SIBLINGS
        if cpu.package is not None:
            package = [only[o.id] for o in by_id.values() if o.package == cpu.package
                       and o.id != cpu.id and only.get(o.id) in ids]
            if package:
                return _most(package), _PACKAGE
    return min(ids), _LOWEST


def _most(ids: list[int]) -> int:
    counts: dict[int, int] = defaultdict(int)
    for i in ids:
        counts[i] += 1
    return min(counts, key=lambda i: (-counts[i], i))


def _warning(cpus: set[int], ids: tuple[int, ...], node: int, why: str) -> str:
    one = len(cpus) == 1
    what = f"CPU {min(cpus)} is" if one else f"CPUs {format_cpulist(frozenset(cpus))} are"
    nodes = ", ".join(map(str, ids[:-1])) + f" and {ids[-1]}"
    return (f"{what} listed in nodes {nodes} (their cpulist files), but the kernel runs each "
            "CPU on one node (a firmware NUMA table error, or a CXL layout): slicectl puts "
            f"{'it' if one else 'them'} in node {node}, "
            + why.format(its="its" if one else "their"))
