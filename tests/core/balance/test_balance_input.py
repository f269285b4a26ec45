"""The balancer's input (slicectl.core.balance.balance_input): a plan's layout and the slices'
metrics in, decide()'s tenants out, and its moves as `slicectl balance` prints them."""

from __future__ import annotations

import textwrap
from dataclasses import fields
from typing import Any

from core.balance.test_balance import core_cpus, machine

from slicectl.core.balance.balance import Reading, decide
from slicectl.core.balance.balance_input import (
    BalanceInput,
    move_json,
    move_line,
    readings,
    remember,
    untouchable,
)
from slicectl.core.config.config import load_yaml, parse_config
from slicectl.core.config.tenants import BalancePolicy, Config
from slicectl.core.monitor.metrics import PressureMetrics, PsiMetrics, SliceMetrics
from slicectl.core.placement.layout import Layout, TenantPlacement
from slicectl.core.placement.topology import Topology


def metrics_of(unit: str, cores: float | None, pressure: float | None = None,
               parent: str = "tenants") -> SliceMetrics:
    """A slice's metrics with only what the balancer reads: CPU rate and cpu.pressure."""
    values: dict[str, Any] = dict.fromkeys((f.name for f in fields(SliceMetrics)), None)
    psi = None if pressure is None else PressureMetrics(PsiMetrics(pressure, pressure), None)
    values.update(unit=unit, cgroup=f"/{parent}.slice/{unit}", allowed_cpus=32,
                  cpu_cores=cores, cpu_pressure=psi)
    return SliceMetrics(**values)


GLUE = textwrap.dedent("""\
    version: 1
    balance: {interval: 1s, window: 3s, cooldown: 10s}
    tenants:
      web: {cpus: 4, cpus_min: 2, cpus_max: 6, nodes: [0]}
      batch: {cpus: 4, cpus_min: 2, nodes: [0]}
      db: {cpus: 2, nodes: [0]}
""")


def glue_setup() -> tuple[Config, Topology, Layout]:
    topo = machine(nodes=1, cores=6, smt=2)
    cfg = parse_config(load_yaml(GLUE, "t.yaml"), "t.yaml")
    layout = Layout(housekeeping=core_cpus(topo, 5), shared_pool=frozenset(), tenants=(
        TenantPlacement("web", core_cpus(topo, 0, 1), (0,), (0,), True, False),
        TenantPlacement("batch", core_cpus(topo, 2, 3), (0,), (0,), True, False),
        TenantPlacement("db", core_cpus(topo, 4), (0,), (0,), True, False)))
    return cfg, topo, layout


def test_readings_are_cpu_use_of_the_layouts_cpus_and_pressure_avg10() -> None:
    cfg, _, layout = glue_setup()
    got = readings(cfg, layout, [
        metrics_of("tenants-web.slice", 3.8, 25.0),
        metrics_of("tenants-batch.slice", None),  # no rate (first sample, recreated)
        metrics_of("tenants-db.slice", 2.0),  # fixed: not the balancer's
        metrics_of("tenants-web.slice", 1.0, parent="other"),  # another parent's slice
    ], 7.0)
    assert got == {"web": Reading(7.0, 95.0, 25.0)}


def test_remember_keeps_one_window_and_one_interval() -> None:
    policy = BalancePolicy(interval=1_000_000, window=3_000_000)
    history: dict[str, tuple[Reading, ...]] = {}
    for t in range(10):
        history = remember(history, {"web": Reading(float(t), 50.0)}, float(t), policy)
    assert [r.time for r in history["web"]] == [5.0, 6.0, 7.0, 8.0, 9.0]


def test_glue_feeds_decide_a_whole_core_move_within_the_plan() -> None:
    cfg, topo, layout = glue_setup()
    history: dict[str, tuple[Reading, ...]] = {}
    for t in range(5):
        now = float(t)
        history = remember(history, readings(cfg, layout, [
            metrics_of("tenants-web.slice", 3.9), metrics_of("tenants-batch.slice", 0.4),
            metrics_of("tenants-db.slice", 0.0)], now), now, cfg.balance)
    tenants = BalanceInput(cfg, layout).tenants(history)
    assert {(t.name, t.floor, t.ceiling, len(t.history)) for t in tenants} == {
        ("web", 2, 6, 5), ("batch", 2, 4, 5)}
    hk, fixed = untouchable(cfg, layout)
    assert (hk, fixed) == (core_cpus(topo, 5), core_cpus(topo, 4))
    (move,) = decide(tenants, topo, cfg.balance, 4.0, hk, fixed)
    assert (move.donor, move.receiver, move.cpus) == ("batch", "web", core_cpus(topo, 3))
    assert move_json(move) == {"from": "batch", "to": "web", "cpus": "3,9", "node": 0,
                               "reason": move.reason}
    assert move_line(move).startswith("would move core 3,9 (node 0) from batch to web: "
                                      "web starved for 3s")
    # A move remembered (as a dry run does) holds both tenants for the cooldown.
    assert decide(BalanceInput(cfg, layout).tenants(history, {"web": 4.0, "batch": 4.0}), topo,
                  cfg.balance, 4.0, hk, fixed) == []
