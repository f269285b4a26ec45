"""The balancer's state (slicectl.core.balance.balance_state) as docs/balance.md documents its file:
the documented document read and written as it stands there, and each malformed part named by its
JSON path. Moves, resets, adoption and balanced-or-drift are in test_balance_state.py."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from paths import ROOT

from slicectl.core.balance.balance_state import FORMAT, BalanceState, TenantBalance
from slicectl.core.cpulist import parse_cpulist
from slicectl.core.errors import StateError

DOC = ROOT / "docs" / "balance.md"


def documented() -> dict[str, Any]:
    """The state file's example in docs/balance.md."""
    block = re.search(r"```json\n(\{\"format\": \"slicectl-balance-state/1\".*?)```",
                      DOC.read_text(), re.S)
    assert block is not None, "docs/balance.md shows no state file"
    data: dict[str, Any] = json.loads(block[1])
    return data


WEB = TenantBalance(parse_cpulist("3,4,19,20"), parse_cpulist("2-4,18-20"), grown=1,
                    shrunk=0, last_move=1795000000.5,
                    last_reason="web starved for 30s (…); batch idle for 30s (…)")


def test_the_documented_file_reads_as_it_says() -> None:
    assert BalanceState.from_json(documented(), "balance.json") == BalanceState({"web": WEB})


def test_a_state_writes_the_documented_file() -> None:
    assert BalanceState({"web": WEB}).to_json() == documented()


def test_tenants_are_written_by_name_and_optional_fields_default() -> None:
    doc = BalanceState({"web": WEB, "batch": TenantBalance(frozenset({1}), frozenset({1}))}
                       ).to_json()
    assert list(doc["tenants"]) == ["batch", "web"] and doc["format"] == FORMAT
    plain = {"format": FORMAT, "tenants": {"a": {"declared": "1", "cpus": "1",
                                                 "moves": {"grow": 0, "shrink": 2}}}}
    a = BalanceState.from_json(plain, "f").tenants["a"]
    assert (a.last_move, a.last_reason, a.shrunk) == (None, "", 2)


def with_web(**fields: Any) -> dict[str, Any]:
    web = {"declared": "3,4,19,20", "cpus": "2-4,18-20", "moves": {"grow": 1, "shrink": 0},
           **fields}
    return {"format": FORMAT, "tenants": {"web": {k: v for k, v in web.items()
                                                  if v is not None}}}


@pytest.mark.parametrize(("data", "message"), [
    ({"format": FORMAT, "tenants": []}, "tenants: must be an object, not a list"),
    ({"format": FORMAT, "tenants": {"web": 1}}, "tenants.web: must be an object, not an "
                                                 "integer (1)"),
    (with_web(cpus="2-"), "tenants.web.cpus: not a cpulist such as \"0-3,8\""),
    (with_web(declared=None), "tenants.web.declared: missing"),
    (with_web(moves={"grow": 1}), "tenants.web.moves.shrink: missing"),
    (with_web(moves={"grow": 1.5, "shrink": 0}), "tenants.web.moves.grow: must be an integer, "
                                                  "not a number (1.5)"),
    (with_web(last_move=True), "tenants.web.last_move: must be a number or null"),
    (with_web(last_reason=7), "tenants.web.last_reason: must be a string, not an integer (7)"),
])
def test_each_malformed_part_is_named_by_its_path(data: dict[str, Any], message: str) -> None:
    with pytest.raises(StateError) as e:
        BalanceState.from_json(data, "/run/slicectl/balance.json")
    assert e.value.message.startswith(f"/run/slicectl/balance.json: {message}")
    assert e.value.hint.startswith("the balancer rewrites it after its next move")
