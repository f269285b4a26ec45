#!/usr/bin/env python3
"""Experiment (c), Red Hat reference architecture §4.4 and LinkedIn, 2016: a rogue tenant
hurts only itself.

Three tenants, each on one node's CPUs; `rogue` has a memory limit (memory_high below
memory_max, no swap). The two calm tenants run a steady workload (a CPU loop per CPU that
also allocates and frees memory). Then, in `rogue` only: a memory hog (a Python process
holding 128 MiB and allocating, touching and freeing another 64 MiB over and over, so it keeps
crossing memory_high; no swap, so the kernel can only throttle it), later a CPU hog (8 loops
on its 2 CPUs). Every 0.5 s the
pressure stall counters (PSI `some` totals of cpu.pressure and memory.pressure) of each
tenant are turned into % of time stalled.

    tests/testbed/run docs/evidence/c_rogue.py [--quick]     (docs/evidence/run c)

Writes c_rogue.csv: t, phase, tenant, memory_pressure_pct, cpu_pressure_pct, memory_mib.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(os.environ.get("SLICECTL_CHECKOUT", Path(__file__).parent.parent
                                           .parent)) / "docs" / "evidence"))
import lab  # noqa: E402

TENANTS = """\
version: 1
housekeeping: {cpus: "0,4"}
tenants:
  rogue:                 # node 1
    cpus: "1,5"
    cpu_weight: 100
    memory_high: 160M    # reclaim and throttling start here
    memory_max: 256M     # the hard limit (000 §4.4: a memory limit on the rogue instance)
    memory_swap_max: 0
  calm1: {cpus: "2,6", cpu_weight: 100, memory_max: 512M, memory_low: 128M}   # node 2
  calm2: {cpus: "3,7", cpu_weight: 100, memory_max: 512M, memory_low: 128M}   # node 3
"""
TENANT_NAMES = ("rogue", "calm1", "calm2")
# A calm tenant's work: 16 MiB allocated, touched and freed over and over, with a pause
# after each round: a service that leaves its CPUs some slack, so its CPU pressure is 0 unless
# something else takes them (two loops on two CPUs showed pressure whenever the scheduler
# put both on one CPU for a moment, hog or not).
CALM = ("import time\nwhile True:\n    b = bytearray(16 << 20)\n"
        "    for i in range(0, len(b), 4096):\n        b[i] = 1\n    del b\n"
        "    time.sleep(0.02)\n")
# The rogue's work: hold 128 MiB, then allocate, touch and free 64 MiB chunks forever: each
# chunk takes it from ~130 MiB over memory_high (160M) to ~195 MiB, under memory_max (256M).
# (stress-ng's vm stressor held 31 MiB here: see docs/evidence/README.md.)
MEMORY_HOG = ("held = bytearray(128 << 20)\nfor i in range(0, len(held), 4096):\n"
              "    held[i] = 1\nwhile True:\n    b = bytearray(64 << 20)\n"
              "    for i in range(0, len(b), 4096):\n        b[i] = 1\n    del b\n")
CPU_HOG_LOOPS = 8
INTERVAL = 0.5
# seconds per phase: quiet, memory hog, quiet again, CPU hog
PHASES = {"quiet": 10.0, "memory hog": 30.0, "recover": 10.0, "cpu hog": 30.0}
# Shortened: each hog's phase counts from the moment the hog is at work, the memory hog over
# memory_high, the CPU hog's loops all running; until then, phase "… starting", at most
# HOG_START_BOUND s. Under TCG the memory hog took 23-66 s to get over memory_high and the
# CPU hog's unit 6 s to start, longer than, or most of, a short fixed phase.
QUICK = {"quiet": 3.0, "memory hog": 10.0, "recover": 2.0, "cpu hog": 8.0}
HOG_START_BOUND = 300.0


@dataclass(frozen=True)
class Sample:
    t: float
    phase: str
    tenant: str
    memory_pressure_pct: float  # memory.pressure `some`: share of time some task stalled
    cpu_pressure_pct: float  # cpu.pressure `some`
    memory_mib: float  # memory.current


@dataclass(frozen=True)
class Result:
    rogue_memory_pct: float  # rogue's memory pressure during the memory hog (mean)
    calm_memory_pct: float  # the calm tenants' during it (mean; the higher of the two)
    rogue_cpu_pct: float  # rogue's CPU pressure during the CPU hog (mean)
    calm_cpu_pct: float  # the calm tenants' during it (mean; the higher of the two)
    calm_peak_pct: float  # the calm tenants' highest 0.5 s sample of either, in any phase
    #                       (also before the hogs: other work on their vCPUs, the host)
    rogue_peak_mib: float  # rogue's memory.current, highest sample during the memory hog


class Pressure:
    """PSI totals of every tenant, turned into % stalled since the last sample."""

    def __init__(self) -> None:
        self.cgroups = {t: lab.control_group(f"tenants-{t}.slice") for t in TENANT_NAMES}
        self.start = time.monotonic()
        self.last_t, self.last = self.start, self.read()
        self.samples: list[Sample] = []

    def read(self) -> dict[str, tuple[int, int]]:
        return {t: (lab.pressure_total(cg / "memory.pressure"),
                    lab.pressure_total(cg / "cpu.pressure")) for t, cg in self.cgroups.items()}

    def record(self, phase: str, seconds: float, until: Callable[[], bool] | None = None) -> bool:
        """Sample for `seconds`, or until `until()` holds after a sample: True if it did."""
        for _ in lab.sample_every(INTERVAL, seconds):
            now, cur = time.monotonic(), self.read()
            us = (now - self.last_t) * 1e6
            for t, cg in self.cgroups.items():
                mem = int((cg / "memory.current").read_text())
                self.samples.append(Sample(
                    now - self.start, phase, t, 100 * (cur[t][0] - self.last[t][0]) / us,
                    100 * (cur[t][1] - self.last[t][1]) / us, mem / 2**20))
            self.last_t, self.last = now, cur
            if until is not None and until():
                return True
        return False

    def rogue_over_memory_high(self) -> bool:
        """The rogue is over its memory_high: the kernel throttles and reclaims it from here."""
        rogue = self.cgroups["rogue"]
        high = (rogue / "memory.high").read_text().strip()
        return high != "max" and int((rogue / "memory.current").read_text()) > int(high)

    def rogue_runs_cpu_hog(self) -> bool:
        """All the CPU hog's loops (and their shell) are running in the rogue."""
        procs = sum(len(f.read_text().split()) for f in self.cgroups["rogue"].rglob(
            "cgroup.procs"))
        return procs > CPU_HOG_LOOPS

    def during(self, phase: str, tenants: tuple[str, ...]) -> list[Sample]:
        # the first sample of a phase still measures the end of the one before
        mine = [s for s in self.samples if s.phase == phase]
        first = min(s.t for s in mine)
        return [s for s in mine if s.tenant in tenants and s.t > first]


