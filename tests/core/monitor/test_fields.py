"""The table of a slice's fields (slicectl.core.monitor.fields): every row is used by the
outputs it declares, and every output of a slice's metrics comes from a row: the keys of
`status --json`, the columns of status, top and the TUI, the exporter's families, the
recorder's columns."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from cgtree import Motion, MovingTree
from rich.console import Console

from slicectl.core.monitor.fields import FIELD, FIELDS, column
from slicectl.core.monitor.metrics import SliceMetrics, compute
from slicectl.core.monitor.samples import Snapshot
from slicectl.exporter.families import METRICS, SLICE_METRICS, SeriesMemo
from slicectl.host.cgroup import sampler
from slicectl.host.cgroup.recorder import RecorderRow, rows_from_snapshot
from slicectl.host.cgroup.sampler import Sampler
from slicectl.tui.components.overview_rows import overview_headers
from slicectl.views.monitor import render_table, status_json

DB1 = "tenants.slice/tenants-db1.slice"
NODE_CPUS = {0: frozenset({0, 1, 2, 3}), 1: frozenset({4, 5, 6, 7})}


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory: pytest.TempPathFactory) -> tuple[Snapshot, Snapshot]:
    """Two samples of a tree where every field has a value: a busy tenant with limits, NUMA
    memory and io, and one that is a cpuset partition."""
    tree = MovingTree(tmp_path_factory.mktemp("fields") / "cg", cpus="0-7", mems="0-1")
    tree.add("tenants.slice")
    tree.add(DB1, Motion(cpu_cores=1.5, throttled_fraction=0.5, psi_some={"cpu": 20.0},
                         psi_full={"memory": 2.0}, events={"max": 3}, io_read_bps=4096),
             cpus="0-3", cpu_max="300000 100000", memory_max=str(1 << 30),
             numa={0: (1 << 20, 1 << 20), 1: (1 << 20, 0)})  # fmt: skip
    tree.add("tenants.slice/tenants-iso.slice", cpus="4-5", partition="isolated")
    clock = SimpleNamespace(now=100.0)  # the sampler's: it moves as the tree does
    clock.monotonic = lambda: clock.now
    with pytest.MonkeyPatch.context() as mp, Sampler(tree.root) as s:
        mp.setattr(sampler, "time", clock)
        first = s.sample()
        clock.now += 1.0
        tree.advance(1.0)
        return first, s.sample()


@pytest.fixture(scope="module")
def metrics(snapshots: tuple[Snapshot, Snapshot]) -> list[SliceMetrics]:
    return compute(*snapshots, node_cpus=NODE_CPUS)


def keys(obj: dict[str, Any], prefix: str = "") -> set[str]:
    """Every key of a JSON object and of the objects in it, dotted."""
    out = set()
    for k, v in obj.items():
        out.add(prefix + k)
        if isinstance(v, dict):
            out |= keys(v, f"{prefix}{k}.")
    return out


def test_field_ids_are_unique_and_each_is_a_key_of_status_json(
        metrics: list[SliceMetrics]) -> None:
    assert len(FIELD) == len(FIELDS)
    slices = json.loads(json.dumps(status_json(metrics, 1.0)))["slices"]
    for s in slices:
        assert {f.id for f in FIELDS} <= keys(s)
        # and nothing else: each key is a field, inside one or an object of fields
        assert all(any(k == f.id or k.startswith(f.id + ".") or f.id.startswith(k + ".")
                       for f in FIELDS) for k in keys(s))


def test_every_column_of_the_table_is_shown(metrics: list[SliceMetrics]) -> None:
    """status shows every column a row declares (NUMA, partition and io ones when a slice
    has them), the TUI's overview all but io and partition (its detail screen shows the
    partition), and no other."""
    console = Console(file=io.StringIO(), width=400, color_system=None)
    table = render_table(metrics)
    console.print(table)
    shown = [str(c.header) for c in table.columns]
    declared = [f.column.title for f in FIELDS if f.column is not None]
    assert sorted(shown) == sorted(declared)
    tui = set(overview_headers(True)) - {"cpu history", "mem history"}
    assert tui == set(declared) - {column("io").title, column("partition").title}


def test_every_family_of_a_slice_comes_from_the_table_and_has_samples(
        snapshots: tuple[Snapshot, Snapshot]) -> None:
    """The exporter's families labelled by slice are the table's, in its order, and a
    scrape of a tree where every field has a value has samples of each (no dead row)."""
    from_table = [family.spec for f in FIELDS for family in f.exported]
    assert list(SLICE_METRICS) == from_table
    assert [m for m in METRICS if m.labels[:2] == ("slice", "tenant")] == from_table
    series, errors = SeriesMemo(NODE_CPUS).series(snapshots[1], {"tenants-db1.slice": "db1"})
    assert not errors
    assert [name for name, rows in series.items() if not rows] == []


def test_docs_per_slice_table_is_written_from_the_table() -> None:
    """docs/metrics.md's per-slice table is the table's families, in its order
    (docs/update-reference writes it)."""
    from slicectl.exporter.families import metrics_reference_table

    text = (Path(__file__).resolve().parents[3] / "docs" / "metrics.md").read_text()
    assert f"\n{metrics_reference_table(SLICE_METRICS)}\n" in text


def test_every_recorded_column_is_recorded(snapshots: tuple[Snapshot, Snapshot]) -> None:
    """The recorder's columns are the table's, and a round on a tree where every field has a
    value stores one in each."""
    columns = [f.name for f in dataclasses.fields(RecorderRow)][2:]
    assert sorted(columns) == sorted(r.column for f in FIELDS for r in f.recorded)
    db1 = next(r for r in rows_from_snapshot(snapshots[1], NODE_CPUS) if r.path == DB1)
    assert [c for c in columns if getattr(db1, c) is None] == []
