"""The TUI's headless model (sorting, sparklines, history, processes, access checks) and
the tenants.yaml write-back of its edit dialog."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from cgtree import MovingTree
from tuikit import YAML, moving_tree

from slicectl.core.config.yamledit import current_values, edit_tenant
from slicectl.core.errors import ConfigError
from slicectl.core.monitor.metrics import MIN_RATE_WINDOW, SliceMetrics, compute
from slicectl.demo.cgtree import make_root
from slicectl.host.cgroup.sampler import Sampler
from slicectl.host.files.owned import write_atomically
from slicectl.tui.model import (
    History,
    SortKey,
    clamp_interval,
    cpu_scale,
    memory_scale,
    next_interval,
    read_processes,
    readonly_reasons,
    sort_metrics,
    spark,
)

# -- model -------------------------------------------------------------------------------


def metrics_of(tree: MovingTree) -> list[SliceMetrics]:
    with Sampler(tree.root) as sampler:
        first = sampler.sample()
        tree.advance(1.0)
        second = sampler.sample()
    # the fake tree moved 1 s; pretend the samples were 1 s apart
    return compute(first, type(second)(first.time + 1.0, second.cgroups, second.host_cpus))


def test_sort_metrics_by_each_key(tmp_path: Path) -> None:
    ms = metrics_of(moving_tree(tmp_path))
    units = [m.unit for m in sort_metrics(ms, SortKey.CPU)]
    assert units[:3] == ["tenants-db1.slice", "tenants-web.slice", "system.slice"]
    assert [m.unit for m in sort_metrics(ms, SortKey.CPU, reverse=True)][-1] == units[0]
    assert sort_metrics(ms, SortKey.PRESSURE)[0].unit == "tenants-web.slice"
    assert sort_metrics(ms, SortKey.MEMORY)[0].unit == "tenants-web.slice"
    names = [m.unit for m in sort_metrics(ms, SortKey.NAME)]
    assert names == sorted(names)


def test_spark_and_history() -> None:
    assert spark([0.0, 1.0, 2.0, None], 4, top=2.0) == "▁▅█ "
    assert spark([2.0], 3, top=4.0) == "  ▅"
    assert spark([5.0, -1.0], 2, top=4.0) == "█▁"  # clamped to the scale
    assert spark([], 2, top=1.0) == "  "
    assert spark([1.0], 1, top=0.0) == "▁"  # no scale known: the lowest block


def test_sparkline_scales_are_the_limits(tmp_path: Path) -> None:
    """Memory against memory.max, else memory.high, else the host's RAM; CPU against the
    quota, else the allowed CPUs: a constant 9 MiB never draws as a full bar."""
    ms = {m.unit: m for m in metrics_of(moving_tree(tmp_path))}
    host = 24 << 30
    db1, web, system = (ms[f"{u}.slice"] for u in ("tenants-db1", "tenants-web", "system"))
    assert memory_scale(db1, host) == 1 << 30  # memory.max
    assert memory_scale(replace(db1, memory_max=None), host) == 950 << 20  # memory.high
    assert memory_scale(system, host) == host  # no limit
    assert cpu_scale(db1) == 4.0  # cpuset 0-3, no quota
    assert cpu_scale(web) == 1.0  # quota of one CPU out of 8
    assert spark([9.0 * (1 << 20)] * 5, 5, memory_scale(system, host)) == "▁" * 5
    assert spark([float(1 << 30)] * 2, 2, memory_scale(db1, host)) == "██"  # at its limit
    h = History()
    assert list(h.of("/x").cpu) == []


def test_sparklines_drawn_incrementally_match_a_full_redraw(tmp_path: Path) -> None:
    """The overview draws each sparkline from the previous one plus the newest value; what it
    shows must be what a full redraw shows, also when the scale changes or samples are
    skipped."""
    import random

    tree = moving_tree(tmp_path)
    ms = metrics_of(tree)
    rng = random.Random(13)
    h = History()
    tops = [4.0, 4.0, 4.0, 8.0, 8.0, 2.0]
    for step in range(60):
        ms = [replace(m, cpu_cores=None if rng.random() < 0.1 else rng.uniform(0, 9))
              for m in ms]
        h.add(ms)
        if rng.random() < 0.2:
            continue  # not drawn this time: the next draw is two samples on
        top = tops[step % len(tops)] if step > 20 else 4.0
        for m in ms:
            series = h.of(m.cgroup)
            assert series.spark("cpu", 12, top) == spark(series.cpu, 12, top)


def test_interval_ladder_and_floor() -> None:
    assert clamp_interval(1.0) == (1.0, "")
    value, message = clamp_interval(0.001)
    assert value == MIN_RATE_WINDOW and "30 ms" in message and "Togashi et al." in message
    assert next_interval(1.0, slower=True) == 2.0
    assert next_interval(1.0, slower=False) == 0.5
    assert next_interval(MIN_RATE_WINDOW, slower=False) == MIN_RATE_WINDOW
    assert next_interval(0.7, slower=False) == 0.5


def test_read_processes_walks_the_subtree(tmp_path: Path) -> None:
    cg = tmp_path / "cgroup" / "tenants.slice" / "tenants-db1.slice"
    (cg / "app.service").mkdir(parents=True)
    (cg / "cgroup.procs").write_text("101\n100\n")
    (cg / "app.service" / "cgroup.procs").write_text("102\n999\n")  # 999 has exited
    proc = tmp_path / "proc"
    for pid, comm in ((100, "postgres"), (101, "pg_wal"), (102, "app")):
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "comm").write_text(comm + "\n")
    procs = read_processes(tmp_path / "cgroup", "/tenants.slice/tenants-db1.slice", proc)
    assert [(p.pid, p.comm, p.cgroup) for p in procs] == [
        (100, "postgres", ""), (101, "pg_wal", ""), (102, "app", "app.service")]
    assert read_processes(tmp_path / "cgroup", "/gone.slice", proc) == []


def test_readonly_reasons(tmp_path: Path) -> None:
    make_root(tmp_path)
    bus = tmp_path / "bus"
    bus.touch()
    assert readonly_reasons("t.yaml", tmp_path, f"unix:path={bus}", euid=0) == []
    reasons = readonly_reasons(None, tmp_path / "nope", "unix:path=/nonexistent/bus", euid=1000)
    assert reasons[0] == "no TENANTS file given" and "not root" in reasons
    assert any("no system bus" in r for r in reasons)
    assert any("no cgroup v2" in r for r in reasons)


# -- tenants.yaml write-back -------------------------------------------------------------


def test_edit_keeps_comments_and_layout() -> None:
    text, config = edit_tenant(YAML, "tenants.yaml", "db1",
                               {"cpu_weight": "500", "memory_max": "", "memory_high": "400M"})
    assert config.tenant("db1").cpu_weight == 500
    assert config.tenant("db1").memory_max is None
    assert config.tenant("db1").memory_high == 400 << 20
    assert "    cpu_weight: 500  # more than web\n" in text
    assert "memory_max" not in text and "    memory_high: 400M\n" in text
    for line in YAML.splitlines():  # every other line stays byte for byte
        if "cpu_weight" not in line and "memory_max" not in line:
            assert line in text.splitlines()


def test_edit_quotes_cpulists_in_flow_mappings() -> None:
    text, config = edit_tenant(YAML, "tenants.yaml", "db2", {"cpus": "0-1,4"})
    assert config.tenant("db2").cpus == frozenset({0, 1, 4})
    assert 'db2: {cpus: "0-1,4", cpu_quota: 150%}' in text
    assert "# flow style stays flow style" in text


def test_edit_rejects_invalid_values_with_located_problems() -> None:
    with pytest.raises(ConfigError) as e:
        edit_tenant(YAML, "tenants.yaml", "db1", {"cpu_weight": "0"})
    assert e.value.problems[0].key == "tenants.db1.cpu_weight"
    assert current_values(YAML, "tenants.yaml", "db1")["cpu_weight"] == "300"


def test_write_atomically_keeps_mode(tmp_path: Path) -> None:
    path = tmp_path / "tenants.yaml"
    path.write_text("old\n")
    path.chmod(0o600)
    write_atomically(path, "new\n")
    assert path.read_text() == "new\n" and path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["tenants.yaml"]  # no temp file left
