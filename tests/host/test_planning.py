"""The one way to read tenants.yaml and to plan for a host (slicectl.host.planning): every check
at once, located; and the plan keeps each tenant where the unit directory's manifest says it
was placed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slicectl.core.errors import ConfigError
from slicectl.core.placement.topology import Cpu, Node, Topology
from slicectl.host.files.unitdir import MANIFEST_NAME, Manifest
from slicectl.host.planning import load_tenants, plan_for_host, read_text
from slicectl.host.systemd import systemd_calendar

YAML = """\
version: 1
tenants:
  db1: {cpus: 2}
profiles:
  night:
    db1: {cpus: 1}
"""
# two nodes of four CPUs: node0 = 0-3, node1 = 4-7
TOPO = Topology(
    tuple(Node(n, frozenset(range(4 * n, 4 * n + 4)), 1 << 30, {0: 10 if n == 0 else 20,
                                                                 1: 10 if n == 1 else 20})
          for n in range(2)),
    tuple(Cpu(c, True, c // 4, package=c // 4, core=c, siblings=frozenset({c}))
          for c in range(8)), "test")


def refusal(path: Path) -> ConfigError:
    with pytest.raises(ConfigError) as e:
        read_text(str(path))
    return e.value


@pytest.mark.parametrize(("raw", "message", "hint"), [
    (b"version: 1\ntenants:\n  db1: {cpus: 2, description: caf\xe9}\n",
     "3: is not UTF-8 text (byte 0xe9 in column 34)", "save the file as UTF-8"),
    (b"version: 1\n\ntenants: \x00\n", "3: contains a NUL character",
     "remove it; tenants.yaml is text"),
])
def test_bytes_that_are_not_text_are_located(tmp_path: Path, raw: bytes, message: str,
                                             hint: str) -> None:
    path = tmp_path / "t.yaml"
    path.write_bytes(raw)
    e = refusal(path)
    assert (e.message, e.hint) == (f"{path}:{message}", hint)


def test_a_missing_file(tmp_path: Path) -> None:
    e = refusal(tmp_path / "nope.yaml")
    assert e.message == f"{tmp_path}/nope.yaml: cannot read: No such file or directory"
    assert e.hint == "check the path to tenants.yaml"


def test_load_tenants_applies_the_profile(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(YAML)
    assert load_tenants(str(path)).tenant("db1").cpus == 2
    night = load_tenants(str(path), "night")
    assert night.tenant("db1").cpus == 1 and night.profile == "night"


def test_every_schema_problem_at_once(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("version: 1\ntenants:\n  db1: {cpus: 0}\n  web: {cpu_weight: 0}\n")
    with pytest.raises(ConfigError) as e:
        load_tenants(str(path))
    assert [p.line for p in e.value.problems] == [3, 4]


def test_a_schedule_unchecked_without_systemd_analyze_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(YAML + "schedule:\n  night: 'not a calendar'\n")
    monkeypatch.setattr(systemd_calendar, "available", lambda: False)
    warnings: list[str] = []
    load_tenants(str(path), warn=warnings.append)
    assert warnings == ["schedule: not checked (systemd-analyze is not installed); the timers "
                        "check it on the host"]
    warnings.clear()
    load_tenants(str(path), check_schedule=False, warn=warnings.append)
    assert warnings == []


def test_the_plan_keeps_tenants_where_the_manifest_placed_them(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(YAML)
    tenants = load_tenants(str(path))
    units = tmp_path / "units"
    units.mkdir()
    fresh = plan_for_host(tenants, TOPO, units, shares=False)  # an empty unit directory
    assert fresh.placements() == {"db1": frozenset({0, 1})}
    placed = Manifest(placements={"db1": frozenset({6, 7})}, source=str(path))
    (units / MANIFEST_NAME).write_text(json.dumps(placed.to_json()))
    assert plan_for_host(tenants, TOPO, units, shares=False).placements() == {
        "db1": frozenset({6, 7})}
    # the caller's manifest, already read, wins over the folder's
    assert plan_for_host(tenants, TOPO, units, shares=False,
                         manifest=Manifest(placements={"db1": frozenset({4, 5})})
                         ).placements() == {"db1": frozenset({4, 5})}
    assert plan_for_host(tenants, TOPO, None, shares=False).placements() == {
        "db1": frozenset({0, 1})}  # no history: another host's plan
