"""slicectl.sysfs against fixture trees modelled on real machines (see fixtures/make_sysfs.py)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from slicectl.cpulist import format_cpulist, parse_cpulist
from slicectl.errors import TopologyError
from slicectl.sysfs import read_topology
from slicectl.topology import Topology

FIXTURES = Path(__file__).parent / "fixtures"
SYSFS = FIXTURES / "sysfs"
GiB = 1024**3
MiB = 1024**2


@dataclass(frozen=True)
class Expected:
    """What an operator should see for one machine."""

    cpus: dict[int, str]  # node id -> its online CPUs as a cpulist
    memory: dict[int, int]  # node id -> bytes
    distances: list[list[int]]  # rows in node id order
    cores: list[tuple[int, ...]]  # SMT sibling groups of all online CPUs
    offline: str = ""


def _slit(n: int, remote: int) -> list[list[int]]:
    return [[10 if a == b else remote for b in range(n)] for a in range(n)]


SHAPES: dict[str, Expected] = {
    "nehalem-ex-4node": Expected(
        cpus={0: "0,4,8,12,16,20,24,28", 1: "1,5,9,13,17,21,25,29",
              2: "2,6,10,14,18,22,26,30", 3: "3,7,11,15,19,23,27,31"},
        memory={0: 32649 * MiB, 1: 32768 * MiB, 2: 32768 * MiB, 3: 32768 * MiB},
        distances=_slit(4, 21),
        cores=[(c,) for c in range(32)],
    ),
    "xeon-2s-smt": Expected(
        cpus={0: "0-7,16-23", 1: "8-15,24-31"},
        memory={0: 96 * GiB, 1: 96 * GiB},
        distances=_slit(2, 21),
        cores=[(c, c + 16) for c in range(16)],
    ),
    "epyc-nps4": Expected(
        cpus={0: "0-7,32-39", 1: "8-15,40-47", 2: "16-23,48-55", 3: "24-31,56-63"},
        memory={n: 64 * GiB for n in range(4)},
        distances=_slit(4, 12),
        cores=[(c, c + 32) for c in range(32)],
    ),
    "offline-cpu": Expected(
        cpus={0: "0-3", 1: "4,6,7"},
        memory={0: 8 * GiB, 1: 8 * GiB},
        distances=_slit(2, 21),
        cores=[(0,), (1,), (2,), (3,), (4,), (6,), (7,)],
        offline="5",
    ),
    "cpuless-memory-node": Expected(
        cpus={0: "0-3,8-11", 1: "4-7,12-15", 2: ""},
        memory={0: 64 * GiB, 1: 64 * GiB, 2: 256 * GiB},
        distances=[[10, 21, 17], [21, 10, 28], [17, 28, 10]],
        cores=[(c, c + 8) for c in range(8)],
    ),
    "memoryless-node": Expected(
        cpus={0: "0-3", 1: "4-7"},
        memory={0: 16 * GiB, 1: 0},
        distances=_slit(2, 20),
        cores=[(c,) for c in range(8)],
    ),
    "single-node": Expected(
        cpus={0: "0-1"},
        memory={0: 4417312 * 1024},
        distances=[[10]],
        cores=[(0,), (1,)],
    ),
}


def _copy(shape: str, tmp_path: Path) -> Path:
    root = tmp_path / shape
    shutil.copytree(SYSFS / shape, root)
    return root


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_nodes_cpus_memory_and_distances(shape: str) -> None:
    exp = SHAPES[shape]
    topo = read_topology(SYSFS / shape)

    assert topo.node_ids() == tuple(sorted(exp.cpus))
    assert {n.id: n.cpus for n in topo.nodes} == {k: parse_cpulist(v) for k, v in exp.cpus.items()}
    assert {n.id: n.memory_bytes for n in topo.nodes} == exp.memory
    ids = topo.node_ids()
    assert [[topo.distance(a, b) for b in ids] for a in ids] == exp.distances
    assert format_cpulist(topo.offline_cpus) == exp.offline
    assert topo.online_cpus == frozenset().union(*(parse_cpulist(c) for c in exp.cpus.values()))
    for node in topo.nodes:
        assert all(topo.cpu(c).node == node.id for c in node.cpus)
    assert topo.source == str(SYSFS / shape)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_smt_siblings_group_into_cores(shape: str) -> None:
    topo = read_topology(SYSFS / shape)
    assert topo.cores() == SHAPES[shape].cores
    for node in topo.nodes:  # no core spans two nodes on any of these machines
        assert sum(len(core) for core in topo.cores(node.cpus)) == len(node.cpus)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_json_round_trip_and_committed_export(shape: str) -> None:
    topo = read_topology(SYSFS / shape)
    assert Topology.from_json(topo.to_json()) == topo

    committed = json.loads((FIXTURES / "topologies" / f"{shape}.json").read_text())
    fresh = dataclasses.replace(topo, source=f"tests/fixtures/sysfs/{shape}")
    assert committed == fresh.to_json()
    assert Topology.from_json(committed) == fresh


def test_nehalem_has_no_die_id_and_sparse_core_ids() -> None:
    topo = read_topology(SYSFS / "nehalem-ex-4node")
    assert topo.cpu(4).die is None
    assert (topo.cpu(4).package, topo.cpu(4).core) == (0, 1)
    assert (topo.cpu(17).package, topo.cpu(17).core) == (1, 8)


def test_memoryless_node_binds_memory_to_nearest_node_with_memory() -> None:
    topo = read_topology(SYSFS / "memoryless-node")
    assert not topo.node(1).has_memory
    assert topo.memory_nodes_for(1) == (0,)
    assert topo.memory_nodes_for(0) == (0,)


def test_cpuless_memory_node() -> None:
    topo = read_topology(SYSFS / "cpuless-memory-node")
    assert topo.node(2).cpus == frozenset()
    assert topo.node(2).has_memory
    assert topo.memory_nodes_for(0) == (0,)
    assert topo.memory_nodes_for(1) == (1,)
    assert topo.total_memory == 384 * GiB


def test_offline_cpu_has_no_node_or_core_facts() -> None:
    topo = read_topology(SYSFS / "offline-cpu")
    cpu5 = topo.cpu(5)
    assert not cpu5.online
    assert (cpu5.node, cpu5.package, cpu5.core, cpu5.siblings) == (None, None, None, frozenset())
    assert topo.node_of(5) is None
    assert topo.cores(frozenset({4, 5, 6})) == [(4,), (6,)]


def test_offline_cpu_still_in_node_cpulist_is_dropped(tmp_path: Path) -> None:
    root = _copy("offline-cpu", tmp_path)
    (root / "devices/system/node/node1/cpulist").write_text("4-7\n")
    topo = read_topology(root)
    assert format_cpulist(topo.node(1).cpus) == "4,6,7"
    assert topo.cpu(5).node is None


def test_per_cpu_online_files_when_summary_missing(tmp_path: Path) -> None:
    root = _copy("offline-cpu", tmp_path)
    (root / "devices/system/cpu/online").unlink()
    topo = read_topology(root)
    assert format_cpulist(topo.offline_cpus) == "5"
    assert 0 in topo.online_cpus  # cpu0 has no online file: the boot CPU is always online


def test_core_cpus_list_when_thread_siblings_list_missing(tmp_path: Path) -> None:
    root = _copy("epyc-nps4", tmp_path)
    for f in root.glob("devices/system/cpu/cpu*/topology/thread_siblings_list"):
        f.unlink()
    assert read_topology(root).cores() == SHAPES["epyc-nps4"].cores


def test_no_numa_sysfs_gives_one_node_with_all_online_cpus(tmp_path: Path) -> None:
    root = _copy("offline-cpu", tmp_path)
    shutil.rmtree(root / "devices/system/node")
    topo = read_topology(root)
    assert topo.node_ids() == (0,)
    assert format_cpulist(topo.node(0).cpus) == "0-4,6,7"
    assert topo.node(0).memory_bytes == 0
    assert topo.cpu(7).node == 0


def test_missing_meminfo_means_no_memory(tmp_path: Path) -> None:
    root = _copy("memoryless-node", tmp_path)
    (root / "devices/system/node/node1/meminfo").unlink()
    assert read_topology(root).node(1).memory_bytes == 0


def test_missing_root() -> None:
    with pytest.raises(TopologyError) as e:
        read_topology("/nonexistent/sysfs")
    assert "/nonexistent/sysfs" in e.value.message
    assert "--sysfs ROOT or --topology FILE" in e.value.hint


def test_root_that_is_not_sysfs(tmp_path: Path) -> None:
    with pytest.raises(TopologyError) as e:
        read_topology(tmp_path)
    assert str(tmp_path / "devices/system/cpu") in e.value.message
    assert "--topology FILE" in e.value.hint


def test_malformed_cpulist_names_the_file(tmp_path: Path) -> None:
    root = _copy("xeon-2s-smt", tmp_path)
    bad = root / "devices/system/node/node1/cpulist"
    bad.write_text("8-15,x\n")
    with pytest.raises(TopologyError) as e:
        read_topology(root)
    assert str(bad) in e.value.message
    assert "cpulist" in e.value.message
    assert e.value.hint


def test_malformed_meminfo_names_the_file(tmp_path: Path) -> None:
    root = _copy("xeon-2s-smt", tmp_path)
    bad = root / "devices/system/node/node0/meminfo"
    bad.write_text("Node 0 MemTotal:  lots kB\n")
    with pytest.raises(TopologyError) as e:
        read_topology(root)
    assert str(bad) in e.value.message
    assert "MemTotal" in e.value.message


def test_distance_row_must_match_node_count(tmp_path: Path) -> None:
    root = _copy("epyc-nps4", tmp_path)
    bad = root / "devices/system/node/node2/distance"
    bad.write_text("12 12 10\n")
    with pytest.raises(TopologyError) as e:
        read_topology(root)
    assert str(bad) in e.value.message
    assert "4 integers" in e.value.message


def test_malformed_core_id_names_the_file(tmp_path: Path) -> None:
    root = _copy("single-node", tmp_path)
    bad = root / "devices/system/cpu/cpu1/topology/core_id"
    bad.write_text("one\n")
    with pytest.raises(TopologyError, match="integer") as e:
        read_topology(root)
    assert str(bad) in e.value.message


def test_reads_this_machines_sysfs() -> None:
    topo = read_topology()
    assert topo.online_cpus
    assert all(topo.node_of(c) is not None for c in topo.online_cpus)
    assert Topology.from_json(topo.to_json()) == topo
