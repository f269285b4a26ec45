"""cgroup v2 sampler: the only code that reads cgroupfs for monitoring (DESIGN.md §7).

Discovers every `*.slice` below a cgroup root (plus `init.scope`), keeps each cgroup's
interface files open and re-reads them with `os.pread` on every sample, far cheaper than
open/read/close (DESIGN.md §7, docs/design-notes.md): `sample()` is the hot path of `status`,
`top`, the TUI and `record`.

What is read, and how each file parses into a `samples.CgroupSample`, is declared once in
`cgroupfiles.FILES`; opening, reading, the unchanged-file shortcut and building a sample all
walk it. A file that holds garbage, or that cannot be read, reads as unknown (None) and is
named in the sample's `unreadable`, never as an error.

Why this module runs past 400 lines: discovery (watching directories), the descriptor budget
(pinning, raising RLIMIT_NOFILE, falling back to open/read/close) and the reading all act on
the same per-cgroup records (`_Cgroup`) and must agree on them; what stands alone, the file
table and its parsers, is in `cgroupfiles`.
"""

from __future__ import annotations

import errno
import os
import resource
import stat
import threading
import time
from pathlib import Path

from slicectl.core import defaults
from slicectl.core.errors import InotifyUnavailable, SamplerError
from slicectl.core.monitor.cgroupfiles import (
    FILES,
    Values,
    build_sample,
    parse_changed,
    parse_cpulist_file,
)
from slicectl.core.monitor.samples import CgroupSample, Snapshot
from slicectl.host.cgroup.inotify import Modified

DEFAULT_ROOT = Path(defaults.CGROUP_ROOT)

_READ_SIZE = 65536
# Every file is opened non-blocking and read with pread: a FIFO or a device where a cgroup
# file should be (a broken or hostile tree) would block a plain open or read for ever; opened
# so, it fails at once (ESPIPE, EAGAIN) and counts as unreadable, as garbage does.
_READ_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK
# A vanished cgroup's open files fail with ENODEV on kernfs; ENOENT/ESRCH show up in races.
_GONE = frozenset({errno.ENOENT, errno.ENODEV, errno.ESRCH})
# Names of the cgroups _scan keeps: slices (and init.scope at the top), with `units` the
# services and scopes in slices too.
_TOP_SUFFIXES = (".slice", "init.scope")
_UNIT_SUFFIXES = (".slice", ".service", ".scope")
# File descriptors left for everything else the process opens (terminal, logs, sockets).
_FD_RESERVE = 256
# An empty cgroup ("populated 0" in cgroup.events) has no task that could move its counters
# (CPU time, pressure stalls, memory events); it is re-read in full only every Nth refresh
# (staggered across cgroups) or after invalidate(), e.g. once apply changed limits. Each
# pread costs the same few syscalls even for a one-number file, so this is what keeps a
# refresh of 1,000 mostly idle slices cheap (BENCHMARKS.md, sampler.1000).
IDLE_FULL_EVERY = 10
# The periodic full walk (every `rediscover_every`) finds what the watched directories cannot
# show: a cgroup created in a slice that held none to sample. While the root's cgroup.stat
# counts as many cgroups as at the last walk, nothing was created, and the walk waits, up to
# this many periods (a status refresh or a Prometheus scrape then costs no walk of the tree).
QUIET_WALK_EVERY = 12
# The kernel refuses a path of PATH_MAX bytes or more (ENAMETOOLONG); a cgroup whose
# directory path leaves no room for its longest interface file name is not sampled, nor
# anything below it, and `too_deep` says so (a tree that deep is a runaway, not a tenant).
PATH_MAX = 4096
# A sampler takes at most 1/WATCH_SHARE of the user's inotify watches (see watch_budget).
WATCH_SHARE = 16
_FILE_ROOM = 64  # "/" + the longest interface file name ("memory.zswap.writeback") + NUL
# Descriptors one pinned cgroup may hold: its files, cgroup.controllers and cgroup.events.
FILES_PER_CGROUP = len(FILES) + 2


class _Vanished(Exception):
    """The cgroup's directory is gone (its open files answer ENODEV). Not an error, and it
    never leaves this module (the sampler drops the cgroup), so it is not in
    slicectl.core.errors."""


