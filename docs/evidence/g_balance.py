#!/usr/bin/env python3
"""Experiment (g): demand that alternates between two tenants; the balancer moves the core to
whichever is busy, against the same tenants on a static split.

`web` holds 1 CPU (node 1) and `batch` 2 (one on node 1, one on node 2), both elastic
(cpus_min 1, cpus_max 2): three CPUs for two tenants that each want two, never at the same
time. Each tenant runs WORKERS counting processes (lab.start_counting); a phase lets one
tenant's workers run and stops the other's (SIGSTOP/SIGCONT: no interpreter start in the
measurement): web busy, then batch busy. Such a pair of phases runs on the static split (no
balancer), then with `slicectl balance` running (balance: interval 1 s, window 3 s, cooldown
5 s), and the full run repeats both, so that the host's changing load falls on both setups
alike: static, balancer, static, balancer (the shortened run: static, balancer). Every 0.25 s:
each tenant's operations per second and its cpuset.cpus.effective. "Follows" is the time from
a load switch until the busy tenant's cpuset.cpus.effective holds more CPUs than at the switch.

Under TCG the 8 vCPUs are threads on the host's 2 cores, so a third busy vCPU adds no
instructions: the shape keeps at most 2 vCPUs busy (the busy tenant's 2 workers; the sampler
and slicectl run on the housekeeping CPUs 0,4). The balancer moves only between tenants that
share a node, and the testbed's nodes have 2 CPUs each, hence batch spans nodes 1 and 2.

    tests/testbed/run docs/evidence/g_balance.py [--quick]     (docs/evidence/run g)

Writes g_balance.csv (setup, round, t, phase, busy, tenant, ops_per_s, cpus) and
g_balance_events.csv (each load switch, each growth of the busy tenant's cpuset, each move
line of the balancer as the recorder first saw it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(os.environ.get("SLICECTL_CHECKOUT", Path(__file__).parent.parent
                                           .parent)) / "docs" / "evidence"))
import lab  # noqa: E402

TENANTS = """\
version: 1
housekeeping: {cpus: "0,4"}   # the sampler and slicectl run there, off the tenants' CPUs
balance: {interval: 1s, window: 3s, cooldown: 5s}
tenants:
  web: {cpus: 1, cpus_min: 1, cpus_max: 2, nodes: [1]}
  batch: {cpus: 2, cpus_min: 1, cpus_max: 2, nodes: [1, 2], numa: spread}
"""
TENANT_NAMES = ("web", "batch")
WORKERS = 2  # per tenant: enough to fill its ceiling of 2 CPUs
INTERVAL = 0.25
PHASES = ("web", "batch")  # the busy tenant of each phase of a round
ROUNDS, PHASE_S = ("static", "balancer", "static", "balancer"), 30.0
QUICK_ROUNDS, QUICK_PHASE_S = ("static", "balancer"), 20.0


@dataclass(frozen=True)
class Sample:
    setup: str  # static (no balancer) or balancer
    round: int  # which round of ROUNDS
    t: float  # seconds since the round's first phase began
    phase: int
    busy: str  # the tenant whose workers run in this phase
    tenant: str
    ops_per_s: float
    cpus: str  # cpuset.cpus.effective


@dataclass(frozen=True)
class Event:
    setup: str
    round: int
    t: float
    event: str  # switch (the load moved to `tenant`), grew (its cpuset), move (balancer)
    tenant: str
    detail: str  # the cpuset after a growth; the balancer's line for a move


@dataclass(frozen=True)
class Result:
    ops_static: int  # operations of both tenants over all phases, static split
    ops_balancer: int  # the same with the balancer
    ratio: float  # ops_balancer / ops_static
    ratio_web: float  # web's operations in its own phases, balancer / static
    ratio_batch: float  # batch's, likewise
    gain_2cpu: float  # with the balancer: the busy tenant's ops/s on 2 CPUs over on 1
    follow_s: tuple[float, ...]  # each load switch -> the busy tenant's cpuset grew
    moves: int  # move lines the balancer printed
    restored: bool  # the balancer's stop gave both tenants their declared CPUs back


class Workers:
    """Each tenant's counting processes, stopped or running as a phase wants them."""

    def __init__(self) -> None:
        self.counters = {t: lab.start_counting(t, WORKERS) for t in TENANT_NAMES}
        self.pids = {t: [lab.main_pid(f"{lab.PREFIX}{t}-{i}.service") for i in range(WORKERS)]
                     for t in TENANT_NAMES}
        deadline = time.monotonic() + 120
        # every interpreter has started and counted (under TCG: seconds)
        while not all(lab.operations([p]) for c in self.counters.values() for p in c):
            if time.monotonic() > deadline:
                raise RuntimeError("the counting workers did not start within 120 s")
            time.sleep(0.2)
        self.load(None)

    def load(self, busy: str | None) -> None:
        """Let `busy`'s workers run (None: nobody's); the other tenant's stop first, so no
        more than WORKERS are ever busy."""
        for tenant in TENANT_NAMES:
            if tenant != busy:
                for pid in self.pids[tenant]:
                    os.kill(pid, signal.SIGSTOP)
        if busy is not None:
            for pid in self.pids[busy]:
                os.kill(pid, signal.SIGCONT)


