"""IRQ affinities, the workqueue mask, the online CPUs and a process's environment, read and
written under fixture procfs and sysfs trees."""

from __future__ import annotations

from pathlib import Path

import pytest

from slicectl.host.isolation.kernelfiles import (
    affinity_path,
    read_affinities,
    read_affinity,
    read_environ,
    read_online,
    read_workqueue_mask,
    workqueue_path,
    write_kernel_file,
)


def irq_tree(proc: Path, affinities: dict[int, str]) -> None:
    for irq, text in affinities.items():
        affinity_path(proc, irq).parent.mkdir(parents=True)
        affinity_path(proc, irq).write_text(text)
    (proc / "irq" / "default_smp_affinity").write_text("ff\n")  # not an IRQ


def test_affinities_are_read_exactly_for_every_numbered_irq(tmp_path: Path) -> None:
    irq_tree(tmp_path, {0: "0\n", 24: "0-7\n"})
    (tmp_path / "irq" / "7").mkdir()  # an IRQ without the file (being torn down)
    assert read_affinities(tmp_path) == {0: "0\n", 24: "0-7\n"}
    assert read_affinity(tmp_path, 24) == "0-7\n"
    assert read_affinity(tmp_path, 99) is None


def test_no_irq_folder_reads_as_no_irqs(tmp_path: Path) -> None:
    assert read_affinities(tmp_path) == {}


def test_a_kernel_file_is_written_in_place_and_never_created(tmp_path: Path) -> None:
    irq_tree(tmp_path, {24: "0-7\n"})
    write_kernel_file(affinity_path(tmp_path, 24), b"0,2-4,6,7\n")
    assert read_affinity(tmp_path, 24) == "0,2-4,6,7\n"
    with pytest.raises(FileNotFoundError):
        write_kernel_file(affinity_path(tmp_path, 25), b"0\n")
    assert not affinity_path(tmp_path, 25).parent.exists()


def test_workqueue_mask_and_online_cpus(tmp_path: Path) -> None:
    assert read_workqueue_mask(tmp_path) is None  # a kernel without the file
    assert read_online(tmp_path) == frozenset()
    workqueue_path(tmp_path).parent.mkdir(parents=True)
    workqueue_path(tmp_path).write_text("ff\n")
    (tmp_path / "devices/system/cpu").mkdir(parents=True)
    (tmp_path / "devices/system/cpu/online").write_text("0-3,6\n")
    assert read_workqueue_mask(tmp_path) == "ff\n"
    assert read_online(tmp_path) == {0, 1, 2, 3, 6}


def test_environ_of_a_process(tmp_path: Path) -> None:
    (tmp_path / "42").mkdir()
    (tmp_path / "42" / "environ").write_bytes(b"A=1\0B=2\0")
    assert read_environ(tmp_path, 42) == b"A=1\0B=2\0"
    assert read_environ(tmp_path, 43) is None
