"""Synthetic cgroup trees (slicectl.demo.cgtree): files rewritten in place as the kernel does,
counters that advance by what the motion says, a recreated cgroup that is a new directory."""

from __future__ import annotations

import re
from pathlib import Path

from cgtree import Motion, MovingTree

from slicectl.demo.cgtree import FakeCgroup, write_files


def test_files_are_rewritten_in_place(tmp_path: Path) -> None:
    write_files(tmp_path, {"memory.current": "123456789\n"})
    inode = (tmp_path / "memory.current").stat().st_ino
    write_files(tmp_path, {"memory.current": "7\n"})
    assert (tmp_path / "memory.current").read_text() == "7\n"  # shorter: truncated
    assert (tmp_path / "memory.current").stat().st_ino == inode


def test_controllers_decide_the_files() -> None:
    files = FakeCgroup("a.slice", controllers="cpu memory").files()
    assert "memory.numa_stat" in files and "cpu.max" in files
    assert "cpuset.cpus" not in files and "pids.current" not in files


def test_counters_advance_by_the_motion(tmp_path: Path) -> None:
    tree = MovingTree(tmp_path)
    tree.add("a.slice", Motion(cpu_cores=1.5, throttled_fraction=0.5, psi_some={"cpu": 20.0},
                               memory_bytes=1 << 20, events={"high": 3}),
             cpu_max="100000 100000")
    tree.advance(2.0)
    folder = tmp_path / "a.slice"
    stat = (folder / "cpu.stat").read_text()
    assert re.search(r"^usage_usec 3000000$", stat, re.M)
    assert re.search(r"^nr_periods 20$", stat, re.M) and re.search(r"^nr_throttled 10$", stat,
                                                                      re.M)
    assert "some avg10=20.00" in (folder / "cpu.pressure").read_text()
    assert "total=400000" in (folder / "cpu.pressure").read_text()
    assert int((folder / "memory.current").read_text()) == (64 << 20) + (1 << 20)
    assert "high 3\n" in (folder / "memory.events").read_text()


def test_memory_per_node_has_a_column_for_each_host_node(tmp_path: Path) -> None:
    tree = MovingTree(tmp_path, cpus="0-3", mems="0-1")
    tree.add("a.slice", numa={1: (5 << 20, 1 << 20)})
    numa = (tmp_path / "a.slice" / "memory.numa_stat").read_text()
    assert numa.startswith(f"anon N0=0 N1={5 << 20}\nfile N0=0 N1={1 << 20}\n")


def test_a_recreated_cgroup_is_a_new_directory(tmp_path: Path) -> None:
    tree = MovingTree(tmp_path)
    tree.add("a.slice", tasks=4)
    inode = (tmp_path / "a.slice").stat().st_ino
    tree.recreate("a.slice")
    assert (tmp_path / "a.slice").stat().st_ino != inode
    assert (tmp_path / "a.slice" / "pids.current").read_text() == "4\n"
    tree.remove("a.slice")
    assert not (tmp_path / "a.slice").exists()
