"""Drift for the exporter (slicectl.exporter.drift): `slicectl_drift` rows from the diff
`plan --exit-code` makes, and a plan made again only when the tenants file changes. Drift
against the fake systemd over a real scrape is in test_exporter.py."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from slicectl.apply.applier import ApplyOptions
from slicectl.apply.host_diff import Diff, PropChange
from slicectl.core.config.config import load_yaml, parse_config
from slicectl.core.errors import ConfigError, SlicectlError
from slicectl.core.placement.topology import Cpu, Node, Topology
from slicectl.core.plan import Plan, build_plan
from slicectl.exporter.drift import ACTIVE, FILE, DriftWatch, drift_rows
from slicectl.host.files.unitdir import FileChanges

YAML = "version: 1\ntenants:\n  db1: {cpus: 2, cpu_weight: 300}\n"
TOPO = Topology(
    tuple(Node(n, frozenset({n, n + 4}), 1 << 30, {m: 10 if m == n else 20 for m in range(4)})
          for n in range(4)),
    tuple(Cpu(c, True, c % 4, package=c, core=0, siblings=frozenset({c})) for c in range(8)),
    "testbed")
DB1 = "tenants-db1.slice"


def plan() -> Plan:
    return build_plan(parse_config(load_yaml(YAML, "t.yaml"), "t.yaml"), TOPO, shares=False)


def test_in_step_everything_reads_zero() -> None:
    rows = dict(drift_rows(plan(), Diff(files=FileChanges()),
                           {"tenants.slice": "/tenants.slice", DB1: "/tenants.slice/" + DB1}))
    assert rows[(DB1, "CPUWeight")] == rows[(DB1, "AllowedCPUs")] == 0.0
    assert rows[(DB1, ACTIVE)] == rows[("tenants.slice", ACTIVE)] == 0.0
    assert rows[(DB1, FILE)] == 0.0
    assert set(rows.values()) == {0.0}


def test_a_changed_property_a_stopped_slice_and_an_edited_file_read_one() -> None:
    diff = Diff(files=FileChanges(updated=(f"{DB1}.d/50-slicectl.conf",),
                                  removed=("tenants-old.slice",)),
                props=[PropChange(DB1, "CPUWeight", 100, 300)],
                stop=["tenants-old.slice"])
    rows = dict(drift_rows(plan(), diff, {DB1: "/tenants.slice/" + DB1}))
    assert rows[(DB1, "CPUWeight")] == 1.0 and rows[(DB1, "AllowedCPUs")] == 0.0
    assert rows[(DB1, FILE)] == 1.0 and rows[("tenants-old.slice", FILE)] == 1.0
    assert rows[("tenants-old.slice", ACTIVE)] == 1.0


def test_a_slice_not_running_has_no_property_rows_but_its_state() -> None:
    rows = dict(drift_rows(plan(), Diff(files=FileChanges(), start=[DB1]), {}))
    assert rows[(DB1, ACTIVE)] == 1.0
    assert not [key for key in rows if key[1] not in (ACTIVE, FILE)]


@pytest.fixture
def watch(tmp_path: Path) -> Iterator[DriftWatch]:
    (tmp_path / "t.yaml").write_text(YAML)
    (tmp_path / "units").mkdir()
    w = DriftWatch(tmp_path / "t.yaml", TOPO, ApplyOptions(unit_dir=tmp_path / "units"))
    yield w
    w.close()


def test_tenant_labels(watch: DriftWatch) -> None:
    assert watch.tenants() == {DB1: "db1"}


def test_the_plan_is_made_again_only_when_the_file_changes(watch: DriftWatch,
                                                           tmp_path: Path) -> None:
    placed = watch.placed
    watch.refresh()
    assert watch.placed is placed
    (tmp_path / "t.yaml").write_text(YAML.replace("db1", "web"))
    watch.refresh()
    assert watch.tenants() == {"tenants-web.slice": "web"}


def test_a_broken_edit_keeps_the_last_plan_and_says_why(watch: DriftWatch,
                                                        tmp_path: Path) -> None:
    placed = watch.placed
    (tmp_path / "t.yaml").write_text("version: 1\ntenants:\n  db1: {cpus: 0}\n")
    with pytest.raises(ConfigError):
        watch.refresh()
    assert watch.placed is placed
    os.unlink(tmp_path / "t.yaml")
    with pytest.raises(SlicectlError) as e:
        watch.refresh()
    assert e.value.message == f"{tmp_path / 't.yaml'}: No such file or directory"
