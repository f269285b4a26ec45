"""Garbage in cgroup files never stops status, top, record or the TUI.

A value that cannot be read is unknown (None, `null`, "-"), the slice is still listed, and
`status --json` stays strict JSON. The trees are fake (slicectl/demo/cgtree.py); the garbage
is what a fuzzer, a broken kernel module or a half-written fixture could leave in them.
"""

from __future__ import annotations

import io
import json
import sqlite3
import time
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from cgtree import Motion, MovingTree
from examplecounts import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slicectl.cli.watch import run_record, run_status, run_top
from slicectl.core.monitor.cgroupfiles import FILES
from slicectl.core.monitor.metrics import MetricsMemo
from slicectl.core.monitor.samples import CgroupSample, Pressure
from slicectl.host.cgroup.recorder import open_db, rows_from_snapshot, write_rows
from slicectl.host.cgroup.sampler import Sampler
from slicectl.views.monitor import COLUMNS, numa_cell, row, status_json

DB1 = "tenants.slice/tenants-db1.slice"
NODES = {0: frozenset({0, 1, 2, 3}), 1: frozenset({4, 5, 6, 7})}


def strict_json(text: str) -> Any:
    """json.loads that refuses NaN and Infinity, which are not JSON."""

    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in the output")

    return json.loads(text, parse_constant=refuse)


def make_tree(root: Path) -> MovingTree:
    tree = MovingTree(root, cpus="0-7")
    tree.add("system.slice", Motion(cpu_cores=0.2))
    tree.add("tenants.slice")
    tree.add(DB1, Motion(cpu_cores=1.0, psi_some={"cpu": 5.0}), cpus="0-3", mems="0",
             cpu_max="200000 100000", memory_max=str(1 << 30))
    return tree


def spoil(tree: MovingTree, name: str, data: bytes) -> None:
    """Overwrite one of db1's files in place (the sampler holds it open)."""
    with open(tree.root / DB1 / name, "r+b") as f:
        f.write(data)
        f.truncate()


def sample_after(tree: MovingTree, name: str, data: bytes) -> CgroupSample:
    with Sampler(tree.root) as s:
        s.sample()
        tree.advance(1.0)
        spoil(tree, name, data)
        return s.sample().cgroups[DB1]


@pytest.fixture
def tree(tmp_path: Path) -> MovingTree:
    return make_tree(tmp_path / "cg")


