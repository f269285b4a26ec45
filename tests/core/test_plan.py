"""The plan (slicectl.core.plan): JSON round-trip, the parent slice's protection, file kinds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from paths import ROOT
from unitcheck import parse_unit, systemd_verify

from slicectl.core.config.config import load_yaml, parse_config
from slicectl.core.config.values import INFINITY
from slicectl.core.errors import PlacementError
from slicectl.core.placement.topology import Topology
from slicectl.core.plan import FileKind, Plan, Section, build_plan
from slicectl.core.render import render
from slicectl.host.files.templates import load_templates

TOPOLOGIES = ROOT / "tests" / "fixtures" / "topologies"
EXAMPLES = sorted(ROOT.glob("examples/*.yaml"))


def topo(name: str = "xeon-2s-smt") -> Topology:
    return Topology.from_json(json.loads((TOPOLOGIES / f"{name}.json").read_text()), name)


def plan_of(text: str, topology: str = "xeon-2s-smt") -> Plan:
    return build_plan(parse_config(load_yaml(text, "t.yaml"), "t.yaml"), topo(topology))


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_plan_json_round_trips(example: Path) -> None:
    text = example.read_text()
    topology = next(line.split(":", 1)[1].strip() for line in text.splitlines()
                    if line.startswith("## topology:"))
    config = parse_config(load_yaml(text, example.name), example.name)
    for profile in [None, *config.profiles]:
        plan = build_plan(config.with_profile(profile), topo(topology))
        data = json.loads(json.dumps(plan.to_json()))
        again = Plan.from_json(data)
        assert again == plan
        assert render(again, load_templates()) == render(plan, load_templates())


def test_infinite_protection_protects_the_parent_too(tmp_path: Path) -> None:
    # memory.low only protects a cgroup whose ancestors are protected (cgroup-v2.rst): a
    # tenant's infinity must make tenants.slice's MemoryLow infinity, not leave it unset.
    plan = plan_of("version: 1\ntenants:\n  a: {memory_low: infinity}\n  b: {cpu_weight: 50}\n")
    assert plan.unit("tenants.slice").properties["MemoryLow"] is INFINITY
    assert plan.unit("tenants-a.slice").properties["MemoryLow"] is INFINITY
    files = render(plan, load_templates())
    assert parse_unit(files["tenants.slice.d/50-slicectl.conf"])["Slice"]["MemoryLow"] == \
        "infinity"
    out = tmp_path / "out"
    for rel, text in files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(text)
    systemd_verify(out, tmp_path)


def test_parent_sums_its_tenants_protection() -> None:
    plan = plan_of("version: 1\ntenants:\n  a: {memory_low: 1G, memory_min: 512M}\n"
                   "  b: {memory_low: 2G}\n  c: {}\n")
    props = plan.unit("tenants.slice").properties
    assert (props["MemoryLow"], props["MemoryMin"]) == (3 * 1024**3, 512 * 1024**2)


def test_no_protection_no_parent_protection() -> None:
    props = plan_of("version: 1\ntenants:\n  a: {memory_max: 1G}\n").unit(
        "tenants.slice").properties
    assert "MemoryLow" not in props and "MemoryMin" not in props


def test_infinite_protection_beside_another_tenants_protection_is_refused() -> None:
    # infinity protects all the host's RAM, so nothing else fits beside it.
    with pytest.raises(PlacementError, match="protection beyond RAM protects nobody"):
        plan_of("version: 1\ntenants:\n  a: {memory_low: infinity}\n  b: {memory_min: 1G}\n")


def test_units_have_typed_kinds_and_sections() -> None:
    plan = plan_of("version: 1\nhousekeeping: {cpus: 2}\nconfine:\n"
                   "  cron.service: {memory_max: 512M}\ntenants:\n"
                   "  a: {cpus: 2, services: [app.service, db.socket]}\n")
    kinds = {u.unit: (u.kind, u.section) for u in plan.units}
    assert kinds["tenants-a.slice"] == (FileKind.UNIT, Section.SLICE)
    assert kinds["cron.service"] == (FileKind.DROPIN, Section.SERVICE)
    assert kinds["init.scope"] == (FileKind.DROPIN, Section.SCOPE)
    assert kinds["db.socket"] == (FileKind.DROPIN, Section.SOCKET)
    assert plan.to_json()["units"][1]["kind"] == "unit"  # JSON keeps its strings


def test_properties_are_written_in_table_order() -> None:
    plan = plan_of("version: 1\ntenants:\n  a: {memory_max: 2G, cpus: 2, memory_low: 1G, "
                   "cpu_weight: 50, cpu_quota: 150%, memory_swap_max: 0}\n")
    keys = [k for k, _ in plan.unit("tenants-a.slice").formatted()]
    assert keys == ["AllowedCPUs", "AllowedMemoryNodes", "CPUWeight", "CPUQuota", "MemoryLow",
                    "MemoryMax", "MemorySwapMax"]