def start_nowait(unit: str, command: str) -> subprocess.Popen[bytes]:
    """Start `sh -c COMMAND` as a unit in the rogue tenant; don't wait for systemd-run."""
    return subprocess.Popen(lab.start_command(unit, "tenants-rogue.slice", command))


def main(quick: bool = False) -> Result:
    phases = QUICK if quick else PHASES
    with lab.experiment():
        lab.apply(lab.tenants_file("c_rogue", TENANTS))
        script, hog = lab.WORK / "calm.py", lab.WORK / "memory-hog.py"
        script.write_text(CALM)
        hog.write_text(MEMORY_HOG)
        for t in ("calm1", "calm2"):
            for i in range(2):  # one per CPU
                lab.start(f"{t}-{i}", f"tenants-{t}.slice", f"exec python3 {script}")
        time.sleep(2.0)
        psi = Pressure()

        def hog_phase(name: str, at_work: Callable[[], bool]) -> None:
            if quick and not psi.record(f"{name} starting", HOG_START_BOUND, until=at_work):
                raise RuntimeError(f"the {name} was not at work after {HOG_START_BOUND:.0f} s")
            psi.record(name, phases[name])

        psi.record("quiet", phases["quiet"])
        # started and stopped without waiting, so that the sampling goes on (starting a unit
        # and waiting for it took up to 70 s on a loaded host)
        started = start_nowait("memory-hog", f"exec python3 {hog}")
        hog_phase("memory hog", psi.rogue_over_memory_high)
        started.wait()
        stopped = subprocess.Popen(["systemctl", "stop", f"{lab.PREFIX}memory-hog.service"])
        psi.record("recover", phases["recover"])
        stopped.wait()
        loops = " ".join([f"/bin/sh -c '{lab.LOOP}' &"] * CPU_HOG_LOOPS)
        started = start_nowait("cpu-hog", f"{loops} wait")
        hog_phase("cpu hog", psi.rogue_runs_cpu_hog)
        started.wait()
    lab.write_csv("c_rogue", psi.samples)
    calm = ("calm1", "calm2")
    mem = psi.during("memory hog", ("rogue",))
    cpu = psi.during("cpu hog", ("rogue",))
    def mean(values: list[float]) -> float:
        return sum(values) / len(values)

    def calm_mean(phase: str, key: str) -> float:
        return max(mean([getattr(s, key) for s in psi.during(phase, (t,))]) for t in calm)
    result = Result(
        mean([s.memory_pressure_pct for s in mem]), calm_mean("memory hog", "memory_pressure_pct"),
        mean([s.cpu_pressure_pct for s in cpu]), calm_mean("cpu hog", "cpu_pressure_pct"),
        max(max(s.memory_pressure_pct, s.cpu_pressure_pct)
            for phase in {s.phase for s in psi.samples} for s in psi.during(phase, calm)),
        max(s.memory_mib for s in mem))
    print(f"c_rogue: {result}", flush=True)
    return result


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
