"""A running demo in this process (slicectl.demo.session): its folder, tenants.yaml applied to
the fake systemd by slicectl's own apply, the tree moving, fail-next-apply armed, and
everything stopped and removed at the end (or the folder kept when asked)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from slicectl.core.errors import UsageError
from slicectl.demo.session import FAULT, DemoPaths, prepare, running_demo


def test_a_folder_that_is_not_empty_is_refused_untouched(tmp_path: Path) -> None:
    (tmp_path / "mine").write_text("x")
    with pytest.raises(UsageError, match="not an empty directory"):
        prepare(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["mine"]


def test_prepare_lays_out_the_folder(tmp_path: Path) -> None:
    paths = prepare(tmp_path / "new")
    assert paths.tenants.read_text() == paths.original.read_text()
    assert (paths.sysfs / "devices/system/node/node1/cpulist").read_text() == "4-7,12-15\n"
    assert paths.units.is_dir() and paths.control.is_dir() and paths.bin.is_dir()
    assert not paths.running()


def _wait(cond: Callable[[], bool], timeout: float = 30.0) -> None:
    """Wait until `cond()` holds (the timeout only detects a hang)."""
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.02)


def test_the_demo_runs_applied_and_moving_then_goes(scratch: Path) -> None:
    folder = scratch / "demo"
    with running_demo(folder) as demo:
        paths = demo.paths
        assert paths.running()
        assert demo.moved.wait(30)
        # tenants.yaml applied by apply: its units and manifest, the settings in the cgroups.
        assert (paths.units / "tenants-cache.slice.d" / "50-slicectl.conf").exists()
        cache = paths.cgroup / "tenants.slice" / "tenants-cache.slice"
        assert (cache / "memory.high").read_text() == f"{1 << 30}\n"
        # PID 1's scope is on the housekeeping CPUs, as the plan says (the fake systemd runs
        # it in the root slice, as systemd does).
        housekeeping = (paths.cgroup / "system.slice" / "cpuset.cpus.effective").read_text()
        assert (paths.cgroup / "init.scope" / "cpuset.cpus.effective").read_text() == (
            housekeeping) != "0-15\n"
        usage = (cache / "cpu.stat").read_text()
        _wait(lambda: (cache / "cpu.stat").read_text() != usage)  # it keeps moving
        (paths.root / FAULT).touch()
        _wait(lambda: not (paths.root / FAULT).exists())  # taken: the next change fails
        assert (paths.bin / "slicectl").stat().st_mode & 0o111
    assert not folder.exists()
    assert not DemoPaths(folder).running()


def test_a_folder_given_is_kept(scratch: Path) -> None:
    folder = scratch / "kept"
    with running_demo(folder, keep=True) as demo:
        assert demo.moved.wait(30)
    assert (folder / "tenants.yaml").exists() and (folder / "units").is_dir()
    assert not DemoPaths(folder).running()  # stopped all the same
