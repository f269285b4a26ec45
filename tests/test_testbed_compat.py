"""docs/compat.md is what tests/testbed/compat makes of the release matrix's committed results
(tests/testbed/results/*.json), and it shows a reader what ran where and what failed."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
COMPAT = runpy.run_path(str(ROOT / "tests" / "testbed" / "compat"), run_name="compat")


def test_the_committed_page_matches_the_results() -> None:
    made = COMPAT["render"](COMPAT["load"]())
    assert (ROOT / "docs" / "compat.md").read_text() == made, (
        "docs/compat.md is stale: run tests/testbed/compat")


def test_every_result_names_its_release_versions_date_and_commit() -> None:
    results = COMPAT["load"]()
    assert results, "tests/testbed/results/ holds no results"
    for result in results:
        for key in ("suite", "mode", "date", "commit", "systemd", "kernel", "python", "passed",
                    "failed"):
            assert key in result, (result["suite"], key)


def result(**changes: Any) -> dict[str, Any]:
    return {"suite": "trixie", "mode": "smoke", "date": "2026-11-28T18:00Z",
            "commit": "abc", "systemd": "257", "kernel": "6.12.1", "python": "3.13.5",
            "os": "Debian GNU/Linux 13 (trixie)", "exit": 0,
            "passed": ["tests/e2e/test_apply.py::test_a"], "failed": [], "skipped": [],
            "durations_s": {"tests/e2e/test_apply.py::test_a": 12.0},
            "times": {"boot_script_poweroff_s": 300.0}, **changes}


def test_a_failed_test_is_shown_failed_in_the_summary_and_in_its_section(tmp_path: Path) -> None:
    failing = result(exit=1, failed=["tests/e2e/test_apply.py::test_b"])
    (tmp_path / "trixie-smoke.json").write_text(json.dumps(failing))
    page = COMPAT["render"](COMPAT["load"](tmp_path))
    assert ("| Debian 13 (trixie) | 257 | 6.12.1 | 3.13.5 | the e2e smoke "
            "| **failed**: 1 passed, 1 failed | 5.0 min | 2026-11-28 | abc |") in page
    assert "| `tests/e2e/test_apply.py::test_b` | failed | 0 |" in page
    assert "| `tests/e2e/test_apply.py::test_a` | passed | 12 |" in page


def test_a_failures_report_ends_its_section(tmp_path: Path) -> None:
    report = "\n".join(f"line {n}" for n in range(20)) + "\nE   assert 1 == 2"
    failing = result(exit=1, failed=["tests/e2e/test_apply.py::test_b"],
                     failures={"tests/e2e/test_apply.py::test_b": report})
    (tmp_path / "trixie-smoke.json").write_text(json.dumps(failing))
    page = COMPAT["render"](COMPAT["load"](tmp_path))
    assert "`tests/e2e/test_apply.py::test_b`, the end of its report:" in page
    assert "E   assert 1 == 2\n```" in page and "line 8\n" not in page


def test_a_run_that_died_is_not_shown_as_passed(tmp_path: Path) -> None:
    (tmp_path / "forky-smoke.json").write_text(json.dumps(result(suite="forky", exit=125)))
    page = COMPAT["render"](COMPAT["load"](tmp_path))
    assert "| **failed** (exit 125): 1 passed |" in page


def test_a_key_systemd_refused_is_shown_with_what_it_said(tmp_path: Path) -> None:
    checks = [{"unit": "tenants-db1.slice", "key": "MemoryMin", "value": "32M",
               "show": "32M", "show_ok": True, "file": "memory.min", "file_value": "33554432",
               "file_ok": True, "outcome": "passed", "accepted": True, "complaints": []},
              {"unit": "tenants-db1.slice", "key": "StartupCPUWeight", "value": "100",
               "accepted": False, "outcome": "failed",
               "complaints": ["/etc/systemd/system/tenants-db1.slice.d/50-slicectl.conf:9: "
                              "Unknown key name 'StartupCPUWeight' in section 'Slice', "
                              "ignoring."]}]
    units = result(suite="bullseye", mode="units", systemd="247", generated_for_systemd=247,
                   checks=checks, exit=1, failed=["tenants-db1.slice StartupCPUWeight=100"])
    (tmp_path / "bullseye-units.json").write_text(json.dumps(units))
    page = COMPAT["render"](COMPAT["load"](tmp_path))
    assert ("| tenants-db1.slice | StartupCPUWeight | `100` | — | — | failed (systemd refused "
            "it: /etc/systemd/system/tenants-db1.slice.d/50-slicectl.conf:9: Unknown key name "
            "'StartupCPUWeight' in section 'Slice', ignoring.) |") in page
    assert "systemd 247 refused StartupCPUWeight (of 2 keys)." in page
