"""The host's NUMA topology as pure data: nodes, CPUs, SMT siblings, last-level cache groups,
memory, distances.

Built by `slicectl.host.topology.sysfs.read_topology(root)` from a sysfs tree, or parsed from the
JSON that `slicectl topology --json` exports (`parse_topology_json`), so units for a host can be
generated anywhere. Both go through `build_topology`, which repairs what firmware gets wrong and
keeps each CPU's last-level cache group within its node (`slicectl.core.placement.cache_groups`).

Why this module runs past 400 lines: the export's reader stays beside the model it builds.
`Topology.from_json` reads through it and `build_topology`, so a module of its own would
import this one and be imported by it (an import cycle, tests/test_layers.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field, replace
from typing import Any

from slicectl.core.config.jsoninput import JsonReader, kind
from slicectl.core.cpulist import KERNEL_MAX_CPUS, format_cpulist
from slicectl.core.errors import TopologyError
from slicectl.core.frozen import frozen
from slicectl.core.placement.cache_groups import (
    CacheSharing,
    contradiction_warning,
    node_cache_groups,
)

FORMAT = "slicectl-topology/1"
LOCAL_DISTANCE = 10
REMOTE_DISTANCE = 2 * LOCAL_DISTANCE  # assumed when the kernel gave no distance


@frozen
class Cpu:
    """One logical CPU. Offline CPUs have no node/core facts the kernel will tell us."""

    id: int
    online: bool
    node: int | None
    package: int | None = None
    die: int | None = None
    core: int | None = None
    siblings: frozenset[int] = frozenset()  # SMT thread siblings, including this CPU
    # The online CPUs sharing this CPU's last-level cache, itself included (sysfs
    # cpuN/cache/indexM/shared_cpu_list of the highest level). Empty when unknown, when the
    # cache reaches beyond this CPU's node (one L3 per package with Sub-NUMA Clustering), or
    # when every core of the node has its own: then the node stands in for it
    # (`Topology.cache_group`; `Node.cache_sharing` says why). `build_topology` ensures that
    # the groups of a node's CPUs are all known and split its CPUs, or are all empty.
    cache: frozenset[int] = frozenset()

    def core_key(self) -> tuple[int, int, int, int]:
        """Identity of the physical core this CPU is a thread of."""
        if self.siblings:
            return (-1, -1, -1, min(self.siblings))
        return (self.package or 0, self.die or 0, self.core if self.core is not None else self.id,
                self.id if self.core is None else -1)


@frozen
class Node:
    """One NUMA node: its online CPUs, its memory, its distance to every node.

    `merged` holds the kernel nodes folded into this one because the firmware listed the
    same CPUs in them (id -> MemTotal); their memory is part of `memory_bytes`.
    `cache_sharing` says whether its CPUs' last-level cache groups are known (`Cpu.cache`),
    and why the node stands in for them when they are not.
    """

    id: int
    cpus: frozenset[int]
    memory_bytes: int
    distances: Mapping[int, int] = field(default_factory=dict)
    merged: Mapping[int, int] = field(default_factory=dict)
    cache_sharing: CacheSharing = CacheSharing.UNKNOWN

    @property
    def has_memory(self) -> bool:
        return self.memory_bytes > 0

    @property
    def own_memory(self) -> int:
        """MemTotal of the kernel node with this id alone (without merged nodes)."""
        return self.memory_bytes - sum(self.merged.values())

    def memory_node_ids(self) -> tuple[int, ...]:
        """The kernel nodes that hold this node's memory (for AllowedMemoryNodes)."""
        ids = [self.id] if self.own_memory > 0 else []
        return tuple(sorted(ids + [m for m, size in self.merged.items() if size > 0]))


