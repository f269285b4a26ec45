"""`slicectl lint` as printed (slicectl.cli.advise): each finding with its fix and source, the
summary, the exit status with and without --strict, the JSON counts. The rules are in
test_lint.py; `slicectl recommend`'s output, parameters and --write in test_recommend.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from paths import TESTS

from slicectl.cli import main

XEON = str(TESTS / "fixtures" / "topologies" / "xeon-2s-smt.json")
CONFINED = """\
version: 1
confine:
  system.slice: {memory_high: 2G, memory_max: 3G}
  cron.service: {memory_max: 512M, cpu_quota: 50%}
tenants:
  db1: {cpus: 2, cpu_weight: 100, memory_max: 1G, memory_low: 512M, memory_swap_max: 0EXTRA}
"""


def lint(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: str, *flags: str
         ) -> tuple[int, str]:
    path = tmp_path / "t.yaml"
    path.write_text(CONFINED.replace("EXTRA", extra))
    code = main(["lint", str(path), "--topology", XEON, *flags])
    return code, capsys.readouterr().out.replace(str(path), "t.yaml")


def test_a_clean_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert lint(tmp_path, capsys, "") == (0, "t.yaml: no findings\n")


def test_an_error_is_printed_with_its_fix_and_source_and_fails(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = lint(tmp_path, capsys, ", memory_high: 2G")
    assert code == 1
    assert out == (
        "error: t.yaml:6: high-above-max: tenant db1 has memory_high 2G >= memory_max 1G: "
        "memory_high never takes effect, the tenant hits the hard limit (OOM) without being "
        "throttled first\n"
        "  fix: set memory_high below memory_max (e.g. halfway between footprint and "
        "max)\n"
        "  source: systemd.resource-control(5)\n"
        "t.yaml: 1 error(s), 0 warning(s)\n")


def test_warnings_fail_only_with_strict(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    unconfined = "version: 1\ntenants:\n  db1: {cpus: 2, cpu_weight: 100}\n"
    path = tmp_path / "t.yaml"
    path.write_text(unconfined)
    assert main(["lint", str(path), "--topology", XEON]) == 0
    assert capsys.readouterr().out.endswith(f"{path}: 0 error(s), 2 warning(s)\n")
    assert main(["lint", str(path), "--topology", XEON, "--strict", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["format"], report["errors"], report["warnings"]) == ("slicectl-lint/1", 0, 2)
    assert {f["rule"] for f in report["findings"]} == {"unconfined-housekeeping"}


# An isolated tenant of 3 CPUs on two threads per core: one of its cores' other thread goes
# to the shared pool.
ISOLATED_ODD = """\
version: 1
confine:
  system.slice: {memory_high: 2G, memory_max: 3G}
  cron.service: {memory_max: 512M, cpu_quota: 50%}
tenants:
  engine: {cpus: 3, cpu_weight: 100, cpuset_partition: isolated}
"""


def test_an_isolated_tenant_sharing_a_core_is_a_warning_that_validate_accepts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """validate's contract: lint's errors are validate's, its warnings advice only."""
    path = tmp_path / "t.yaml"
    path.write_text(ISOLATED_ODD)
    assert main(["lint", str(path), "--topology", XEON]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"warning: {path}:6: isolated-shares-core: tenant engine is isolated "
                          "but shares physical cores with CPU ")
    assert out.endswith(f"{path}: 0 error(s), 1 warning(s)\n")
    assert main(["lint", str(path), "--topology", XEON, "--strict"]) == 1
    capsys.readouterr()
    assert main(["validate", str(path), "--topology", XEON]) == 0
    assert capsys.readouterr().out.startswith(f"{path}: ok (1 tenant(s), placed on ")


def test_lint_refuses_a_partition_the_target_systemd_cannot_make_as_validate_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(ISOLATED_ODD.replace("cpus: 3", "cpus: 4"))
    errors = []
    for verb in ("validate", "lint"):
        assert main([verb, str(path), "--topology", XEON, "--systemd-version", "260"]) == 1
        captured = capsys.readouterr()
        assert "isolated-shares-core" not in captured.out
        errors.append(captured.err)
    assert errors[0] == errors[1]
    assert errors[0].startswith(f"error: {path}:6: tenants.engine.cpuset_partition: needs "
                                "systemd 261 or later")
    assert main(["lint", str(path), "--topology", XEON, "--systemd-version", "261"]) == 0
