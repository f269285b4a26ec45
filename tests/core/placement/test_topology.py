"""slicectl.core.placement.topology: the model's lookups, merging nodes that list the same CPUs, and
the `--topology FILE` export read as untrusted input (a located message, never an
internal error), with and without the CPUs' last-level cache groups."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from paths import TESTS

from slicectl.cli import main
from slicectl.core.errors import TopologyError
from slicectl.core.placement.cache_groups import CacheSharing
from slicectl.core.placement.topology import (
    Cpu,
    Node,
    Topology,
    build_topology,
    merge_shared_cpus,
    parse_topology_json,
)

FIXTURES = TESTS / "fixtures"
G = 1024**3


def export(**changes: Any) -> dict[str, Any]:
    """A small valid export (2 nodes, 4 CPUs) with top-level fields replaced."""
    data: dict[str, Any] = {
        "format": "slicectl-topology/1", "source": "/sys",
        "nodes": [{"id": 0, "cpus": "0-1", "memory_bytes": G, "distances": {"0": 10, "1": 20}},
                  {"id": 1, "cpus": "2-3", "memory_bytes": G, "distances": {"0": 20, "1": 10}}],
        "cpus": [{"id": c, "online": True, "node": c // 2, "package": c // 2, "die": 0,
                  "core": c % 2, "siblings": str(c)} for c in range(4)],
    }
    data.update(changes)
    return data


def with_node(**fields: Any) -> dict[str, Any]:
    data = export()
    data["nodes"][0].update(fields)
    return data


def with_cpu(**fields: Any) -> dict[str, Any]:
    data = export()
    data["cpus"][0].update(fields)
    return data


def error_of(data: bytes | dict[str, Any]) -> TopologyError:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    with pytest.raises(TopologyError) as e:
        parse_topology_json(raw, "topo.json")
    return e.value


def test_the_small_export_is_valid() -> None:
    topo = parse_topology_json(json.dumps(export()).encode(), "topo.json")
    assert topo.node_ids() == (0, 1) and topo.source == "topo.json"
    assert Topology.from_json(topo.to_json(), "topo.json") == topo


@pytest.mark.parametrize(("data", "message"), [
    (with_node(id=-1), "topo.json: nodes[0].id: -1 is out of range (must be 0 to 1023)"),
    (with_node(id=True), "topo.json: nodes[0].id: must be an integer, not a boolean (true)"),
    (with_node(id="0"), "topo.json: nodes[0].id: must be an integer, not a string"),
    (with_node(memory_bytes=1.5),
     "topo.json: nodes[0].memory_bytes: must be an integer, not a number (1.5)"),
    (with_node(memory_bytes=2**64),
     "topo.json: nodes[0].memory_bytes: 18446744073709551616 is out of range "
     "(must be 0 to 18446744073709551615)"),
    (with_node(cpus=5), "topo.json: nodes[0].cpus: must be a string, not an integer (5)"),
    (with_node(cpus="0-2147483647"), "topo.json: nodes[0].cpus: CPU numbers must be below 8192"),
    (with_node(cpus="0-x"), "topo.json: nodes[0].cpus: not a cpulist such as \"0-3,8\" "
                            "(bad range '0-x' in cpulist '0-x')"),
    (with_node(cpus="0-1,9"), "topo.json: nodes[0].cpus: CPU(s) 9 are not online CPUs "
                              "listed in cpus"),
    (with_node(distances=[10, 20]), "topo.json: nodes[0].distances: must be an object, "
                                    "not a list"),
    (with_node(distances={"x": 10}), "topo.json: nodes[0].distances.x: keys must be ids below "
                                     "1024"),
    (with_node(distances={"0": 10, "5": 20}), "topo.json: nodes[0].distances: no node 5 in "
                                              "nodes"),
    (with_node(distances={"0": 256}), "topo.json: nodes[0].distances.0: 256 is out of range "
                                      "(must be 0 to 255)"),
    (with_cpu(online="yes"), "topo.json: cpus[0].online: must be true or false, not a string"),
    (with_cpu(node=7), "topo.json: cpus[0].node: no node 7 in nodes"),
    (with_cpu(package=-2), "topo.json: cpus[0].package: -2 is out of range "
                           "(must be -1 to 2147483647)"),
    (with_cpu(id=1), "topo.json: cpus[1].id: CPU 1 is listed twice"),
    (with_cpu(cache=3), "topo.json: cpus[0].cache: must be a string, not an integer (3)"),
    (with_cpu(cache="0-99999"), "topo.json: cpus[0].cache: CPU numbers must be below 8192"),
    (with_cpu(cache="1-0"), "topo.json: cpus[0].cache: not a cpulist such as \"0-3,8\" "
                            "(range '1-0' runs backwards in cpulist '1-0')"),
    (with_node(cache_sharing="l3"), "topo.json: nodes[0].cache_sharing: 'l3' is not one of "
                                    "groups, spans-nodes, per-core, unknown"),
    (with_node(cache_sharing=None), "topo.json: nodes[0].cache_sharing: must be a string, "
                                    "not null"),
    (export(nodes={}), "topo.json: nodes: must be a list, not an object"),
    (export(nodes=[]), "topo.json: nodes: lists no node (every host has at least one)"),
    (export(nodes=[7]), "topo.json: nodes[0]: must be an object, not an integer (7)"),
    (export(cpus=None), "topo.json: cpus: must be a list, not null"),
    (export(source=3), "topo.json: source: must be a string, not an integer (3)"),
    (export(systemd_version="252"), "topo.json: systemd_version: '252' is not a release "
                                    "number such as 252"),
    (export(format="x"), "topo.json: not a slicectl topology export (format is not "
                         "'slicectl-topology/1')"),
])
def test_malformed_export_names_file_and_json_path(data: dict[str, Any], message: str) -> None:
    e = error_of(data)
    assert e.message == message
    assert e.hint == "re-export it on the host with `slicectl topology --json > FILE`" or (
        "slicectl topology --json" in e.hint)


def test_missing_field() -> None:
    data = export()
    del data["nodes"][1]["memory_bytes"]
    assert error_of(data).message == "topo.json: nodes[1].memory_bytes: missing"


def test_duplicate_node_id() -> None:
    data = export()
    data["nodes"][1]["id"] = 0
    assert error_of(data).message == "topo.json: nodes[1].id: node 0 is listed twice"


@pytest.mark.parametrize(("raw", "message"), [
    (json.dumps(export()).replace('"memory_bytes": 1073741824', '"memory_bytes": Infinity',
                                  1).encode(),
     "topo.json: not valid JSON: Infinity is not a JSON number"),
    (b'{"format": NaN}', "topo.json: not valid JSON: NaN is not a JSON number"),
    (b'{\n"format": "slicectl-topology/1",\n"source": "\xff"}',
     "topo.json:3: not UTF-8 text (byte 0xff)"),
    (b"[" * 200_000, "topo.json: not a topology export: nested too deeply"),
    (b'{"format": 1' + b"0" * 5000 + b"}",
     "topo.json: not valid JSON: a number has thousands of digits"),
    (b'{"format": ', "topo.json:1: not valid JSON: Expecting value"),
])
def test_undecodable_export(raw: bytes, message: str) -> None:
    assert error_of(raw).message == message


@pytest.mark.parametrize("data", [
    with_node(id=-1), with_node(cpus=[0, 1]), export(nodes={"0": {}}),
])
def test_cli_reports_bad_exports_without_internal_error(
        data: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    topo = tmp_path / "topo.json"
    topo.write_text(json.dumps(data))
    tenants = tmp_path / "tenants.yaml"
    tenants.write_text("version: 1\ntenants:\n  a: {cpus: 1}\n")
    for verb in (["plan", str(tenants)], ["generate", str(tenants), "--out",
                                          str(tmp_path / "out")], ["lint", str(tenants)]):
        code = main([*verb, "--topology", str(topo)])
        err = capsys.readouterr().err
        assert code == 1, err
        assert err.startswith(f"error: {topo}: nodes") and "\n  hint: " in err, err
        assert "internal error" not in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_cli_reports_non_utf8_and_deep_nesting(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    for name, raw in (("bad.json", b"\x80\x81"), ("deep.json", b"[" * 100_000)):
        (tmp_path / name).write_bytes(raw)
        code = main(["topology", "--topology", str(tmp_path / name)])
        err = capsys.readouterr().err
        assert code == 1 and f"error: {tmp_path / name}" in err and "internal" not in err


def test_huge_file_is_refused_before_reading_it_all(tmp_path: Path) -> None:
    from slicectl.host.topology.sysfs import MAX_EXPORT_BYTES, load_topology_file

    big = tmp_path / "big.json"
    with big.open("wb") as f:
        f.truncate(MAX_EXPORT_BYTES + 10)
    with pytest.raises(TopologyError, match="larger than 64 MiB"):
        load_topology_file(str(big))


# --- nodes that list the same CPUs ---------------------------------------------------------------


def _node(nid: int, cpus: str, memory: int, distances: dict[int, int]) -> Node:
    from slicectl.core.cpulist import parse_cpulist

    return Node(nid, parse_cpulist(cpus), memory, distances)


def test_only_identical_lists_merge() -> None:
    """Nodes sharing some CPUs stay apart (a CPU in two nodes goes to one: below)."""
    nodes = [_node(0, "0-3", G, {0: 10, 1: 20, 2: 20}), _node(1, "2-5", G, {0: 20, 1: 10, 2: 20}),
             _node(2, "0-3", 0, {0: 20, 1: 20, 2: 10})]
    merged, warnings = merge_shared_cpus(nodes)
    assert [n.id for n in merged] == [0, 1] and merged[0].merged == {2: 0}
    assert warnings == ("nodes 0, 2 list the same CPUs (0-3), which no real machine has "
                        "(a firmware NUMA table error): slicectl treats them as one node 0 "
                        "with the memory of all of them",)


def test_a_cpu_in_several_nodes_goes_to_one_and_says_why() -> None:
    """SMT siblings decide, then the package, then the lowest node id; one warning for each
    group of CPUs with the same nodes, choice and reason."""
    def cpu(c: int, package: int | None, siblings: tuple[int, ...]) -> Cpu:
        return Cpu(c, True, None, package=package, siblings=frozenset(siblings))

    cpus = [cpu(0, 0, (0,)), cpu(1, 0, (1,)), cpu(2, 1, (2, 6)), cpu(3, 1, (3,)),
            cpu(6, 1, (2, 6)), cpu(7, 1, (7,)), cpu(8, None, (8,)), cpu(9, None, (9,))]
    topo = build_topology([_node(0, "0-3,8-9", G, {0: 10, 1: 20}),
                           _node(1, "2-3,6-9", G, {0: 20, 1: 10})], cpus, "x")
    assert [sorted(n.cpus) for n in topo.nodes] == [[0, 1, 8, 9], [2, 3, 6, 7]]
    assert [c.node for c in topo.cpus] == [0, 0, 1, 1, 1, 1, 0, 0]
    head = "listed in nodes 0 and 1 (their cpulist files), but the kernel runs each CPU on " \
           "one node (a firmware NUMA table error, or a CXL layout): slicectl puts "
    assert topo.warnings == (
        f"CPU 2 is {head}it in node 1, where its SMT siblings are listed",
        f"CPU 3 is {head}it in node 1, where most of its package's other CPUs are listed",
        f"CPUs 8,9 are {head}them in node 0, the lowest-numbered of them (nothing else tells "
        "them apart)")


def test_no_overlap_changes_nothing() -> None:
    nodes = [_node(1, "2-3", G, {1: 10, 0: 21}), _node(0, "0-1", G, {0: 10, 1: 21})]
    merged, warnings = merge_shared_cpus(nodes)
    assert [n.id for n in merged] == [0, 1] and warnings == ()
    assert merged[1] is nodes[0]


def test_merged_ids_resolve_to_their_node() -> None:
    cpus = [Cpu(c, True, 1, siblings=frozenset({c})) for c in range(4)]
    topo = build_topology([_node(0, "0-3", G, {0: 10, 1: 10}),
                           _node(1, "0-3", 3 * G, {0: 10, 1: 10})], cpus, "x")
    assert topo.node_ids() == (0,) and topo.has_node(1) and not topo.has_node(2)
    assert topo.node(1).id == 0 and topo.distance(1, 0) == 10
    assert all(c.node == 0 for c in topo.cpus)  # the reader's guess is replaced
    assert topo.memory_nodes_for(1) == (0, 1) and topo.total_memory == 4 * G
    assert topo.to_json()["nodes"][0]["merged"] == {"1": 3 * G}


def test_cpu_only_node_binds_to_the_memory_of_a_merged_node() -> None:
    cpus = [Cpu(c, True, None, siblings=frozenset({c})) for c in range(6)]
    topo = build_topology([_node(0, "0-3", G, {0: 10, 1: 10, 2: 20}),
                           _node(1, "0-3", G, {0: 10, 1: 10, 2: 20}),
                           _node(2, "4-5", 0, {0: 20, 1: 20, 2: 10})], cpus, "x")
    assert topo.memory_nodes_for(2) == (0, 1)


# --- last-level cache groups -----------------------------------------------------------------

def with_caches(*lists: str) -> dict[str, Any]:
    """The small export with each CPU's `cache` list (CPU 0 first)."""
    data = export()
    for cpu, text in zip(data["cpus"], lists, strict=True):
        cpu["cache"] = text
    return data


