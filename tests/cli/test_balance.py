"""`slicectl balance` as a command (slicectl.cli.balance): what it refuses before sampling.
The loop's rounds are in test_balancer_daemon.py, test_cli.py and test_balancer.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from paths import TESTS

from slicectl.cli import main

XEON = str(TESTS / "fixtures" / "topologies" / "xeon-2s-smt.json")


def test_a_file_without_elastic_tenants(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    tenants = tmp_path / "t.yaml"
    tenants.write_text("version: 1\ntenants:\n  db: {cpus: 4}\n")
    assert main(["balance", str(tenants), "--dry-run", "--topology", XEON,
                 "--cgroup-root", str(tmp_path)]) == 1
    assert capsys.readouterr().err == (
        f"error: {tenants}: no elastic tenant, nothing to balance\n"
        "  hint: give a tenant cpus_min or cpus_max (docs/balance.md)\n")