@pytest.mark.parametrize(
    "name, data, unknown, still",
    [
        ("cpu.stat", b"usage_usec abc\nnr_periods 7\n", {"usage_usec"}, {"nr_periods": 7}),
        ("cpu.stat", b"usage_usec 12\xff\xfe\nnr_periods 7\n", {"usage_usec"}, {"nr_periods": 7}),
        ("cpu.stat", b"usage_usec", {"usage_usec", "nr_periods"}, {}),  # truncated
        ("cpu.stat", b"", {"usage_usec", "nr_periods", "throttled_usec"}, {}),
        ("cpu.stat", b"usage_usec -5\nnr_periods 99999999999999999999\n",
         {"usage_usec", "nr_periods"}, {}),
        ("memory.current", b"9" * 5000 + b"\n", {"memory_current"}, {"memory_max": 1 << 30}),
        ("memory.current", b"\x00\x00\x00", {"memory_current"}, {}),
        ("memory.max", b"maximum\n", {"memory_max"}, {}),  # "max" is a prefix: still no limit
        ("memory.max", b"1.5G\n", {"memory_max"}, {}),
        ("cpu.max", b"abc 100000\n", {"cpu_quota_usec"}, {"cpu_period_usec": 100000}),
        ("cpu.max", b"200000\n", {"cpu_period_usec"}, {"cpu_quota_usec": 200000}),
        ("memory.stat", b"anon 1\nfile", {"file", "active_file"}, {"anon": 1}),
        ("memory.events", b"low 0\nhigh\n", {"events_high", "events_max", "events_oom_kill"},
         {"events_low": 0}),
        ("cpu.pressure", b"some avg10=nan avg60=0.00 avg300=0.00 total=5\n", {"cpu_pressure"},
         {}),
        ("cpu.pressure", b"some avg10=inf avg60=0.00 avg300=0.00 total=5\n", {"cpu_pressure"},
         {}),
        ("memory.pressure", b"some avg10=1.00 avg60=", {"memory_pressure"}, {}),
        ("io.pressure", b"some avg10=1.00 avg60=1.00 avg300=1.00 total=5\n"
         b"full avg10=1e999 avg60=0.00 avg300=0.00 total=5\n", {"io_pressure"}, {}),
        ("io.pressure", b"\xffsome", {"io_pressure"}, {}),
        ("cpuset.cpus.effective", b"\xff\xfe\n", {"cpus"}, {"mems": frozenset({0})}),
        ("cpuset.cpus.effective", b"0-2147483647\n", {"cpus"}, {}),  # not expanded
        ("cpuset.mems.effective", b"zero\n", {"mems"}, {}),
        ("memory.numa_stat", b"anon N0=1 N1=\nfile N0=2 N1=3\n", {"numa"}, {}),
        ("memory.numa_stat", b"anon N0=1 Nx=2\nfile N0=2 Nx=3\n", {"numa"}, {}),
        ("memory.numa_stat", b"anon N0=1 N1=2\n", {"numa"}, {}),  # no file line
        ("pids.current", b"", {"tasks"}, {"memory_max": 1 << 30}),
    ],
)
def test_a_garbage_value_is_unknown_and_the_rest_is_read(
    tree: MovingTree, name: str, data: bytes, unknown: set[str], still: dict[str, object]
) -> None:
    s = sample_after(tree, name, data)
    assert {field: getattr(s, field) for field in unknown} == dict.fromkeys(unknown)
    assert {field: getattr(s, field) for field in still} == still
    assert s.unit == "tenants-db1.slice" and s.memory_max == 1 << 30 or name == "memory.max"


@pytest.mark.parametrize(
    "name, data, bad",
    [
        ("cpu.stat", b"usage_usec abc\nnr_periods 7\n", {"usage_usec"}),
        ("cpu.stat", b"nr_periods 7\n", set()),  # a key the kernel does not show: absent
        ("memory.current", b"\x00\x00\x00", {"memory_current"}),
        ("memory.max", b"max\n", set()),  # no limit, not garbage
        ("memory.max", b"1.5G\n", {"memory_max"}),
        ("cpu.max", b"abc 100000\n", {"cpu_quota_usec"}),
        ("cpu.max", b"max 100000\n", set()),
        ("memory.stat", b"anon 1\nfile x\nworkingset_refault_anon 5\n", {"file"}),
        ("cpu.pressure", b"some avg10=nan avg60=0.00 avg300=0.00 total=5\n", {"cpu_pressure"}),
        ("memory.numa_stat", b"anon N0=1 N1=\nfile N0=2 N1=3\n", {"numa"}),
        ("pids.current", b"", {"tasks"}),
    ],
)
def test_garbage_is_named_in_unreadable(tree: MovingTree, name: str, data: bytes,
                                        bad: set[str]) -> None:
    """What the exporter drops and counts: garbage, never an absent key or "max"."""
    s = sample_after(tree, name, data)
    assert s.unreadable == bad
    assert all(getattr(s, field) is None for field in bad)


def test_a_file_that_cannot_be_read_is_unreadable_and_the_rest_is_read(tree: MovingTree
                                                                        ) -> None:
    """A file whose every read fails (a directory in its place: EISDIR, as root too) costs
    its own values, named unreadable, and nothing else: not the cgroup's other files, not the
    other cgroups, not the sample. Read again, it says the same."""
    events = tree.root / DB1 / "memory.events"
    events.unlink()
    events.mkdir()
    with Sampler(tree.root) as sampler:
        for _ in range(2):
            snap = sampler.sample()
            s = snap.cgroups[DB1]
            fields = set(next(f for f in FILES if f.name == "memory.events").fields)
            assert s.unreadable == fields
            assert all(getattr(s, field) is None for field in fields)
            assert s.memory_max == 1 << 30 and s.usage_usec is not None
            assert set(snap.cgroups) == {"system.slice", "tenants.slice", DB1}
            assert not snap.cgroups["system.slice"].unreadable


