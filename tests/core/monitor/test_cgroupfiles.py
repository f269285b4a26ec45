"""The table of cgroup files and their parsers, on contents as kernel 6.1 writes them."""

from __future__ import annotations

from dataclasses import fields

import pytest

from slicectl.core.monitor.cgroupfiles import FILES, build_sample, parse_changed
from slicectl.core.monitor.samples import CgroupSample, NodeMemory, Pressure, PsiLine
from slicectl.core.properties.partition import PartitionState

BY_NAME = {spec.name: spec for spec in FILES}

NUMA_STAT = (
    b"anon N0=1048576 N1=209715200 N2=0 N3=0\n"
    b"file N0=4096 N1=8192 N2=0 N3=12288\n"
    b"kernel_stack N0=16384 N1=0 N2=0 N3=0\n"
    b"shmem N0=0 N1=0 N2=0 N3=0\n"
    b"active_file N0=0 N1=8192 N2=0 N3=0\n"
    b"workingset_nodereclaim N0=0 N1=0 N2=0 N3=0\n"
)


def test_every_sample_field_comes_from_exactly_one_file() -> None:
    filled = [name for spec in FILES for name in spec.fields]
    assert len(filled) == len(set(filled))
    assert set(filled) | {"unit", "path", "inode", "unreadable"} == {
        f.name for f in fields(CgroupSample)}
    assert len(BY_NAME) == len(FILES)


@pytest.mark.parametrize(
    "name, data, values",
    [
        ("cpu.stat", b"usage_usec 5000\nuser_usec 4000\nsystem_usec 1000\nnr_periods 10\n"
         b"nr_throttled 2\nthrottled_usec 300\nnr_bursts 0\nburst_usec 0\n", (5000, 10, 2, 300)),
        ("cpu.stat", b"usage_usec 5000\nuser_usec 4000\nsystem_usec 1000\n",
         (5000, None, None, None)),  # no cpu controller: only the base counters
        ("cpu.max", b"max 100000\n", (None, 100000)),
        ("cpu.max", b"50000 100000\n", (50000, 100000)),
        ("memory.max", b"max\n", (None,)),
        ("memory.max", b"1073741824\n", (1 << 30,)),
        ("cpuset.cpus.effective", b"0-3,8\n", (frozenset({0, 1, 2, 3, 8}),)),
        ("cpuset.cpus.effective", b"\n", (None,)),
        ("cpuset.cpus.partition", b"member\n", (PartitionState("member"),)),
        ("cpuset.cpus.partition", b"isolated\n", (PartitionState("isolated"),)),
        ("cpuset.cpus.partition", b"isolated invalid (Cpu list in cpuset.cpus not exclusive)\n",
         (PartitionState("isolated", valid=False,
                         reason="Cpu list in cpuset.cpus not exclusive"),)),
        ("cpuset.cpus.partition", b"root invalid\n", (PartitionState("root", valid=False),)),
        ("memory.stat", b"anon 10\nfile 20\nactive_file 5\ninactive_file 15\n"
         b"workingset_refault_anon 3\nworkingset_refault_file 4\n", (10, 20, 5, 15, 7)),
        ("memory.stat", b"anon 10\nfile 20\nworkingset_refault 9\n", (10, 20, None, None, 9)),
        ("memory.events", b"low 0\nhigh 4\nmax 1\noom 0\noom_kill 0\noom_group_kill 0\n",
         (0, 4, 1, 0, 0)),
        ("memory.numa_stat", NUMA_STAT, ((NodeMemory(0, 1 << 20, 4096),
                                          NodeMemory(1, 200 << 20, 8192), NodeMemory(2, 0, 0),
                                          NodeMemory(3, 0, 12288)),)),
        ("cpu.pressure", b"some avg10=1.50 avg60=0.75 avg300=0.10 total=123\n",
         (Pressure(PsiLine(1.5, 0.75, 0.1, 123), None),)),
        ("io.stat", b"8:0 rbytes=100 wbytes=20 rios=1 wios=1 dbytes=0 dios=0\n"
         b"253:1 rbytes=5 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n", (105, 20)),
        ("io.stat", b"", (0, 0)),  # no IO yet: no device line
        ("io.pressure", b"some avg10=0.00 avg60=0.00 avg300=0.00 total=1\n"
         b"full avg10=100.00 avg60=0.00 avg300=0.00 total=2\n",
         (Pressure(PsiLine(0.0, 0.0, 0.0, 1), PsiLine(100.0, 0.0, 0.0, 2)),)),
    ],
)
def test_kernel_contents_parse(name: str, data: bytes, values: tuple[object, ...]) -> None:
    assert BY_NAME[name].read(data) == values
    assert BY_NAME[name].read(None) == (None,) * len(values)


def test_unchanged_files_are_not_parsed_again() -> None:
    raw: list[bytes | None] = [None] * len(FILES)
    at = list(BY_NAME).index("memory.numa_stat")
    raw[at] = NUMA_STAT
    first = parse_changed(raw, [], [])
    again = parse_changed(list(raw), raw, first)
    assert again[at] is first[at]
    moved = list(raw)
    moved[at] = NUMA_STAT.replace(b"N1=209715200", b"N1=0")
    assert parse_changed(moved, raw, first)[at][0][1] == NodeMemory(1, 0, 8192)
    sample = build_sample("a.slice", "a.slice", 7, first)
    assert sample.numa == first[at][0] and sample.usage_usec is None and sample.inode == 7


def test_a_cpulist_is_not_expanded_past_the_kernels_cpu_numbers() -> None:
    assert BY_NAME["cpuset.cpus.effective"].read(b"0-8191\n") == (frozenset(range(8192)),)
    assert BY_NAME["cpuset.cpus.effective"].read(b"0-2147483647\n") == (None,)


@pytest.mark.parametrize("data", [b"", b"\n", b"\xff\xfe\n", b"42\n", b"Isolated\n"])
def test_a_partition_file_that_names_no_state_is_garbage(data: bytes) -> None:
    values = BY_NAME["cpuset.cpus.partition"].read(data)
    assert values == (None,) and getattr(values, "bad", ()) == ("partition",)
