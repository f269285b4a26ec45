"""Reading a unit's cgroup files once, by the unit's ControlGroup (an edge: it reads cgroupfs).

apply's verify and the diff of removed slices read a few files of one cgroup; the sampler
(slicectl.sampler) keeps files open instead, for reading them again and again. Paths are
never built from unit names (`tenant-a.slice` lives in `tenant.slice/tenant-a.slice`, and
systemd escapes names that clash with controllers): callers pass systemd's ControlGroup.
"""

from __future__ import annotations

import os
from pathlib import Path

MAX_READ = 65536


def read_cgroup_files(root: Path, control_group: str, names: list[str]
                      ) -> dict[str, str | None]:
    """Several files of one cgroup (None: missing), opened relative to the cgroup's folder
    (a quarter of the cost of a full path per file)."""
    out: dict[str, str | None] = dict.fromkeys(names)
    try:
        folder = os.open(os.path.join(root, control_group.lstrip("/")),
                         os.O_RDONLY | os.O_DIRECTORY)
    except (FileNotFoundError, NotADirectoryError):
        return out
    try:
        for name in names:
            try:
                fd = os.open(name, os.O_RDONLY, dir_fd=folder)
            except (FileNotFoundError, NotADirectoryError):
                continue
            try:
                out[name] = os.read(fd, MAX_READ).decode(errors="replace")
            finally:
                os.close(fd)
    finally:
        os.close(folder)
    return out


def read_cgroup_file(root: Path, control_group: str, name: str) -> str | None:
    """One cgroup file of a unit (None: missing)."""
    return read_cgroup_files(root, control_group, [name])[name]


def populated(root: Path, control_group: str) -> bool:
    """Whether processes live in the cgroup or below it (cgroup.events)."""
    return "populated 1" in (read_cgroup_file(root, control_group, "cgroup.events") or "")
