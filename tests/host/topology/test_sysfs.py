"""slicectl.host.topology.sysfs against fixture trees modelled on real machines (see
fixtures/make_sysfs.py).

Why this module runs past 400 lines: the expected facts of every fixture machine come first
(`SHAPES`, about 100 lines of data), then one test per kind of malformed sysfs, each naming its
file.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from paths import TESTS

from slicectl.core.cpulist import format_cpulist, parse_cpulist, parse_cpumask
from slicectl.core.errors import TopologyError
from slicectl.core.placement.cache_groups import CacheSharing
from slicectl.core.placement.topology import Topology
from slicectl.host.topology.sysfs import read_topology

FIXTURES = TESTS / "fixtures"
SYSFS = FIXTURES / "sysfs"
PROC = FIXTURES / "proc"  # proc trees of the shapes whose kernel has no NUMA
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
    # node id -> its last-level cache groups ("0-3,32-35 | 4-7,36-39"), or why the node
    # stands in ("spans-nodes", "per-core"); every node with CPUs "unknown" when not given.
    caches: dict[int, str] = dataclasses.field(default_factory=dict)


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
        caches={0: "0-3,32-35 | 4-7,36-39", 1: "8-11,40-43 | 12-15,44-47",
                2: "16-19,48-51 | 20-23,52-55", 3: "24-27,56-59 | 28-31,60-63"},
    ),
    "epyc-2s-nps1": Expected(
        cpus={0: "0-15,32-47", 1: "16-31,48-63"},
        memory={0: 128 * GiB, 1: 128 * GiB},
        distances=_slit(2, 32),
        cores=[(c, c + 32) for c in range(32)],
        caches={0: "0-3,32-35 | 4-7,36-39 | 8-11,40-43 | 12-15,44-47",
                1: "16-19,48-51 | 20-23,52-55 | 24-27,56-59 | 28-31,60-63"},
    ),
    "xeon-snc2": Expected(  # one L3 per package, two nodes in it: each node stands in
        cpus={0: "0-7,16-23", 1: "8-15,24-31"},
        memory={0: 64 * GiB, 1: 64 * GiB},
        distances=_slit(2, 11),
        cores=[(c, c + 16) for c in range(16)],
        caches={0: "spans-nodes", 1: "spans-nodes"},
    ),
    "altra-q32": Expected(  # each core's own L2 is the last level: the node stands in
        cpus={0: "0-31"},
        memory={0: 128 * GiB},
        distances=[[10]],
        cores=[(c,) for c in range(32)],
        caches={0: "per-core"},
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
        caches={0: "0,1"},
    ),
    "no-numa": Expected(  # memory from proc/no-numa/meminfo: 3.7 GiB, not 0
        cpus={0: "0-3"},
        memory={0: 3885396 * 1024},
        distances=[[10]],
        cores=[(0,), (1,), (2,), (3,)],
    ),
    "masks-only": Expected(
        cpus={0: "0,2,4,6,8,10,12,14", 1: "1,3,5,7,9,11,13,15"},
        memory={0: 12 * GiB, 1: 12 * GiB},
        distances=_slit(2, 21),
        cores=[(c, c + 8) for c in range(8)],
    ),
    "nul-lists": Expected(
        cpus={0: "0-3,8-11", 1: "4-7,12-15"},
        memory={0: 32 * GiB, 1: 32 * GiB},
        distances=_slit(2, 20),
        cores=[(c, c + 8) for c in range(8)],
    ),
    "empty-online": Expected(
        cpus={0: "0-3", 1: "4-6"},
        memory={0: 16 * GiB, 1: 16 * GiB},
        distances=_slit(2, 20),
        cores=[(c,) for c in range(7)],
        offline="7",
    ),
    "duplicate-nodes": Expected(  # four kernel nodes listing 0-7: one node with all memory
        cpus={0: "0-7"},
        memory={0: 8 * GiB},
        distances=[[10]],
        cores=[(c, c + 4) for c in range(4)],
    ),
    "power9-smt4": Expected(
        cpus={0: "0-31", 8: "32-63"},
        memory={0: 128 * GiB, 8: 128 * GiB},
        distances=[[10, 40], [40, 10]],
        cores=[tuple(range(c, c + 4)) for c in range(0, 64, 4)],
    ),
    "sparse-nodes": Expected(
        cpus={0: "0-7,20-27", 1: "8-15,28-35", 2: "16-19,36-39", 33: "", 34: "", 45: "",
              72: "", 73: ""},
        memory={0: 64 * GiB, 1: 64 * GiB, 2: 0, 33: 16 * GiB, 34: 16 * GiB, 45: 0,
                72: 256 * GiB, 73: 256 * GiB},
        distances=[[10, 21, 21, 80, 80, 255, 30, 50],
                   [21, 10, 21, 80, 80, 255, 50, 30],
                   [21, 21, 10, 80, 80, 255, 50, 50],
                   [80, 80, 80, 10, 80, 255, 80, 80],
                   [80, 80, 80, 80, 10, 255, 80, 80],
                   [255, 255, 255, 255, 255, 10, 255, 255],
                   [30, 50, 50, 80, 80, 255, 10, 60],
                   [50, 30, 50, 80, 80, 255, 60, 10]],
        cores=[(c, c + 20) for c in range(20)],
    ),
}


def read(shape: str) -> Topology:
    """A fixture shape as slicectl reads it (with its proc tree, for a kernel without NUMA)."""
    return read_topology(SYSFS / shape, PROC / shape)


def _copy(shape: str, tmp_path: Path) -> Path:
    root = tmp_path / shape
    shutil.copytree(SYSFS / shape, root)
    return root


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_nodes_cpus_memory_and_distances(shape: str) -> None:
    exp = SHAPES[shape]
    topo = read(shape)

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
    topo = read(shape)
    assert topo.cores() == SHAPES[shape].cores
    for node in topo.nodes:  # no core spans two nodes on any of these machines
        assert sum(len(core) for core in topo.cores(node.cpus)) == len(node.cpus)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_json_round_trip_and_committed_export(shape: str) -> None:
    topo = read(shape)
    assert Topology.from_json(topo.to_json()) == topo

    committed = json.loads((FIXTURES / "topologies" / f"{shape}.json").read_text())
    fresh = dataclasses.replace(topo, source=f"tests/fixtures/sysfs/{shape}")
    assert committed == fresh.to_json()
    assert Topology.from_json(committed) == fresh


def _shown_caches(topo: Topology, node: int) -> str:
    """A node's cache groups as Expected.caches writes them."""
    n = topo.node(node)
    if n.cache_sharing is not CacheSharing.GROUPS:
        return n.cache_sharing.value
    return " | ".join(format_cpulist(g) for g in topo.cache_groups(node))


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_last_level_cache_groups(shape: str) -> None:
    """Each CPU's group is the CPUs sharing its last-level cache within its node; where the
    node stands in, every CPU's group is its node's CPUs."""
    topo = read(shape)
    exp = SHAPES[shape]
    with_cpus = [nid for nid, cpus in exp.cpus.items() if cpus]
    expected = {nid: exp.caches.get(nid, "unknown") for nid in with_cpus}
    assert {nid: _shown_caches(topo, nid) for nid in with_cpus} == expected
    for node in topo.nodes:
        for c in node.cpus:
            group = topo.cache_group(c)
            assert c in group and group <= node.cpus
            assert all(topo.cache_group(m) == group for m in group)
            stands_in = node.cache_sharing is not CacheSharing.GROUPS
            assert (group == node.cpus) if stands_in else (group == topo.cpu(c).cache)


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


