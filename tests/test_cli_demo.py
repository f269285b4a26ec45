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
