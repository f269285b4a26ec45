"""Whether a file root reads may be trusted: no other user could have written it.

Run as root, slicectl acts on what its configuration files say (certificates and keys for
the exporter, for one); a file that another user owns or may write, or that lies in a
folder they may write (and so replace it), would hand root's decisions to that user. The
rule, for the file and every folder above it: owned by root or by the user slicectl runs
as, and not writable by group or others, but for folders with the sticky bit (/tmp), where
nobody may replace another's file. Run as any other user, slicectl trusts what that user
can read: nothing is checked.
"""

from __future__ import annotations

import os
import stat

from slicectl.core.errors import ConfigError, Problem, shown


def check_trusted(path: str, what: str) -> None:
    """Raise ConfigError (naming `path`, as `what`, with a hint) when running as root and
    `path` or a folder above it is owned by another user or writable by group or others."""
    euid = os.geteuid()
    if euid != 0:
        return
    full = os.path.realpath(path)  # the folders the file really lies in
    here = full
    while True:
        try:
            st = os.stat(here)
        except OSError as e:
            raise ConfigError([Problem(shown(full), 0, "", f"cannot read {what}: "
                                       f"{shown(here)}: {e.strerror}")]) from None
        folder = here != full
        if st.st_uid not in (0, euid):
            _refuse(full, what, f"{shown(here)} is owned by uid {st.st_uid}, not root",
                    f"chown root {shown(here)}")
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not (
                folder and st.st_mode & stat.S_ISVTX):
            _refuse(full, what, f"{shown(here)} is writable by "
                    f"{'others' if st.st_mode & stat.S_IWOTH else 'its group'}",
                    f"chmod go-w {shown(here)}")
        parent = os.path.dirname(here)
        if parent == here:
            return
        here = parent


def _refuse(path: str, what: str, why: str, fix: str) -> None:
    raise ConfigError([Problem(shown(path), 0, "", f"{why}: {what} is not trusted (another "
                               "user could change what slicectl, run as root, reads)",
                               f"`{fix}`, or keep the file where only root may write")])