@frozen
class Topology:
    """Nodes and CPUs of one host; `source` says where it was read from.

    `warnings` are what `build_topology` repaired (said once, by the front end); they are
    not part of the topology's identity.
    """

    nodes: tuple[Node, ...]
    cpus: tuple[Cpu, ...]
    source: str = ""
    # The release of the host's systemd when known (`slicectl topology --json` on the host
    # records it), so units made elsewhere are checked against it (core/properties/versions.py).
    systemd_version: int | None = None
    # The kernel's task limit as systemd computes it and resolves TasksMax=50% against
    # (system_tasks_max: threads-max, pid_max - 1, root pids.max; 0: unknown).
    task_limit: int = 0
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if not self.nodes:
            raise TopologyError(
                f"{self.source or 'topology'}: no NUMA nodes found",
                "point --sysfs at a sysfs root with devices/system/cpu, or --topology at an "
                "export of `slicectl topology --json`",
            )

    # --- lookups -------------------------------------------------------------------------
    @property
    def online_cpus(self) -> frozenset[int]:
        return frozenset(c.id for c in self.cpus if c.online)

    @property
    def offline_cpus(self) -> frozenset[int]:
        return frozenset(c.id for c in self.cpus if not c.online)

    @property
    def total_memory(self) -> int:
        return sum(n.memory_bytes for n in self.nodes)

    @property
    def cpus_by_node(self) -> dict[int, frozenset[int]]:
        """Each NUMA node's id and its CPUs."""
        return {n.id: n.cpus for n in self.nodes}

    def node(self, node_id: int) -> Node:
        """The node with this id; a kernel node merged into another resolves to that one."""
        for n in self.nodes:
            if n.id == node_id or node_id in n.merged:
                return n
        raise KeyError(node_id)

    def has_node(self, node_id: int) -> bool:
        return any(n.id == node_id or node_id in n.merged for n in self.nodes)

    def node_ids(self) -> tuple[int, ...]:
        return tuple(n.id for n in self.nodes)

    def cpu(self, cpu_id: int) -> Cpu:
        for c in self.cpus:
            if c.id == cpu_id:
                return c
        raise KeyError(cpu_id)

    def node_of(self, cpu_id: int) -> int | None:
        for n in self.nodes:
            if cpu_id in n.cpus:
                return n.id
        return None

    def cache_group(self, cpu_id: int) -> frozenset[int]:
        """The online CPUs sharing `cpu_id`'s last-level cache, never beyond its node: where
        the node stands in (the cache is unknown, shared across nodes or per core), its
        node's CPUs."""
        cpu = self.cpu(cpu_id)
        if cpu.cache:
            return cpu.cache
        node = self.node_of(cpu_id)
        return self.node(node).cpus if node is not None else frozenset({cpu_id})

    def cache_groups(self, node_id: int) -> tuple[frozenset[int], ...]:
        """The last-level cache groups of one node, by lowest CPU (one group, the node's
        CPUs, where the node stands in)."""
        groups = {self.cache_group(c) for c in self.node(node_id).cpus}
        return tuple(sorted(groups, key=min))

    def distance(self, a: int, b: int) -> int:
        """SLIT distance; 10 for a node to itself, 20 when the kernel gave none."""
        na, nb = self.node(a), self.node(b)
        if na.id == nb.id:
            return LOCAL_DISTANCE
        return na.distances.get(nb.id, REMOTE_DISTANCE)

    def memory_nodes_for(self, node_id: int) -> tuple[int, ...]:
        """Where a tenant on `node_id` should get memory: its own, or that of the nearest
        node(s) with memory when it has none (a CPU-only node, DESIGN §4)."""
        node = self.node(node_id)
        if node.has_memory:
            return node.memory_node_ids()
        with_mem = [n.id for n in self.nodes if n.has_memory]
        if not with_mem:
            return ()
        best = min(self.distance(node.id, m) for m in with_mem)
        return tuple(sorted(k for m in with_mem if self.distance(node.id, m) == best
                            for k in self.node(m).memory_node_ids()))

    def cores(self, cpus: frozenset[int] | None = None) -> list[tuple[int, ...]]:
        """Online CPUs grouped into physical cores (SMT siblings together), in CPU order.

        With `cpus`, only those CPUs are considered (a partial core keeps its members).
        """
        pool = self.online_cpus if cpus is None else cpus & self.online_cpus
        groups: dict[tuple[int, int, int, int], list[int]] = {}
        for c in sorted(self.cpus, key=lambda c: c.id):
            if c.id in pool:
                groups.setdefault(c.core_key(), []).append(c.id)
        return sorted((tuple(g) for g in groups.values()), key=lambda g: g[0])

    # --- JSON ----------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """A stable, documented JSON form (see docs/topology-json.md)."""
        return {
            "format": FORMAT,
            "source": self.source,
            "systemd_version": self.systemd_version,
            **({"task_limit": self.task_limit} if self.task_limit else {}),
            "nodes": [_node_json(n) for n in sorted(self.nodes, key=lambda n: n.id)],
            "cpus": [{"id": c.id, "online": c.online, "node": c.node, "package": c.package,
                      "die": c.die, "core": c.core, "siblings": format_cpulist(c.siblings),
                      "cache": format_cpulist(c.cache)}
                     for c in sorted(self.cpus, key=lambda c: c.id)],
        }

    @classmethod
    def from_json(cls, data: Any, source: str = "") -> Topology:
        """Read back what to_json wrote; raises TopologyError naming the file and JSON path
        of the first thing wrong (the export is input like tenants.yaml: validate it all)."""
        return _ExportReader(source or "topology JSON").topology(data, source)