def test_status_json_with_garbage_is_valid_and_lists_every_slice(tree: MovingTree) -> None:
    def sleep(seconds: float) -> None:
        time.sleep(seconds)
        tree.advance(seconds)
        spoil(tree, "cpu.stat", b"usage_usec abc\n")
        spoil(tree, "memory.pressure", b"some avg10=nan avg60=nan avg300=nan total=1\n")
        spoil(tree, "memory.current", b"\xff\xfe\n")

    out = io.StringIO()
    assert run_status(tree.root, True, 0.05, out, sleep=sleep, node_cpus=NODES) == 0
    slices = {s["unit"]: s for s in strict_json(out.getvalue())["slices"]}
    assert set(slices) == {"system.slice", "tenants.slice", "tenants-db1.slice"}
    db1 = slices["tenants-db1.slice"]
    assert db1["cpu"]["cores"] is None and db1["pressure"]["memory"] is None
    assert db1["memory"]["current"] is None and db1["memory"]["percent"] is None
    assert db1["pressure"]["cpu"]["some"]["rate"] is not None  # the rest still moves
    assert slices["system.slice"]["cpu"]["cores"] is not None
    out = io.StringIO()
    assert run_status(tree.root, False, 0.05, out, sleep=sleep) == 0
    line = next(x for x in out.getvalue().splitlines() if "tenants-db1.slice" in x)
    assert "- / 4" in line  # cores unknown, of 4 allowed CPUs


def test_top_keeps_running_while_files_turn_to_garbage(tree: MovingTree) -> None:
    garbage = iter([b"usage_usec 1e9\n", b"\xff" * 64, b"usage_usec 1\n" * 2, b""])

    def sleep(seconds: float) -> None:
        tree.advance(seconds)
        spoil(tree, "cpu.stat", next(garbage))
        spoil(tree, "cpu.pressure", b"some avg10=-1.00 avg60=0 avg300=0 total=0\n")

    out = io.StringIO()
    assert run_top(tree.root, 0.03, 4, out, sleep=sleep) == 0
    assert out.getvalue().count("tenants-db1.slice") == 4


def test_record_keeps_running_and_stores_unknown_as_null(tree: MovingTree, tmp_path: Path
                                                          ) -> None:
    spoil(tree, "memory.stat", b"anon \xff\nactive_file nan\n")
    spoil(tree, "cpu.stat", b"usage_usec 18446744073709551615\n")  # past SQLite's INTEGER
    db = tmp_path / "record.db"
    assert run_record(str(tree.root), str(db), 0.01, 14, False, iterations=2) == 0
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT anon, active_file, cpu_usage_usec FROM samples "
                            "WHERE unit = 'tenants-db1.slice'").fetchall()
    finally:
        conn.close()
    assert rows == [(None, None, None)] * 2


async def test_tui_keeps_polling_over_garbage(tree: MovingTree) -> None:
    from slicectl.tui.app import SlicectlApp, TuiSettings
    from slicectl.tui.components.slice_table import SliceTable

    settings = TuiSettings(cgroup_root=tree.root, interval=3600)
    with Sampler(tree.root) as sampler:
        app = SlicectlApp(settings, sampler)
        async with app.run_test(size=(120, 24)) as pilot:
            for name, data in [("cpu.stat", b"usage_usec abc\n"),
                               ("memory.pressure", b"some avg10=nan avg60=0 avg300=0 total=1\n"),
                               ("memory.current", b"\xff\n"), ("cpuset.cpus.effective", b"-\n")]:
                before = app.samples
                tree.advance(0.1)
                spoil(tree, name, data)
                app.poll_now()
                deadline = time.monotonic() + 10
                while app.samples == before:  # SampleFailed would not count as a sample
                    assert time.monotonic() < deadline, "the TUI stopped sampling"
                    await pilot.pause(0.02)
            table = app.screen.query_one(SliceTable)
            # the slice cell as shown in the tree: indented, ▾/▸ on parents
            units = [table.get_row_at(i)[0].lstrip(" ▾▸") for i in range(table.row_count)]
            assert "tenants-db1.slice" in units


