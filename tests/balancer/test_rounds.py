"""What the balancer's rounds take from tenants.yaml (slicectl.balancer.rounds): --interval
against the policy, and tenants.yaml looked at every round: planned again when it changes, a
file that cannot be used said once with the plan before it kept. Rounds on a host are in
test_balancer.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from paths import TESTS

from slicectl.balancer.rounds import Inputs, plan_rounds, policy_for
from slicectl.cli.common import apply_options, load_config, load_topology
from slicectl.cli.parser import build_parser
from slicectl.core.config.tenants import BalancePolicy
from slicectl.core.errors import UsageError

XEON = str(TESTS / "fixtures" / "topologies" / "xeon-2s-smt.json")
POLICY = BalancePolicy(interval=100_000, window=300_000)
YAML = """\
version: 1
housekeeping: {cpus: 2}
tenants:
  web: {cpus: 4, cpus_min: 2, cpus_max: 8, nodes: [0]}
  batch: {cpus: 4, cpus_min: 2, nodes: [0]}
"""


def test_the_interval_lies_between_the_rate_window_and_the_balance_window() -> None:
    assert policy_for(POLICY, None) is POLICY
    assert policy_for(POLICY, 0.05).interval == 50_000
    assert policy_for(POLICY, 0.3).interval == 300_000
    for bad in (0.01, 0.5):
        with pytest.raises(UsageError) as e:
            policy_for(POLICY, bad)
        assert e.value.message == (f"--interval {bad:g}: must be at least 0.03 s and at most "
                                   "balance.window (0.3 s)")


def test_tenants_yaml_changed_is_planned_again_and_a_broken_one_said_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tenants = tmp_path / "tenants.yaml"
    tenants.write_text(YAML)
    args = build_parser().parse_args(["balance", str(tenants), "--dry-run", "--topology", XEON,
                                      "--unit-dir", str(tmp_path / "units")])
    topo, options = load_topology(args), apply_options(args)
    inputs = Inputs(args, topo, options, plan_rounds(args, load_config(args), topo, options))
    first = inputs.planned
    assert not inputs.changed() and inputs.planned is first  # one stat a round, no reading

    tenants.write_text(YAML.replace("cpus_min: 2, cpus_max: 8", "cpus_min: 9, cpus_max: 8"))
    assert not inputs.changed() and not inputs.changed()
    assert inputs.planned is first
    err = capsys.readouterr().err
    assert err.count(f"{tenants} changed but cannot be used: ") == 1, err
    assert err.rstrip().endswith("; balancing on as before it changed")

    tenants.write_text(YAML.replace("web: {cpus: 4,", "web: {cpus: 6,"))
    assert inputs.changed()
    assert {t: len(e.declared) for t, e in inputs.planned.ranges.items()} == {"web": 6,
                                                                             "batch": 4}
    assert capsys.readouterr().err == (
        f"{tenants} changed: planned again; elastic tenants and their declared CPUs: web 6, "
        "batch 4\n")
    assert not inputs.changed()
