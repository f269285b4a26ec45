"""The demo's moving cgroup tree: tenants with known load, pressure and NUMA locality, one of
them held at its memory_high.

Each cgroup has a `Workload` (what it asks for); every `advance_to(t)` gives it what its limits
allow over the time since the last call and rewrites its counters. The limits are read from the
cgroup's own files, which the fake systemd writes when slicectl applies: raise the cache's
memory_high and it stops hitting it; take CPUs from the database and its CPU pressure rises.
Given the same limits, the files after `advance_to(t)` depend only on the times it was called
with (no clock, no randomness), so tests drive it with made-up times.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from slicectl.core.cpulist import format_cpulist, parse_cpulist
from slicectl.demo.cgtree import FakeCgroup, make_root, write_files

MIB = 1 << 20
GIB = 1 << 30
# The files a systemd writes for a unit's settings (slicectl.demo.fakesystemd.FakeSystemd.
# cgroup_files): the tree writes them once, when a cgroup first appears, and never again, so
# it can never overwrite what an apply just set (apply reads them back to verify).
SETTINGS_FILES = frozenset({
    "cpuset.cpus", "cpuset.mems", "cpuset.cpus.effective", "cpuset.mems.effective",
    "cpuset.cpus.partition",
    "cpu.weight", "cpu.max", "memory.max", "memory.high", "memory.swap.max", "memory.low",
    "memory.min", "memory.zswap.writeback"})
HIGH_EVENTS_PER_S = 40  # memory.events "high" while a cgroup is held at memory.high


@dataclass(frozen=True)
class Workload:
    """What one cgroup asks for; it gets what its limits allow."""

    cpu: float = 0.0  # cores wanted on average
    swing: float = 0.0  # ± cores, a sine wave of `period` seconds
    period: float = 60.0
    memory: int = 64 * MIB  # bytes of working set
    memory_swing: int = 0  # ± bytes, a sine wave of 2 × `period` seconds
    growth: int = 0  # bytes a second it grows by, from `start`, to `memory` (0: at once)
    start: int = 0
    local: float = 1.0  # share of its memory on the nodes of its CPUs
    io_read: int = 0  # bytes a second
    io_write: int = 0
    tasks: int = 3

    def cpu_wanted(self, t: float) -> float:
        return max(0.0, self.cpu + self.swing * math.sin(2 * math.pi * t / self.period))

    def memory_wanted(self, t: float) -> int:
        return max(0, int(self.memory + self.memory_swing
                          * math.sin(math.pi * t / self.period)))


# The demo host's cgroups (the slices of tenants.yaml as the fake systemd names them).
WORKLOADS: dict[str, Workload] = {
    "init.scope": Workload(cpu=0.01, memory=12 * MIB, tasks=1),
    "system.slice": Workload(cpu=0.3, swing=0.2, period=23, memory=900 * MIB,
                             memory_swing=48 * MIB, tasks=61, local=0.5, io_write=2 * MIB),
    "user.slice": Workload(cpu=0.05, memory=300 * MIB, tasks=9, local=0.5),
    # Busy, its memory all on its own node, under its memory_high.
    "tenants.slice/tenants-db.slice": Workload(
        cpu=4.0, swing=1.5, period=40, memory=10 * GIB, memory_swing=512 * MIB,
        growth=512 * MIB, start=9 * GIB, io_read=40 * MIB, io_write=12 * MIB, tasks=212),
    # Load that comes and goes; a fifth of its memory left on the other node.
    "tenants.slice/tenants-web.slice": Workload(
        cpu=1.5, swing=1.3, period=15, memory=2560 * MIB, memory_swing=384 * MIB, local=0.8,
        io_write=MIB, tasks=48),
    # Its working set (1.5G) does not fit its memory_high (1G): held there, reclaimed hard.
    "tenants.slice/tenants-cache.slice": Workload(
        cpu=0.6, swing=0.3, period=30, memory=1536 * MIB, memory_swing=256 * MIB,
        growth=64 * MIB, start=1000 * MIB, io_read=8 * MIB, tasks=17),
    # Wants 3 cores, its quota gives 2: throttled; memory spread over both nodes.
    "tenants.slice/tenants-batch.slice": Workload(
        cpu=3.0, swing=0.5, period=50, memory=3 * GIB, memory_swing=512 * MIB, local=0.5,
        io_read=20 * MIB, io_write=20 * MIB, tasks=8),
}


@dataclass
class Limits:
    """A cgroup's limits as its files say now."""

    cpus: frozenset[int]
    mems: frozenset[int]
    quota_cores: float | None
    memory_high: int | None
    memory_max: int | None

    @classmethod
    def read(cls, folder: Path, cg: FakeCgroup) -> Limits:
        """From the files in `folder`; a file missing, empty (being rewritten) or unreadable
        counts as `cg`'s value."""
        def text(name: str, default: str) -> str:
            try:
                return (folder / name).read_text().strip() or default
            except OSError:
                return default

        def size(name: str, default: str) -> int | None:
            value = text(name, default)
            return int(value) if value.isdigit() else None  # "max": no limit

        def cpus(name: str, default: str) -> frozenset[int]:
            try:
                return parse_cpulist(text(name, default))
            except ValueError:
                return parse_cpulist(default)

        quota, _, period = text("cpu.max", cg.cpu_max).partition(" ")
        return cls(
            cpus=cpus("cpuset.cpus.effective", cg.cpus),
            mems=cpus("cpuset.mems.effective", cg.mems),
            quota_cores=int(quota) / int(period) if quota.isdigit() and period.isdigit()
            and int(period) else None,
            memory_high=size("memory.high", cg.memory_high),
            memory_max=size("memory.max", cg.memory_max))


