"""One writer per unit directory: flock(2) on a lock file of that directory, in a folder only
this user can write (/run/slicectl/locks for root), taken before the directory is made.

Two `slicectl generate` runs into one `--out DIR` (or a generate and an apply into
/etc/systemd/system, or an apply and a balancer move) would otherwise interleave: each reads
the manifest, plans from it and writes, and the manifest ends up listing one run's files while
the other's remain. A flock on DIR itself, which any user may open, would let anyone hold
every apply and every balancer move off; so the lock is a file no other user can open:

- the folder: `$SLICECTL_LOCK_DIR` when set (tests), else /run/slicectl/locks for root, else
  `$XDG_RUNTIME_DIR/slicectl/locks` or, without one, `slicectl-UID-locks` in the temporary
  folder. It is made 0700 when missing; one that is a link, is not owned by this user or is
  writable by others is refused, and so is a lock file that is not this user's own regular
  file, readable or writable by no one else (anyone who can open it can flock it);
- the file: DIR's real path escaped as `systemd-escape --path` does, `.lock` added
  (/etc/systemd/system → `etc-systemd-system.lock`), so each directory has its own lock and
  `flock /run/slicectl/locks/etc-systemd-system.lock COMMAND` holds slicectl off from a
  script run as root;
- the holder writes its PID and command line into the file once it holds the lock; a run that
  waits names it from there (or from /proc/locks, for a holder that did not write it), and
  gives up after a bounded wait.

DIR and any missing parents are made once the lock is held, and removed again (if still
empty) before it is released, so a failed run leaves no folder behind.

A file slicectl rewrites in place (tenants.yaml: slicectl.host.files.tenantsfile) has a lock
of its own the same way, named after the file's real path (/etc/slicectl/tenants.yaml →
`etc-slicectl-tenants.yaml.lock`): apart from its folder's, so that holding it never holds off
a writer of the folder.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from slicectl.core.errors import LockTimeout, OutputError, shown
from slicectl.host.files.owned import sha256

LOCK_TIMEOUT = 60.0  # seconds a run waits for another one writing the same directory
LOCK_DIR_ENV = "SLICECTL_LOCK_DIR"
ROOT_LOCK_DIR = "/run/slicectl/locks"
_POLL = 0.05
_NAME_MAX = 200  # longer escaped paths are cut and given a hash (NAME_MAX is 255)


def lock_folder() -> Path:
    """The folder of the lock files (see the module's docstring)."""
    given = os.environ.get(LOCK_DIR_ENV)
    if given:
        return Path(given)
    if os.geteuid() == 0:
        return Path(ROOT_LOCK_DIR)
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(runtime):
        return Path(runtime, "slicectl", "locks")
    return Path(tempfile.gettempdir(), f"slicectl-{os.geteuid()}-locks")


def lock_file(path: Path) -> Path:
    """The lock file of folder or file `path` (by its real path: two spellings, one lock)."""
    return lock_folder() / f"{escaped_path(os.path.realpath(path))}.lock"


def escaped_path(path: str) -> str:
    """`path` escaped as `systemd-escape --path` does ("/" → "-", other bytes but
    [A-Za-z0-9:_.] as \\xNN, "/" alone → "-"), cut and hashed when too long for a name."""
    raw = os.fsencode(path).strip(b"/")
    if not raw:
        return "-"
    out = []
    for i, byte in enumerate(raw):
        ch = chr(byte)
        if ch == "/":
            out.append("-")
        elif ch.isascii() and (ch.isalnum() or ch in ":_" or ch == "." and i > 0):
            out.append(ch)
        else:
            out.append(f"\\x{byte:02x}")
    name = "".join(out)
    if len(name) > _NAME_MAX:
        name = f"{name[:_NAME_MAX - 17]}-{sha256(raw)[:16]}"
    return name


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


def _unsafe(path: Path, why: str) -> OutputError:
    return OutputError(
        f"refusing the lock {'folder' if why.startswith('folder') else 'file'} "
        f"{shown(path)}: {why.removeprefix('folder ')}",
        f"slicectl takes its lock only where no other user can: remove {shown(path)} (it is "
        f"made again, private to this user), or set {LOCK_DIR_ENV} to a folder only you can "
        "write")


def _private_folder(folder: Path) -> None:
    """Make `folder` (0700; missing parents 0755) unless it is there; refuse one that is a
    link, is not this user's or is writable by others."""
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        for parent in reversed([p for p in folder.parents if not p.exists()]):
            try:
                os.mkdir(parent, 0o755)
                os.chmod(parent, 0o755)  # whatever the umask: a place others may read
            except FileExistsError:
                pass
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode):
        raise _unsafe(folder, "folder is not a folder (a link, or a file)")
    if st.st_uid != os.geteuid():
        raise _unsafe(folder, f"folder is owned by uid {st.st_uid}, not by this user "
                      f"(uid {os.geteuid()})")
    if st.st_mode & 0o022:
        raise _unsafe(folder, f"folder is writable by other users (mode "
                      f"{stat.S_IMODE(st.st_mode):04o})")