def build_topology(nodes: Sequence[Node], cpus: Sequence[Cpu], source: str,
                   systemd_version: int | None = None, task_limit: int = 0) -> Topology:
    """A Topology from what a reader found, with nodes that list the same CPUs merged and
    a CPU listed in several distinct nodes kept in one of them.

    Some firmware lists every CPU in every node (all nodes "0-7", every distance 10). The
    kernel then puts each CPU in one of them, and readers disagreed about which; the honest
    reading is one node whose memory is all of theirs. A CPU listed in nodes whose lists
    otherwise differ goes to one of them (`slicectl.core.placement.shared_cpus`). Each CPU's
    last-level cache group is kept only where the node's groups split its CPUs
    (`slicectl.core.placement.cache_groups`); lists that contradict each other are dropped.
    Each repair is reported in `warnings`.
    """
    from slicectl.core.placement.shared_cpus import assign_shared_cpus

    merged, merges = merge_shared_cpus(nodes)
    chosen, assigned = assign_shared_cpus(merged, cpus)
    if chosen:
        merged = tuple(replace(n, cpus=frozenset(c for c in n.cpus if chosen.get(c, n.id) == n.id))
                       for n in merged)
    online = frozenset(c.id for c in cpus if c.online)
    node_of = {c: n.id for n in merged for c in n.cpus}
    fixed = {c.id: replace(c, node=node_of.get(c.id), cache=frozenset()) if c.online
             else replace(c, cache=frozenset()) for c in cpus}
    on_node: dict[int, list[Cpu]] = {}
    for c in cpus:
        if c.online and c.id in node_of:
            on_node.setdefault(node_of[c.id], []).append(c)
    result: list[Node] = []
    cache_warnings: list[str] = []
    for n in merged:
        own = on_node.get(n.id, [])
        sharing, groups = node_cache_groups(n.cpus, n.cache_sharing, own, online)
        if sharing is CacheSharing.UNKNOWN and any(c.cache for c in own):
            cache_warnings.append(contradiction_warning(n.id))
        result.append(replace(n, cache_sharing=sharing))
        for cid, group in groups.items():
            fixed[cid] = replace(fixed[cid], cache=group)
    return Topology(nodes=tuple(result), cpus=tuple(fixed[c.id] for c in cpus), source=source,
                    systemd_version=systemd_version, task_limit=task_limit,
                    warnings=merges + assigned + tuple(cache_warnings))


def merge_shared_cpus(nodes: Sequence[Node]) -> tuple[tuple[Node, ...], tuple[str, ...]]:
    """Nodes that list the same CPUs become one node (lowest id); warnings say which."""
    groups = _identical_groups(sorted(nodes, key=lambda n: n.id))
    if all(len(g) == 1 for g in groups):
        return tuple(sorted(nodes, key=lambda n: n.id)), ()
    result: list[Node] = []
    warnings: list[str] = []
    for group in groups:
        head = group[0]
        folded: dict[int, int] = {}
        for n in group:
            folded.update(n.merged)
            if n is not head:
                folded[n.id] = n.own_memory
        result.append(Node(
            id=head.id, cpus=frozenset().union(*(n.cpus for n in group)),
            memory_bytes=sum(n.memory_bytes for n in group),
            distances=_group_distances(group, groups), merged=dict(sorted(folded.items()))))
        if len(group) > 1:
            warnings.append(_merge_warning(group))
    return tuple(result), tuple(warnings)