class _Cgroup:
    """Open files of one discovered cgroup; fds[i] is -1 when FILES[i] is not open."""

    __slots__ = (
        "path", "unit", "inode", "fds", "controllers_fd", "controllers", "pinned", "raw",
        "parsed", "last", "events_fd", "slot", "wd", "idle",
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
        # The inotify watch on its cgroup.events (-1: none), and whether that file said
        # "populated 0" when last read and has not been written since (see _still_empty).
        self.wd = -1
        self.idle = False
        # What the previous read returned and how it parsed, so unchanged files are not
        # parsed again, and unchanged cgroups hand back the same sample object.
        self.raw: list[bytes | None] = []
        self.parsed: list[Values] = []
        self.last: CgroupSample | None = None


class Sampler:
    """Samples the slices (and init.scope) below a cgroup v2 root."""

    def __init__(
        self,
        root: Path = DEFAULT_ROOT,
        rediscover_every: float = 5.0,
        *,
        online_cpus: frozenset[int] | None = None,
        numa: bool | None = None,
        units: bool = False,
        skip: frozenset[str] = frozenset(),
        slices: frozenset[str] | None = None,
    ) -> None:
        """`numa`: read memory.numa_stat; by default when the root cgroup's
        cpuset.mems.effective lists more than one memory node (elsewhere it cannot matter).
        `units`: also sample the services and scopes inside slices (the TUI's tree), not
        only the slices. `skip`: names of `FILES` not to read (their fields stay None) for a
        reader that shows none of their figures. `slices`: sample only these slice units
        (the balancer's elastic tenants), walking only the slices that hold them
        (`a-b.slice` is in `a.slice`, as systemd nests them), not the whole tree."""
        self.root = Path(root)
        self.rediscover_every = rediscover_every
        self.units = units
        self.skip = skip
        self.slices = slices
        # The slices above the wanted ones (walked through), and those with the wanted ones.
        self._above = None if slices is None else frozenset(
            "-".join(parts[:i]) + ".slice"
            for name in slices for parts in [name.removesuffix(".slice").split("-")]
            for i in range(1, len(parts)))
        self._walk = None if slices is None or self._above is None else slices | self._above
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
        self._open_fds = 0
        self._fd_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        self._next_discovery = 0.0
        self._refresh = 0
        self._added = 0
        self._force_full = False
        # The TUI samples in a worker thread and closes the sampler from the main thread on
        # exit: close() waits for a sample in flight, and a closed sampler reads nothing
        # (it would otherwise read, or reopen, descriptors closed under it).
        self._lock = threading.Lock()
        self._closed = False
        # cgroups left out for their path length -> that length in bytes (see PATH_MAX)
        self.too_deep: dict[str, int] = {}
        cpus = online_cpus or self._root_list("cpuset.cpus.effective")
        self.host_cpus = len(cpus) if cpus else os.cpu_count() or 1
        self.host_mems = self._root_list("cpuset.mems.effective")
        self.numa = numa if numa is not None else len(self.host_mems or ()) > 1
        try:
            self._stat_fd: int | None = os.open(self.root / "cgroup.stat", _READ_FLAGS)
        except OSError:
            self._stat_fd = None
        self._walked: bytes | None = None
        self._next_full_walk = 0.0
        # Writes to the pinned cgroups' cgroup.events (a task came or went): an empty
        # cgroup whose file was not written is not read at all (see _still_empty).
        try:
            self._events: Modified | None = Modified()
        except InotifyUnavailable:
            self._events = None
        self._by_wd: dict[int, _Cgroup] = {}
        self._watch_budget = watch_budget()
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
        """Close every file the sampler holds open (after the sample in flight, if any)."""
        with self._lock:
            self._closed = True
            for cg in self._cgroups.values():
                self._close(cg)
            if self._stat_fd is not None:
                os.close(self._stat_fd)
                self._stat_fd = None
            if self._events is not None:
                self._events.close()
            self._cgroups.clear()
            self._children.clear()
            self._watched.clear()

    def sample(self) -> Snapshot:
        """Re-read every discovered cgroup; vanished cgroups are left out, never raised.
        Raises SamplerError once the sampler is closed."""
        with self._lock:
            if self._closed:
                raise SamplerError("the cgroup sampler is closed", "")
            return self._sample()

    def _sample(self) -> Snapshot:
        now = time.monotonic()
        if now >= self._next_discovery and not self._quiet(now):
            self._discover()
        else:
            self._check_watched()
        self._stir()
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
        return Snapshot(now, out, self.host_cpus, self.host_mems)

    def invalidate(self) -> None:
        """Read every cgroup in full at the next sample (limits may have changed)."""
        self._force_full = True

    # -- reading (hot path) -------------------------------------------------------------

    def _read(self, cg: _Cgroup, force: bool = False) -> CgroupSample | None:
        """Read and parse one cgroup; None when it vanished."""
        try:
            if not force and self._still_empty(cg):
                return cg.last
            raw, failed = self._read_files(cg)
        except _Vanished:
            self._close(cg)
            return None
        if cg.last is not None and raw == cg.raw and not failed:
            return cg.last  # an idle slice: nothing moved, the last sample still holds
        parsed = parse_changed(raw, cg.raw, cg.parsed)
        for i in failed:  # its values are unknown and named unreadable, as garbage is
            parsed[i] = FILES[i].garbage
        cg.raw, cg.parsed = raw, parsed
        cg.last = build_sample(cg.unit, cg.path, cg.inode, parsed)
        return cg.last

    def _still_empty(self, cg: _Cgroup) -> bool:
        """Whether an empty cgroup can be handed back as last sampled (not its turn for a
        full read; see IDLE_FULL_EVERY); raises _Vanished."""
        if cg.last is None or cg.events_fd < 0 or not (self._refresh + cg.slot) % IDLE_FULL_EVERY:
            return False
        if cg.last.tasks:  # it had tasks at its last read: read it in full without asking
            return False
        if cg.idle and cg.wd >= 0:
            return True  # "populated 0" when last asked, and cgroup.events not written since
        try:
            state = os.pread(cg.events_fd, 64, 0)
        except OSError as e:
            cg.idle = False
            if e.errno not in _GONE:
                return False  # unreadable: read the cgroup in full, which says what failed
            raise _Vanished from e
        # No task (pids.current may say 0 of a populated cgroup, where the pids controller is
        # off): nothing but reclaim can move.
        cg.idle = state.startswith(b"populated 0")
        return cg.idle

    def _read_files(self, cg: _Cgroup) -> tuple[list[bytes | None], list[int]]:
        """The contents of every file of cg, None where it is not open or could not be read,
        and the positions of those that could not be read; raises _Vanished."""
        if not cg.pinned and not self._open(cg, pin=False):
            raise _Vanished
        pread = os.pread
        try:
            return [pread(fd, _READ_SIZE, 0) if fd >= 0 else None for fd in cg.fds], []
        except OSError as e:
            if e.errno in _GONE:
                raise _Vanished from e
            return self._read_each(cg)
        finally:
            if not cg.pinned:
                self._close(cg)

    @staticmethod
    def _read_each(cg: _Cgroup) -> tuple[list[bytes | None], list[int]]:
        """As `_read_files`, one file at a time: one file that fails to read (EISDIR, EIO,
        EACCES) costs only its own values, never the cgroup's or the other cgroups'."""
        raw: list[bytes | None] = []
        failed = []
        for i, fd in enumerate(cg.fds):
            try:
                raw.append(os.pread(fd, _READ_SIZE, 0) if fd >= 0 else None)
            except OSError as e:
                if e.errno in _GONE:
                    raise _Vanished from e
                raw.append(None)
                failed.append(i)
        return raw, failed

    # -- opening and closing ------------------------------------------------------------

    def _open(self, cg: _Cgroup, pin: bool) -> bool:
        """Open cg's files (missing ones -> -1); False when the cgroup itself is gone."""
        try:
            dfd = os.open(os.path.join(self._root, cg.path), os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return False
        fds: list[int] = []
        try:
            self._open_files(dfd, fds)
            if pin:
                cg.events_fd = _open_at("cgroup.events", dfd)
                cg.controllers_fd = _open_at("cgroup.controllers", dfd)
                if cg.controllers_fd >= 0:
                    cg.controllers = _pread_or_empty(cg.controllers_fd)
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
            if (cg.events_fd >= 0 and self._events is not None
                    and len(self._by_wd) < self._watch_budget):
                # watched before its first read: no write to it can go unseen
                cg.wd = self._events.add(os.path.join(self._root, cg.path, "cgroup.events"))
                if cg.wd >= 0:
                    self._by_wd[cg.wd] = cg
        return True

    def _open_files(self, dfd: int, fds: list[int]) -> None:
        """Append a descriptor per `FILES` entry to fds: -1 where absent or not wanted."""
        for spec in FILES:
            wanted = (self.numa or not spec.numa) and spec.name not in self.skip
            fd = _open_at(spec.name, dfd) if wanted else -1
            if fd < 0 and wanted and spec.fallback:
                fd = _open_at(spec.fallback, dfd)
            fds.append(fd)

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
        if cg.wd >= 0:
            if self._by_wd.get(cg.wd) is cg:
                del self._by_wd[cg.wd]
                if self._events is not None:
                    self._events.remove(cg.wd)
            cg.wd = -1
        cg.idle = False
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

    def _stir(self) -> None:
        """The cgroups whose cgroup.events was written since the last sample (all of them
        when the kernel lost events) are no longer known to be idle: each asks its file."""
        if self._events is None:
            return
        changed = self._events.changed()
        if changed is None:
            for cg in self._cgroups.values():
                cg.idle = False
            return
        for wd in changed:
            written = self._by_wd.get(wd)
            if written is not None:
                written.idle = False

    def _root_list(self, name: str) -> frozenset[int] | None:
        """A cpulist file of the root cgroup (its CPUs or memory nodes); None if unreadable."""
        try:
            fd = os.open(self.root / name, _READ_FLAGS)
            try:
                return parse_cpulist_file(os.pread(fd, 4096, 0))
            finally:
                os.close(fd)
        except (OSError, ValueError):
            return None

    def _scan(self, path: str) -> dict[str, int]:
        """Child cgroups of `path` worth sampling -> inode; slices, and init.scope at the top
        (with `units`, the services and scopes in slices too)."""
        found: dict[str, int] = {}
        prefix = path + "/" if path else ""
        folder = os.path.join(self._root, path)
        try:
            names = os.listdir(folder)
        except FileNotFoundError:
            return found
        except OSError as e:
            if e.errno != errno.ENAMETOOLONG:
                raise
            self.too_deep.setdefault(path, len(os.fsencode(folder)))
            return found
        room = PATH_MAX - _FILE_ROOM - len(os.fsencode(folder)) - 1
        # A cgroup directory lists dozens of interface files: one suffix test each (listdir
        # makes no DirEntry per name), the exact test and a stat only for what passes it.
        suffixes = _TOP_SUFFIXES if not path else _UNIT_SUFFIXES if self.units else (".slice",)
        walk = self._walk
        for name in [n for n in names if n.endswith(suffixes)
                     and (walk is None or n in walk)]:
            if not path and not name.endswith(".slice") and name != "init.scope":
                continue
            if len(os.fsencode(name)) > room:
                self.too_deep.setdefault(prefix + name, PATH_MAX - _FILE_ROOM - room
                                         + len(os.fsencode(name)))
                continue
            try:
                st = os.lstat(os.path.join(folder, name))
            except FileNotFoundError:
                continue  # gone since the listing: its parent's next look drops it
            if stat.S_ISDIR(st.st_mode):
                found[prefix + name] = st.st_ino
        return found

    def _collect(self, path: str, found: dict[str, int]) -> None:
        """Record the cgroups below `path` (and which directories to watch) into `found`."""
        children = self._scan(path)
        self._children[path] = children
        if children or not path:
            self._watch(path)
        for child, inode in children.items():
            if self._wanted(child):
                found[child] = inode
            if self._holds_more(child):
                self._collect(child, found)

    def _wanted(self, path: str) -> bool:
        """Whether a cgroup found by the walk is sampled (not only walked through)."""
        return self.slices is None or path.rpartition("/")[2] in self.slices

    def _holds_more(self, path: str) -> bool:
        """Whether the walk goes on below a cgroup it found: below every slice, or with
        `slices`, below those that hold a wanted one."""
        if self._above is None:
            return path.endswith(".slice")
        return path.rpartition("/")[2] in self._above

    def _same_controllers(self, cg: _Cgroup) -> bool:
        """Whether cg's enabled controllers (hence its set of files) are unchanged."""
        if not cg.pinned or cg.controllers_fd < 0:
            return cg.pinned
        try:
            return os.pread(cg.controllers_fd, 4096, 0) == cg.controllers
        except OSError:
            return False

    def _descendants(self) -> bytes | None:
        """The root's `nr_descendants` line of cgroup.stat (every live cgroup below it, of
        every kind), or None where it cannot be read (then every due walk is made)."""
        if self._stat_fd is None:
            return None
        try:
            return os.pread(self._stat_fd, 256, 0).partition(b"\n")[0] or None
        except OSError:
            return None

    def _quiet(self, now: float) -> bool:
        """Whether the walk that is due can wait: the tree holds as many cgroups as at the
        last walk, so nothing was created where the watched directories cannot tell (a
        slice holding none yet). A walk still comes every QUIET_WALK_EVERY × rediscover_every
        (a cgroup removed and another created between two looks leave the count as it was)."""
        if now >= self._next_full_walk:
            return False
        count = self._descendants()
        if count is None or count != self._walked:
            return False
        self._next_discovery = now + self.rediscover_every
        return True

    def _discover(self) -> None:
        """Full re-discovery: walk the whole tree, keep files of unchanged cgroups open."""
        # Counted before the walk: a cgroup made while it runs changes the count, so the
        # next due walk is made.
        self._walked = self._descendants()
        self._next_full_walk = time.monotonic() + self.rediscover_every * QUIET_WALK_EVERY
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
                new = self._add(path, inode)
                if cg is not None and cg.inode == inode:
                    # the same cgroup, unpinned or its controllers changed: its last read
                    # still stands for the files that read the same, so an unchanged cgroup
                    # keeps its sample object (and the exporter its rows and text)
                    new.raw, new.parsed, new.last = cg.raw, cg.parsed, cg.last
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
                if self._wanted(child):
                    found[child] = inode
                if self._holds_more(child):
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


def watch_budget(proc_sys: Path = Path("/proc/sys/fs/inotify")) -> int:
    """How many cgroup.events files one sampler may watch: a sixteenth of the user's inotify
    watches (max_user_watches), which root shares with systemd, whose own watch on every
    unit's cgroup.events tells it that a unit's cgroup emptied. The cgroups past it are asked
    at every refresh instead."""
    try:
        return int((proc_sys / "max_user_watches").read_text()) // WATCH_SHARE
    except (OSError, ValueError):
        return 8192 // WATCH_SHARE  # the kernel's smallest default


def too_deep_warning(root: Path, too_deep: dict[str, int]) -> str:
    """What status, top and record print about cgroups left out for their path length."""
    path, length = min(too_deep.items(), key=lambda item: item[0].count("/"))
    first = path.split("/", 1)[0]
    more = f" (and {len(too_deep) - 1} more)" if len(too_deep) > 1 else ""
    return (f"{root}/{first}/...: a cgroup {path.count('/') + 1} levels down has a path of "
            f"{length} bytes{more}, which leaves its files no room within the kernel's path "
            f"limit (PATH_MAX {PATH_MAX}): it and everything below it are not shown\n"
            f"  hint: look at what keeps nesting cgroups below {root}/{first} "
            "(`systemd-cgls` shows the tree); the rest of the tree is sampled as usual")


def _open_at(name: str, dfd: int) -> int:
    """Open `name` read-only relative to a directory fd; -1 if the controller is off."""
    try:
        return os.open(name, _READ_FLAGS, dir_fd=dfd)
    except (FileNotFoundError, PermissionError):
        return -1


def _pread_or_empty(fd: int) -> bytes:
    """A small file's contents, empty where it cannot be read (a FIFO: ESPIPE)."""
    try:
        return os.pread(fd, 4096, 0)
    except OSError:
        return b""
