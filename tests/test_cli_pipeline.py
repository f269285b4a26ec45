"""The pipeline verbs' own output (slicectl.cli.pipeline): validate without a topology, topology
options that need --live, generate's list of changes, and the `changes` object of `plan --json`
and `apply --json`. Whole runs of each verb are in test_cli.py and test_apply.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from slicectl.apply.host_diff import Diff, PropChange
from slicectl.cli import main
from slicectl.cli.pipeline import diff_json
from slicectl.host.unitdir import FileChanges

XEON = str(Path(__file__).parent / "fixtures" / "topologies" / "xeon-2s-smt.json")
YAML = "version: 1\ntenants:\n  db1: {cpus: 2}\n  web: {cpus: 2}\nprofiles:\n  night:\n" \
       "    db1: {cpus: 1}\n"


@pytest.fixture
def tenants(tmp_path: Path) -> Path:
    path = tmp_path / "t.yaml"
    path.write_text(YAML)
    return path


def test_validate_without_a_topology_checks_the_file_only(
        tenants: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tenants)]) == 0
    assert capsys.readouterr().out == (
        f"{tenants}: ok (2 tenant(s), 1 profile(s); file only: give --topology or --sysfs to "
        "check placement)\n")


def test_topology_tenants_and_profile_go_with_live(
        tenants: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topology", "--topology", XEON, "--tenants", str(tenants)]) == 2
    assert capsys.readouterr().err == (
        "error: --tenants and --profile go with --live\n"
        "  hint: slicectl topology --live --tenants FILE [--profile P]\n")


def test_generate_lists_each_change_then_says_up_to_date(
        tenants: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "units"
    assert main(["generate", str(tenants), "--topology", XEON, "--out", f"{out}/"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"  create  {out}/{rel}" for rel in (  # the trailing / not doubled
        "tenants-db1.slice", "tenants-db1.slice.d/50-slicectl.conf", "tenants-web.slice",
        "tenants-web.slice.d/50-slicectl.conf", "tenants.slice")]
    assert main(["generate", str(tenants), "--topology", XEON, "--out", str(out)]) == 0
    assert capsys.readouterr().out == f"  {out}: up to date ({len(lines)} file(s))\n"
    tenants.write_text(YAML.replace("  web: {cpus: 2}\n", ""))
    assert main(["generate", str(tenants), "--topology", XEON, "--out", str(out)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"  update  {out}/tenants.slice",  # it Wants= each tenant slice
        f"  remove  {out}/tenants-web.slice",
        f"  remove  {out}/tenants-web.slice.d/50-slicectl.conf"]


def test_changes_json() -> None:
    diff = Diff(files=FileChanges(created=("tenants.slice",), unchanged=("a.slice",)),
                props=[PropChange("tenants-db1.slice", "CPUQuotaPerSecUSec", None, 1_500_000,
                                  "/run/systemd/system.control/tenants-db1.slice.d/x.conf")],
                start=["tenants.slice"], notes=["a note"], reload=True)
    assert diff_json(diff) == {
        "changed": True,
        "files": {"created": ["tenants.slice"], "updated": [], "removed": []},
        "properties": [{"unit": "tenants-db1.slice", "property": "CPUQuotaPerSecUSec",
                        "live": "(unset)", "desired": "150%",
                        "source": "/run/systemd/system.control/tenants-db1.slice.d/x.conf"}],
        "reload": True, "start": ["tenants.slice"], "stop": [], "notes": ["a note"],
        "balanced": []}
