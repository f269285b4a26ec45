"""`status` and `top` output, as a user sees it, on a moving fake tree."""

from __future__ import annotations

import io
import itertools
import json
import re
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from cgtree import (
    NOT_EXCLUSIVE,
    NUMA_HOSTS,
    Motion,
    MovingTree,
    build_numa_fixture,
    build_partition_fixture,
)
from paths import ROOT, TESTS

from slicectl.cli import main
from slicectl.cli.watch import run_status, run_top
from slicectl.host.cgroup import sampler
from slicectl.host.topology.sysfs import read_topology
from slicectl.views.monitor import NUMA_COLUMN, PARTITION_COLUMN

DOCS = ROOT / "docs" / "status-json.md"
DB1 = "tenants.slice/tenants-db1.slice"


@pytest.fixture(autouse=True)
def no_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Piped without COLUMNS, status and top show every column (xdist's workers inherit a
    COLUMNS; the tests that narrow the table set their own)."""
    monkeypatch.delenv("COLUMNS", raising=False)


@pytest.fixture
def tree(tmp_path: Path) -> MovingTree:
    t = MovingTree(tmp_path / "cg", cpus="0-7")
    t.add("system.slice", Motion(cpu_cores=0.2))
    t.add("tenants.slice")
    busy = Motion(
        cpu_cores=1.5,
        throttled_fraction=0.5,
        psi_some={"cpu": 20.0, "memory": 5.0},
        psi_full={"memory": 2.0},
        memory_bytes=1 << 20,
        events={"max": 3, "oom_kill": 1},
        io_read_bps=4 << 20,
    )
    t.add(DB1, busy, cpus="0-3", cpu_max="300000 100000", memory_max=str(1 << 30),
          memory_high=str(900 << 20))  # fmt: skip
    return t


def near_20_percent(line: str) -> bool:
    """Whether a row shows db1's cpu pressure: stalled 20 % of the time, measured over an
    interval our clock and the tree's see a little differently."""
    return any(17 <= float(x) <= 23 for x in re.findall(r"(\d+\.\d)%", line))