@dataclass
class DemoTree:
    """The demo's cgroup tree under `root`; `advance_to(t)` moves it to `t` seconds."""

    root: Path
    node_cpus: Mapping[int, frozenset[int]]
    workloads: Mapping[str, Workload] = field(default_factory=lambda: WORKLOADS)
    cgroups: dict[str, FakeCgroup] = field(default_factory=dict)
    time: float = 0.0
    # cgroup -> CPU periods and throttled periods not yet counted (the files count whole ones)
    _periods: dict[str, tuple[float, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        cpus = format_cpulist(frozenset().union(*self.node_cpus.values()))
        mems = format_cpulist(self.node_cpus)
        make_root(self.root, cpus, mems)
        for path in self._paths():
            self._add(path, cpus, mems)

    def _paths(self) -> list[str]:
        """Every workload's cgroup and the slices above it, parents first."""
        paths = set(self.workloads)
        for path in self.workloads:
            parts = path.split("/")
            paths |= {"/".join(parts[:i]) for i in range(1, len(parts))}
        return sorted(paths, key=lambda p: (p.count("/"), p))

    def _add(self, path: str, cpus: str, mems: str) -> None:
        work = self.workloads.get(path, Workload(memory=0, tasks=0))
        cg = FakeCgroup(path, cpus=cpus, mems=mems, host_mems=mems, tasks=work.tasks,
                        memory_current=work.start or work.memory)
        self.cgroups[path] = cg
        folder = self.root / path
        folder.mkdir(parents=True, exist_ok=True)
        # The settings files only where systemd has not written them already.
        write_files(folder, {name: text for name, text in cg.files().items()
                             if name not in SETTINGS_FILES or not (folder / name).exists()})

    def advance_to(self, t: float) -> None:
        """Give every cgroup what it asked for from the last time to `t`; rewrite its counters
        (never its settings files)."""
        dt = t - self.time
        if dt <= 0:
            return
        leaves = [p for p in self.cgroups if p in self.workloads]
        for path in leaves:
            cg = self.cgroups[path]
            self._run(cg, self.workloads[path], Limits.read(self.root / path, cg), t, dt)
        for path in sorted(set(self.cgroups) - set(leaves), key=lambda p: -p.count("/")):
            self._sum(self.cgroups[path], [cg for p, cg in self.cgroups.items()
                                           if p.rpartition("/")[0] == path])
        self.time = t
        for path, cg in self.cgroups.items():
            write_files(self.root / path, {name: text for name, text in cg.files().items()
                                           if name not in SETTINGS_FILES})

    def _run(self, cg: FakeCgroup, work: Workload, limits: Limits, t: float, dt: float) -> None:
        wanted = work.cpu_wanted(t)
        cap = float(len(limits.cpus))
        if limits.quota_cores is not None:
            cap = min(cap, limits.quota_cores)
        used = min(wanted, cap)  # never more than its CPUs, nor its quota
        usec = dt * 1e6
        cg.usage_usec += int(used * usec)
        short = (wanted - used) / wanted if wanted > 0 else 0.0
        if limits.quota_cores is not None:
            self._throttle(cg, usec, short)
            cg.throttled_usec += int((wanted - used) * usec)
        # Run-queue waits grow with the share of its CPUs in use; far more when short of them.
        busy = used / cap if cap else 0.0
        self._pressure(cg, "cpu", 2.0 + 10 * busy ** 3 + 80 * short, 60 * short, dt)
        self._memory(cg, work, limits, t, dt)
        cg.io_rbytes += int(work.io_read * dt)
        cg.io_wbytes += int(work.io_write * dt)
        self._pressure(cg, "io", 1.0 + 3 * busy if work.io_read or work.io_write else 0.0, 0.2,
                       dt)
        self._place(cg, work, limits)

    def _throttle(self, cg: FakeCgroup, usec: float, short: float) -> None:
        """Count the quota's 100 ms periods, and the ones it ran out in (a share that grows
        with how short of CPU it is: any shortage throttles some), fractions carried over."""
        periods, throttled = self._periods.get(cg.path, (0.0, 0.0))
        periods += usec / 100_000
        throttled += usec / 100_000 * min(1.0, 0.1 + short * 2) if short > 0 else 0.0
        cg.nr_periods += int(periods)
        cg.nr_throttled += int(throttled)
        self._periods[cg.path] = (periods % 1, throttled % 1)

    def _memory(self, cg: FakeCgroup, work: Workload, limits: Limits, t: float,
                dt: float) -> None:
        """Grow toward the working set (which swings); held at memory.high (reclaim, "high"
        events, memory pressure that grows with the shortfall) when it does not fit under."""
        want = work.memory_wanted(t)
        grown = cg.memory_current + work.growth * dt if work.growth else want
        current = min(want, int(grown))
        ceilings = [v for v in (limits.memory_high, limits.memory_max) if v is not None]
        held = bool(ceilings) and want > min(ceilings) and current >= min(ceilings)
        over = 0.0
        if ceilings:
            current = min(current, min(ceilings))
            over = max(0.0, want - min(ceilings)) / min(ceilings)
        cg.memory_current = current
        cg.anon = current * 7 // 10
        cg.file = current - cg.anon
        cg.active_file = cg.file * 2 // 3
        cg.inactive_file = cg.file - cg.active_file
        if held:
            cg.events["high"] += max(1, round(HIGH_EVENTS_PER_S * dt))
            cg.refault_file += int(4000 * dt)
        some = 8.0 + 40 * min(1.0, over) if held else 0.0
        self._pressure(cg, "memory", some, some / 3, dt)

    def _place(self, cg: FakeCgroup, work: Workload, limits: Limits) -> None:
        """memory.numa_stat: `work.local` of its memory on its CPUs' nodes, the rest spread
        over the other nodes it may use (or all others when it may use only its own)."""
        local = sorted(n for n, cpus in self.node_cpus.items() if cpus & limits.cpus)
        others = sorted(set(limits.mems) - set(local)) or sorted(set(self.node_cpus) - set(local))
        share = work.local if others else 1.0
        cg.numa = {}
        for nodes, part in ((local, share), (others, 1.0 - share)):
            for n in nodes:
                cg.numa[n] = (int(cg.anon * part / len(nodes)), int(cg.file * part / len(nodes)))

    @staticmethod
    def _pressure(cg: FakeCgroup, resource: str, some: float, full: float, dt: float) -> None:
        """Stalled `some` and `full` % of the last `dt` seconds: added to the totals, and to
        avg10 as the kernel averages it (decaying over 10 s, so it follows the load)."""
        psi = cg.psi[resource]
        some, full = min(some, 100.0), min(full, some, 100.0)
        psi[1] += some / 100 * dt * 1e6
        psi[3] += full / 100 * dt * 1e6
        keep = math.exp(-dt / 10)
        psi[0] = round(psi[0] * keep + some * (1 - keep), 2)
        psi[2] = round(psi[2] * keep + full * (1 - keep), 2)

    @staticmethod
    def _sum(parent: FakeCgroup, children: Iterable[FakeCgroup]) -> None:
        """A parent's counters are its children's, as the kernel's hierarchical stats are."""
        kids = list(children)
        for name in ("usage_usec", "memory_current", "anon", "file", "active_file",
                     "inactive_file", "io_rbytes", "io_wbytes", "tasks"):
            setattr(parent, name, sum(getattr(c, name) for c in kids))
        parent.numa = {}
        for c in kids:
            for n, (anon, file) in (c.numa or {}).items():
                a, f = parent.numa.get(n, (0, 0))
                parent.numa[n] = (a + anon, f + file)
        for name in parent.events:
            parent.events[name] = sum(c.events[name] for c in kids)
        # A parent stalls at least as long as its most stalled child (a lower bound: the
        # kernel counts the time any of them stalls).
        for resource, psi in parent.psi.items():
            psi[:] = [max((c.psi[resource][i] for c in kids), default=0.0) for i in range(4)]
