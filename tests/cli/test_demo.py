"""`slicectl demo`'s command line (slicectl.cli.demo): the options it adds to a verb, and its
usage errors, which start nothing. The demo run end to end: tests/test_demo.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from slicectl.cli.demo import with_demo_options
from slicectl.core.errors import UsageError
from slicectl.demo.session import DemoPaths


def test_demo_options_are_added_where_the_verb_takes_them_and_the_user_gave_none() -> None:
    paths = DemoPaths(Path("/d"))
    assert with_demo_options(paths, ["status", "--json"]) == [
        "status", "--json", "--cgroup-root", "/d/cgroup", "--sysfs", "/d/sys"]
    apply = with_demo_options(paths, ["apply", "t.yaml", "--unit-dir=/elsewhere"])
    assert apply[:3] == ["apply", "t.yaml", "--unit-dir=/elsewhere"]
    assert "/d/units" not in apply
    assert {"--bus", "--control-dir", "--root", "--sysfs", "--cgroup-root"} <= set(apply)
    plan = with_demo_options(paths, ["plan", "t.yaml", "--topology", "h.json"])
    assert "--sysfs" not in plan and "--unit-dir" in plan  # they exclude each other
    assert with_demo_options(paths, ["completion", "bash"]) == ["completion", "bash"]
    for argv in ([], ["nope"], ["demo", "status"]):
        with pytest.raises(UsageError):
            with_demo_options(paths, argv)


def test_help_and_version_pass_through_the_demo_s_slicectl() -> None:
    """In the demo's shell, `slicectl --help` failed: "not a slicectl verb"."""
    paths = DemoPaths(Path("/d"))
    for argv in (["--help"], ["-h"], ["--version"]):
        assert with_demo_options(paths, argv) == argv


@pytest.mark.parametrize(("view", "usage"), [("status", "usage: slicectl status"),
                                             ("top", "usage: slicectl top"),
                                             ("shell", "usage: slicectl demo")])
def test_a_view_s_help_starts_no_demo(view: str, usage: str, tmp_path: Path) -> None:
    """`demo status --help` booted the whole demo first; `demo shell --help` ran --help as
    a command in it."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "slicectl", "demo", view, "--help"],
                          capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0 and proc.stdout.startswith(usage), proc.stderr
    assert list(tmp_path.iterdir()) == []  # no demo folder made
