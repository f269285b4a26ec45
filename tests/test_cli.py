"""The command line as users see it: verbs, exit codes, messages, files, lazy imports.

Why this module runs past 400 lines: it runs every verb as a user does (exit codes, messages,
files, `--help` of each) and holds the lazy-import checks behind the start-up targets; what the
verbs compute is tested in the modules' own test files.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import slicectl
from slicectl.cli import COMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parent.parent
TOPOLOGIES = ROOT / "tests" / "fixtures" / "topologies"
SYSFS = ROOT / "tests" / "fixtures" / "sysfs"
WEB_BATCH = ROOT / "examples" / "web-batch.yaml"
XEON = str(TOPOLOGIES / "xeon-2s-smt.json")


def slicectl_run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    # Piped output is COLUMNS wide (default 160); fix it so tables are not cut.
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "slicectl", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


# --- help, version, usage ---------------------------------------------------------------------


def test_help_lists_every_verb() -> None:
    proc = slicectl_run("--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: slicectl")
    assert {"topology", "validate", "plan", "generate"} <= set(COMMANDS)
    for verb in COMMANDS:
        assert re.search(rf"^ {{4}}{verb}(\s|$)", proc.stdout, re.MULTILINE), (
            f"--help does not list {verb}")
    assert "--debug" in proc.stdout and "--version" in proc.stdout


def test_every_verb_runs_its_own_function() -> None:
    """The table imports a verb's module when the verb runs: each name leads to the function
    of that verb, in the module the CLI's docstring names."""
    for verb in COMMANDS:
        command = COMMANDS[verb]
        assert callable(command) and command.__name__ == f"cmd_{verb}", verb
        assert command.__module__.startswith("slicectl.cli."), command.__module__
    with pytest.raises(KeyError):
        COMMANDS["no-such-verb"]


