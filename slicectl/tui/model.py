"""Headless state of the TUI: history, sorting, processes, refresh interval, access checks.

No textual imports here (DESIGN §1): everything in this module is testable without a
terminal, and the screens only format what it returns.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from slicectl.core import defaults
from slicectl.core.cpulist import format_cpulist
from slicectl.core.human import human_size
from slicectl.core.monitor.metrics import MIN_RATE_WINDOW, PressureMetrics, SliceMetrics

HISTORY = 120  # samples kept per slice: two minutes at the default interval
SPARK = "▁▂▃▄▅▆▇█"
_TOP = len(SPARK) - 1
# The interval ladder for `+`/`-`; the floor is the cpu controller's accuracy window
# (Togashi et al.: accounting over windows shorter than ~30 ms reads 0% or 50% instead of 25%).
INTERVALS = (MIN_RATE_WINDOW, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
MAX_PROCESSES = 2000


class SortKey(StrEnum):
    """Overview orderings; `s` cycles through them in this order."""

    CPU = "cpu"
    MEMORY = "memory"
    PRESSURE = "pressure"
    THROTTLED = "throttled"
    NAME = "name"


def clamp_interval(seconds: float) -> tuple[float, str]:
    """The interval to use and, when it had to be raised, a message saying why."""
    if seconds < MIN_RATE_WINDOW:
        return MIN_RATE_WINDOW, (
            f"interval {seconds:g}s is below the cpu controller's {MIN_RATE_WINDOW * 1000:.0f} ms "
            "accuracy window (Togashi et al.): using 0.03s")
    return seconds, ""


def next_interval(current: float, slower: bool) -> float:
    """The next step on the ladder above (slower) or below (faster) `current`."""
    if slower:
        return next((s for s in INTERVALS if s > current + 1e-9), INTERVALS[-1])
    return next((s for s in reversed(INTERVALS) if s < current - 1e-9), INTERVALS[0])


def worst_pressure(m: SliceMetrics) -> float:
    """Highest PSI `some` share of cpu, memory and io (rate over the interval, else avg10)."""
    worst = 0.0
    for p in (m.cpu_pressure, m.memory_pressure, m.io_pressure):
        if p is not None:
            worst = max(worst, p.some.share())
    return worst


def name_order(m: SliceMetrics) -> tuple[str, str]:
    """The key of the NAME ordering (unit name, then cgroup path for equal names)."""
    return (m.unit, m.cgroup)


def sort_metrics(metrics: Iterable[SliceMetrics], key: SortKey,
                 reverse: bool = False) -> list[SliceMetrics]:
    """Busiest first for the numeric keys, alphabetical for NAME; `reverse` flips either."""
    return order_by(sorted(metrics, key=name_order), key, reverse)


def order_by(by_name: list[SliceMetrics], key: SortKey,
             reverse: bool = False) -> list[SliceMetrics]:
    """`sort_metrics` of slices already in NAME order."""
    if key is SortKey.NAME:
        return by_name[::-1] if reverse else by_name
    # sorted() is stable: equal values keep the name order in both directions.
    return sorted(by_name, key=_SORT_VALUE[key], reverse=not reverse)


_SORT_VALUE: dict[SortKey, Callable[[SliceMetrics], float]] = {
    SortKey.CPU: lambda m: m.cpu_cores or 0.0,
    SortKey.MEMORY: lambda m: float(m.memory_current or 0),
    SortKey.PRESSURE: worst_pressure,
    SortKey.THROTTLED: lambda m: m.throttled_percent or 0.0,
}


def _level(v: float | None, scale: float) -> str:
    """One sparkline cell: blank when unknown, else the block of v's share of `scale` (the
    lowest when the scale is unknown, 0)."""
    if v is None:
        return " "
    if scale <= 0:
        return SPARK[0]
    level = int(v / scale * _TOP + 0.5)
    return SPARK[0 if level < 0 else _TOP if level > _TOP else level]


def spark(values: Sequence[float | None], width: int, top: float) -> str:
    """The last `width` values as block characters, a full block at `top` (the slice's limit:
    see `cpu_scale`, `memory_scale`), so a constant value draws as full only at its limit."""
    return "".join([_level(v, top) for v in list(values)[-width:]]).rjust(width)


def cpu_scale(m: SliceMetrics) -> float:
    """The top of a CPU sparkline: the slice's CPU quota in cores, else its allowed CPUs."""
    allowed = float(m.allowed_cpus)
    return min(allowed, m.quota_cores) if m.quota_cores else allowed


def memory_scale(m: SliceMetrics, host_memory: int) -> float:
    """The top of a memory sparkline: memory.max, else memory.high, else the host's RAM."""
    return float(m.memory_max or m.memory_high or host_memory)


PSI_SCALE = 100.0  # pressure is a share of time: its sparkline tops at 100 %


def node_bars(m: SliceMetrics, width: int = 24) -> list[str]:
    """The detail screen's per-node memory of a slice (memory.numa_stat): a bar per node,
    scaled to the slice's memory on all nodes, marked `local` (a node of its CPUs) or
    `outside` (a node it may no longer allocate on); empty without NUMA figures."""
    numa = m.numa
    if numa is None:
        return []
    total = sum(n.total for n in numa.nodes)
    local = "-" if numa.local_percent is None else f"{numa.local_percent:.0f}%"
    outside = "-" if numa.outside_percent is None else f"{numa.outside_percent:.0f}%"
    where = "" if numa.local_nodes is None else f" on node(s) {format_cpulist(numa.local_nodes)}"
    lines = [f"NUMA    local {local}{where}  outside {outside}"
             + ("  (bound)" if numa.bound else "")]
    for n in numa.nodes:
        filled = round(n.total / total * width) if total else 0
        marks = []
        if numa.local_nodes is not None and n.node in numa.local_nodes:
            marks.append("local")
        if m.mems is not None and n.node not in m.mems and n.total:
            marks.append("outside")
        lines.append(f"node {n.node:<2} {'█' * filled}{'░' * (width - filled)} "
                     f"{human_size(n.total):>7}  {' '.join(marks)}".rstrip())
    return lines


