"""One writer per directory: flock(2) on the directory itself, made on demand, undone on failure.

Two `slicectl generate` runs into one `--out DIR` (or a generate and an apply into
/etc/systemd/system) would otherwise interleave: each reads the manifest, plans from it and
writes, and the manifest ends up listing one run's files while the other's remain. The lock is
taken on an O_DIRECTORY descriptor of DIR, so no lock file is left in DIR (nor anywhere else);
`flock DIR COMMAND` (util-linux) takes the same lock, so scripts can hold slicectl off too.
A second run waits for the first, bounded, and then names the holder (from /proc/locks).

The directory and any missing parents are made here, before the lock, and removed again (if
still empty) before the lock is released, so a failed run leaves no folder behind and a run
waiting on the lock never writes into a folder that was removed under it: after taking the lock
it checks that DIR is still the folder it locked, and starts over if not.
"""

from __future__ import annotations

import fcntl
import os
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_TIMEOUT = 60.0  # seconds a run waits for another one writing the same directory
_POLL = 0.05
_ATTEMPTS = 20  # times to start over when DIR was removed or replaced while we waited


class LockTimeout(Exception):
    """The directory stayed locked by someone else for the whole wait."""

    def __init__(self, holder: str) -> None:
        super().__init__(holder)
        self.holder = holder


def make_dirs(path: Path) -> list[Path]:
    """Make `path` and its missing parents; returns the folders made, outermost first.

    A folder another process makes at the same moment counts as there already (not ours to
    remove). Raises NotADirectoryError when `path` or a parent is something else.
    """
    missing: list[Path] = []
    folder = path
    while True:
        try:
            st = os.stat(folder)  # follows symlinks: `--out` through a link is the user's choice
        except (FileNotFoundError, NotADirectoryError):  # the latter: a parent is a file
            missing.append(folder)
            if folder.parent == folder:
                break
            folder = folder.parent
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise NotADirectoryError(20, os.strerror(20), str(folder))
        break
    made: list[Path] = []
    for d in reversed(missing):
        try:
            os.mkdir(d)
        except FileExistsError:
            if not os.path.isdir(d):
                raise
            continue
        made.append(d)
    return made


def remove_empty(folders: list[Path]) -> None:
    """Remove the folders (outermost first in the list) that are empty, innermost first."""
    for d in reversed(folders):
        try:
            d.rmdir()
        except OSError:
            return  # not empty (or gone): its parents are not empty either


def holder_of(fd: int) -> str:
    """Who holds a flock on the file open as `fd`: "pid N (COMMAND LINE)", from /proc/locks."""
    st = os.fstat(fd)
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            rows = [line.split() for line in f]
    except OSError:
        return "another process"
    for row in rows:
        # "1: FLOCK  ADVISORY  WRITE 1234 fe:00:5678 0 EOF"; waiters have "->" after the number
        if len(row) >= 6 and row[1] == "FLOCK" and row[5] == key and row[4] not in ("0", "-1"):
            return f"pid {row[4]}{_command_of(row[4])}"
    return "another process"


def _command_of(pid: str) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    words = raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "backslashreplace")
    words = "".join(ch if ch.isprintable() else "?" for ch in words)
    return f" ({words[:100]}{'…' if len(words) > 100 else ''})" if words else ""


def _acquire(fd: int, timeout: float, on_wait: Callable[[str], None] | None) -> None:
    """flock(fd) exclusively, polling until `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    told = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        left = deadline - time.monotonic()
        if left <= 0:
            raise LockTimeout(holder_of(fd))
        if on_wait is not None and not told:
            on_wait(holder_of(fd))
            told = True
        time.sleep(min(_POLL, left))


def _still_there(fd: int, path: Path) -> bool:
    """True if `path` still names the folder open as `fd`."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


@contextmanager
def locked_dir(path: Path, timeout: float = LOCK_TIMEOUT,
               on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold an exclusive lock on folder `path` (made if missing) for the `with` block.

    Folders made here are removed again if they are empty when the block ends (a failed run
    leaves nothing). Raises LockTimeout, or OSError when `path` cannot be made or opened.
    `on_wait(holder)` is called once if the lock is busy.
    """
    for _ in range(_ATTEMPTS):
        made = make_dirs(path)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            continue  # removed by a run that failed, between our mkdir and open
        try:
            _acquire(fd, timeout, on_wait)
        except BaseException:
            os.close(fd)  # the folder is in the holder's hands now: left as it is
            raise
        if _still_there(fd, path):
            break
        os.close(fd)  # the run we waited for failed and removed the folder: make it again
    else:
        raise FileNotFoundError(2, "removed again and again while waiting", str(path))
    try:
        yield
    finally:
        try:
            remove_empty(made)  # while still holding the lock (see the module docstring)
        finally:
            os.close(fd)
