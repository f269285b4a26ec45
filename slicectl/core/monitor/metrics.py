"""Per-slice metrics computed purely from two samples (DESIGN.md §7); no I/O here.

Rates need a previous sample of the *same* cgroup: when there is none, when the directory
inode changed (the slice was stopped and started again) or when any counter went backwards,
every delta is dropped (None) rather than reported as a nonsense spike.

NUMA locality needs the host's node -> CPUs map, which the caller reads (sysfs) and passes in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from operator import attrgetter

from slicectl.core.monitor.cpuset_partition import PartitionMetrics
from slicectl.core.monitor.samples import CgroupSample, NodeMemory, Pressure, Snapshot

# The host's NUMA nodes and the CPUs of each (topology.Node.id -> Node.cpus).
NodeCpus = Mapping[int, frozenset[int]]


# Togashi et al. (Ritsumeikan University / Mitsubishi Electric, docs/background.md): the cpu
# controller's accounting is only accurate over windows of about 30 ms or more; shorter
# intervals read 0% or 50% instead of 25%.
MIN_RATE_WINDOW = 0.03


class Trouble(StrEnum):
    """Why a slice deserves attention (the TUI colours rows by these)."""

    PRESSURE = "pressure"
    THROTTLED = "throttled"
    NEAR_LIMIT = "near-limit"
    OOM = "oom"
    REMOTE_MEMORY = "remote-memory"
    PARTITION = "partition"  # a cpuset partition the kernel refused, or one that lost CPUs


# Not frozen: these are built by the hundred on every refresh, and a frozen dataclass's
# __init__ stores each field through object.__setattr__, many times the cost of a plain
# slotted one (BENCHMARKS.md, "Hand-made pieces kept in place of a library"). Treat them as
# immutable all the same.
@dataclass(slots=True, unsafe_hash=True)
class PsiMetrics:
    """One PSI line: avg10 as the kernel reports it and the rate over our interval (%)."""

    avg10: float
    rate: float | None

    def share(self) -> float:
        """The stall share slicectl shows (%), in every view: the rate over the interval
        between our samples, else (a first sample) the kernel's avg10."""
        return self.rate if self.rate is not None else self.avg10


@dataclass(slots=True, unsafe_hash=True)
class PressureMetrics:
    """`some` and `full` stall shares of one resource."""

    some: PsiMetrics
    full: PsiMetrics | None


@dataclass(slots=True, unsafe_hash=True)
class NumaMetrics:
    """Where a slice's memory is (memory.numa_stat) against where it runs and may allocate.

    `local_percent`: share of its memory on `local_nodes`, the nodes of the CPUs it runs on
    (cpuset.cpus.effective); `outside_percent`: share on nodes it may no longer allocate on
    (not in cpuset.mems.effective, e.g. after its binding changed). Both None while it holds
    no memory, and `local_percent` also without the host's node map.
    """

    nodes: tuple[NodeMemory, ...]
    local_nodes: frozenset[int] | None
    local_percent: float | None
    outside_percent: float | None
    bound: bool  # its memory nodes are fewer than the host's (a NUMA binding)

    @classmethod
    def from_sample(
        cls, s: CgroupSample, node_cpus: NodeCpus | None, host_mems: frozenset[int] | None
    ) -> NumaMetrics | None:
        """The locality of one sample; None when memory.numa_stat was not read."""
        if s.numa is None:
            return None
        on_node = [(n.node, n.anon + n.file) for n in s.numa]
        total = sum([size for _, size in on_node])
        local_nodes = _nodes_of(s.cpus, node_cpus)
        local = outside = None
        if total:
            if local_nodes is not None:
                local = sum([size for n, size in on_node if n in local_nodes]) / total * 100
            allowed = s.mems  # None: no cpuset controller, every node allowed
            away = 0 if allowed is None else sum([size for n, size in on_node
                                                  if n not in allowed])
            outside = away / total * 100
        host = host_mems or (frozenset(node_cpus) if node_cpus else None)
        bound = s.mems is not None and host is not None and s.mems < host
        return cls(s.numa, local_nodes, local, outside, bound)