def _identical_groups(nodes: Sequence[Node]) -> list[list[Node]]:
    """Nodes grouped by their CPU list; nodes without CPUs each on their own."""
    groups: dict[frozenset[int] | int, list[Node]] = {}
    for n in nodes:
        groups.setdefault(n.cpus or -1 - n.id, []).append(n)
    return [sorted(g, key=lambda n: n.id) for g in groups.values()]


def _group_distances(group: Sequence[Node], groups: Iterable[Sequence[Node]]
                     ) -> dict[int, int]:
    """Distance from a merged group to each other group: the nearest pair of members."""
    result = {group[0].id: LOCAL_DISTANCE}
    for other in groups:
        if other[0].id == group[0].id:
            continue
        known = [a.distances[b.id] for a in group for b in other if b.id in a.distances]
        if known:
            result[other[0].id] = min(known)
    return result


def _merge_warning(group: Sequence[Node]) -> str:
    ids = ", ".join(str(n.id) for n in group)
    cpus = format_cpulist(group[0].cpus)
    return (f"nodes {ids} list the same CPUs ({cpus}), which "
            f"no real machine has (a firmware NUMA table error): slicectl treats them as one "
            f"node {group[0].id} with the memory of all of them")


# --- the JSON export, read as untrusted input -------------------------------------------------

MAX_NODES = 1024  # the kernel's MAX_NUMNODES with the largest NODES_SHIFT (10)
MAX_BYTES = 2**64  # memory sizes are u64 in the kernel and in systemd
MAX_TASKS = 2**64  # systemd's task limit is a u64
MAX_DISTANCE = 255  # SLIT entries are one byte


def _node_json(n: Node) -> dict[str, Any]:
    d: dict[str, Any] = {
        "id": n.id,
        "cpus": format_cpulist(n.cpus),
        "memory_bytes": n.memory_bytes,
        "distances": {str(k): v for k, v in sorted(n.distances.items())},
        "cache_sharing": n.cache_sharing.value,
    }
    if n.merged:  # only on hosts whose firmware listed the same CPUs in several nodes
        d["merged"] = {str(k): v for k, v in sorted(n.merged.items())}
    return d


