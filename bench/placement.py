"""bench/run's placement benchmarks, in process: placement.1000, placement.repack.1000 and
placement.scale.

bench/run puts the checkout's root first on the import path before it imports this module,
so the slicectl measured is the checkout's.
"""

from __future__ import annotations

import gc
import statistics
import time
from typing import Any

from slicectl.core.config.config import load_yaml, parse_config
from slicectl.core.placement.placement import place
from slicectl.core.placement.topology import Cpu, Node, Topology
from slicectl.core.plan import build_plan
from slicectl.core.render import render
from slicectl.host.files.templates import load_templates
from slicectl.host.files.unitdir import Manifest, manifest_text

SCALE = (2_000, 16_000)  # placement.scale: linear growth is 8x, quadratic 64x


def synthetic_512() -> Topology:
    """A synthetic 512-CPU, 16-node SMT topology, Linux-style numbering."""
    nodes = []
    cpus = []
    for n in range(16):  # 16 nodes × 16 cores × 2 threads = 512 CPUs, Linux-style numbering
        ids = [n * 16 + i for i in range(16)] + [256 + n * 16 + i for i in range(16)]
        nodes.append(Node(n, frozenset(ids), 64 << 30,
                          {m: 10 if m == n else 21 for m in range(16)}))
        for i in range(16):
            a, b = n * 16 + i, 256 + n * 16 + i
            for c in (a, b):
                cpus.append(Cpu(c, True, n, package=n // 8, core=i,
                                siblings=frozenset({a, b})))
    return Topology(tuple(nodes), tuple(cpus), "synthetic 512 CPUs / 16 nodes")


def place_1000() -> float:
    """placement.1000: seconds to place 1,000 tenants on the synthetic 512-CPU host."""
    topo = synthetic_512()
    tenants: dict[str, Any] = {}
    for i in range(1000):  # 240 exclusive tenants (2 CPUs each), 760 on the shared pool
        tenants[f"t{i:04d}"] = {"cpus": 2, "cpu_weight": 100 + i} if i % 25 < 6 else {
            "memory_max": "1G"}
    config = parse_config({"version": 1, "housekeeping": {"cpus": 4}, "tenants": tenants},
                          "bench.yaml")
    start = time.perf_counter()
    layout = place(config, topo)
    elapsed = time.perf_counter() - start
    assert len(layout.tenants) == 1000
    return elapsed


def repack_1000() -> tuple[float, int]:
    """placement.repack.1000: seconds to place 1,000 tenants on the synthetic 512-CPU host
    keeping the last placement, where one tenant grew past its node's free CPUs (--repack:
    the fewest moves), and how many tenants the re-pack moved. Each node holds a 16-CPU
    database pinned to it; 111 tenants of 2 CPUs fill the nodes best fit (node 5 full); the
    rest are on the shared pool. The database on node 5 grows to 20 CPUs (and may go
    anywhere): two 2-CPU tenants must leave node 5, the fewest that let it stay whole."""
    topo = synthetic_512()
    tenants: dict[str, Any] = {}
    for n in range(16):
        tenants[f"db{n:02d}"] = {"cpus": 16, "nodes": [n], "memory_max": "32G"}
        for k in range(6 if n == 0 else 7):
            tenants[f"small{n:02d}{k}"] = {"cpus": 2}
    for i in range(1000 - len(tenants)):
        tenants[f"pool{i:04d}"] = {"memory_max": "1G", "cpu_weight": 1 + i}
    before = parse_config({"version": 1, "housekeeping": {"cpus": 4}, "tenants": tenants},
                          "bench.yaml")
    previous = {p.tenant: p.cpus for p in place(before, topo).tenants if not p.pool}
    tenants["db05"] = dict(tenants["db05"], cpus=20, nodes=None)
    del tenants["db05"]["nodes"]
    grown = parse_config({"version": 1, "housekeeping": {"cpus": 4}, "tenants": tenants},
                         "bench.yaml")
    start = time.perf_counter()
    layout = place(grown, topo, previous, repack=True)
    elapsed = time.perf_counter() - start
    assert len(layout.tenants) == 1000 and layout.of("db05").cpu_nodes == (5,)
    assert len(layout.moves) == 2, layout.moves
    return elapsed, len(layout.moves)


def scale_tenants(n: int) -> str:
    """tenants.yaml of `n` tenants for placement.scale: 40 exclusive of 2 CPUs with a service
    and memory_low, 40 of 4 CPUs spread over nodes, and of the rest one in 40 each: a shared
    count, a shared cpulist, bound to a node with memory_low, two services; the others on
    the shared pool. A profile overrides a third of them."""
    lines = ["version: 1", "housekeeping: {cpus: 4}", "tenants:"]
    for i in range(n):
        k = i % 40
        if i < 160 and i % 4 == 0:
            body = f"cpus: 2, cpu_weight: {100 + i}, memory_low: 64M, services: [db{i}.service]"
        elif i < 160 and i % 4 == 1:
            body = "cpus: 4, numa: spread, memory_max: 2G"
        elif k == 3:
            body = "cpus: 2, exclusive: false, memory_max: 1G"
        elif k == 5:
            body = f"cpus: \"{480 + i % 16}-{481 + i % 16}\", exclusive: false"
        elif k == 7:
            body = f"nodes: [{i % 16}], memory_low: 1M, memory_max: 1G"
        elif k == 9:
            body = f"memory_max: 1G, services: [app{i}.service, web{i}.service]"
        else:
            body = f"memory_max: 1G, cpu_weight: {1 + i % 1000}"
        lines.append(f"  t{i:05d}: {{{body}}}")
    lines += ["profiles:", "  night:"]
    lines += [f"    t{i:05d}: {{cpu_weight: 50}}" for i in range(0, n, 3)]
    return "\n".join(lines) + "\n"


def generate_times(rounds: int) -> list[float]:
    """placement.scale: what the systemd generator does with tenants.yaml, for each of
    SCALE's numbers of tenants on the synthetic 512-CPU host: parse the text, plan keeping
    the placement recorded last time, render the units and the manifest. The median of
    `rounds` runs for each, in seconds."""
    topo = synthetic_512()

    def generate(text: str, previous: dict[str, frozenset[int]]) -> dict[str, frozenset[int]]:
        config = parse_config(load_yaml(text, "tenants.yaml"), "tenants.yaml")
        plan = build_plan(config, topo, previous, shares=False)
        texts = render(plan, load_templates())
        manifest_text(texts, Manifest(placements=plan.placements(), source="tenants.yaml"))
        return plan.placements()

    times = []
    gc.disable()  # as the generator runs (slicectl.host.oneshot)
    try:
        for n in SCALE:
            text = scale_tenants(n)
            previous = generate(text, {})  # the record the generator finds at boot
            runs = []
            for _ in range(rounds):
                start = time.perf_counter()
                generate(text, previous)
                runs.append(time.perf_counter() - start)
            times.append(statistics.median(runs))
    finally:
        gc.enable()
    return times
