"""`slicectl lint`: case files carry their expected findings; live rule over fake trees.

Case files in tests/cases/lint/ use comment directives:
  ## topology: NAME          fixture topology (tests/fixtures/topologies/NAME.json)
  ## expect RULE LINE        one expected finding (the set of findings must match exactly)
A case without `## expect` lines must produce no findings.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from slicectl.config import load_config
from slicectl.lint import RULES, lint, lint_live, run_lint
from slicectl.sysfs import load_topology_file

ROOT = Path(__file__).resolve().parent.parent
CASES = sorted((ROOT / "tests" / "cases" / "lint").glob("*.yaml"))
TOPOLOGIES = ROOT / "tests" / "fixtures" / "topologies"


def case_directives(path: Path) -> tuple[str, Counter[tuple[str, int]]]:
    """(topology name, expected (rule, line) multiset) of a case file."""
    topology = "xeon-2s-smt"
    expected: Counter[tuple[str, int]] = Counter()
    for line in path.read_text().splitlines():
        if line.startswith("## topology:"):
            topology = line.split(":", 1)[1].strip()
        elif line.startswith("## expect "):
            _, _, rule, lineno = line.split()
            assert rule in RULES, f"{path.name}: unknown rule {rule}"
            expected[(rule, int(lineno))] += 1
    return topology, expected


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_case(case: Path) -> None:
    topology, expected = case_directives(case)
    topo = load_topology_file(str(TOPOLOGIES / f"{topology}.json"))
    findings = lint(load_config(str(case)), topo)
    got = Counter((f.rule, f.line) for f in findings)
    assert got == expected, "\n".join(str(f) for f in findings)
    for f in findings:
        assert f.file == str(case) and f.fix and f.source


def test_every_rule_has_a_case() -> None:
    covered = {rule for case in CASES for rule, _ in case_directives(case)[1]}
    assert covered | {"root-tasks"} == set(RULES)  # root-tasks: live, tested below


@pytest.mark.parametrize("example", ["web-batch.yaml", "linkedin-host.yaml"])
def test_sound_examples_have_no_findings(example: str) -> None:
    """The confined examples follow every recommendation: no findings at all."""
    path = ROOT / "examples" / example
    findings = lint(load_config(str(path)), load_topology_file(_topo()))
    assert [(f.rule, f.level) for f in findings] == []


def test_without_topology_skips_placement_rules() -> None:
    config = load_config(str(ROOT / "tests/cases/lint/cross-node-cpus.yaml"))
    assert not [f for f in lint(config, None) if f.rule == "cross-node-cpus"]


def test_levels_documented() -> None:
    doc = (ROOT / "docs" / "lint.md").read_text()
    for rule in RULES.values():
        assert f"`{rule.name}`" in doc
        assert rule.source in doc


def _topo(name: str = "xeon-2s-smt") -> str:
    return str(TOPOLOGIES / f"{name}.json")


def test_run_lint_output_and_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    warn = str(ROOT / "tests/cases/lint/swap-unbounded.yaml")
    assert run_lint(warn, _topo(), None, False, False) == 0
    out = capsys.readouterr().out
    assert f"{warn}:13: swap-unbounded: tenant unset has memory_max 8G" in out
    assert "fix: set memory_swap_max: 0" in out and "source: 001_59bc6195cf6ec2fc.txt" in out
    assert run_lint(warn, _topo(), None, False, True) == 1  # --strict: warnings fail
    capsys.readouterr()
    err = str(ROOT / "tests/cases/lint/high-above-max.yaml")
    assert run_lint(err, _topo(), None, False, False) == 1
    sound = str(ROOT / "tests/cases/lint/sound.yaml")
    capsys.readouterr()
    assert run_lint(sound, _topo(), None, False, True) == 0
    assert capsys.readouterr().out == f"{sound}: no findings\n"


def test_run_lint_json(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(ROOT / "tests/cases/lint/high-above-max.yaml")
    assert run_lint(path, _topo(), None, False, False, json=True) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["errors"] == 2 and data["warnings"] == 0
    assert {f["rule"] for f in data["findings"]} == {"high-above-max"}
    assert data["findings"][0]["level"] == "error"


def test_run_lint_sysfs(capsys: pytest.CaptureFixture[str]) -> None:
    sysfs = str(ROOT / "tests/fixtures/sysfs/xeon-2s-smt")
    assert run_lint(str(ROOT / "examples/web-batch.yaml"), None, sysfs, False, False) == 0
    assert "no findings" in capsys.readouterr().out


# --- root-tasks (--live) ------------------------------------------------------------------


def _proc(proc: Path, pid: int, cmdline: bytes, ppid: int, comm: str) -> None:
    d = proc / str(pid)
    d.mkdir(parents=True)
    (d / "cmdline").write_bytes(cmdline)
    (d / "status").write_text(f"Name:\t{comm}\nState:\tS (sleeping)\nPPid:\t{ppid}\n")
    (d / "comm").write_text(comm + "\n")


def _tree(tmp_path: Path, root_pids: list[int], slice_pids: list[int]) -> tuple[Path, Path]:
    cg, proc = tmp_path / "cgroup", tmp_path / "proc"
    for d in ("system.slice/sshd.service", "tenants.slice/tenants-db.slice",
              "tenants.slice/tenants-db.slice/db.service", "init.scope"):
        (cg / d).mkdir(parents=True)
    (cg / "cgroup.procs").write_text("".join(f"{p}\n" for p in root_pids))
    (cg / "tenants.slice" / "cgroup.procs").write_text("".join(f"{p}\n" for p in slice_pids))
    (cg / "tenants.slice/tenants-db.slice/db.service/cgroup.procs").write_text("700\n")
    (cg / "init.scope" / "cgroup.procs").write_text("1\n")
    _proc(proc, 1, b"/sbin/init\0", 0, "systemd")
    _proc(proc, 2, b"", 0, "kthreadd")
    _proc(proc, 3, b"", 2, "rcu_gp")
    _proc(proc, 4, b"weird\0", 2, "kworker")  # child of kthreadd: a kernel thread
    _proc(proc, 812, b"/usr/sbin/sshd\0-D\0", 1, "sshd")
    _proc(proc, 900, b"backup\0", 1, "backup")
    _proc(proc, 700, b"db\0", 1, "db")
    return cg, proc


def test_root_tasks_kernel_threads_ignored(tmp_path: Path) -> None:
    cg, proc = _tree(tmp_path, [2, 3, 4], [])
    assert lint_live(cg, proc) == []


def test_root_tasks_found(tmp_path: Path) -> None:
    cg, proc = _tree(tmp_path, [2, 3, 812], [900])
    findings = lint_live(cg, proc)
    assert [(f.rule, f.file, f.line) for f in findings] == [
        ("root-tasks", str(cg / "cgroup.procs"), 3),
        ("root-tasks", str(cg / "tenants.slice" / "cgroup.procs"), 1),
    ]
    assert "812 (sshd)" in findings[0].message
    assert "slice tenants.slice" in findings[1].message
    assert all(f.source == "004_14bee5724a59716c.txt" for f in findings)


def test_run_lint_live(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cg, proc = _tree(tmp_path, [812], [])
    sound = str(ROOT / "tests/cases/lint/sound.yaml")
    assert run_lint(sound, _topo(), None, True, False, str(cg), str(proc)) == 0
    assert "root-tasks" in capsys.readouterr().out
    assert run_lint(sound, _topo(), None, True, True, str(cg), str(proc)) == 1


def test_core_imports_no_front_ends() -> None:
    code = ("import sys, slicectl.lint, slicectl.recommend; "
            "bad = [m for m in ('rich', 'textual', 'dbus_fast') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_no_protection_cannot_overcommit() -> None:
    """Housekeeping limits above RAM with no tenant protection: nothing is protected, so
    protection-overcommit has nothing to say (and build_plan, which enforces it, plans)."""
    from slicectl.config import load_yaml, parse_config
    from slicectl.lint import overcommit_rule
    from slicectl.plan import build_plan

    text = ("version: 1\nhousekeeping: {cpus: 2}\nconfine:\n  system.slice: {memory_max: 300G}\n"
            "tenants:\n  a: {cpus: 2, memory_max: 8G}\n")
    config = parse_config(load_yaml(text, "t.yaml"), "t.yaml")
    topo = load_topology_file(str(TOPOLOGIES / "xeon-2s-smt.json"))
    assert topo.total_memory < 300 * 1024**3
    assert list(overcommit_rule(config, topo)) == []
    assert build_plan(config, topo).units
    protected = text.replace("memory_max: 8G}", "memory_max: 8G, memory_low: 1G}")
    (finding,) = overcommit_rule(parse_config(load_yaml(protected, "t.yaml"), "t.yaml"), topo)
    assert finding.rule == "protection-overcommit" and finding.line == 6