def test_no_numa_sysfs_gives_one_node_with_all_online_cpus_and_the_machines_memory(
        tmp_path: Path) -> None:
    # A copy of a whole machine, CAPTURE/sys and CAPTURE/proc: the proc root defaults to the
    # `proc` beside the sysfs root, as /proc is beside /sys.
    root = _copy("offline-cpu", tmp_path / "capture")
    root = root.rename(tmp_path / "capture" / "sys")
    shutil.rmtree(root / "devices/system/node")
    (tmp_path / "capture" / "proc").mkdir()
    (tmp_path / "capture" / "proc" / "meminfo").write_text(
        "MemTotal:        8029816 kB\nMemFree:         5212540 kB\n")
    topo = read_topology(root)
    assert topo.node_ids() == (0,)
    assert format_cpulist(topo.node(0).cpus) == "0-4,6,7"
    assert topo.node(0).memory_bytes == 8029816 * 1024
    assert topo.cpu(7).node == 0


def test_no_numa_without_meminfo_says_where_memory_comes_from(tmp_path: Path) -> None:
    root = _copy("no-numa", tmp_path)
    with pytest.raises(TopologyError) as e:
        read_topology(root)  # no proc beside this copy
    assert e.value.message.startswith(f"{tmp_path / 'proc' / 'meminfo'}: cannot read the "
                                      "machine's memory")
    assert "built without NUMA" in e.value.message
    assert "--proc-root DIR" in e.value.hint


