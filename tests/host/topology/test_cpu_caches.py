"""Last-level cache groups read from `cpuN/cache` (slicectl.host.topology.cpu_caches), and shown by
`slicectl topology`.

The generator reads sysfs as root at every boot, so nothing in `cpuN/cache` may stop it: a
file that is huge, garbage, a FIFO or a directory, a list naming CPUs that do not exist or
that contradict each other, all leave the groups unknown (the node stands in), with a warning
where the kernel's lists contradict each other. The fixture machines' groups are checked in
tests/host/topology/test_sysfs.py (`test_last_level_cache_groups`).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from paths import TESTS

from slicectl.cli import main
from slicectl.core.cpulist import format_cpulist
from slicectl.core.placement.cache_groups import CacheSharing
from slicectl.core.placement.topology import Topology
from slicectl.host.topology.sysfs import read_topology

SYSFS = TESTS / "fixtures" / "sysfs"
TOPOLOGIES = TESTS / "fixtures" / "topologies"
CONTRADICT = ("warning: node 0: its CPUs' last-level cache lists (cpuN/cache) contradict each "
              "other or are missing for some CPUs; slicectl takes the node as their group")


def copy(shape: str, tmp_path: Path) -> Path:
    root = tmp_path / shape
    shutil.copytree(SYSFS / shape, root)
    return root


def index(root: Path, cpu: int, i: int = 3) -> Path:
    return root / "devices" / "system" / "cpu" / f"cpu{cpu}" / "cache" / f"index{i}"


def groups(topo: Topology, node: int) -> list[str]:
    """A node's groups as cpulists, or why the node stands in."""
    n = topo.node(node)
    if n.cache_sharing is not CacheSharing.GROUPS:
        return [n.cache_sharing.value]
    return [format_cpulist(g) for g in topo.cache_groups(node)]