def _open_lock(path: Path) -> int:
    """The lock file, opened (made 0600 if missing); refused unless it is this user's own
    regular file that no one else may open."""
    _private_folder(path.parent)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise _unsafe(path, "it is a symbolic link") from None
        raise
    st = os.fstat(fd)
    why = ("it is not a regular file" if not stat.S_ISREG(st.st_mode) else
           f"it is owned by uid {st.st_uid}, not by this user (uid {os.geteuid()})"
           if st.st_uid != os.geteuid() else
           f"other users may open it (mode {stat.S_IMODE(st.st_mode):04o})"
           if st.st_mode & 0o077 else "")
    if why:
        os.close(fd)
        raise _unsafe(path, why)
    return fd


def holder_of(fd: int) -> str:
    """Who holds the lock on the file open as `fd`: "pid N (COMMAND LINE)", as the holder
    wrote it into the file, else from /proc/locks (util-linux `flock` writes nothing)."""
    try:
        pid, _, command = os.pread(fd, 4096, 0).decode("utf-8", "replace").partition("\n")
    except OSError:
        pid = command = ""
    if pid.isascii() and pid.isdigit():
        command = _printable(command.rstrip("\n"))
        return f"pid {pid}" + (f" ({command})" if command else "")
    return _holder_from_proc_locks(fd)


def _holder_from_proc_locks(fd: int) -> str:
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
            command = _command_of(row[4])
            return f"pid {row[4]}" + (f" ({command})" if command else "")
    return "another process"


def _command_of(pid: str) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return _printable(raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "backslashreplace"))


def _printable(words: str) -> str:
    words = "".join(ch if ch.isprintable() else "?" for ch in words)
    return f"{words[:100]}{'…' if len(words) > 100 else ''}"


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


def _sign(fd: int) -> None:
    """Write this process's PID and command line into the lock file it holds."""
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n{_command_of('self')}\n".encode(), 0)


@contextmanager
def locked_dir(path: Path, timeout: float = LOCK_TIMEOUT,
               on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the exclusive lock of folder `path` for the `with` block, `path` made if missing.

    Folders made here are removed again if they are empty when the block ends (a failed run
    leaves nothing). Raises LockTimeout; OutputError when the lock's folder or file is not
    private to this user; OSError when `path` cannot be made. `on_wait(holder)` is called
    once if the lock is busy.
    """
    with _held(lock_file(path), timeout, on_wait):
        made = make_dirs(path)
        try:
            yield
        finally:
            remove_empty(made)  # while still holding the lock


@contextmanager
def locked_file(path: Path, timeout: float = LOCK_TIMEOUT,
                on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the exclusive lock of file `path` (by its real path; the file need not exist)
    for the `with` block. Raises as locked_dir does; makes nothing but the lock file."""
    with _held(lock_file(path), timeout, on_wait):
        yield


@contextmanager
def _held(where: Path, timeout: float, on_wait: Callable[[str], None] | None
          ) -> Iterator[None]:
    """Hold the lock file `where` (see the module's docstring), signed by this process."""
    try:
        fd = _open_lock(where)
    except OSError as e:
        raise OutputError(f"cannot take the lock {shown(e.filename or where)}: {e.strerror}",
                          "run as root, or set "
                          f"{LOCK_DIR_ENV} to a folder you can write") from e
    try:
        _acquire(fd, timeout, on_wait)
        _sign(fd)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)  # no holder any more
    finally:
        os.close(fd)  # releases the lock
