"""Whether root may act on a file: sshd's StrictModes for what slicectl reads to decide.

slicectl runs as root at every boot (the generator), in apply, the balancer and the exporter.
A file another user can write (or replace, through a folder they can write) would let that
user steer what root does: pin tenants anywhere, write any unit. So, when slicectl runs as
root, a file it reads to decide, and every folder above it, must be owned by root (or by the
user slicectl runs as) and writable by nobody else. A folder with the sticky bit (/tmp) may be
writable by all: there nobody can replace an entry another user owns. Run as another user,
slicectl acts only with that user's rights, and these checks are off.

The checks read the file's own status from the open file (`fstat`), so what is checked is
what is read, and each folder from the root down by `lstat` after the path's links are
resolved.
"""

from __future__ import annotations

import os
import stat

from slicectl.core.errors import ConfigError, Problem, shown

__all__ = ["check_trusted", "open_regular", "read_bounded", "untrusted", "untrusted_status"]


def _enforced() -> bool:
    return os.geteuid() == 0


def _who(uid: int) -> str:
    try:
        import pwd

        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except (KeyError, ImportError):
        return f"uid {uid}"


def _fault(st: os.stat_result, folder: bool) -> str | None:
    """What lets another user change a file or folder with status `st`, or None."""
    me = os.geteuid()
    if st.st_uid not in (0, me):
        return f"is owned by {_who(st.st_uid)}, not by root"
    mode = stat.S_IMODE(st.st_mode)
    if folder and mode & stat.S_ISVTX:
        return None  # sticky: others may add entries, not replace ours
    if mode & 0o002:
        return f"is writable by every user (mode {mode:04o})"
    if mode & 0o020:  # as sshd: a group may hold users other than root
        return f"is writable by its group, gid {st.st_gid} (mode {mode:04o})"
    return None


def untrusted_status(st: os.stat_result, folder: bool) -> str | None:
    """What lets another user change a file (or `folder`) whose status is `st`, or None
    (always None when slicectl does not run as root)."""
    return _fault(st, folder) if _enforced() else None


def untrusted(path: str, st: os.stat_result | None = None) -> str | None:
    """Why root should not act on `path` (its status `st` when already read), or None.

    Always None when slicectl does not run as root."""
    if not _enforced():
        return None
    real = os.path.realpath(path)
    if st is None:
        try:
            st = os.stat(real)
        except OSError as e:
            return f"cannot be checked: {e.strerror}"
    why = _fault(st, stat.S_ISDIR(st.st_mode))
    if why is not None:
        return f"{shown(path)} {why}"
    folder = os.path.dirname(real)
    while True:
        try:
            fst = os.lstat(folder)
        except OSError as e:
            return f"its folder {shown(folder)} cannot be checked: {e.strerror}"
        why = _fault(fst, True)
        if why is not None:
            return f"its folder {shown(folder)} {why}"
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def check_trusted(path: str, what: str, st: os.stat_result | None = None) -> None:
    """Raise ConfigError when root should not act on `path` (`what`: "tenants.yaml", "the
    web configuration", ...): another user could have written it."""
    why = untrusted(path, st)
    if why is not None:
        raise ConfigError([Problem(shown(path), 0, "", f"not used: {why}, and slicectl runs "
                                   f"as root (another user could steer it through {what})",
                                   "make it root's and writable by root alone: chown root: "
                                   "FILE && chmod go-w FILE (and the same for the folder "
                                   "named); or run slicectl as the user who owns it")])


def open_regular(path: str, what: str) -> int:
    """A descriptor of the regular file at `path` (links followed), opened without blocking
    (a FIFO or a device is refused, never read) and checked with check_trusted."""
    name = shown(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as e:
        raise ConfigError([Problem(name, 0, "", f"cannot read: {e.strerror}",
                                   f"check the path to {what}")]) from e
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a folder" if stat.S_ISDIR(st.st_mode) else \
                "a FIFO" if stat.S_ISFIFO(st.st_mode) else \
                "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else \
                "not a regular file"
            raise ConfigError([Problem(name, 0, "", f"cannot read: it is {kind}, not a "
                                       "regular file",
                                       f"give the path of {what} itself")])
        check_trusted(path, what, st)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bounded(path: str, what: str, limit: int) -> bytes:
    """The bytes of the regular file at `path` (see open_regular), at most `limit` of them:
    a larger file is refused, never read whole."""
    fd = open_regular(path, what)
    try:
        chunks = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as e:
        raise ConfigError([Problem(shown(path), 0, "", f"cannot read: {e.strerror}",
                                   f"check the path to {what}")]) from e
    finally:
        os.close(fd)
    if left <= 0:
        raise ConfigError([Problem(shown(path), 0, "", f"is larger than {limit >> 20} MiB; "
                                   "slicectl reads no more than that",
                                   f"check that this is {what}")])
    return b"".join(chunks)
