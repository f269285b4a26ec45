"""cgroup v2 sampler: the only code that reads cgroupfs for monitoring (DESIGN.md §7).

Discovers every `*.slice` below a cgroup root (plus `init.scope`), keeps each cgroup's
interface files open and re-reads them with `os.pread` on every sample: that is about ten
times cheaper than open/read/close, and `sample()` is the hot path of `status`, `top` and
the TUI. Parsing is bytes-level, without regexes, to keep allocations per sample low.
"""

from __future__ import annotations

import errno
import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from slicectl import defaults
from slicectl.cpulist import parse_cpulist
from slicectl.errors import SamplerError

DEFAULT_ROOT = Path(defaults.CGROUP_ROOT)

_READ_SIZE = 65536
# A vanished cgroup's open files fail with ENODEV on kernfs; ENOENT/ESRCH show up in races.
_GONE = frozenset({errno.ENOENT, errno.ENODEV, errno.ESRCH})
# File descriptors left for everything else the process opens (terminal, logs, sockets).
_FD_RESERVE = 256

# Interface files re-read on every sample, in the order `_Cgroup.fds` holds them.
_FILES = (
    "cpu.stat", "cpu.max", "cpu.weight", "cpuset.cpus.effective", "cpuset.mems.effective",
    "memory.current", "memory.low", "memory.min", "memory.high", "memory.max",
    "memory.swap.current", "memory.swap.max", "memory.stat", "memory.events",
    "cpu.pressure", "memory.pressure", "io.pressure", "pids.current",
)  # fmt: skip
_CPUS_SLOT = _FILES.index("cpuset.cpus.effective")
# One more descriptor per cgroup: `cgroup.controllers`, checked at re-discovery only.
FILES_PER_CGROUP = len(_FILES) + 2  # + cgroup.controllers + cgroup.events
# An empty cgroup ("populated 0" in cgroup.events) has no task that could move its counters
# (CPU time, pressure stalls, memory events); it is re-read in full only every Nth refresh
# (staggered across cgroups) or after invalidate(), e.g. once apply changed limits. Each
# pread costs ~20 µs even for a one-number file in the testbed, so this is what keeps a
# refresh of 1,000 mostly idle slices well under systemd-cgtop's cost (BENCHMARKS.md).
IDLE_FULL_EVERY = 10


class PsiLine(NamedTuple):
    """One line of a PSI file: share of time stalled (%) and total stall time (µs)."""

    avg10: float
    avg60: float
    avg300: float
    total: int


class Pressure(NamedTuple):
    """A `*.pressure` file: `some` and (if the kernel reports it) `full`."""

    some: PsiLine
    full: PsiLine | None


@dataclass(frozen=True, slots=True)
class CgroupSample:
    """One cgroup's counters and limits at one instant; None = file absent or "max"."""

    unit: str
    path: str
    inode: int
    usage_usec: int | None
    nr_periods: int | None
    nr_throttled: int | None
    throttled_usec: int | None
    cpu_quota_usec: int | None
    cpu_period_usec: int | None
    cpu_weight: int | None
    cpus: frozenset[int] | None
    mems: frozenset[int] | None
    memory_current: int | None
    memory_low: int | None
    memory_min: int | None
    memory_high: int | None
    memory_max: int | None
    swap_current: int | None
    swap_max: int | None
    anon: int | None
    file: int | None
    active_file: int | None
    inactive_file: int | None
    workingset_refault: int | None
    events_low: int | None
    events_high: int | None
    events_max: int | None
    events_oom: int | None
    events_oom_kill: int | None
    cpu_pressure: Pressure | None
    memory_pressure: Pressure | None
    io_pressure: Pressure | None
    tasks: int | None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """All discovered cgroups at one instant, keyed by path relative to the root."""

    time: float
    cgroups: dict[str, CgroupSample]
    host_cpus: int


def _value(data: bytes | None) -> int | None:
    """A single-value file: "123\\n" -> 123, "max\\n" or absent -> None."""
    if data is None or data[:3] == b"max":
        return None
    return int(data)


def _key(name: str) -> tuple[bytes, bytes]:
    """Search patterns for `name` in a flat-keyed file (first line, later lines)."""
    return (name.encode() + b" ", b"\n" + name.encode() + b" ")


def _keyed(data: bytes, key: tuple[bytes, bytes]) -> int | None:
    """The value of one key in a flat-keyed file such as cpu.stat or memory.stat."""
    first, later = key
    if data.startswith(first):
        i = len(first)
    else:
        i = data.find(later)
        if i < 0:
            return None
        i += len(later)
    j = data.find(b"\n", i)
    return int(data[i:j] if j >= 0 else data[i:])