# -- fuzzing every file ------------------------------------------------------------------

NAMES = [spec.name for spec in FILES] + ["cgroup.events"]
NUMBERS = [b"nan", b"inf", b"-inf", b"1e999", b"-1", b"9" * 30, b"1.5", b"0x10", b"", b"\xff"]
TOKENS = [b"\xff\xfe", b"\x00", b"max", b"N0=", b"=", b"some", b"full", b"-", b",", b"\n"]
INT_MAX = (1 << 63) - 1


@st.composite
def garbage(draw: st.DrawFn, original: bytes) -> bytes:
    """The original file with a few tokens replaced (mostly numbers) and maybe truncated, or
    random bytes."""
    if draw(st.integers(0, 3)) == 0:
        return draw(st.binary(max_size=120))
    parts = original.replace(b"=", b" = ").replace(b"\n", b" \n ").split(b" ")
    numbers = [i for i, p in enumerate(parts) if p[:1].isdigit()]
    for _ in range(draw(st.integers(1, 3))):
        on_a_number: bool = draw(st.booleans())
        if numbers and on_a_number:
            parts[draw(st.sampled_from(numbers))] = draw(st.sampled_from(NUMBERS))
        else:
            parts[draw(st.integers(0, len(parts) - 1))] = draw(st.sampled_from(TOKENS + NUMBERS))
    data = b" ".join(parts).replace(b" = ", b"=").replace(b" \n ", b"\n")
    return data[: draw(st.integers(0, len(data)))] if draw(st.booleans()) else data


def assert_readable(s: CgroupSample) -> None:
    """What the sampler promises of every value: None, or a number the kernel could show."""
    for name in (f.name for f in fields(CgroupSample)):
        value = getattr(s, name)
        if isinstance(value, int) and not isinstance(value, bool):
            assert 0 <= value <= INT_MAX or name == "inode", (name, value)
        elif isinstance(value, Pressure):
            for line in (value.some, value.full):
                assert line is None or all(0.0 <= x <= 100.0 for x in line[:3]), (name, value)
                assert line is None or 0 <= line.total <= INT_MAX


@pytest.fixture(scope="module")
def fuzz_trees(tmp_path_factory: pytest.TempPathFactory) -> Callable[[], MovingTree]:
    """A fresh tree for each example: one tree shared by all examples would change what the
    strategy draws between hypothesis' runs of the same example (its files keep moving)."""
    return lambda: make_tree(tmp_path_factory.mktemp("fuzz") / "cg")


@pytest.mark.long
@settings(max_examples=examples(150), derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzzed_files_never_break_status_top_or_record(
    fuzz_trees: Callable[[], MovingTree], data: st.DataObject
) -> None:
    tree = fuzz_trees()
    spoiled = data.draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3, unique=True))
    with Sampler(tree.root) as s:
        first = s.sample()
        tree.advance(1.0)
        for name in spoiled:
            spoil(tree, name, data.draw(garbage((tree.root / DB1 / name).read_bytes())))
        second = s.sample()
    assert set(second.cgroups) == set(first.cgroups)  # still listed
    assert_readable(second.cgroups[DB1])
    metrics = MetricsMemo(NODES).compute(first, second)
    strict_json(json.dumps(status_json(metrics, 1.0), allow_nan=False))
    assert all(len(row(m)) == len(COLUMNS) and numa_cell(m) for m in metrics)
    conn = open_db(":memory:")
    try:
        assert write_rows(conn, 0.0, rows_from_snapshot(second)) == len(second.cgroups)
    finally:
        conn.close()
