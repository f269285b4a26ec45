"""Last-level cache groups: which of a node's CPUs share one last-level cache (pure).

A reader gives each CPU the CPUs sharing its last-level cache as the kernel lists them
(`cpuN/cache/indexM/shared_cpu_list`), or nothing. `build_topology` asks `node_cache_groups`
what they make of each node: groups that split the node's CPUs (the L3 of each AMD CCX or
CCD), or a reason the node stands in for them, so `Topology.cache_groups(node)` always
partitions the node.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Protocol


class CacheSharing(StrEnum):
    """How a node's CPUs share their last-level caches, as `build_topology` found it. Only
    with GROUPS do its CPUs carry `Cpu.cache`; otherwise the node stands in for the group."""

    GROUPS = "groups"  # one or more caches, each within the node (AMD: one L3 per CCX/CCD)
    SPANS_NODES = "spans-nodes"  # one cache reaches beyond the node (Intel Sub-NUMA Clustering)
    PER_CORE = "per-core"  # every core has its own: no group of cores to keep together
    UNKNOWN = "unknown"  # no cache facts (no cpuN/cache), or lists that contradict each other


class CpuWithCache(Protocol):
    """What is read of a CPU (slicectl.core.placement.topology.Cpu; no import: the topology
    imports this module)."""

    @property
    def id(self) -> int: ...
    @property
    def siblings(self) -> frozenset[int]: ...
    @property
    def cache(self) -> frozenset[int]: ...


def node_cache_groups(node: frozenset[int], stated: CacheSharing, own: Sequence[CpuWithCache],
                      online: frozenset[int]
                      ) -> tuple[CacheSharing, dict[int, frozenset[int]]]:
    """How the online CPUs `own` of the node whose CPUs are `node` share their last-level
    caches, and each CPU's group when they split the node into groups (each CPU in exactly
    one, all within the node).

    Otherwise the node stands in for every CPU's group: when one cache reaches beyond it
    (Sub-NUMA Clustering: one L3 per package, two nodes), when every group is one core's
    (an Arm server whose last level is a per-core L2: there is nothing to keep together), or
    when the groups are unknown or contradict each other. `stated` is what an export said of
    the node (its lists are not exported when the node stands in): a reason it gives stands
    when its CPUs carry no groups.
    """
    group = {c.id: c.cache & online for c in own}
    if not own or not any(group.values()):
        keep = stated in (CacheSharing.SPANS_NODES, CacheSharing.PER_CORE)
        return (stated if keep and own else CacheSharing.UNKNOWN), {}
    if not all(group.values()):
        return CacheSharing.UNKNOWN, {}
    if any(not g <= node for g in group.values()):
        return CacheSharing.SPANS_NODES, {}
    # Each CPU in its own group, and distinct groups disjoint: then every CPU's group names
    # the same group for each of its members (distinct lists are few: compare those).
    distinct = set(group.values())
    if (any(cid not in g for cid, g in group.items())
            or sum(map(len, distinct)) != len(frozenset().union(*distinct))):
        return CacheSharing.UNKNOWN, {}
    if all(group[c.id] <= c.siblings | {c.id} for c in own):
        return CacheSharing.PER_CORE, {}
    return CacheSharing.GROUPS, group


def contradiction_warning(node: int) -> str:
    """What build_topology says of a node whose cache lists it could not believe."""
    return (f"node {node}: its CPUs' last-level cache lists (cpuN/cache) contradict each "
            "other or are missing for some CPUs; slicectl takes the node as their group")