_USAGE, _PERIODS, _THROTTLED, _THROTTLED_USEC = map(
    _key, ("usage_usec", "nr_periods", "nr_throttled", "throttled_usec")
)
_ANON, _FILE, _ACTIVE_FILE, _INACTIVE_FILE = map(
    _key, ("anon", "file", "active_file", "inactive_file")
)
_REFAULT, _REFAULT_ANON, _REFAULT_FILE = map(
    _key, ("workingset_refault", "workingset_refault_anon", "workingset_refault_file")
)
_EV_LOW, _EV_HIGH, _EV_MAX, _EV_OOM, _EV_OOM_KILL = map(
    _key, ("low", "high", "max", "oom", "oom_kill")
)


def _pressure(data: bytes | None) -> Pressure | None:
    """Parse "some avg10=.. avg60=.. avg300=.. total=..\\nfull ..." (full may be absent)."""
    if data is None:
        return None
    # "some avg10 1.50 avg60 ..." after the replace: values sit at fixed token positions.
    p = data.replace(b"=", b" ").split()
    if len(p) < 9 or p[0] != b"some":
        return None
    new = tuple.__new__  # skips NamedTuple's Python-level __new__ on this hot path
    some = new(PsiLine, (float(p[2]), float(p[4]), float(p[6]), int(p[8])))
    full = None
    if len(p) >= 18 and p[9] == b"full":
        full = new(PsiLine, (float(p[11]), float(p[13]), float(p[15]), int(p[17])))
    return new(Pressure, (some, full))


class _Cgroup:
    """Open files of one discovered cgroup; fds[i] is -1 when _FILES[i] does not exist."""

    __slots__ = (
        "path", "unit", "inode", "fds", "controllers_fd", "controllers", "pinned", "raw", "last",
        "events_fd", "slot",
    )  # fmt: skip

    def __init__(self, path: str, inode: int) -> None:
        self.path = path
        self.unit = path.rpartition("/")[2]
        self.inode = inode
        self.fds: list[int] = []
        self.controllers_fd = -1
        self.controllers = b""
        self.events_fd = -1
        self.slot = 0
        self.pinned = False
        # What the previous read returned, so unchanged files are not parsed again.
        self.raw: list[bytes | None] = []
        self.last: CgroupSample | None = None


