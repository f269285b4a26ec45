"""`Modified`: which watched files were written since the last look, by inotify(7).

The sampler watches each cgroup's `cgroup.events`, which the kernel marks modified whenever a
value in it changes (Documentation/admin-guide/cgroup-v2.rst: "a value change in this file
generates a file modified event"), as systemd watches it to learn that a unit's cgroup
emptied. An empty cgroup whose `cgroup.events` was not written is still empty, and need not be
read at all (slicectl.host.cgroup.sampler).

The standard library has no inotify: the three calls come from the C library through ctypes
(no dependency does it). A process that cannot have them (no inotify in the kernel, a libc
without the symbols) gets `InotifyUnavailable`, and the sampler reads `cgroup.events` as before.
"""

from __future__ import annotations

import os
import struct

from slicectl.core.errors import InotifyUnavailable

IN_MODIFY = 0x00000002
IN_Q_OVERFLOW = 0x00004000
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then the name)


class Modified:
    """An inotify instance with IN_MODIFY watches; `changed()` says which were written."""

    def __init__(self) -> None:
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            self._add_watch = libc.inotify_add_watch
            self._rm_watch = libc.inotify_rm_watch
            fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)  # = IN_NONBLOCK | IN_CLOEXEC
            errno_of = ctypes.get_errno
        except (ImportError, OSError, AttributeError) as e:
            raise InotifyUnavailable(f"no inotify here: {e}") from e
        if fd < 0:
            err = errno_of()
            raise InotifyUnavailable(err, f"inotify_init1: {os.strerror(err)}")
        self.fd: int | None = fd

    def add(self, path: str) -> int:
        """Watch `path` for writes; its watch descriptor, or -1 when it cannot be watched
        (gone, or past fs.inotify.max_user_watches)."""
        if self.fd is None:
            return -1
        wd: int = self._add_watch(self.fd, os.fsencode(path), IN_MODIFY)
        return wd

    def remove(self, wd: int) -> None:
        """Stop watching (harmless when the kernel already dropped the watch)."""
        if self.fd is not None and wd >= 0:
            self._rm_watch(self.fd, wd)

    def changed(self) -> set[int] | None:
        """The watch descriptors written since the last call; None when the kernel's event
        queue overflowed (events were lost: anything may have changed)."""
        found: set[int] = set()
        if self.fd is None:
            return found
        overflow = False
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                break
            offset = 0
            while offset + _EVENT.size <= len(data):
                wd, mask, _, length = _EVENT.unpack_from(data, offset)
                offset += _EVENT.size + length
                if mask & IN_Q_OVERFLOW:
                    overflow = True
                elif mask & IN_MODIFY:
                    found.add(wd)
        return None if overflow else found

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
