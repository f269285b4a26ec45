"""The demo host's sysfs tree (slicectl.demo.sysfs_tree), read back by slicectl's own reader."""

from __future__ import annotations

from pathlib import Path

from paths import ROOT

from slicectl.demo.sysfs_tree import write_sysfs
from slicectl.host.topology.sysfs import load_topology_file, read_topology

DEMO = ROOT / "slicectl" / "demo"
NODES = {0: frozenset({0, 1, 2, 3, 8, 9, 10, 11}), 1: frozenset({4, 5, 6, 7, 12, 13, 14, 15})}


def test_the_bundled_host_reads_back_from_its_sysfs_tree(tmp_path: Path) -> None:
    topology = load_topology_file(str(DEMO / "host.json"))
    write_sysfs(topology, tmp_path)
    read = read_topology(tmp_path)
    assert (read.nodes, read.cpus) == (topology.nodes, topology.cpus)
    assert {n.id: n.cpus for n in read.nodes} == NODES