class Sampler:
    """Samples the slices (and init.scope) below a cgroup v2 root."""

    def __init__(
        self,
        root: Path = DEFAULT_ROOT,
        rediscover_every: float = 5.0,
        *,
        online_cpus: frozenset[int] | None = None,
    ) -> None:
        self.root = Path(root)
        self.rediscover_every = rediscover_every
        if not (self.root / "cgroup.controllers").is_file():
            what = "does not exist" if not self.root.exists() else "is not a cgroup v2 root"
            raise SamplerError(
                f"{self.root} {what} (no cgroup.controllers)",
                "is cgroup v2 mounted? pass --cgroup-root DIR to point at the unified hierarchy",
            )
        self._root = str(self.root)
        self._cgroups: dict[str, _Cgroup] = {}
        self._children: dict[str, dict[str, int]] = {}  # dir -> {child cgroup: inode}
        self._watched: dict[str, tuple[int, int]] = {}  # dir -> (mtime_ns, nlink)
        self._cpulists: dict[bytes, frozenset[int]] = {}
        self._open_fds = 0
        self._fd_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        self._next_discovery = 0.0
        self._refresh = 0
        self._added = 0
        self._force_full = False
        self.host_cpus = len(online_cpus) if online_cpus else self._root_cpus()
        self._discover()

    def __enter__(self) -> Sampler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def paths(self) -> list[str]:
        """Paths (relative to the root) of the cgroups currently discovered."""
        return sorted(self._cgroups)

    def close(self) -> None:
        """Close every file the sampler holds open."""
        for cg in self._cgroups.values():
            self._close(cg)
        self._cgroups.clear()
        self._children.clear()
        self._watched.clear()

    def sample(self) -> Snapshot:
        """Re-read every discovered cgroup; vanished cgroups are left out, never raised."""
        now = time.monotonic()
        if now >= self._next_discovery:
            self._discover()
        else:
            self._check_watched()
        now = time.monotonic()
        self._refresh += 1
        force, self._force_full = self._force_full, False
        out: dict[str, CgroupSample] = {}
        for cg in list(self._cgroups.values()):
            s = self._read(cg, force)
            if s is None:
                s = self._reopen(cg)
            if s is not None:
                out[cg.path] = s
        return Snapshot(now, out, self.host_cpus)

    # -- reading (hot path) -------------------------------------------------------------

    def invalidate(self) -> None:
        """Read every cgroup in full at the next sample (limits may have changed)."""
        self._force_full = True

    def _read(self, cg: _Cgroup, force: bool = False) -> CgroupSample | None:
        """Read and parse one cgroup; None when it vanished."""
        if (not force and cg.last is not None and cg.events_fd >= 0
                and (self._refresh + cg.slot) % IDLE_FULL_EVERY):
            try:
                state = os.pread(cg.events_fd, 64, 0)
            except OSError as e:
                if e.errno not in _GONE:
                    raise
                self._close(cg)
                return None
            if state.startswith(b"populated 0"):
                return cg.last  # no task inside: nothing but reclaim can have moved
        if not cg.pinned and not self._open(cg, pin=False):
            return None
        pread = os.pread
        try:
            raw = [pread(fd, _READ_SIZE, 0) if fd >= 0 else None for fd in cg.fds]
        except OSError as e:
            if e.errno not in _GONE:
                raise SamplerError(
                    f"cannot read cgroup {cg.path}: {e.strerror}", "run as root?"
                ) from e
            self._close(cg)
            return None
        finally:
            if not cg.pinned:
                self._close(cg)
        last = cg.last
        if last is not None:
            if raw == cg.raw:  # an idle slice: nothing moved, the last sample still holds
                return last
            old = cg.raw
        (cpu_stat, cpu_max, weight, cpus, mems, current, low, min_, high, max_, swap,
         swap_max, mem_stat, events, cpu_p, mem_p, io_p, pids) = raw  # fmt: skip
        if cpu_stat is not None:
            usage = _keyed(cpu_stat, _USAGE)
            periods = _keyed(cpu_stat, _PERIODS)
            throttled = _keyed(cpu_stat, _THROTTLED)
            throttled_usec = _keyed(cpu_stat, _THROTTLED_USEC)
        else:
            usage = periods = throttled = throttled_usec = None
        quota = period = None
        if cpu_max is not None:
            q, _, p = cpu_max.partition(b" ")
            quota = None if q == b"max" else int(q)
            period = int(p) if p else None
        if last is not None and mem_stat == old[12]:
            anon, file, active_file = last.anon, last.file, last.active_file
            inactive_file, refault = last.inactive_file, last.workingset_refault
        elif mem_stat is not None:
            anon = _keyed(mem_stat, _ANON)
            file = _keyed(mem_stat, _FILE)
            active_file = _keyed(mem_stat, _ACTIVE_FILE)
            inactive_file = _keyed(mem_stat, _INACTIVE_FILE)
            refault = _keyed(mem_stat, _REFAULT_ANON)
            if refault is None:  # kernels before 5.9 only have the combined counter
                refault = _keyed(mem_stat, _REFAULT)
            else:
                refault += _keyed(mem_stat, _REFAULT_FILE) or 0
        else:
            anon = file = active_file = inactive_file = refault = None
        if last is not None and events == old[13]:
            ev_low, ev_high, ev_max = last.events_low, last.events_high, last.events_max
            ev_oom, ev_oom_kill = last.events_oom, last.events_oom_kill
        elif events is not None:
            ev_low = _keyed(events, _EV_LOW)
            ev_high = _keyed(events, _EV_HIGH)
            ev_max = _keyed(events, _EV_MAX)
            ev_oom = _keyed(events, _EV_OOM)
            ev_oom_kill = _keyed(events, _EV_OOM_KILL)
        else:
            ev_low = ev_high = ev_max = ev_oom = ev_oom_kill = None
        if last is not None:
            cpu_pr = last.cpu_pressure if cpu_p == old[14] else _pressure(cpu_p)
            mem_pr = last.memory_pressure if mem_p == old[15] else _pressure(mem_p)
            io_pr = last.io_pressure if io_p == old[16] else _pressure(io_p)
        else:
            cpu_pr, mem_pr, io_pr = _pressure(cpu_p), _pressure(mem_p), _pressure(io_p)
        cg.raw = raw
        cg.last = sample = CgroupSample(
            cg.unit, cg.path, cg.inode,
            usage, periods, throttled, throttled_usec, quota, period, _value(weight),
            self._cpulist(cpus), self._cpulist(mems),
            _value(current), _value(low), _value(min_), _value(high), _value(max_),
            _value(swap), _value(swap_max),
            anon, file, active_file, inactive_file, refault,
            ev_low, ev_high, ev_max, ev_oom, ev_oom_kill,
            cpu_pr, mem_pr, io_pr, _value(pids),
        )  # fmt: skip
        return sample

    def _cpulist(self, data: bytes | None) -> frozenset[int] | None:
        """Parsed cpulist, cached: the same few lists repeat across cgroups and samples."""
        if data is None:
            return None
        cpus = self._cpulists.get(data)
        if cpus is None:
            if len(self._cpulists) > 4096:
                self._cpulists.clear()
            cpus = self._cpulists[data] = parse_cpulist(data.decode())
        return cpus or None  # an empty cpuset.cpus means "inherit the parent's"

    # -- opening and closing ------------------------------------------------------------

    def _open(self, cg: _Cgroup, pin: bool) -> bool:
        """Open cg's files (missing ones -> -1); False when the cgroup itself is gone."""
        try:
            dfd = os.open(os.path.join(self._root, cg.path), os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return False
        fds: list[int] = []
        try:
            for name in _FILES:
                fds.append(_open_at(name, dfd))
            if fds[_CPUS_SLOT] < 0:  # no effective list on old kernels: use the configured one
                fds[_CPUS_SLOT] = _open_at("cpuset.cpus", dfd)
            if pin:
                cg.events_fd = _open_at("cgroup.events", dfd)
                cg.controllers_fd = _open_at("cgroup.controllers", dfd)
                if cg.controllers_fd >= 0:
                    cg.controllers = os.pread(cg.controllers_fd, 4096, 0)
        except OSError as e:
            for fd in fds:
                if fd >= 0:
                    os.close(fd)
            if e.errno != errno.EMFILE:
                return False
            if not pin:
                raise SamplerError(
                    f"out of file descriptors reading cgroup {cg.path}", "raise `ulimit -n`"
                ) from e
            cg.fds = []  # others hold the descriptors after all: read this one unpinned
            return True
        finally:
            os.close(dfd)
        cg.fds = fds
        cg.pinned = pin
        if pin:
            self._open_fds += FILES_PER_CGROUP
        return True

    def _close(self, cg: _Cgroup) -> None:
        """Close cg's files; harmless when already closed."""
        for fd in cg.fds:
            if fd >= 0:
                os.close(fd)
        if cg.controllers_fd >= 0:
            os.close(cg.controllers_fd)
        if cg.events_fd >= 0:
            os.close(cg.events_fd)
        cg.events_fd = -1
        if cg.pinned:
            self._open_fds -= FILES_PER_CGROUP
        cg.fds = []
        cg.controllers_fd = -1
        cg.pinned = False

    def _add(self, path: str, inode: int) -> _Cgroup:
        """Register a newly found cgroup, pinning its files while descriptors allow."""
        cg = _Cgroup(path, inode)
        cg.slot = self._added  # staggers the full re-reads of idle cgroups
        self._added += 1
        # Beyond the descriptor budget a cgroup is still sampled, with open/read/close.
        if self._open_fds + FILES_PER_CGROUP > self._fd_limit - _FD_RESERVE or self._open(
            cg, pin=True
        ):
            self._cgroups[path] = cg
        return cg

    def _reopen(self, cg: _Cgroup) -> CgroupSample | None:
        """A cgroup vanished mid-read: pick up a same-named successor, else drop it."""
        self._close(cg)
        self._cgroups.pop(cg.path, None)
        try:
            inode = os.stat(os.path.join(self._root, cg.path)).st_ino
        except OSError:
            self._next_discovery = 0.0  # its parent changed: look again next sample
            return None
        new = self._add(cg.path, inode)
        if new.path not in self._cgroups:
            return None
        s = self._read(new)
        if s is None:
            self._close(self._cgroups.pop(new.path))
        return s

    def _raise_nofile(self, cgroups: int) -> None:
        """Raise the soft RLIMIT_NOFILE towards the hard limit so every cgroup stays pinned."""
        want = cgroups * FILES_PER_CGROUP + _FD_RESERVE
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if want > soft:
            new = want if hard == resource.RLIM_INFINITY else min(want, hard)
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
                soft = new
            except (ValueError, OSError):
                pass
        self._fd_limit = soft

    # -- discovery ----------------------------------------------------------------------

    def _root_cpus(self) -> int:
        """Host CPU count: the root's effective cpuset, else the CPUs Python sees."""
        try:
            text = (self.root / "cpuset.cpus.effective").read_text()
            return len(parse_cpulist(text)) or os.cpu_count() or 1
        except (OSError, ValueError):
            return os.cpu_count() or 1

    def _scan(self, path: str) -> dict[str, int]:
        """Child cgroups of `path` worth sampling -> inode; slices, and init.scope at the top."""
        found: dict[str, int] = {}
        prefix = path + "/" if path else ""
        try:
            with os.scandir(os.path.join(self._root, path)) as it:
                for entry in it:
                    name = entry.name
                    if (name.endswith(".slice") or (not path and name == "init.scope")) and (
                        entry.is_dir(follow_symlinks=False)
                    ):
                        found[prefix + name] = entry.stat(follow_symlinks=False).st_ino
        except FileNotFoundError:
            pass
        return found

    def _collect(self, path: str, found: dict[str, int]) -> None:
        """Record the cgroups below `path` (and which directories to watch) into `found`."""
        children = self._scan(path)
        self._children[path] = children
        if children or not path:
            self._watch(path)
        for child, inode in children.items():
            found[child] = inode
            if child.endswith(".slice"):
                self._collect(child, found)

    def _same_controllers(self, cg: _Cgroup) -> bool:
        """Whether cg's enabled controllers (hence its set of files) are unchanged."""
        if not cg.pinned or cg.controllers_fd < 0:
            return cg.pinned
        try:
            return os.pread(cg.controllers_fd, 4096, 0) == cg.controllers
        except OSError:
            return False

    def _discover(self) -> None:
        """Full re-discovery: walk the whole tree, keep files of unchanged cgroups open."""
        old = self._cgroups
        self._cgroups, self._children, self._watched = {}, {}, {}
        found: dict[str, int] = {}
        self._collect("", found)
        self._raise_nofile(len(found))
        for path, inode in found.items():
            cg = old.pop(path, None)
            if cg is not None and cg.inode == inode and self._same_controllers(cg):
                self._cgroups[path] = cg
            else:
                if cg is not None:
                    self._close(cg)
                self._add(path, inode)
        for cg in old.values():
            self._close(cg)
        self._next_discovery = time.monotonic() + self.rediscover_every

    def _watch(self, path: str) -> None:
        """Remember a directory's mtime and link count (kernfs: 2 + number of children)."""
        try:
            st = os.stat(os.path.join(self._root, path))
        except OSError:
            return
        self._watched[path] = (st.st_mtime_ns, st.st_nlink)

    def _check_watched(self) -> None:
        """Re-scan only the directories (root, parent slices) whose children changed."""
        for path, seen in list(self._watched.items()):
            try:
                st = os.stat(os.path.join(self._root, path))
            except OSError:
                if not path:
                    raise SamplerError(
                        f"cgroup root {self._root} disappeared", "pass --cgroup-root DIR"
                    ) from None
                continue  # its parent's re-scan drops it
            if (st.st_mtime_ns, st.st_nlink) != seen and path in self._watched:
                self._rescan(path)

    def _rescan(self, path: str) -> None:
        """One directory changed: drop vanished or recreated children, walk new ones."""
        known = self._children.get(path, {})
        now = self._scan(path)
        for child, inode in known.items():
            if now.get(child) != inode:
                self._drop_subtree(child)
        self._children[path] = now
        self._watch(path)
        found: dict[str, int] = {}
        for child, inode in now.items():
            if known.get(child) != inode:
                found[child] = inode
                if child.endswith(".slice"):
                    self._collect(child, found)
        if found:
            self._raise_nofile(len(self._cgroups) + len(found))
        for child, inode in found.items():
            self._add(child, inode)

    def _drop_subtree(self, path: str) -> None:
        """Forget a cgroup and everything below it, closing their files."""
        below = path + "/"
        for p in [p for p in self._cgroups if p == path or p.startswith(below)]:
            self._close(self._cgroups.pop(p))
        for table in (self._children, self._watched):
            for p in [p for p in table if p == path or p.startswith(below)]:
                del table[p]


def _open_at(name: str, dfd: int) -> int:
    """Open `name` read-only relative to a directory fd; -1 if the controller is off."""
    try:
        return os.open(name, os.O_RDONLY | os.O_CLOEXEC, dir_fd=dfd)
    except (FileNotFoundError, PermissionError):
        return -1