class VirtualClock:
    """The sampler's clock while `advancing` drives a test: it moves only when the tree's
    counters move, and by as much, so the rates status measures are exact however busy the
    machine is (a real clock also counted the time spent opening and reading files, which
    the tree never saw: 25 % read for 20 % under load)."""

    def __init__(self) -> None:
        self.now = time.monotonic()

    def monotonic(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def _sampler_clock_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever clock `advancing` gives the sampler is taken back after each test."""
    monkeypatch.setattr(sampler, "time", time)


def advancing(tree: MovingTree) -> Any:
    """A sleep that moves the tree's counters and the sampler's clock by the same `seconds`,
    without waiting."""
    clock = VirtualClock()
    setattr(sampler, "time", clock)  # noqa: B010  # restored by _sampler_clock_restored

    def sleep(seconds: float) -> None:
        clock.now += seconds
        tree.advance(seconds)

    return sleep


def strict_json(text: str) -> Any:
    """json.loads that refuses NaN and Infinity, which are not JSON."""

    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in the output")

    return json.loads(text, parse_constant=refuse)


def status(tree: MovingTree, interval: float, **kwargs: Any) -> dict[str, Any]:
    out = io.StringIO()
    assert run_status(tree.root, True, interval, out, sleep=advancing(tree), **kwargs) == 0
    data: dict[str, Any] = strict_json(out.getvalue())
    return data


def test_status_json_values_on_a_moving_tree(tree: MovingTree) -> None:
    data = status(tree, 0.5)
    assert data["version"] == 1 and 0.5 <= data["interval_s"] < 5
    assert [s["unit"] for s in data["slices"]] == [
        "system.slice",
        "tenants-db1.slice",
        "tenants.slice",
    ]
    db1 = data["slices"][1]
    assert db1["cgroup"] == "/" + DB1
    assert db1["limits"] == {
        "cpus": "0-3", "allowed_cpus": 4, "mems": "0,1", "cpu_weight": 100,
        "cpu_quota_cores": 3.0, "memory_min": 0, "memory_low": 0,
        "memory_high": 900 << 20, "memory_max": 1 << 30, "memory_swap_max": None,
    }  # fmt: skip
    assert db1["cpu"]["cores"] == pytest.approx(1.5, rel=0.15)
    assert db1["cpu"]["percent"] == pytest.approx(37.5, rel=0.15)
    assert db1["cpu"]["throttled_percent"] == pytest.approx(50.0, abs=10)  # whole periods
    assert db1["pressure"]["cpu"]["some"]["rate"] == pytest.approx(20.0, rel=0.15)
    assert db1["pressure"]["memory"]["full"]["rate"] == pytest.approx(2.0, rel=0.15)
    assert db1["pressure"]["cpu"]["some"]["avg10"] == 20.0
    assert db1["events"] == {"low": 0, "high": 0, "max": 3, "oom": 0, "oom_kill": 1}
    assert db1["memory"]["current"] == (64 << 20) + (1 << 20)
    assert db1["tasks"] == 3
    assert db1["io"]["read_bytes_per_s"] == pytest.approx(4 << 20, rel=0.15)
    assert db1["io"]["write_bytes_per_s"] == 0
    assert data["slices"][0]["io"] == {"read_bytes_per_s": 0, "write_bytes_per_s": 0}
    assert db1["trouble"] == ["oom", "pressure", "throttled"]


def test_status_json_has_no_rates_under_30ms(tree: MovingTree,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # The sampler's clock moves 5 ms per reading: its two samples are well under 30 ms apart
    # however long a busy machine takes between them (at load 9 they were 30+ ms apart).
    ticks = itertools.count()
    monkeypatch.setattr(sampler, "time", SimpleNamespace(monotonic=lambda: 1e4 + next(ticks) / 200))
    data = status(tree, 0.0)
    assert data["interval_s"] < 0.03
    db1 = data["slices"][1]
    assert db1["cpu"]["cores"] is None and db1["events"]["oom_kill"] is None
    assert db1["pressure"]["io"]["some"]["rate"] is None
    assert db1["memory"]["current"] == 65 << 20 and db1["limits"]["allowed_cpus"] == 4


def test_every_json_field_is_documented(tree: MovingTree) -> None:
    doc = DOCS.read_text()

    def keys(obj: Any) -> set[str]:
        if isinstance(obj, dict):
            return set(obj) | {k for v in obj.values() for k in keys(v)}
        if isinstance(obj, list):
            return {k for v in obj for k in keys(v)}
        return set()

    missing = {k for k in keys(status(tree, 0.05)) if f"`{k}`" not in doc}
    assert not missing


def test_status_table(tree: MovingTree) -> None:
    out = io.StringIO()
    assert run_status(tree.root, False, 0.1, out, sleep=advancing(tree)) == 0
    text = out.getvalue()
    line = next(x for x in text.splitlines() if "tenants-db1.slice" in x)
    assert re.search(r"1\.\d\d / 4", line)  # cores used / allowed CPUs
    assert "3.00" in line and "65M / 900M / 1G" in line  # sizes as 24.5G, not 25088M
    assert "oom_kill +1" in line and near_20_percent(line)  # psi cpu: 20 % of the time
    assert "io r/w" in text
    assert re.search(r"\d(\.\d)?M/s 0/s$", line)  # ~4 MiB/s read, nothing written
    system = next(x for x in text.splitlines() if "system.slice" in x)
    assert " / none / none" in system  # no memory.high, no memory.max: said, not "max"


def test_top_prints_one_table_per_interval(tree: MovingTree) -> None:
    # The tree moves by the interval asked for, not by the time that passed: on a busy
    # machine rates then read low for every slice alike, never above a slice's CPUs (where
    # they are capped, and the busiest would no longer sort first).
    out = io.StringIO()

    def sleep(seconds: float) -> None:
        time.sleep(seconds)
        tree.advance(seconds)

    assert run_top(tree.root, 0.05, 3, out, sleep=sleep) == 0
    text = out.getvalue()
    assert text.count("every 0.05s") == 3
    first_rows = [x for x in text.splitlines() if ".slice" in x and "every" not in x][:3]
    assert "tenants-db1.slice" in first_rows[0]  # busiest first


def numa_tree(tmp_path: Path, nodes: int) -> tuple[MovingTree, dict[int, frozenset[int]]]:
    sysfs = TESTS / "fixtures" / "sysfs" / NUMA_HOSTS[nodes]
    node_cpus = {n.id: n.cpus for n in read_topology(sysfs).nodes}
    return build_numa_fixture(tmp_path / "cg", node_cpus), node_cpus


def test_status_json_numa_locality_on_a_four_node_host(tmp_path: Path) -> None:
    tree, node_cpus = numa_tree(tmp_path, 4)
    data = status(tree, 0.05, node_cpus=node_cpus)
    by_unit = {s["unit"]: s for s in data["slices"]}
    moved = by_unit["tenants-moved.slice"]
    assert moved["numa"] == {
        "nodes": [{"node": 0, "anon": 96 << 20, "file": 96 << 20},
                  {"node": 1, "anon": 64 << 20, "file": 0},
                  {"node": 2, "anon": 0, "file": 0}, {"node": 3, "anon": 0, "file": 0}],
        "local_nodes": "1", "local_percent": 25.0, "outside_percent": 75.0, "bound": True,
    }  # fmt: skip
    assert moved["trouble"] == ["remote-memory"]
    assert moved["limits"]["mems"] == "1"  # the existing fields are unchanged
    local = by_unit["tenants-local.slice"]["numa"]
    assert (local["local_percent"], local["outside_percent"], local["bound"]) == (100.0, 0.0, True)
    spread = by_unit["tenants-spread.slice"]
    assert spread["numa"]["local_nodes"] == "0,1" and spread["numa"]["local_percent"] == 90.0
    assert spread["trouble"] == []
    assert by_unit["tenants-empty.slice"]["numa"]["local_percent"] is None


def test_status_json_without_a_node_map_still_shows_outside(tmp_path: Path) -> None:
    tree, _ = numa_tree(tmp_path, 2)
    moved = {s["unit"]: s for s in status(tree, 0.05)["slices"]}["tenants-moved.slice"]
    assert moved["numa"]["local_nodes"] is None and moved["numa"]["local_percent"] is None
    assert moved["numa"]["outside_percent"] == 75.0 and moved["trouble"] == []


def test_status_json_numa_is_null_on_a_one_node_host(tmp_path: Path) -> None:
    tree, node_cpus = numa_tree(tmp_path, 1)
    data = status(tree, 0.05, node_cpus=node_cpus)
    assert data["slices"] and all(s["numa"] is None for s in data["slices"])


def test_status_and_top_tables_show_locality(tmp_path: Path) -> None:
    tree, node_cpus = numa_tree(tmp_path, 2)
    out = io.StringIO()
    assert run_status(tree.root, False, 0.05, out, sleep=advancing(tree),
                      node_cpus=node_cpus) == 0
    text = out.getvalue()
    assert NUMA_COLUMN in text
    line = next(x for x in text.splitlines() if "tenants-moved.slice" in x)
    assert "25% (75% out)" in line
    line = next(x for x in text.splitlines() if "tenants-local.slice" in x)
    assert "100%" in line and "out)" not in line
    out = io.StringIO()
    assert run_top(tree.root, 0.05, 1, out, sleep=advancing(tree), node_cpus=node_cpus) == 0
    assert "25% (75% out)" in out.getvalue()
    one, node_cpus = numa_tree(tmp_path / "one", 1)
    out = io.StringIO()
    assert run_status(one.root, False, 0.05, out, sleep=advancing(one), node_cpus=node_cpus) == 0
    assert NUMA_COLUMN not in out.getvalue()  # one node: nothing to show


def test_status_and_top_take_sysfs_for_the_node_map(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--sysfs ROOT gives the node map (a fixture tree here, another host's copy in use), as
    `topology --sysfs` does; a ROOT that is not a sysfs tree is an error with a hint."""
    tree, _ = numa_tree(tmp_path, 4)
    sysfs = str(TESTS / "fixtures" / "sysfs" / NUMA_HOSTS[4])
    assert main(["status", "--json", "--interval", "0.05", "--cgroup-root", str(tree.root),
                 "--sysfs", sysfs]) == 0
    by_unit = {s["unit"]: s for s in json.loads(capsys.readouterr().out)["slices"]}
    assert by_unit["tenants-spread.slice"]["numa"]["local_percent"] == 90.0
    assert by_unit["tenants-moved.slice"]["trouble"] == ["remote-memory"]
    assert main(["top", "-n", "1", "--interval", "0.05", "--cgroup-root", str(tree.root),
                 "--sysfs", sysfs]) == 0
    assert "25% (75% out)" in capsys.readouterr().out
    assert main(["status", "--cgroup-root", str(tree.root), "--sysfs", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "hint: " in err and "Traceback" not in err


@pytest.mark.parametrize("columns", ["80", "100", "160"])
def test_status_piped_at_columns_keeps_a_line_per_slice(
        tree: MovingTree, columns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """At COLUMNS, status leaves out the least wanted columns (named below the table) rather
    than wrap a row; the slice, its CPU, memory and CPU pressure stay."""
    monkeypatch.setenv("COLUMNS", columns)
    out = io.StringIO()
    assert run_status(tree.root, False, 0.05, out, sleep=advancing(tree)) == 0
    lines = out.getvalue().splitlines()
    assert max(map(len, lines)) <= int(columns)
    assert [line for line in lines if line != line.rstrip()] == []
    rows = [line for line in lines if line.split()[:1] and line.split()[0].endswith(".slice")]
    assert sorted(r.split()[0] for r in rows) == ["system.slice", "tenants-db1.slice",
                                                  "tenants.slice"]
    db1 = next(r for r in rows if r.startswith("tenants-db1.slice"))
    assert "65M / 900M / 1G" in db1 and near_20_percent(db1)  # memory, psi cpu
    left_out = [line for line in lines if line.startswith("left out for width:")]
    if columns == "160":
        assert not left_out and "oom_kill +1" in db1
    else:
        assert left_out and "events" in left_out[0] and "oom_kill" not in db1


# --- cpuset partitions ------------------------------------------------------------------


def test_status_json_shows_each_tenants_partition(tmp_path: Path) -> None:
    """A valid isolated partition, one the kernel refused (with its reason, flagged), one
    that lost a CPU (Linux 7.0), and a tenant that is none (null)."""
    tree = build_partition_fixture(tmp_path / "cg")
    by_unit = {s["unit"]: s for s in status(tree, 0.05)["slices"]}
    assert by_unit["tenants-iso.slice"]["partition"] == {
        "state": "isolated", "valid": True, "reason": None, "lost_cpus": None,
        "problem": None}
    assert by_unit["tenants-iso.slice"]["trouble"] == []
    broken = by_unit["tenants-broken.slice"]
    assert broken["partition"] == {
        "state": "isolated", "valid": False, "reason": NOT_EXCLUSIVE, "lost_cpus": None,
        "problem": f"invalid: {NOT_EXCLUSIVE}"}
    assert broken["trouble"] == ["partition"]
    lacking = by_unit["tenants-lacking.slice"]
    assert lacking["partition"]["valid"] and lacking["partition"]["lost_cpus"] == "1"
    assert lacking["trouble"] == ["partition"] and lacking["limits"]["cpus"] == "0"
    assert by_unit["tenants-plain.slice"]["partition"] is None
    assert by_unit["tenants-plain.slice"]["trouble"] == []
    assert by_unit["tenants.slice"]["partition"] is None  # a member


def test_status_table_shows_partitions_and_alerts_on_a_broken_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = build_partition_fixture(tmp_path / "cg")
    out = io.StringIO()
    assert run_status(tree.root, False, 0.05, out, sleep=advancing(tree)) == 0
    lines = out.getvalue().splitlines()
    assert PARTITION_COLUMN in lines[2].split()  # the header, after the title and a blank

    def row_of(unit: str) -> list[str]:
        return next(line for line in lines if line.startswith(unit)).split()

    assert row_of("tenants-iso.slice")[4] == "isolated"  # slice, cores / CPUs, partition
    assert row_of("tenants-broken.slice")[4:6] == ["isolated", "invalid"]
    assert row_of("tenants-lacking.slice")[4:7] == ["root", "lacks", "1"]
    assert row_of("tenants-plain.slice")[4] == "-"
    # Below the table, an alert and a hint per broken partition (wrapped at 80 piped).
    below = " ".join(line.strip() for line in lines[lines.index(next(
        line for line in lines if line.startswith("alert:"))):])
    assert below == (
        f"alert: tenants-broken.slice: isolated partition invalid: {NOT_EXCLUSIVE} "
        "hint: another cgroup beside it claims some of these CPUs: give the tenant CPUs no "
        "other tenant, the pool or a hand-made cgroup uses "
        "alert: tenants-lacking.slice: root partition lacks CPUs 1 of its cpuset.cpus (a "
        "cgroup beside it claims them, or they are offline) "
        "hint: give the tenant CPUs no other tenant, the pool or a hand-made cgroup uses, "
        "then `slicectl apply`")
    monkeypatch.setenv("COLUMNS", "160")  # a line each
    out = io.StringIO()
    assert run_status(tree.root, False, 0.05, out, sleep=advancing(tree)) == 0
    assert (f"alert: tenants-broken.slice: isolated partition invalid: {NOT_EXCLUSIVE}"
            in out.getvalue().splitlines())
    out = io.StringIO()  # top: the same column, no alert lines
    assert run_top(tree.root, 0.05, 1, out, sleep=advancing(tree)) == 0
    broken = next(line for line in out.getvalue().splitlines()
                  if line.startswith("tenants-broken.slice"))
    assert "isolated invalid" in broken and "alert:" not in out.getvalue()


def test_status_shows_no_partition_column_without_partitions(tree: MovingTree) -> None:
    out = io.StringIO()
    assert run_status(tree.root, False, 0.05, out, sleep=advancing(tree)) == 0
    lines = out.getvalue().splitlines()
    assert "slice" in lines[2] and PARTITION_COLUMN not in lines[2]  # the header
    assert not [line for line in lines if line.startswith("alert:")]