def test_no_numa_malformed_meminfo_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "meminfo").write_text("MemTotal: lots\n")
    with pytest.raises(TopologyError) as e:
        read_topology(SYSFS / "no-numa", tmp_path)
    assert e.value.message == (f"{tmp_path / 'meminfo'}: holds 'MemTotal: lots', but the "
                               "kernel writes a line like 'MemTotal:  32649 kB' there")


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


# --- what older and odder kernels offer ---------------------------------------------------------


def test_masks_only_tree_has_no_list_files() -> None:
    # The fixture really is what a 2.6.18 kernel offers: the masks and no `*list` file.
    root = SYSFS / "masks-only"
    assert not list(root.rglob("*list")) and not (root / "devices/system/cpu/online").exists()
    assert (root / "devices/system/node/node1/cpumap").read_text() == "aaaa\n"
    topo = read("masks-only")
    assert topo.cpu(3).siblings == {3, 11}


def test_malformed_mask_names_the_file_and_what_is_wrong(tmp_path: Path) -> None:
    root = _copy("masks-only", tmp_path)
    bad = root / "devices/system/cpu/cpu5/topology/thread_siblings"
    bad.write_text("00g0\n")
    with pytest.raises(TopologyError) as e:
        read_topology(root)
    assert e.value.message == (f"{bad}: holds '00g0', but the kernel writes a hex CPU mask "
                               "such as '00000000,000000ff' there ('00g0' is not a word of 1 "
                               "to 8 hex digits)")
    assert "real sysfs tree" not in e.value.hint and "--topology FILE" in e.value.hint


def test_node_without_cpulist_or_cpumap_names_both(tmp_path: Path) -> None:
    root = _copy("masks-only", tmp_path)
    (root / "devices/system/node/node1/cpumap").unlink()
    with pytest.raises(TopologyError) as e:
        read_topology(root)
    node1 = root / "devices/system/node/node1"
    assert e.value.message == f"{node1 / 'cpulist'}: missing (and so is cpumap beside it)"


def test_list_files_ending_in_nul_are_read() -> None:
    online = SYSFS / "nul-lists/devices/system/cpu/online"
    assert online.read_bytes() == b"0-15\n\0"
    topo = read("nul-lists")
    assert topo.online_cpus == frozenset(range(16))
    assert topo.cpu(9).siblings == {1, 9}


def test_nul_inside_a_list_is_still_an_error(tmp_path: Path) -> None:
    root = _copy("nul-lists", tmp_path)
    bad = root / "devices/system/node/node0/cpulist"
    bad.write_bytes(b"0-3\0,8-11\n")
    with pytest.raises(TopologyError, match="a CPU list such as") as e:
        read_topology(root)
    assert str(bad) in e.value.message


def test_empty_per_cpu_online_files_cpu_online_is_the_truth() -> None:
    assert (SYSFS / "empty-online/devices/system/cpu/cpu3/online").read_text() == ""
    topo = read("empty-online")
    assert format_cpulist(topo.offline_cpus) == "7"
    assert not topo.cpu(7).online and topo.cpu(3).online


def test_empty_per_cpu_online_files_without_cpu_online(tmp_path: Path) -> None:
    # No summary to trust: a CPU whose topology directory exists is online (the kernel
    # removes it when the CPU goes offline).
    root = _copy("empty-online", tmp_path)
    (root / "devices/system/cpu/online").unlink()
    assert format_cpulist(read_topology(root).offline_cpus) == "7"


def test_per_cpu_online_file_with_garbage_names_the_file(tmp_path: Path) -> None:
    root = _copy("empty-online", tmp_path)
    (root / "devices/system/cpu/online").unlink()
    bad = root / "devices/system/cpu/cpu2/online"
    bad.write_text("yes\n")
    with pytest.raises(TopologyError) as e:
        read_topology(root)
    assert e.value.message == f"{bad}: holds 'yes', but the kernel writes 0 or 1 there"