def _nodes_of(cpus: frozenset[int] | None, node_cpus: NodeCpus | None) -> frozenset[int] | None:
    """The nodes holding any of `cpus` (None: every CPU of the host); None without a map."""
    if not node_cpus:
        return None
    return frozenset(n for n, on in node_cpus.items() if on and (cpus is None or on & cpus))


@dataclass(slots=True, unsafe_hash=True)
class SliceMetrics:
    """What `status`, `top` and the TUI show for one slice; None = unknown or unlimited."""

    unit: str
    cgroup: str
    # limits
    cpus: frozenset[int] | None
    allowed_cpus: int
    mems: frozenset[int] | None
    cpu_weight: int | None
    quota_cores: float | None
    memory_low: int | None
    memory_min: int | None
    memory_high: int | None
    memory_max: int | None
    swap_max: int | None
    # cpu
    cpu_cores: float | None
    cpu_percent: float | None
    throttled_percent: float | None
    throttled_s: float | None
    # memory
    memory_current: int | None
    memory_percent: float | None
    anon: int | None
    file: int | None
    active_file: int | None
    inactive_file: int | None
    swap_current: int | None
    refaults_per_s: float | None
    # pressure
    cpu_pressure: PressureMetrics | None
    memory_pressure: PressureMetrics | None
    io_pressure: PressureMetrics | None
    # memory.events deltas over the interval
    events_low: int | None
    events_high: int | None
    events_max: int | None
    events_oom: int | None
    events_oom_kill: int | None
    tasks: int | None
    # NUMA locality; None when memory.numa_stat is not read (a host with one memory node)
    numa: NumaMetrics | None = None
    # io.stat rates over the interval, all devices (bytes/s)
    io_read_bps: float | None = None
    io_write_bps: float | None = None
    # cpuset.cpus.partition; None when the slice is no partition
    partition: PartitionMetrics | None = None

    @classmethod
    def from_samples(
        cls,
        prev: CgroupSample | None,
        cur: CgroupSample,
        dt: float,
        host_cpus: int | None = None,
        *,
        node_cpus: NodeCpus | None = None,
        host_mems: frozenset[int] | None = None,
    ) -> SliceMetrics:
        """Metrics of `cur`, with rates over `dt` seconds when `prev` allows them; locality
        against the host's `node_cpus` and memory nodes `host_mems` (see NumaMetrics)."""
        p = prev if _comparable(prev, cur, dt) else None
        allowed = len(cur.cpus) if cur.cpus else (host_cpus or 1)
        cores = _rate(p.usage_usec if p else None, cur.usage_usec, dt * 1e6)
        quota = None
        if cur.cpu_quota_usec is not None and cur.cpu_period_usec:
            quota = cur.cpu_quota_usec / cur.cpu_period_usec
        cores = _at_most(cores, len(cur.cpus) if cur.cpus else host_cpus, quota)
        throttled_pct = None
        d_periods = _delta(p.nr_periods if p else None, cur.nr_periods)
        d_throttled = _delta(p.nr_throttled if p else None, cur.nr_throttled)
        if d_periods is not None and d_throttled is not None:
            throttled_pct = min(100.0, d_throttled / d_periods * 100) if d_periods else 0.0
        d_throttled_usec = _delta(p.throttled_usec if p else None, cur.throttled_usec)
        bound = cur.memory_max if cur.memory_max is not None else cur.memory_high
        mem_pct = None
        if bound and cur.memory_current is not None:
            mem_pct = cur.memory_current / bound * 100
        return cls(
            unit=cur.unit,
            cgroup="/" + cur.path,
            cpus=cur.cpus,
            allowed_cpus=allowed,
            mems=cur.mems,
            cpu_weight=cur.cpu_weight,
            quota_cores=quota,
            memory_low=cur.memory_low,
            memory_min=cur.memory_min,
            memory_high=cur.memory_high,
            memory_max=cur.memory_max,
            swap_max=cur.swap_max,
            cpu_cores=cores,
            cpu_percent=None if cores is None else cores / allowed * 100,
            throttled_percent=throttled_pct,
            throttled_s=None if d_throttled_usec is None else d_throttled_usec / 1e6,
            memory_current=cur.memory_current,
            memory_percent=mem_pct,
            anon=cur.anon,
            file=cur.file,
            active_file=cur.active_file,
            inactive_file=cur.inactive_file,
            swap_current=cur.swap_current,
            refaults_per_s=_rate(p.workingset_refault if p else None, cur.workingset_refault, dt),
            cpu_pressure=_pressure(p.cpu_pressure if p else None, cur.cpu_pressure, dt),
            memory_pressure=_pressure(p.memory_pressure if p else None, cur.memory_pressure, dt),
            io_pressure=_pressure(p.io_pressure if p else None, cur.io_pressure, dt),
            events_low=_delta(p.events_low if p else None, cur.events_low),
            events_high=_delta(p.events_high if p else None, cur.events_high),
            events_max=_delta(p.events_max if p else None, cur.events_max),
            events_oom=_delta(p.events_oom if p else None, cur.events_oom),
            events_oom_kill=_delta(p.events_oom_kill if p else None, cur.events_oom_kill),
            tasks=cur.tasks,
            numa=NumaMetrics.from_sample(cur, node_cpus, host_mems),
            io_read_bps=_counter_rate(p.io_read_bytes if p else None, cur.io_read_bytes, dt),
            io_write_bps=_counter_rate(p.io_write_bytes if p else None, cur.io_write_bytes, dt),
            partition=PartitionMetrics.from_sample(cur),
        )

    @property
    def trouble(self) -> frozenset[Trouble]:
        """The trouble flags with the default thresholds (see `classify`)."""
        return classify(self)