def test_one_shot_verbs_pause_cyclic_collection(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A verb that runs once (validate, generate, apply, ...) runs without the cyclic garbage
    collector (start-up: BENCHMARKS.md); main() gives it back as it found it, also after an
    error. A verb that keeps running (status, top, the exporter) keeps it."""
    import gc

    import slicectl.cli.pipeline as pipeline
    import slicectl.cli.watch as watch

    seen: dict[str, bool] = {}

    def validate(args: Any) -> int:
        seen["validate"] = gc.isenabled()
        raise RuntimeError("boom")

    def apply(args: Any) -> int:
        seen["apply"] = gc.isenabled()
        return 0

    def status(args: Any) -> int:
        seen["status"] = gc.isenabled()
        return 0

    monkeypatch.setattr(pipeline, "cmd_validate", validate)
    monkeypatch.setattr(pipeline, "cmd_apply", apply)
    monkeypatch.setattr(watch, "cmd_status", status)
    assert gc.isenabled()
    assert main(["validate", "x.yaml"]) == 1
    assert "internal error: RuntimeError: boom" in capsys.readouterr().err
    assert gc.isenabled()
    assert main(["apply", "x.yaml", "--yes"]) == 0
    assert main(["status"]) == 0
    assert seen == {"validate": False, "apply": False, "status": True} and gc.isenabled()


def test_version() -> None:
    proc = slicectl_run("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"slicectl {slicectl.__version__}"


def test_no_verb_prints_usage_and_exits_2() -> None:
    proc = slicectl_run()
    assert proc.returncode == 2
    assert "usage: slicectl" in proc.stdout + proc.stderr


@pytest.mark.parametrize("args", [["frobnicate"], ["validate"], ["generate", "x.yaml"],
                                  ["plan", "x.yaml", "--topology", "a", "--sysfs", "b"]])
def test_usage_errors_exit_2(args: list[str]) -> None:
    proc = slicectl_run(*args)
    assert proc.returncode == 2
    assert "usage: slicectl" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("verb", ["status", "top", "tui", "record"])
@pytest.mark.parametrize("value", ["-1", "nan", "inf", "-inf", "soon"])
def test_bad_interval_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                       verb: str, value: str) -> None:
    """Refused by argparse (exit 2, its usage line and message), before any read."""
    with pytest.raises(SystemExit) as e:
        main([verb, "--cgroup-root", str(tmp_path), "--interval", value])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: slicectl {verb}")
    assert f"slicectl {verb}: error: argument --interval: " in err and "Traceback" not in err


@pytest.mark.parametrize("verb", sorted(COMMANDS))
def test_each_verb_help_is_the_full_parsers(capsys: pytest.CaptureFixture[str], verb: str) -> None:
    """main() builds only the verb it runs; its help is the one of the parser of every verb."""
    with pytest.raises(SystemExit):
        main([verb, "--help"])
    sub = next(a for a in build_parser()._actions if a.dest == "verb")
    assert capsys.readouterr().out == getattr(sub, "choices", {})[verb].format_help()


def test_help_before_a_verb_is_the_main_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--debug", "--help", "plan"])
    out = capsys.readouterr().out
    assert out.startswith("usage: slicectl [-h] [--version] [--debug] VERB ...")
    assert all(f"    {verb}" in out for verb in COMMANDS)


# --- validate ---------------------------------------------------------------------------------


def test_validate_ok(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "validate", str(WEB_BATCH))
    assert code == 0 and not err
    assert out == (f"{WEB_BATCH}: ok (2 tenant(s); file only: give --topology or --sysfs to "
                   "check placement)\n")
    code, out, _ = run(capsys, "validate", str(ROOT / "examples" / "day-night.yaml"))
    assert code == 0 and out.endswith(": ok (2 tenant(s), 1 profile(s); file only: give "
                                      "--topology or --sysfs to check placement)\n")
    code, out, err = run(capsys, "validate", str(WEB_BATCH), "--topology", XEON)
    assert code == 0 and not err
    assert out == f"{WEB_BATCH}: ok (2 tenant(s), placed on {XEON})\n"


@pytest.mark.parametrize(("tenants", "error"), [
    ('a: {cpus: "0-7"}\n  b: {cpus: "4-11"}',
     "error: {path}:4: tenants.b.cpus: CPU(s) 4-7 are also given to exclusive tenant 'a'\n"
     "  hint: exclusive tenants cannot share CPUs; set exclusive: false on one of them or "
     "pick other CPUs\n"),
    ("a: {cpus: 64}",
     "error: {path}:3: tenants.a.cpus: exclusive tenants ask for 64 CPUs in all (a: 64), but "
     "only 32 are free\n"),
    ("a: {cpus: '40-47'}",
     "error: {path}:3: tenants.a.cpus: CPU(s) 40-47 do not exist on this host\n"
     "  hint: tenant a: the host's CPUs are 0-31\n"),
    ("a: {cpus: 2, nodes: [5]}",
     "error: {path}:3: tenants.a.nodes: node(s) 5 do not exist on this host\n"
     "  hint: nodes here: 0, 1\n"),
])
def test_validate_with_a_topology_checks_placement(
        tenants: str, error: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What plan refuses, validate --topology refuses too; without a topology it says it
    checked the file only."""
    path = tmp_path / "t.yaml"
    path.write_text(f"version: 1\ntenants:\n  {tenants}\n")
    code, out, _ = run(capsys, "validate", str(path))
    assert code == 0 and out.endswith("file only: give --topology or --sysfs to check "
                                      "placement)\n")
    code, out, err = run(capsys, "validate", str(path), "--topology", XEON)
    assert code == 1 and out == ""
    assert err.startswith(error.format(path=path)), err
    assert "Traceback" not in err and "internal error" not in err


def test_validate_checks_every_profile_and_the_systemd_version(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("version: 1\ntenants:\n  a: {cpus: 2}\nprofiles:\n  big:\n"
                    "    a: {cpus: 64}\n")
    code, _, err = run(capsys, "validate", str(path), "--topology", XEON)
    assert code == 1 and err.startswith(f"error: {path}:3: tenants.a.cpus: exclusive tenants "
                                        "ask for 64 CPUs in all (a: 64), but only 32 are free")
    path.write_text("version: 1\ntenants:\n  a: {cpus: 2}\n")
    code, _, err = run(capsys, "validate", str(path), "--topology", XEON,
                       "--systemd-version", "240")
    assert code == 1 and err.startswith(
        f"error: {path}:3: tenants.a.cpus: needs systemd 244 or later, but the target runs "
        "systemd 240 (--systemd-version)\n")


def test_validate_without_a_topology_still_checks_the_systemd_version(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--systemd-version was silently ignored without --topology or --sysfs."""
    path = tmp_path / "t.yaml"
    path.write_text("version: 1\ntenants:\n  a: {cpus: 2}\n")
    code, _, err = run(capsys, "validate", str(path), "--systemd-version", "240")
    assert code == 1 and err.startswith(
        f"error: {path}:3: tenants.a.cpus: needs systemd 244 or later, but the target runs "
        "systemd 240 (--systemd-version)\n")
    code, out, _ = run(capsys, "validate", str(path), "--systemd-version", "252")
    assert code == 0 and "keys checked for systemd 252; file only" in out


def test_plan_exit_code_offline_is_not_a_match(capsys: pytest.CaptureFixture[str]) -> None:
    """plan --exit-code for a topology compares nothing with a host: exit 4, and says so."""
    code, out, err = run(capsys, "plan", str(WEB_BATCH), "--topology", XEON, "--exit-code",
                         "--json")
    assert code == 4 and out
    assert err == ("slicectl: offline: nothing compared with a host (--topology or --sysfs "
                   "without --unit-dir or --bus); exit 4\n")
    code, _, err = run(capsys, "plan", str(WEB_BATCH), "--topology", XEON, "--json")
    assert code == 0 and err == ""


BAD = """\
version: 1
housekeeping: {cpus: x}
tenants:
  db1:
    memroy_low: 1G
  Web: {}
  db2:
    memory_max: 12X
    services: [a.service]
  db3:
    services: [a.service]
"""


def test_validate_lists_every_problem(tmp_path: Path) -> None:
    path = tmp_path / "tenants.yaml"
    path.write_text(BAD)
    proc = slicectl_run("validate", str(path))
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    assert set(errors) == {
        f"error: {path}:2: housekeeping.cpus: bad number 'x' in cpulist 'x'",
        f"error: {path}:5: tenants.db1.memroy_low: unknown key",
        f"error: {path}:6: tenants.Web: invalid tenant name",
        f"error: {path}:8: tenants.db2.memory_max: '12X' is not a size (use a number with K, "
        "M, G or T, or infinity)",
        f"error: {path}:11: tenants.db3.services: a.service is already a member of tenant "
        "'db2'",
    }
    # Each error is followed by its hint.
    for i, line in enumerate(lines):
        if line.startswith("error: "):
            assert lines[i + 1].startswith("  hint: "), line
    assert "  hint: did you mean 'memory_low'?" in proc.stderr
    assert lines[-1] == "5 problems found"


def test_validate_missing_file(tmp_path: Path) -> None:
    proc = slicectl_run("validate", str(tmp_path / "nope.yaml"))
    assert proc.returncode == 1
    assert proc.stderr == (f"error: {tmp_path}/nope.yaml: cannot read: No such file or "
                           "directory\n  hint: check the path to tenants.yaml\n")


def test_debug_shows_traceback(tmp_path: Path) -> None:
    path = tmp_path / "tenants.yaml"
    path.write_text(BAD)
    proc = slicectl_run("--debug", "validate", str(path))
    assert proc.returncode == 1
    assert "Traceback (most recent call last)" in proc.stderr
    assert "slicectl.core.errors.ConfigError" in proc.stderr


# --- topology and plan ------------------------------------------------------------------------


def test_topology_from_sysfs_shows_nodes_and_map() -> None:
    proc = slicectl_run("topology", "--sysfs", "tests/fixtures/sysfs/nehalem-ex-4node")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("4 node(s), 32 online CPUs, SMT off")
    assert "NUMA topology (tests/fixtures/sysfs/nehalem-ex-4node)" in out
    assert "NUMA map (node × CPU)" in out
    assert "0,4,8,12,16,20,24,28" in out
    for n in range(4):
        assert f"node{n}" in out
    assert "10 21 21 21" in out


def test_topology_bad_sysfs_root(tmp_path: Path) -> None:
    proc = slicectl_run("topology", "--sysfs", str(tmp_path / "nothing"))
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"error: {tmp_path}/nothing: sysfs root does not exist\n")
    assert "Traceback" not in proc.stderr


def plan_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code, out, err = run(capsys, "plan", *args, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("machine", sorted(p.name for p in SYSFS.iterdir()))
def test_topology_json_round_trip_gives_the_same_plan(
        machine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A kernel without NUMA has its memory in the proc tree beside the sysfs one.
    proc = SYSFS.parent / "proc" / machine
    sysfs = ["--sysfs", str(SYSFS / machine)] + (["--proc-root", str(proc)] * proc.exists())
    code, out, _ = run(capsys, "topology", *sysfs, "--json")
    assert code == 0
    export = tmp_path / "topology.json"
    export.write_text(out)
    config = tmp_path / "tenants.yaml"
    config.write_text("version: 1\ntenants:\n  a: {cpus: 1}\n  b: {}\n")
    from_sysfs = plan_json(capsys, str(config), *sysfs)
    from_file = plan_json(capsys, str(config), "--topology", str(export))
    assert from_sysfs.pop("topology") == str(SYSFS / machine)
    assert from_file.pop("topology") == str(export)
    assert from_sysfs == from_file


def test_plan_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    data = plan_json(capsys, str(WEB_BATCH), "--topology", XEON)
    assert data["format"] == "slicectl-plan/1"
    assert data["source"] == str(WEB_BATCH) and data["profile"] is None
    assert data["housekeeping_cpus"] == "0,16"
    web, batch = data["tenants"]
    assert web == {"name": "web", "cpus": "8-15,24-31", "cpu_count": 16, "cpu_nodes": [1],
                   "memory_nodes": [1], "exclusive": True, "shared_pool": False,
                   "cpu_share": {"cores": 16.0, "percent": 50.0, "bound": "cpus"}}
    # --topology: the standard competitors, pinned to the housekeeping CPUs, said so
    assert not data["cpu_shares"]["live"] and "assumed" in data["cpu_shares"]["note"]
    assert {c["name"]: c["cpus"] for c in data["cpu_shares"]["competitors"]} == {
        "system.slice": "0,16", "user.slice": "0,16", "init.scope": "0,16"}
    assert batch["name"] == "batch" and batch["cpu_count"] == 6 and batch["cpu_nodes"] == [0]
    units = {u["unit"]: u for u in data["units"]}
    assert {"tenants.slice", "tenants-web.slice", "tenants-batch.slice", "system.slice",
            "user.slice", "init.scope", "cron.service", "nginx.service"} <= set(units)
    assert units["tenants-web.slice"]["properties"]["AllowedCPUs"] == "8-15,24-31"
    assert units["tenants-web.slice"]["properties"]["MemoryMax"] == 48 * 1024**3
    assert units["nginx.service"]["slice"] == "tenants-web.slice"
    assert units["cron.service"]["properties"] == {"CPUQuota": 50, "MemoryMax": 512 * 1024**2}
    for u in data["units"]:
        assert set(u) >= {"unit", "path", "kind", "section", "properties"}


def test_plan_and_generate_say_when_a_tenant_shares_a_core(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tenants = tmp_path / "tenants.yaml"
    tenants.write_text("version: 1\nhousekeeping: {cpus: 1}\ntenants:\n"
                       "  a: {cpus: 15, nodes: [0]}\n")
    note = ("tenant a shares physical cores with housekeeping: CPU(s) 16 and 0 are SMT "
            "siblings (no whole cores were left for it)")
    code, out, _ = run(capsys, "plan", str(tenants), "--topology", XEON)
    assert code == 0 and f"\nnote: {note}\n" in out
    assert plan_json(capsys, str(tenants), "--topology", XEON)["placement_notes"] == [note]
    code, _, err = run(capsys, "generate", str(tenants), "--topology", XEON, "--out",
                       str(tmp_path / "out"))
    assert code == 0 and f"note: {note}\n" in err
    assert plan_json(capsys, str(WEB_BATCH), "--topology", XEON)["placement_notes"] == []


def test_plan_with_profile(capsys: pytest.CaptureFixture[str]) -> None:
    data = plan_json(capsys, str(ROOT / "examples" / "day-night.yaml"), "--topology",
                     str(TOPOLOGIES / "epyc-nps4.json"), "--profile", "night")
    assert data["profile"] == "night"
    assert {t["name"]: t["cpu_count"] for t in data["tenants"]} == {"oltp": 4, "reports": 16}
    code, _, err = run(capsys, "plan", str(ROOT / "examples" / "day-night.yaml"), "--topology",
                       str(TOPOLOGIES / "epyc-nps4.json"), "--profile", "weekend")
    assert code == 1
    assert "profiles: no profile 'weekend'" in err and "hint: profiles in this file: night" in err


def test_plan_human_output() -> None:
    proc = slicectl_run("plan", "examples/oracle-4node.yaml", "--topology",
                        "tests/fixtures/topologies/nehalem-ex-4node.json")
    assert proc.returncode == 0, proc.stderr
    assert "Plan for examples/oracle-4node.yaml" in proc.stdout
    assert "tenants-db1.slice" in proc.stdout and "0,4,8,12,16,20,24,28" in proc.stdout


def test_missing_topology_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "plan", str(WEB_BATCH), "--topology", str(tmp_path / "t.json"))
    assert code == 1
    assert err.startswith(f"error: {tmp_path}/t.json: cannot read topology file: No such file")


# --- generate ---------------------------------------------------------------------------------


def generate(capsys: pytest.CaptureFixture[str], config: Path, out: Path,
             topology: str = XEON) -> tuple[int, str, str]:
    return run(capsys, "generate", str(config), "--topology", topology, "--out", str(out))


def test_generate_twice_is_up_to_date(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    code, stdout, _ = generate(capsys, WEB_BATCH, out)
    assert code == 0
    assert f"  create  {out}/tenants-web.slice" in stdout.splitlines()
    first = snapshot(out)
    code, stdout, _ = generate(capsys, WEB_BATCH, out)
    assert code == 0
    assert stdout.strip().startswith(f"{out}: up to date (")
    assert snapshot(out) == first


def test_generate_removes_dropped_tenant_and_keeps_foreign_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "tenants.yaml"
    config.write_text("version: 1\ntenants:\n  a: {cpus: 2, services: [a.service]}\n"
                      "  b: {cpus: 2, services: [b.service]}\n")
    out = tmp_path / "out"
    assert generate(capsys, config, out)[0] == 0
    b_files = [p for p in snapshot(out) if "tenants-b" in p or p.startswith("b.service")]
    assert b_files
    (out / "local.service").write_text("[Service]\nExecStart=/bin/true\n")
    (out / "b.service.d" / "10-admin.conf").write_text("[Service]\nNice=5\n")
    config.write_text("version: 1\ntenants:\n  a: {cpus: 2, services: [a.service]}\n")
    code, stdout, _ = generate(capsys, config, out)
    assert code == 0
    for rel in b_files:
        assert f"  remove  {out}/{rel}" in stdout.splitlines()
        assert not (out / rel).exists()
    assert not (out / "tenants-b.slice.d").exists()
    assert (out / "local.service").read_text() == "[Service]\nExecStart=/bin/true\n"
    assert (out / "b.service.d" / "10-admin.conf").read_text() == "[Service]\nNice=5\n"
    assert (out / "tenants-a.slice").exists()


@pytest.mark.parametrize("text", [
    "version: 1\ntenants:\n  a: {cpus: 1000}\n",  # placement error
    "version: 1\ntenants:\n  a: {cpus: x}\n",  # config error
    "version: 1\ntenants:\n  a: {cpus: '999'}\n",  # CPU does not exist
])
def test_generate_with_bad_input_leaves_nothing(
        text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "tenants.yaml"
    config.write_text(text)
    out = tmp_path / "out"
    code, stdout, err = generate(capsys, config, out)
    assert code == 1
    assert err.startswith(f"error: {config}:3: tenants.a.cpus: ")
    assert "  hint: " in err
    assert not out.exists()


def test_generate_with_bad_templates_leaves_dir_unchanged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    generate(capsys, WEB_BATCH, out)
    before = snapshot(out)
    empty = tmp_path / "templates"
    empty.mkdir()
    code, _, err = run(capsys, "generate", str(WEB_BATCH), "--topology", XEON, "--out", str(out),
                       "--templates", str(empty))
    assert code == 1
    assert "not found in" in err and "hint: --templates DIR must hold" in err
    assert snapshot(out) == before


def test_generate_into_foreign_file_fails_cleanly(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "tenants.slice").write_text("[Unit]\nDescription=admin's\n")
    code, _, err = generate(capsys, WEB_BATCH, out)
    assert code == 1
    assert err.startswith(f"error: {out}/tenants.slice exists and was not generated by slicectl")
    assert snapshot(out) == {"tenants.slice": b"[Unit]\nDescription=admin's\n"}


def test_generate_into_a_path_that_is_a_file_fails_cleanly(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "units").write_text("not a folder\n")
    for out in (tmp_path / "units", tmp_path / "units" / "sub"):
        code, _, err = generate(capsys, WEB_BATCH, out)
        assert code == 1
        assert err.startswith(f"error: cannot use {tmp_path}/units as the unit directory: "
                              "Not a directory\n  hint: "), err
    assert [p.name for p in tmp_path.iterdir()] == ["units"]
    assert (tmp_path / "units").read_text() == "not a folder\n"


def test_generate_force_and_lock_timeout_are_in_its_help() -> None:
    proc = slicectl_run("generate", "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "--force replace or remove files slicectl generated even if they were edited" in text
    assert "--lock-timeout S wait at most S seconds for another slicectl writing DIR" in text


# --- lazy imports -----------------------------------------------------------------------------

HEAVY_FOR_HELP = ("textual", "dbus_fast", "jinja2", "ruamel", "rich")


def modules_after(args: list[str], env: dict[str, str] | None = None) -> set[str]:
    """Top-level modules imported by `main(args)` in a fresh interpreter (`env` added to
    its environment)."""
    code = (
        "import sys, json\n"
        "from slicectl.cli import main\n"
        "try:\n"
        f"    rc = main({args!r})\n"
        "except SystemExit as e:\n"
        "    rc = e.code\n"
        "sys.stdout.flush()\n"
        "print('\\nMODULES=' + json.dumps(sorted({m.split('.')[0] for m in sys.modules})),"
        " 'RC=' + str(rc))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    modules, rc = last.removeprefix("MODULES=").rsplit(" RC=", 1)
    assert rc in ("0", "None"), proc.stdout + proc.stderr
    return set(json.loads(modules))


def test_help_imports_nothing_heavy() -> None:
    loaded = modules_after(["--help"])
    assert not loaded & set(HEAVY_FOR_HELP), sorted(loaded & set(HEAVY_FOR_HELP))


def test_generate_imports_neither_textual_nor_dbus(tmp_path: Path) -> None:
    """generate renders with jinja2 (the built-in templates or --templates DIR), and needs
    neither the TUI's nor the D-Bus client's libraries."""
    loaded = modules_after(["generate", "examples/web-batch.yaml", "--topology", XEON, "--out",
                            str(tmp_path / "out")])
    assert not loaded & {"textual", "dbus_fast"}, sorted(loaded)
    assert "jinja2" in loaded
    assert (tmp_path / "out" / "tenants-web.slice").exists()
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "slice.j2").write_text("[Unit]\nDescription={{ description }}\n")
    (templates / "dropin.j2").write_text("[{{ section }}]\n")
    loaded = modules_after(["generate", "examples/web-batch.yaml", "--topology", XEON, "--out",
                            str(tmp_path / "own"), "--templates", str(templates)])
    assert "jinja2" in loaded
    assert (tmp_path / "own" / "tenants-web.slice").read_text().startswith("[Unit]\n")


def test_generate_does_not_import_rich(tmp_path: Path) -> None:
    """Only the verbs that print tables (plan, topology) load rich."""
    loaded = modules_after(["generate", "examples/web-batch.yaml", "--topology", XEON, "--out",
                            str(tmp_path / "out")])
    assert "rich" not in loaded


@pytest.mark.parametrize("columns", [None, "80", "60"])
def test_a_piped_plan_keeps_its_cpu_lists_whole(columns: str | None,
                                                capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Piped, nothing is cut with "…" and no line ends in spaces. Without COLUMNS a table
    takes the width it needs (a tenant per line, for grep); with COLUMNS every line fits it,
    a tenant's row becoming a block of lines, its CPU list wrapped after a comma if at all."""
    from slicectl.core.cpulist import format_cpulist

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    code, out, _ = run(capsys, "plan", "examples/oracle-4node.yaml", "--topology",
                       str(TOPOLOGIES / "nehalem-ex-4node.json"))
    assert code == 0
    lines = out.splitlines()
    assert "…" not in out and "\x1b[" not in out
    assert [line for line in lines if line != line.rstrip()] == []
    if columns is None:
        assert max(map(len, lines)) > 80
        for n in range(4):
            row = next(line for line in lines if line.startswith(f"│ db{n + 1} "))
            assert f"tenants-db{n + 1}.slice" in row
            assert f" {format_cpulist(frozenset(range(n, 32, 4)))} " in row
    else:
        assert max(map(len, lines)) <= int(columns)
        # the cells of the tenants' column, joined: each CPU list whole, in order
        text = "".join(line.split("│")[2].strip() for line in lines
                       if line.count("│") == 3 and "node" not in line.split("│")[1])
        for n in range(4):
            assert f"CPUs {format_cpulist(frozenset(range(n, 32, 4)))} (8) on node {n}" in text
    legend = next(line for line in lines if line.startswith("legend:"))
    assert legend == "legend: A=db1 B=db2 C=db3 D=db4 #=housekeeping .=shared/free"


def test_a_piped_table_narrower_than_the_page_is_as_rich_draws_it(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Within COLUMNS, piped output is rich's own plain text, trailing spaces aside."""
    from rich.console import Console

    from slicectl.host.topology.sysfs import load_topology_file
    from slicectl.views import maps, tables

    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    path = str(TOPOLOGIES / "nehalem-ex-4node.json")
    topo = load_topology_file(path)
    code, out, _ = run(capsys, "topology", "--topology", path)
    assert code == 0
    console = Console(width=100, soft_wrap=False, force_terminal=False)
    with console.capture() as captured:
        for item in (tables.topology_summary(topo), tables.topology_table(topo),
                     tables.cache_table(topo), maps.numa_map(topo)):
            console.print(item)
    assert out == "".join(f"{line.rstrip()}\n" for line in captured.get().splitlines())


def test_force_color_draws_in_colour_when_piped(capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """FORCE_COLOR asks rich for colour in a pipe too: rich draws the tables styled."""
    monkeypatch.setenv("COLUMNS", "160")
    monkeypatch.setenv("FORCE_COLOR", "1")
    code, out, _ = run(capsys, "plan", "examples/oracle-4node.yaml", "--topology",
                       str(TOPOLOGIES / "nehalem-ex-4node.json"))
    assert code == 0
    assert "\x1b[" in out


def test_generate_for_another_host_names_its_paths(tmp_path: Path) -> None:
    """The schedule's service runs the target host's slicectl on its tenants.yaml, not the
    paths of the machine that generated the units."""
    out = tmp_path / "out"
    assert main(["generate", "tests/cases/schedule.yaml", "--topology", XEON, "--out",
                 str(out), "--target-slicectl", "/usr/local/bin/slicectl",
                 "--target-tenants", "/etc/slicectl/tenants.yaml"]) == 0
    service = (out / "slicectl-profile@.service").read_text()
    assert ("ExecStart=/usr/local/bin/slicectl apply /etc/slicectl/tenants.yaml --profile %i "
            "--if-in-force --yes\n") in service


# --- balance --dry-run (observe-only) -------------------------------------------------------

BALANCE_YAML = """\
version: 1
balance: {interval: 100ms, window: 300ms, cooldown: 1s}
tenants:
  web: {cpus: 4, cpus_min: 2, cpus_max: 8, nodes: [0]}
  batch: {cpus: 4, cpus_min: 2, nodes: [0]}
  db: {cpus: 4, nodes: [1]}
"""



def balance_host(tmp_path: Path, web_cores: float) -> tuple[Path, Any, Any]:
    """tenants.yaml and a moving cgroup tree of its plan on xeon-2s-smt (web 2,3,18,19 and
    batch 0,1,16,17 on node 0, db on node 1): web busy on `web_cores`, batch idle, db busy;
    and a sleep that runs the load while the balancer waits."""
    import time

    from cgtree import Motion, MovingTree

    tenants = tmp_path / "tenants.yaml"
    tenants.write_text(BALANCE_YAML)
    tree = MovingTree(tmp_path / "cg", cpus="0-31")
    tree.add("tenants.slice")
    tree.add("tenants.slice/tenants-web.slice",
             Motion(cpu_cores=web_cores, psi_some={"cpu": 30.0 if web_cores >= 4 else 0.0}),
             cpus="2-3,18-19", mems="0")
    tree.add("tenants.slice/tenants-batch.slice", Motion(cpu_cores=0.2), cpus="0-1,16-17",
             mems="0")
    tree.add("tenants.slice/tenants-db.slice", Motion(cpu_cores=4.0), cpus="8-9,24-25",
             mems="1")

    last = time.monotonic()

    def sleep(seconds: float) -> None:
        # The load runs for the time that really passed, not the time asked for: on a busy
        # machine the balancer's windows are longer than asked, and a tenant busy on all its
        # CPUs must still read as busy on all of them.
        nonlocal last
        time.sleep(seconds)
        now = time.monotonic()
        tree.advance(now - last)
        last = now

    return tenants, tree, sleep


def test_balance_dry_run_once_prints_the_move_and_changes_nothing(
        capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from slicectl.cli.balance import cmd_balance
    from slicectl.host.systemd import systemd

    def no_dbus(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("balance --dry-run talked to systemd")

    monkeypatch.setattr(systemd.Systemd, "__init__", no_dbus)
    tenants, tree, sleep = balance_host(tmp_path, web_cores=4.0)
    units = tmp_path / "units"
    args = build_parser().parse_args([
        "balance", str(tenants), "--once", "--dry-run", "--json", "--topology", XEON,
        "--cgroup-root", str(tree.root), "--unit-dir", str(units)])
    started = time.monotonic()
    assert cmd_balance(args, sleep=sleep) == 0
    assert time.monotonic() - started >= 0.3  # one window of samples
    (line,) = capsys.readouterr().out.splitlines()  # --once: one decision
    report = json.loads(line)
    assert report["format"] == "slicectl-balance/1" and report["dry_run"] is True
    (move,) = report["moves"]
    assert (move["from"], move["to"], move["cpus"], move["node"]) == ("batch", "web", "1,17", 0)
    assert "web starved for 0.3s" in move["reason"] and "batch idle" in move["reason"]
    # Nothing written: no unit directory, every cgroup file as the fake tree last wrote it.
    assert not units.exists()
    for path, cg in tree.cgroups.items():
        for name, text in cg.files().items():
            assert (tree.root / path / name).read_text() == text, f"{path}/{name} changed"


def test_balance_dry_run_once_says_when_nothing_moves(capsys: pytest.CaptureFixture[str],
                                                      tmp_path: Path) -> None:
    from slicectl.cli.balance import cmd_balance

    tenants, tree, sleep = balance_host(tmp_path, web_cores=2.0)  # 50%: neither starved
    args = build_parser().parse_args([
        "balance", str(tenants), "--once", "--dry-run", "--topology", XEON,
        "--cgroup-root", str(tree.root), "--unit-dir", str(tmp_path / "units")])
    assert cmd_balance(args, sleep=sleep) == 0
    out, err = capsys.readouterr()
    assert out == "no move: no elastic tenant starved and a neighbour idle over the last 0.3s\n"
    assert "dry run: sampling every 0.1s" in err