@dataclass
class SliceHistory:
    """Recent values of one slice, oldest first; `count` samples appended so far."""

    cpu: deque[float | None]
    memory: deque[float | None]
    psi_cpu: deque[float | None]
    psi_memory: deque[float | None]
    psi_io: deque[float | None]
    count: int = 0
    # (series, width) -> (top, count, text) of the sparkline drawn last
    sparks: dict[tuple[str, int], tuple[float, int, str]] = field(default_factory=dict)

    @classmethod
    def empty(cls) -> SliceHistory:
        def series() -> deque[float | None]:
            return deque(maxlen=HISTORY)

        return cls(series(), series(), series(), series(), series())

    def spark(self, series: str, width: int, top: float) -> str:
        """The sparkline of one series (`cpu`, `memory`, `psi_cpu`, ...) scaled to `top`.

        Drawn incrementally: one sample later, the previous line shifted by one cell plus the
        new value's (a refresh of 100 slices used to redraw 200 lines of 12 cells)."""
        values: deque[float | None] = getattr(self, series)
        key = (series, width)
        last = self.sparks.get(key)
        if last is not None and last[0] == top:
            if last[1] == self.count:
                return last[2]
            if last[1] == self.count - 1 and values:
                text = (last[2] + _level(values[-1], top))[-width:]
                self.sparks[key] = (top, self.count, text)
                return text
        text = spark(values, width, top)
        self.sparks[key] = (top, self.count, text)
        return text


def _some(p: PressureMetrics | None) -> float | None:
    if p is None:
        return None
    return p.some.share()


class History:
    """Per-slice histories keyed by cgroup path; slices that vanish are forgotten."""

    def __init__(self) -> None:
        self.slices: dict[str, SliceHistory] = {}

    def add(self, metrics: Iterable[SliceMetrics]) -> None:
        """Append one sample of every slice."""
        seen = set()
        for m in metrics:
            seen.add(m.cgroup)
            h = self.slices.get(m.cgroup)
            if h is None:
                h = self.slices[m.cgroup] = SliceHistory.empty()
            h.cpu.append(m.cpu_cores)
            h.memory.append(None if m.memory_current is None else float(m.memory_current))
            h.psi_cpu.append(_some(m.cpu_pressure))
            h.psi_memory.append(_some(m.memory_pressure))
            h.psi_io.append(_some(m.io_pressure))
            h.count += 1
        for gone in set(self.slices) - seen:
            del self.slices[gone]

    def of(self, cgroup: str) -> SliceHistory:
        """The history of one slice (empty when unknown)."""
        return self.slices.get(cgroup) or SliceHistory.empty()


@dataclass(frozen=True)
class Process:
    """One process in a slice's subtree."""

    pid: int
    comm: str
    cgroup: str  # relative to the slice


def read_processes(cgroup_root: Path, cgroup: str, proc_root: Path = Path(defaults.PROC),
                   limit: int = MAX_PROCESSES) -> list[Process]:
    """Processes of a cgroup and everything below it: `cgroup.procs` plus `/proc/PID/comm`."""
    top = Path(cgroup_root) / cgroup.lstrip("/")
    found: list[Process] = []
    for folder, dirs, files in os.walk(top):
        dirs.sort()
        if "cgroup.procs" not in files:
            continue
        try:
            pids = Path(folder, "cgroup.procs").read_text().split()
        except OSError:
            continue  # the cgroup went away while we walked
        rel = os.path.relpath(folder, top)
        for pid in pids:
            try:
                comm = (proc_root / pid / "comm").read_text().strip()
            except OSError:
                continue  # exited between the two reads
            found.append(Process(int(pid), comm, "" if rel == "." else rel))
            if len(found) >= limit:
                return sorted(found, key=lambda p: p.pid)
    return sorted(found, key=lambda p: p.pid)


def _bus_socket(address: str | None) -> Path | None:
    """The socket path of a D-Bus address (None: abstract or not a unix path)."""
    address = defaults.system_bus_address(address, os.environ)
    for part in address.split(";")[0].partition(":")[2].split(","):
        key, _, value = part.partition("=")
        if key == "path":
            return Path(value)
    return None


def readonly_reasons(tenants: str | None, cgroup_root: Path, bus_address: str | None,
                     euid: int | None = None, *, needs_root: bool = True) -> list[str]:
    """Why editing is off (empty list: it is on): no TENANTS, not root, no bus, no cgroup v2.
    `needs_root`: False where the unit directory and the bus are the user's own (the demo)."""
    reasons = []
    if tenants is None:
        reasons.append("no TENANTS file given")
    if needs_root and (os.geteuid() if euid is None else euid) != 0:
        reasons.append("not root")
    socket = _bus_socket(bus_address)
    if socket is not None and not socket.exists():
        reasons.append(f"no system bus ({socket} missing)")
    if not (Path(cgroup_root) / "cgroup.controllers").is_file():
        reasons.append(f"no cgroup v2 at {cgroup_root}")
    return reasons
