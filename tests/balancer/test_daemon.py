"""The balancer's daemon loop (slicectl.balancer.daemon): each round as printed, in words and
in JSON, dry run or not. Rounds over a moving cgroup tree are in test_cli.py and
test_balancer.py; the decision itself in test_balance.py."""

from __future__ import annotations

import argparse
import io
import json

import pytest

from slicectl.balancer.daemon import _print_round
from slicectl.balancer.mover import Outcome
from slicectl.core.balance.balance import Move
from slicectl.core.config.tenants import BalancePolicy

MOVE = Move("batch", "web", frozenset({1, 17}), 0, "web starved for 0.3s; batch idle")
POLICY = BalancePolicy(interval=100_000, window=300_000)


def printed(outcomes: list[Outcome], as_json: bool, once: bool, dry_run: bool = True,
            ) -> str:
    out = io.StringIO()
    args = argparse.Namespace(json=as_json, once=once, dry_run=dry_run)
    _print_round(outcomes, 0.3004, args, POLICY, out)
    return out.getvalue()


def test_a_dry_run_round_in_words() -> None:
    assert printed([Outcome(MOVE, False)], False, False) == (
        "would move core 1,17 (node 0) from batch to web: web starved for 0.3s; batch idle\n")
    assert printed([], False, False) == ""  # every interval: silent while nothing moves
    assert printed([], False, True) == ("no move: no elastic tenant starved and a neighbour "
                                        "idle over the last 0.3s\n")


def test_a_move_made_or_not_in_words(capsys: pytest.CaptureFixture[str]) -> None:
    assert printed([Outcome(MOVE, True)], False, False, dry_run=False) == (
        "move core 1,17 (node 0) from batch to web: web starved for 0.3s; batch idle\n")
    assert printed([Outcome(MOVE, False, "/etc/systemd/system is in use")], False, False,
                   dry_run=False) == ""
    assert capsys.readouterr().err == (
        "not moved: core 1,17 (node 0) from batch to web: web starved for 0.3s; batch idle: "
        "/etc/systemd/system is in use\n")


def test_a_round_in_json_is_one_object_a_line() -> None:
    (line,) = printed([Outcome(MOVE, False)], True, False).splitlines()
    assert json.loads(line) == {
        "format": "slicectl-balance/1", "dry_run": True, "elapsed_s": 0.3,
        "moves": [{"from": "batch", "to": "web", "cpus": "1,17", "node": 0,
                   "reason": "web starved for 0.3s; batch idle"}]}
    (line,) = printed([Outcome(MOVE, False, "busy")], True, False, dry_run=False).splitlines()
    assert json.loads(line)["moves"][0] == {
        "from": "batch", "to": "web", "cpus": "1,17", "node": 0,
        "reason": "web starved for 0.3s; batch idle", "made": False, "why_not": "busy"}
    assert json.loads(printed([], True, True))["moves"] == []