def parse_topology_json(data: bytes, source: str) -> Topology:
    """Parse the bytes of a `slicectl topology --json` export (the file named `source`)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise TopologyError(f"{source}:{line}: not UTF-8 text (byte {data[e.start]:#04x})",
                            _REEXPORT) from e
    try:
        parsed = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as e:
        raise TopologyError(f"{source}:{e.lineno}: not valid JSON: {e.msg}",
                            "create it with `slicectl topology --json > FILE`") from e
    except RecursionError as e:
        raise TopologyError(f"{source}: not a topology export: nested too deeply",
                            _REEXPORT) from e
    except ValueError as e:  # Infinity/NaN, or an integer too long to convert
        why = str(e) if "JSON number" in str(e) else "a number has thousands of digits"
        raise TopologyError(f"{source}: not valid JSON: {why}", _REEXPORT) from e
    return Topology.from_json(parsed, source)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


_REEXPORT = "re-export it on the host with `slicectl topology --json > FILE`"


class _ExportReader(JsonReader):
    """Reads one decoded export, naming the file and JSON path of the first thing wrong."""

    def __init__(self, where: str) -> None:
        super().__init__(where, _REEXPORT)

    def topology(self, data: Any, source: str) -> Topology:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise TopologyError(
                f"{self.where}: not a slicectl topology export (format is not {FORMAT!r})",
                "create one with `slicectl topology --json > topology.json` on the host")
        nodes = tuple(self.node(n, f"nodes[{i}]")
                      for i, n in enumerate(self.items(data, "nodes")))
        if not nodes:
            raise self.fail("nodes", "lists no node (every host has at least one)")
        cpus = tuple(self.cpu(c, f"cpus[{i}]") for i, c in enumerate(self.items(data, "cpus")))
        self.check_ids(nodes, cpus)
        name = self.text(data.get("source", ""), "source")
        task_limit = self.integer(data.get("task_limit", 0), "task_limit", 0, MAX_TASKS)
        return build_topology(nodes, cpus, source or name, self.release(data), task_limit)

    def release(self, data: dict[str, Any]) -> int | None:
        """systemd_version: null (unknown), or a release number such as 252."""
        version = data.get("systemd_version")
        if version is not None and (isinstance(version, bool) or not isinstance(version, int)
                                    or not 0 < version < 100_000):
            raise self.fail("systemd_version",
                            f"{version!r} is not a release number such as 252")
        return version

    def node(self, value: Any, path: str) -> Node:
        n = self.mapping(value, path)
        return Node(
            id=self.integer(self.field(n, "id", path), f"{path}.id", 0, MAX_NODES),
            cpus=self.cpulist(self.field(n, "cpus", path), f"{path}.cpus"),
            memory_bytes=self.integer(self.field(n, "memory_bytes", path),
                                      f"{path}.memory_bytes", 0, MAX_BYTES),
            distances=self.id_map(n.get("distances", {}), f"{path}.distances", MAX_NODES,
                                  MAX_DISTANCE + 1),
            merged=self.id_map(n.get("merged", {}), f"{path}.merged", MAX_NODES, MAX_BYTES),
            cache_sharing=self.cache_sharing(n.get("cache_sharing", CacheSharing.UNKNOWN.value),
                                             f"{path}.cache_sharing"),
        )

    def cache_sharing(self, value: Any, path: str) -> CacheSharing:
        """One of the CacheSharing words; exports before it was written say nothing."""
        word = self.text(value, path)
        choices = [s.value for s in CacheSharing]
        if word not in choices:
            raise self.fail(path, f"{word[:40]!r} is not one of {', '.join(choices)}")
        return CacheSharing(word)

    def cpu(self, value: Any, path: str) -> Cpu:
        c = self.mapping(value, path)
        online = self.field(c, "online", path)
        if not isinstance(online, bool):
            raise self.fail(f"{path}.online", f"must be true or false, not {kind(online)}")
        return Cpu(
            id=self.integer(self.field(c, "id", path), f"{path}.id", 0, KERNEL_MAX_CPUS),
            online=online,
            node=self.optional(c.get("node"), f"{path}.node", 0, MAX_NODES),
            # physical_package_id is -1 on some platforms; core and die ids are never negative.
            package=self.optional(c.get("package"), f"{path}.package", -1, 2**31),
            die=self.optional(c.get("die"), f"{path}.die", 0, 2**31),
            core=self.optional(c.get("core"), f"{path}.core", 0, 2**31),
            siblings=self.cpulist(c.get("siblings", ""), f"{path}.siblings"),
            # Absent in exports written before slicectl read caches: unknown.
            cache=self.cpulist(c.get("cache", ""), f"{path}.cache"),
        )

    def check_ids(self, nodes: Sequence[Node], cpus: Sequence[Cpu]) -> None:
        """Ids unique, and every reference (CPU lists, node of a CPU, distances) resolves."""
        node_ids = _unique(self, [n.id for n in nodes], "nodes", "node")
        _unique(self, [c.id for c in cpus], "cpus", "CPU")
        known = node_ids | {m for n in nodes for m in n.merged}
        online = {c.id for c in cpus if c.online}
        for i, n in enumerate(nodes):
            if stray := n.cpus - online:
                raise self.fail(f"nodes[{i}].cpus", f"CPU(s) {format_cpulist(stray)} are not "
                                                    "online CPUs listed in cpus")
            if bad := sorted(set(n.distances) - known):
                raise self.fail(f"nodes[{i}].distances", f"no node {bad[0]} in nodes")
        for i, c in enumerate(cpus):
            if c.node is not None and c.node not in known:
                raise self.fail(f"cpus[{i}].node", f"no node {c.node} in nodes")


def _unique(reader: _ExportReader, ids: list[int], path: str, what: str) -> set[int]:
    seen: set[int] = set()
    for i, x in enumerate(ids):
        if x in seen:
            raise reader.fail(f"{path}[{i}].id", f"{what} {x} is listed twice")
        seen.add(x)
    return seen