def groups_of(data: dict[str, Any]) -> tuple[dict[int, str], list[str]]:
    """Each node's cache groups as `topology` would list them (or why the node stands in),
    and the warnings."""
    topo = parse_topology_json(json.dumps(data).encode(), "topo.json")
    shown = {n.id: " | ".join(",".join(map(str, sorted(g))) for g in topo.cache_groups(n.id))
             if n.cache_sharing is CacheSharing.GROUPS else n.cache_sharing.value
             for n in topo.nodes}
    return shown, list(topo.warnings)


def test_export_without_cache_lists_loads_with_groups_unknown() -> None:
    """Exports written before slicectl read caches (no `cache`, no `cache_sharing`)."""
    assert groups_of(export()) == ({0: "unknown", 1: "unknown"}, [])
    old = FIXTURES / "topologies" / "xeon-2s-smt-systemd252.json"
    assert "cache" not in old.read_text()
    topo = parse_topology_json(old.read_bytes(), str(old))
    assert {n.cache_sharing for n in topo.nodes} == {CacheSharing.UNKNOWN}
    assert topo.cache_groups(0) == (topo.node(0).cpus,)


def test_cache_lists_round_trip() -> None:
    data = with_caches("0", "1", "2-3", "2-3")  # node 0: a cache per core, node 1: one
    topo = parse_topology_json(json.dumps(data).encode(), "topo.json")
    assert [c["cache"] for c in topo.to_json()["cpus"]] == ["", "", "2,3", "2,3"]
    assert [n["cache_sharing"] for n in topo.to_json()["nodes"]] == ["per-core", "groups"]
    assert Topology.from_json(topo.to_json(), "topo.json") == topo
    assert groups_of(data) == ({0: "per-core", 1: "2,3"}, [])


def test_cpus_by_node_is_each_nodes_cpus() -> None:
    """The node -> CPUs map memory locality and placement are measured against."""
    from tuikit import make_topology

    assert make_topology().cpus_by_node == {0: frozenset({0, 4}), 1: frozenset({1, 5}),
                                            2: frozenset({2, 6}), 3: frozenset({3, 7})}