def test_empty_file_is_named_as_empty(tmp_path: Path) -> None:
    root = _copy("xeon-2s-smt", tmp_path)
    bad = root / "devices/system/cpu/cpu4/topology/core_id"
    bad.write_text("")
    with pytest.raises(TopologyError) as e:
        read_topology(root)
    assert e.value.message == (f"{bad}: holds nothing (the file is empty), but the kernel "
                               "writes an integer there")


def test_nodes_listing_the_same_cpus_become_one_node() -> None:
    topo = read("duplicate-nodes")
    (node,) = topo.nodes
    assert node.id == 0 and node.merged == {1: 2 * GiB, 2: 2 * GiB, 3: 2 * GiB}
    assert node.memory_bytes == 8 * GiB and node.memory_node_ids() == (0, 1, 2, 3)
    assert {c.node for c in topo.cpus} == {0}
    assert topo.memory_nodes_for(0) == (0, 1, 2, 3)
    assert topo.node(2) is node and topo.distance(0, 3) == 10
    assert topo.warnings == (
        "nodes 0, 1, 2, 3 list the same CPUs (0-7), which no real machine has (a firmware "
        "NUMA table error): slicectl treats them as one node 0 with the memory of all of them",)
    # The export records the merge, so a plan from it agrees and does not warn again.
    again = Topology.from_json(topo.to_json())
    assert again == topo and again.warnings == ()


# --- every shape as a user sees it: `slicectl topology` and a plan ------------------------------

# The memory column of `slicectl topology`, per node in id order: sizes for people.
SHOWN = {
    "nehalem-ex-4node": ["31.9G", "32G", "32G", "32G"],  # node0 holds less than 32G
    "xeon-2s-smt": ["96G", "96G"],
    "epyc-nps4": ["64G"] * 4,
    "epyc-2s-nps1": ["128G", "128G"],
    "xeon-snc2": ["64G", "64G"],
    "altra-q32": ["128G"],
    "offline-cpu": ["8G", "8G"],
    "cpuless-memory-node": ["64G", "64G", "256G"],
    "memoryless-node": ["16G", "-"],
    "single-node": ["4.2G"],
    "no-numa": ["3.7G"],
    "masks-only": ["12G", "12G"],
    "nul-lists": ["32G", "32G"],
    "empty-online": ["16G", "16G"],
    "duplicate-nodes": ["8G"],
    "power9-smt4": ["128G", "128G"],
    "sparse-nodes": ["64G", "64G", "-", "16G", "16G", "-", "256G", "256G"],
}


