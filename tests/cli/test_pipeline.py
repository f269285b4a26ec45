"""The pipeline verbs' own output (slicectl.cli.pipeline): validate without a topology, topology
options that need --live, generate's list of changes, and the `changes` object of `plan --json`
and `apply --json`, apply's confirmation on a terminal (files and generator mode). Whole runs of
each verb are in test_cli.py and test_apply.py."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from apply.test_generator_mode import EXE, TENANTS, files, host  # noqa: F401 (a fixture)
from paths import TESTS
from ptykit import run_in_pty

from slicectl.apply.applier import ApplyOptions
from slicectl.apply.generator_mode import GeneratorPaths, enable
from slicectl.apply.host_diff import Diff, PropChange
from slicectl.cli import main
from slicectl.cli.pipeline import diff_json
from slicectl.demo.fakesystemd import FakeSystemd
from slicectl.host.files.unitdir import FileChanges
from slicectl.host.topology.sysfs import read_topology

XEON = str(TESTS / "fixtures" / "topologies" / "xeon-2s-smt.json")
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
        "balanced": [], "exclusive": []}


def test_exclusive_cpus_to_write_are_a_change_in_json() -> None:
    from slicectl.apply.partitions import ExclusiveChange

    diff = Diff(files=FileChanges(unchanged=("a.slice",)),
                exclusive=[ExclusiveChange("/tenants.slice", frozenset(), frozenset({2, 3}))])
    got = diff_json(diff)
    assert got["changed"] is True
    assert got["exclusive"] == [{"cgroup": "/tenants.slice", "live": "", "desired": "2,3"}]


PROMPT = "Apply them? [y/N] "
CTRL_D = b"\x04"
CHANGES = {"SetUnitProperties", "StartUnit", "Reload"}


def apply_argv(tenants: Path, options: ApplyOptions, *more: str) -> list[str]:
    """`slicectl apply TENANTS` on the fake systemd's host, as a command line."""
    return [sys.executable, "-m", "slicectl", "apply", str(tenants),
            "--unit-dir", str(options.unit_dir), "--cgroup-root", str(options.cgroup_root),
            "--bus", str(options.bus_address), "--control-dir", str(options.control_dir),
            "--balance-state", str(options.balance_state), *more]


@pytest.fixture
def files_host(tmp_path: Path, dbus_daemon: str, fake_systemd: FakeSystemd) -> ApplyOptions:
    (tmp_path / "units").mkdir()
    return ApplyOptions(unit_dir=tmp_path / "units", cgroup_root=tmp_path / "cgroup",
                        bus_address=dbus_daemon, control_dir=tmp_path / "control",
                        balance_state=tmp_path / "balance.json")


@pytest.mark.parametrize(("typed", "said"), [(CTRL_D, ""), (b"n\r", "n")])
async def test_apply_on_a_terminal_asks_and_ctrl_d_or_no_changes_nothing(
        tenants: Path, files_host: ApplyOptions, fake_systemd: FakeSystemd, typed: bytes,
        said: str) -> None:
    code, shown = await asyncio.to_thread(
        run_in_pty, apply_argv(tenants, files_host, "--topology", XEON), {PROMPT: typed})
    assert code == 1, shown
    assert "slicectl will make these changes:\n" in shown
    assert f"  create {files_host.unit_dir}/tenants.slice\n" in shown
    assert shown.endswith(f"{PROMPT}{said}\nerror: cancelled; nothing was changed\n"), shown
    assert list(files_host.unit_dir.iterdir()) == []
    assert not CHANGES & set(fake_systemd.members())


async def test_apply_on_a_terminal_in_generator_mode_asks_first(
        host: tuple[ApplyOptions, GeneratorPaths, Path],  # noqa: F811 (the fixture)
        tmp_path: Path, fake_systemd: FakeSystemd) -> None:
    options, paths, sysfs = host
    first = tmp_path / "first.yaml"
    first.write_text(TENANTS)
    await enable(str(first), read_topology(sysfs), str(sysfs), options, paths, EXE)
    generated, calls = files(paths.output), len(fake_systemd.calls)
    second = tmp_path / "tenants.yaml"
    second.write_text(TENANTS.replace("cpu_weight: 300", "cpu_weight: 500"))
    argv = apply_argv(second, options, "--sysfs", str(sysfs), "--root", str(paths.root))
    for typed, said in ((CTRL_D, ""), (b"no\r", "no")):
        code, shown = await asyncio.to_thread(run_in_pty, argv, {PROMPT: typed})
        assert code == 1, shown
        assert (f"  write  {paths.tenants} (the previous one kept as tenants.yaml.previous), "
                "then reload systemd (the generator places the tenants)\n") in shown
        assert "\n  set    tenants-db1.slice: CPUWeight 300 -> 500  [" in shown
        assert shown.endswith(f"{PROMPT}{said}\nerror: cancelled; nothing was changed\n")
        assert paths.tenants.read_text() == TENANTS and not paths.previous.exists()
        assert files(paths.output) == generated
        assert not CHANGES & {member for member, _ in fake_systemd.calls[calls:]}
    code, shown = await asyncio.to_thread(run_in_pty, argv, {PROMPT: b"y\r"})
    assert code == 0, shown
    assert paths.tenants.read_text() == second.read_text()
    assert "CPUWeight=500" in (paths.output / "tenants-db1.slice.d/50-slicectl.conf"
                               ).read_text()
    # Not on a terminal: no question, as before (provisioning scripts pipe it).
    second.write_text(TENANTS)
    done = await asyncio.to_thread(subprocess.run, argv, stdin=subprocess.DEVNULL,
                                   capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and PROMPT not in done.stdout, done.stderr
    assert paths.tenants.read_text() == TENANTS