class MetricsMemo:
    """Computes metrics snapshot after snapshot for one reader of one sampler (status, top,
    the TUI, a benchmark), and remembers the metrics of unchanged samples.

    The sampler hands back the very same sample object for a cgroup that did not change; every
    delta is then zero, so its metrics depend only on that sample and on whether the interval
    is long enough for rates, and are reused instead of recomputed (BENCHMARKS.md,
    sampler.1000). The host's node -> CPUs map, if known, is fixed for the memo's lifetime.
    """

    def __init__(self, node_cpus: NodeCpus | None = None) -> None:
        self.node_cpus = node_cpus
        self._still: dict[str, tuple[CgroupSample, bool, SliceMetrics]] = {}

    def compute(self, prev: Snapshot | None, cur: Snapshot) -> list[SliceMetrics]:
        """Metrics of every cgroup in `cur`, sorted by cgroup path."""
        dt = cur.time - prev.time if prev is not None else 0.0
        rates = dt >= MIN_RATE_WINDOW
        old = prev.cgroups if prev is not None else {}
        still = self._still
        memo: dict[str, tuple[CgroupSample, bool, SliceMetrics]] = {}
        out = []
        for path, sample in sorted(cur.cgroups.items()):
            before = old.get(path)
            hit = still.get(path) if before is sample else None
            if hit is not None and hit[0] is sample and hit[1] == rates:
                m = hit[2]
            else:
                m = SliceMetrics.from_samples(before, sample, dt, cur.host_cpus,
                                              node_cpus=self.node_cpus, host_mems=cur.host_mems)
            if before is sample:
                memo[path] = (sample, rates, m)
            out.append(m)
        self._still = memo
        return out


def compute(
    prev: Snapshot | None, cur: Snapshot, node_cpus: NodeCpus | None = None
) -> list[SliceMetrics]:
    """Metrics of every cgroup in `cur`, sorted by cgroup path (one-off: no memo kept)."""
    return MetricsMemo(node_cpus).compute(prev, cur)