def _sysfs_args(shape: str) -> list[str]:
    return ["--sysfs", str(SYSFS / shape), "--proc-root", str(PROC / shape)]


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    from slicectl.cli import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_topology_table(shape: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(capsys, "topology", *_sysfs_args(shape))
    assert code == 0, err
    exp = SHAPES[shape]
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) == 6 and cells[0].isdigit():
            rows[int(cells[0])] = cells
    assert sorted(rows) == sorted(exp.cpus)
    for nid, shown in zip(sorted(exp.cpus), SHOWN[shape], strict=True):
        cpus = parse_cpulist(exp.cpus[nid])
        assert rows[nid][1:5] == [format_cpulist(cpus) or "-", str(len(cpus)),
                                  str(sum(set(core) <= cpus for core in exp.cores)),
                                  shown], f"node {nid}"
    assert ("warning: nodes 0, 1, 2, 3 list the same CPUs" in err) == (shape == "duplicate-nodes")
    assert err.count("warning:") == (shape == "duplicate-nodes")


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_topology_json(shape: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli(capsys, "topology", "--json", *_sysfs_args(shape))
    assert code == 0
    committed = json.loads((FIXTURES / "topologies" / f"{shape}.json").read_text())
    assert json.loads(out) == dict(committed, source=str(SYSFS / shape))


def _tenants(topo: Topology) -> str:
    """A tenants.yaml that fits every shape on cores of its own: housekeeping, a local tenant,
    on hosts with 8 or more CPUs a spread and a second local one, and a tenant on the pool."""
    n = len(topo.online_cpus)
    text = (f"version: 1\nhousekeeping: {{cpus: {int(n >= 4)}}}\ntenants:\n"
            f"  a: {{cpus: {1 if n < 4 else 2}, memory_low: 64M}}\n")
    if n >= 8:
        text += f"  b: {{cpus: {3 if n >= 12 else 2}, numa: spread}}\n  c: {{cpus: 1}}\n"
    return text + "  p: {}\n"


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_plan_invariants(shape: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
                         ) -> None:
    topo = read(shape)
    tenants = tmp_path / "tenants.yaml"
    tenants.write_text(_tenants(topo))
    code, out, err = _cli(capsys, "plan", str(tenants), "--json", *_sysfs_args(shape))
    assert code == 0, err
    plan = json.loads(out)
    hk = parse_cpulist(plan["housekeeping_cpus"])
    assert len(hk) == (len(topo.online_cpus) >= 4) and hk <= topo.online_cpus
    placed = {t["name"]: t for t in plan["tenants"]}
    held = {name: parse_cpulist(t["cpus"]) for name, t in placed.items()}
    exclusive = [name for name, t in placed.items() if t["exclusive"]]
    core_of = {c: core for core in topo.cores() for c in core}
    for name in exclusive:
        cpus = held[name]
        assert cpus <= topo.online_cpus and not cpus & hk
        mates = {m for c in cpus for m in core_of[c]} - cpus
        assert not mates & hk, f"{name} shares a core with housekeeping"
        for other in exclusive:
            if other != name:
                assert not cpus & held[other] and not mates & held[other]
        partial = [core for core in topo.cores() if 0 < len(cpus & set(core)) < len(core)]
        assert len(partial) <= 1, f"{name} splits {partial}"
    for name in ("a", "c"):
        if name in placed:
            assert len(placed[name]["cpu_nodes"]) == 1, f"{name} is local"
            (node,) = placed[name]["cpu_nodes"]
            assert placed[name]["memory_nodes"] == list(topo.memory_nodes_for(node))
    for t in placed.values():
        for m in t["memory_nodes"] or []:
            assert topo.node(m).has_memory
    assert held["p"] == parse_cpulist(plan["shared_pool"])
    assert plan["shared_pool"] == format_cpulist(
        topo.online_cpus - hk - frozenset().union(*(held[n] for n in exclusive)))
    # The one note: housekeeping holding part of a core whose siblings run the pool.
    split = {m for c in hk for m in core_of[c]} - hk
    assert plan["placement_notes"] == ([
        f"housekeeping CPU(s) {format_cpulist(hk)} share physical cores with CPU(s) "
        f"{format_cpulist(split)} (SMT siblings), which run the shared pool beside "
        f"housekeeping; housekeeping.cpus: {len(hk | split)} keeps whole cores apart"]
        if split else [])
    units = {u["unit"]: u for u in plan["units"]}
    for name, t in placed.items():
        props = units[f"tenants-{name}.slice"]["properties"]
        assert props["AllowedCPUs"] == t["cpus"]
        if t["memory_nodes"] is not None:
            assert props["AllowedMemoryNodes"] == format_cpulist(t["memory_nodes"])


def test_no_numa_protection_is_checked_against_the_machines_memory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Without node memory (0 bytes reported), the machine's own memory is the bound: a 100G
    # memory_low must not pass on a machine of 274 MiB.
    tenants = tmp_path / "tenants.yaml"
    tenants.write_text("version: 1\ntenants:\n  a: {cpus: 2, memory_low: 100G}\n")
    code, _, err = _cli(capsys, "plan", str(tenants), "--json", *_sysfs_args("no-numa"))
    assert code == 1
    assert ("memory_low + memory_min of all tenants is 100G but RAM minus housekeeping is "
            "3885396K") in err, err


def test_duplicate_nodes_agree_in_topology_plan_and_generate(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tenants = tmp_path / "tenants.yaml"
    tenants.write_text("version: 1\ntenants:\n  a: {cpus: 4}\n  b: {cpus: 2, nodes: [3]}\n")
    args = _sysfs_args("duplicate-nodes")
    _, out, err = _cli(capsys, "topology", "--json", *args)
    export = json.loads(out)
    assert [n["id"] for n in export["nodes"]] == [0]
    assert {c["node"] for c in export["cpus"]} == {0}
    _, out, err = _cli(capsys, "plan", str(tenants), "--json", *args)
    assert err.count("warning:") == 1
    plan = json.loads(out)
    assert [(t["cpu_nodes"], t["memory_nodes"]) for t in plan["tenants"]] == [
        ([0], [0, 1, 2, 3]), ([0], [0, 1, 2, 3])]  # node 3 is node 0 now
    code, _, err = _cli(capsys, "generate", str(tenants), "--out", str(tmp_path / "out"), *args)
    assert code == 0 and err.count("warning:") == 1
    dropin = (tmp_path / "out/tenants-a.slice.d/50-slicectl.conf").read_text()
    assert "AllowedMemoryNodes=0-3\n" in dropin
    # The export plans the same, without warning again: the merge is recorded in it.
    (tmp_path / "topo.json").write_text(json.dumps(export))
    _, out, err = _cli(capsys, "plan", str(tenants), "--json", "--topology",
                       str(tmp_path / "topo.json"))
    assert "warning" not in err
    assert json.loads(out)["tenants"] == plan["tenants"]


@pytest.mark.parametrize(("mask", "cpus"), [
    ("ff", "0-7"), ("00000000", ""), ("5555\n", "0,2,4,6,8,10,12,14"),
    ("00000001,00000000", "32"), ("8000,00000000,00000001", "0,79"),
])
def test_parse_cpumask(mask: str, cpus: str) -> None:
    assert parse_cpumask(mask) == parse_cpulist(cpus)


@pytest.mark.parametrize("mask", ["", "0x3", "123456789", "ff,,ff", "g"])
def test_parse_cpumask_refuses_what_the_kernel_never_writes(mask: str) -> None:
    with pytest.raises(ValueError, match="hex digits"):
        parse_cpumask(mask)


# A CPU listed in several nodes (buggy firmware, CXL): xeon-2s-smt (node 0: 0-7,16-23, node 1:
# 8-15,24-31, CPU n's SMT sibling n+16) with node 1's cpulist claiming some of node 0's CPUs.
SHARED_CPU = "listed in nodes 0 and 1 (their cpulist files), but the kernel runs each CPU on " \
             "one node (a firmware NUMA table error, or a CXL layout): slicectl puts "


@pytest.mark.parametrize(("node1", "warning"), [
    ("0,8-15,24-31", f"CPU 0 is {SHARED_CPU}it in node 0, where its SMT siblings are listed"),
    ("0,8-16,24-31", f"CPUs 0,16 are {SHARED_CPU}them in node 0, where most of their "
                     "package's other CPUs are listed"),
])
def test_a_cpu_in_two_nodes_goes_to_one_with_a_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], node1: str, warning: str) -> None:
    """topology and plan keep both nodes, give the CPU to one of them and say which and why,
    once; the export records the choice, so planning from it warns no more."""
    root = tmp_path / "sys"
    shutil.copytree(SYSFS / "xeon-2s-smt", root)
    (root / "devices/system/node/node1/cpulist").write_text(f"{node1}\n")
    code, out, err = _cli(capsys, "topology", "--sysfs", str(root))
    assert code == 0 and err == f"warning: {warning}\n"
    assert out.startswith("2 node(s), 32 online CPUs")
    code, out, err = _cli(capsys, "topology", "--json", "--sysfs", str(root))
    assert code == 0 and err == f"warning: {warning}\n"
    export = json.loads(out)
    assert [n["cpus"] for n in export["nodes"]] == ["0-7,16-23", "8-15,24-31"]
    assert {c["node"] for c in export["cpus"] if c["id"] in (0, 16)} == {0}
    tenants = tmp_path / "tenants.yaml"
    tenants.write_text("version: 1\ntenants:\n  a: {cpus: 16, nodes: [0]}\n")
    code, out, err = _cli(capsys, "plan", str(tenants), "--json", "--sysfs", str(root))
    assert code == 0 and err == f"warning: {warning}\n"
    assert json.loads(out)["tenants"][0]["cpus"] == "0-7,16-23"
    (tmp_path / "topo.json").write_text(json.dumps(export))
    code, _, err = _cli(capsys, "plan", str(tenants), "--topology", str(tmp_path / "topo.json"))
    assert code == 0 and err == ""