class Recorder:
    """Ops per second and CPUs of each tenant every INTERVAL seconds, through the phases."""

    def __init__(self, setup: str, round_: int, workers: Workers,
                 balancer_out: Path | None = None) -> None:
        self.setup = setup
        self.round = round_
        self.workers = workers
        self.cpusets = {t: lab.control_group(f"tenants-{t}.slice") / "cpuset.cpus.effective"
                        for t in TENANT_NAMES}
        self.balancer_out = balancer_out
        self.seen = 0  # bytes of the balancer's output read so far
        self.samples: list[Sample] = []
        self.events: list[Event] = []
        self.phase_ops: list[dict[str, int]] = []  # per phase: tenant -> operations
        self.follow: list[float] = []

    def cpus(self, tenant: str) -> str:
        return self.cpusets[tenant].read_text().strip()

    def run(self, phases: tuple[str, ...], seconds: float) -> None:
        start = time.monotonic()
        last = {t: lab.operations(self.workers.counters[t]) for t in TENANT_NAMES}
        last_t = start
        for i, busy in enumerate(phases):
            switch = time.monotonic() - start
            self.workers.load(busy)
            self.events.append(Event(self.setup, self.round, switch, "switch", busy, ""))
            at_switch = {t: lab.operations(self.workers.counters[t]) for t in TENANT_NAMES}
            size = len(lab.parse_cpulist(self.cpus(busy)))
            grew = False
            for k, _ in enumerate(lab.sample_every(INTERVAL, seconds)):
                if k == 0:  # sample_every's first yield is at once
                    continue
                now = time.monotonic()
                for tenant in TENANT_NAMES:
                    count = lab.operations(self.workers.counters[tenant])
                    cpus = self.cpus(tenant)
                    self.samples.append(Sample(self.setup, self.round, now - start, i, busy, tenant,
                                               (count - last[tenant]) / (now - last_t), cpus))
                    last[tenant] = count
                    if tenant == busy and not grew and len(lab.parse_cpulist(cpus)) > size:
                        grew = True
                        self.follow.append(now - start - switch)
                        self.events.append(Event(self.setup, self.round, now - start,
                                                 "grew", busy, cpus))
                last_t = now
                self.read_balancer(now - start)
            self.phase_ops.append({t: lab.operations(self.workers.counters[t]) - at_switch[t]
                                   for t in TENANT_NAMES})
            if self.setup == "balancer" and not grew:
                self.follow.append(float("inf"))
        self.workers.load(None)

    def read_balancer(self, t: float) -> None:
        """The balancer's new move lines, timed when first seen."""
        if self.balancer_out is None:
            return
        data = self.balancer_out.read_bytes()
        new, self.seen = data[self.seen:], len(data)
        for line in new.decode().splitlines():
            if line.startswith("move core"):
                receiver = line.split(" to ", 1)[1].split(":", 1)[0]
                self.events.append(Event(self.setup, self.round, t, "move", receiver, line))