def classify(
    m: SliceMetrics,
    *,
    pressure_above: float = 10.0,
    throttled_above: float = 5.0,
    near_limit: float = 90.0,
    local_below: float = 90.0,
) -> frozenset[Trouble]:
    """Flag PSI `some` above `pressure_above` %, throttling, memory ≥ `near_limit` % of
    memory.high or memory.max, OOM kills during the interval, and a NUMA-bound slice with
    less than `local_below` % of its memory on the nodes of its CPUs, and a cpuset
    partition the kernel refused or that lacks some of its CPUs."""
    flags: set[Trouble] = set()
    for pr in (m.cpu_pressure, m.memory_pressure):
        if pr is not None:
            if pr.some.share() > pressure_above:
                flags.add(Trouble.PRESSURE)
    if m.throttled_percent is not None and m.throttled_percent > throttled_above:
        flags.add(Trouble.THROTTLED)
    cur = m.memory_current
    if cur is not None:
        for bound in (m.memory_high, m.memory_max):
            if bound and cur * 100 >= bound * near_limit:
                flags.add(Trouble.NEAR_LIMIT)
    if m.events_oom_kill:
        flags.add(Trouble.OOM)
    numa = m.numa
    if numa is not None and numa.bound and numa.local_percent is not None:
        if numa.local_percent < local_below:
            flags.add(Trouble.REMOTE_MEMORY)
    if m.partition is not None and m.partition.problem() is not None:
        flags.add(Trouble.PARTITION)
    return frozenset(flags)


# The counters that only grow while a cgroup exists (one that went back means a new cgroup).
_COUNTERS = attrgetter("usage_usec", "nr_periods", "nr_throttled", "throttled_usec",
                       "workingset_refault", "events_low", "events_high", "events_max",
                       "events_oom", "events_oom_kill")
_PRESSURES = attrgetter("cpu_pressure", "memory_pressure", "io_pressure")


def _comparable(prev: CgroupSample | None, cur: CgroupSample, dt: float) -> bool:
    """Whether deltas between prev and cur mean anything: same cgroup, long enough, monotonic."""
    if prev is None or prev.inode != cur.inode or dt < MIN_RATE_WINDOW:
        return False
    for a, b in zip(_COUNTERS(prev), _COUNTERS(cur), strict=True):
        if a is not None and b is not None and b < a:
            return False
    for pa, pb in zip(_PRESSURES(prev), _PRESSURES(cur), strict=True):
        if pa is not None and pb is not None and pa is not pb:
            if pb.some.total < pa.some.total:
                return False
            if pa.full is not None and pb.full is not None and pb.full.total < pa.full.total:
                return False
    return True


def _at_most(cores: float | None, *ceilings: float | None) -> float | None:
    """Cores used, never above the CPUs the slice may run on nor its quota: a rate above
    them is the counter and our clock read a moment apart (the kernel's counter moves on
    while we read, a synthetic tree's in steps), not CPU time it had."""
    if cores is None:
        return None
    return min([cores, *(c for c in ceilings if c is not None)])


def _delta(a: int | None, b: int | None) -> int | None:
    """b - a, or None when either side is unknown (prev dropped or file absent)."""
    if a is None or b is None:
        return None
    return b - a


def _rate(a: int | None, b: int | None, per: float) -> float | None:
    """(b - a) / per, or None."""
    d = _delta(a, b)
    return None if d is None or per <= 0 else d / per


def _counter_rate(a: int | None, b: int | None, per: float) -> float | None:
    """A rate of a counter that can shrink (io.stat loses a device's line when the device
    goes): None then, as for an unknown side."""
    r = _rate(a, b, per)
    return None if r is None or r < 0 else r


def _psi_rate(a: int | None, b: int, dt: float) -> float | None:
    """Stall share over the interval from PSI `total` (µs), clamped to 0–100 %."""
    if a is None:
        return None
    return min(100.0, max(0.0, (b - a) / (dt * 1e6) * 100))


def _pressure(prev: Pressure | None, cur: Pressure | None, dt: float) -> PressureMetrics | None:
    """PSI metrics of one resource; rates only when prev is usable."""
    if cur is None:
        return None
    some = PsiMetrics(
        cur.some.avg10, _psi_rate(prev.some.total if prev else None, cur.some.total, dt)
    )
    full = None
    if cur.full is not None:
        before = prev.full.total if prev is not None and prev.full is not None else None
        full = PsiMetrics(cur.full.avg10, _psi_rate(before, cur.full.total, dt))
    return PressureMetrics(some, full)