def topology(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[str, str]:
    """`slicectl topology ARGS` as a user runs it, piped: its output and its errors."""
    assert main(["topology", *args]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return out, err


# --- what the kernel writes -------------------------------------------------------------------

def test_the_highest_level_of_a_data_or_unified_cache_is_the_last_level(tmp_path: Path) -> None:
    """An Instruction cache is never the last level, even at a higher level (a made-up
    layout: the kernel lists L1i at level 1); a Data cache can be."""
    root = copy("single-node", tmp_path)
    for cpu in (0, 1):
        (index(root, cpu) / "type").write_text("Instruction\n")  # L3 0-1 as instructions
    assert groups(read_topology(root), 0) == ["per-core"]  # the L2, each CPU's own
    for cpu in (0, 1):
        (index(root, cpu) / "type").write_text("Data\n")
    assert groups(read_topology(root), 0) == ["0,1"]


def test_the_index_number_does_not_decide_the_level(tmp_path: Path) -> None:
    """The levels are read, not assumed from the order of index0..indexN."""
    root = copy("single-node", tmp_path)
    for cpu in (0, 1):
        os.rename(index(root, cpu, 3), index(root, cpu, 9))
        os.rename(index(root, cpu, 0), index(root, cpu, 3))
        os.rename(index(root, cpu, 9), index(root, cpu, 0))
    assert groups(read_topology(root), 0) == ["0,1"]


def test_shared_cpu_map_when_there_is_no_shared_cpu_list(tmp_path: Path) -> None:
    """Kernels before 2.6.29 have only the hex mask."""
    root = copy("single-node", tmp_path)
    for cpu in (0, 1):
        (index(root, cpu) / "shared_cpu_list").unlink()
        (index(root, cpu) / "shared_cpu_map").write_text("3\n")
    assert groups(read_topology(root), 0) == ["0,1"]


def test_trees_without_cache_directories_leave_the_groups_unknown() -> None:
    topo = read_topology(SYSFS / "xeon-2s-smt")
    assert [groups(topo, n) for n in topo.node_ids()] == [["unknown"], ["unknown"]]
    assert topo.cache_group(0) == topo.node(0).cpus and not topo.warnings


def test_a_cpu_that_went_offline_leaves_its_group(tmp_path: Path) -> None:
    """The lists of the CPUs still online may name it (the kernel updates them; a copy may
    be older): it is not part of any group."""
    root = copy("epyc-nps4", tmp_path)
    (root / "devices/system/cpu/online").write_text("0-2,4-63\n")
    assert groups(read_topology(root), 0) == ["0-2,32-35", "4-7,36-39"]


# --- what the kernel never writes ---------------------------------------------------------------

@pytest.mark.parametrize("content", [
    b"0-1" + b",1" * 600_000,  # over a megabyte of a valid-looking list
    b"garbage\n", b"0-x\n", b"1-0\n", b"-1\n", b"0-999999999999\n", b"0-8192\n",
    b"\xff\xfe\n", b"\x00\n", b"", "٠-١\n".encode(),  # Arabic-Indic digits
])
def test_a_shared_cpu_list_the_kernel_never_writes_leaves_the_group_unknown(
        content: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = copy("single-node", tmp_path)
    (index(root, 0) / "shared_cpu_list").write_bytes(content)
    topo = read_topology(root)
    assert groups(topo, 0) == ["unknown"] and topo.cache_group(0) == frozenset({0, 1})
    _, err = topology(capsys, "--sysfs", str(root))
    assert err == CONTRADICT + "\n"  # CPU 1 says it shares with CPU 0, CPU 0 says nothing


def test_a_cpu_named_in_a_group_read_before_is_not_read_again(tmp_path: Path) -> None:
    """One CPU's files per group are read: the kernel lists every member the same CPUs."""
    root = copy("single-node", tmp_path)
    (index(root, 1) / "shared_cpu_list").write_text("garbage\n")
    topo = read_topology(root)
    assert groups(topo, 0) == ["0,1"] and not topo.warnings


@pytest.mark.parametrize(("name", "content"), [
    ("level", b"3" * 100_000), ("level", b"three\n"), ("level", b"\xff"), ("level", b"-3\n"),
    ("level", b"99999999999999999999\n"), ("type", b"Unified" * 10_000), ("type", b"unified\n"),
])
def test_a_level_or_type_the_kernel_never_writes_is_passed_over(
        name: str, content: bytes, tmp_path: Path) -> None:
    """That index is not a candidate: the highest readable one is the last level (L2)."""
    root = copy("single-node", tmp_path)
    for cpu in (0, 1):
        (index(root, cpu) / name).write_bytes(content)
    assert groups(read_topology(root), 0) == ["per-core"]


def test_fifos_directories_and_broken_links_are_not_read(tmp_path: Path) -> None:
    """A FIFO in a copied tree must not block the generator at boot."""
    root = copy("single-node", tmp_path)
    (index(root, 0) / "shared_cpu_list").unlink()
    os.mkfifo(index(root, 0) / "shared_cpu_list")  # nobody writes: a plain open blocks
    (index(root, 1) / "level").unlink()
    (index(root, 1) / "level").mkdir()
    (index(root, 1, 2) / "type").unlink()
    (index(root, 1, 2) / "type").symlink_to(tmp_path / "nowhere")
    topo = read_topology(root)
    assert groups(topo, 0) == ["unknown"]


def test_cache_that_is_a_file_or_holds_thousands_of_entries(tmp_path: Path) -> None:
    root = copy("single-node", tmp_path)
    cache0 = index(root, 0).parent
    shutil.rmtree(cache0)
    cache0.write_text("not a directory\n")
    for i in range(4, 2000):
        (index(root, 1, i)).mkdir()
    topo = read_topology(root)
    assert groups(topo, 0) == ["unknown"]


def test_lists_naming_cpus_that_do_not_exist(tmp_path: Path) -> None:
    """CPUs the host does not have are left out of the group; the rest stands."""
    root = copy("single-node", tmp_path)
    for cpu in (0, 1):
        (index(root, cpu) / "shared_cpu_list").write_text("0-1,77,8191\n")
    assert groups(read_topology(root), 0) == ["0,1"]


def test_lists_that_contradict_each_other_leave_the_node_standing_in(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """CPU 4 says it shares with 0-3: the groups overlap, so none of them is believed."""
    root = copy("epyc-nps4", tmp_path)
    (index(root, 4) / "shared_cpu_list").write_text("0-4,32-35\n")
    topo = read_topology(root)
    assert groups(topo, 0) == ["unknown"] and topo.cache_group(4) == topo.node(0).cpus
    assert groups(topo, 1) == ["8-11,40-43", "12-15,44-47"]  # other nodes keep theirs
    out, err = topology(capsys, "--sysfs", str(root))
    assert err == CONTRADICT + "\n"
    assert "│    0 │      - │ node stands in: unknown" in out


# --- `slicectl topology`, as a user sees it -------------------------------------------------------

def cache_rows(out: str) -> dict[int, tuple[str, str]]:
    """The rows of the "Last-level cache groups" table: node -> (groups, CPUs)."""
    rows = {}
    table = out.split("Last-level cache groups\n", 1)[1].split("NUMA map", 1)[0]
    for line in table.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) == 3 and cells[0].isdigit():
            rows[int(cells[0])] = (cells[1], cells[2])
    return rows


def test_topology_lists_each_nodes_cache_groups(capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = topology(capsys, "--sysfs", str(SYSFS / "epyc-nps4"))
    assert cache_rows(out) == {0: ("2", "0-3,32-35 | 4-7,36-39"),
                               1: ("2", "8-11,40-43 | 12-15,44-47"),
                               2: ("2", "16-19,48-51 | 20-23,52-55"),
                               3: ("2", "24-27,56-59 | 28-31,60-63")}
    # The map lists each node's CPUs by group, "|" between groups, and says so.
    assert "│ node0 │  0  1  2  3 32 33 34 35 |  4  5  6  7 36 37 38 39 │" in out
    assert out.endswith("| between CPUs: last-level cache groups\n")


@pytest.mark.parametrize(("shape", "why"), [
    ("xeon-snc2", "node stands in: its last-level cache spans other nodes too"),
    ("altra-q32", "node stands in: every core has a last-level cache of its own"),
])
def test_topology_says_why_a_node_stands_in(shape: str, why: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    for source in (["--sysfs", str(SYSFS / shape)],
                   ["--topology", str(TOPOLOGIES / f"{shape}.json")]):
        out, err = topology(capsys, *source)
        assert set(cache_rows(out).values()) == {("-", why)} and err == ""
        assert "| between CPUs" not in out and " | " not in out.split("NUMA map")[1]


def test_topology_of_a_host_without_cache_facts(capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = topology(capsys, "--sysfs", str(SYSFS / "xeon-2s-smt"))
    assert "\nLast-level cache groups: unknown (each node stands in)\n" in out
    assert "│ node0 │  0  1  2  3  4  5  6  7 16 17 18 19 20 21 22 23 │" in out


def test_topology_json_has_each_cpus_group(capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = topology(capsys, "--json", "--sysfs", str(SYSFS / "epyc-2s-nps1"))
    data = json.loads(out)
    assert [n["cache_sharing"] for n in data["nodes"]] == ["groups", "groups"]
    assert {c["id"]: c["cache"] for c in data["cpus"]}[37] == "4-7,36-39"
    out, _ = topology(capsys, "--json", "--sysfs", str(SYSFS / "xeon-snc2"))
    data = json.loads(out)
    assert [n["cache_sharing"] for n in data["nodes"]] == ["spans-nodes", "spans-nodes"]
    assert {c["cache"] for c in data["cpus"]} == {""}