def start_balancer(path: Path, out: Path, err: Path) -> subprocess.Popen[bytes]:
    """`slicectl balance PATH` in the background (it runs on the housekeeping CPUs, as this
    script does); returns once it samples."""
    proc = subprocess.Popen(["slicectl", "balance", str(path)], stdout=out.open("wb"),
                            stderr=err.open("wb"))
    deadline = time.monotonic() + 300
    while "balancing: sampling" not in err.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"slicectl balance did not start:\n{err.read_text()}")
        time.sleep(0.2)
    return proc


def stop_balancer(proc: subprocess.Popen[bytes], err: Path) -> None:
    """SIGTERM, as `systemctl stop` sends it: the balancer restores the declared sizes."""
    proc.send_signal(signal.SIGTERM)
    if proc.wait(120) != 0:
        raise RuntimeError(f"slicectl balance exited {proc.returncode}:\n{err.read_text()}")


def main(quick: bool = False) -> Result:
    rounds, seconds = (QUICK_ROUNDS, QUICK_PHASE_S) if quick else (ROUNDS, PHASE_S)
    recorders: list[Recorder] = []
    restored = True
    with lab.experiment():
        path = lab.tenants_file("g_balance", TENANTS)
        lab.apply(path)
        workers = Workers()
        declared = {t: lab.control_group(f"tenants-{t}.slice").joinpath(
            "cpuset.cpus.effective").read_text().strip() for t in TENANT_NAMES}
        for i, setup in enumerate(rounds):
            if setup == "static":
                recorders.append(Recorder(setup, i, workers))
                recorders[-1].run(PHASES, seconds)
                continue
            out, err = lab.WORK / f"balance{i}.out", lab.WORK / f"balance{i}.err"
            proc = start_balancer(path, out, err)
            try:
                recorders.append(Recorder(setup, i, workers, out))
                recorders[-1].run(PHASES, seconds)
            finally:
                stop_balancer(proc, err)
            restored &= all(recorders[-1].cpus(t) == declared[t] for t in TENANT_NAMES)
    lab.write_csv("g_balance", [s for r in recorders for s in r.samples])
    lab.write_csv("g_balance_events", [e for r in recorders for e in r.events])
    result = summary(recorders, restored)
    print(f"g_balance: {result}", flush=True)
    return result


def summary(recorders: list[Recorder], restored: bool) -> Result:
    def ops(setup: str, tenant: str | None = None) -> int:
        """Operations in the rounds of `setup`: of both tenants, or of `tenant` in its own
        (busy) phases."""
        return sum(n for r in recorders if r.setup == setup
                   for p, busy in zip(r.phase_ops, PHASES, strict=True)
                   for t, n in p.items() if tenant is None or t == tenant == busy)

    def busy_rate(cpus: int) -> float:
        """Mean ops/s of the busy tenant over the samples where it held `cpus` CPUs, with the
        balancer."""
        rates = [s.ops_per_s for r in recorders if r.setup == "balancer" for s in r.samples
                 if s.tenant == s.busy and len(lab.parse_cpulist(s.cpus)) == cpus]
        return sum(rates) / len(rates)

    balanced = [r for r in recorders if r.setup == "balancer"]
    return Result(ops("static"), ops("balancer"), ops("balancer") / ops("static"),
                  ops("balancer", "web") / ops("static", "web"),
                  ops("balancer", "batch") / ops("static", "batch"),
                  busy_rate(2) / busy_rate(1),
                  tuple(round(f, 2) for r in balanced for f in r.follow),
                  sum(e.event == "move" for r in balanced for e in r.events), restored)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
