"""The host's NUMA topology as pure data: nodes, CPUs, SMT siblings, memory, distances.

Built by `slicectl.sysfs.read_topology(root)` from a sysfs tree, or loaded from the JSON that
`slicectl topology --json` exports, so units for a host can be generated anywhere.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from slicectl.cpulist import format_cpulist, parse_cpulist
from slicectl.errors import TopologyError

FORMAT = "slicectl-topology/1"
LOCAL_DISTANCE = 10


@dataclass(frozen=True)
class Cpu:
    """One logical CPU. Offline CPUs have no node/core facts the kernel will tell us."""

    id: int
    online: bool
    node: int | None
    package: int | None = None
    die: int | None = None
    core: int | None = None
    siblings: frozenset[int] = frozenset()  # SMT thread siblings, including this CPU

    def core_key(self) -> tuple[int, int, int, int]:
        """Identity of the physical core this CPU is a thread of."""
        if self.siblings:
            return (-1, -1, -1, min(self.siblings))
        return (self.package or 0, self.die or 0, self.core if self.core is not None else self.id,
                self.id if self.core is None else -1)


@dataclass(frozen=True)
class Node:
    """One NUMA node: its online CPUs, its memory, its distance to every node."""

    id: int
    cpus: frozenset[int]
    memory_bytes: int
    distances: Mapping[int, int] = field(default_factory=dict)

    @property
    def has_memory(self) -> bool:
        return self.memory_bytes > 0


@dataclass(frozen=True)
class Topology:
    """Nodes and CPUs of one host; `source` says where it was read from."""

    nodes: tuple[Node, ...]
    cpus: tuple[Cpu, ...]
    source: str = ""
    # The release of the host's systemd when known (`slicectl topology --json` on the host
    # records it), so units generated elsewhere are checked against it (slicectl.versions).
    systemd_version: int | None = None

    def __post_init__(self) -> None:
        if not self.nodes:
            raise TopologyError(
                f"{self.source or 'topology'}: no NUMA nodes found",
                "point --sysfs at a sysfs root with devices/system/node/node*",
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

    def node(self, node_id: int) -> Node:
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise KeyError(node_id)

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

    def distance(self, a: int, b: int) -> int:
        """SLIT distance; 10 for a node to itself, 20 when the kernel gave none."""
        if a == b:
            return LOCAL_DISTANCE
        return self.node(a).distances.get(b, 2 * LOCAL_DISTANCE)

    def memory_nodes_for(self, node_id: int) -> tuple[int, ...]:
        """Where a tenant on `node_id` should get memory: itself, or the nearest node(s) with
        memory when it has none (a CPU-only node, DESIGN §4)."""
        if self.node(node_id).has_memory:
            return (node_id,)
        with_mem = [n.id for n in self.nodes if n.has_memory]
        if not with_mem:
            return ()
        best = min(self.distance(node_id, m) for m in with_mem)
        return tuple(sorted(m for m in with_mem if self.distance(node_id, m) == best))

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
            "nodes": [
                {
                    "id": n.id,
                    "cpus": format_cpulist(n.cpus),
                    "memory_bytes": n.memory_bytes,
                    "distances": {str(k): v for k, v in sorted(n.distances.items())},
                }
                for n in sorted(self.nodes, key=lambda n: n.id)
            ],
            "cpus": [
                {
                    "id": c.id,
                    "online": c.online,
                    "node": c.node,
                    "package": c.package,
                    "die": c.die,
                    "core": c.core,
                    "siblings": format_cpulist(c.siblings),
                }
                for c in sorted(self.cpus, key=lambda c: c.id)
            ],
        }

    @classmethod
    def from_json(cls, data: Any, source: str = "") -> Topology:
        """Read back what to_json wrote; raises TopologyError naming the bad field."""
        where = source or "topology JSON"
        try:
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                raise TopologyError(
                    f"{where}: not a slicectl topology export (format is not {FORMAT!r})",
                    "create one with `slicectl topology --json > topology.json` on the host",
                )
            nodes = tuple(
                Node(
                    id=int(n["id"]),
                    cpus=parse_cpulist(str(n["cpus"])),
                    memory_bytes=int(n["memory_bytes"]),
                    distances={int(k): int(v) for k, v in dict(n.get("distances", {})).items()},
                )
                for n in data["nodes"]
            )
            cpus = tuple(
                Cpu(
                    id=int(c["id"]),
                    online=bool(c["online"]),
                    node=None if c.get("node") is None else int(c["node"]),
                    package=None if c.get("package") is None else int(c["package"]),
                    die=None if c.get("die") is None else int(c["die"]),
                    core=None if c.get("core") is None else int(c["core"]),
                    siblings=parse_cpulist(str(c.get("siblings", ""))),
                )
                for c in data["cpus"]
            )
        except TopologyError:
            raise
        except (KeyError, TypeError, ValueError) as e:
            raise TopologyError(
                f"{where}: malformed topology export ({type(e).__name__}: {e})",
                "re-export it with `slicectl topology --json`",
            ) from e
        version = data.get("systemd_version")
        if version is not None and (isinstance(version, bool) or not isinstance(version, int)
                                    or not 0 < version < 100_000):
            raise TopologyError(f"{where}: systemd_version {version!r} is not a release "
                                "number such as 252",
                                "re-export it with `slicectl topology --json`")
        return cls(nodes=nodes, cpus=cpus, source=source or str(data.get("source", "")),
                   systemd_version=version)


def load_topology_file(path: str) -> Topology:
    """Load a `slicectl topology --json` export."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise TopologyError(f"{path}: cannot read topology file: {e.strerror}",
                            "check the path given to --topology") from e
    except json.JSONDecodeError as e:
        raise TopologyError(f"{path}:{e.lineno}: not valid JSON: {e.msg}",
                            "create it with `slicectl topology --json > FILE`") from e
    return Topology.from_json(data, source=path)
