"""Reading a unit's cgroup files once, by the unit's ControlGroup (an edge: it reads cgroupfs),
and the one kind of write slicectl makes there itself (cpuset.cpus.exclusive, which systemd
has no setting for).

apply's verify and the diff of removed slices read a few files of one cgroup; the sampler
(slicectl.host.cgroup.sampler) keeps files open instead, for reading them again and again. Paths are
never built from unit names (`tenant-a.slice` lives in `tenant.slice/tenant-a.slice`, and
systemd escapes names that clash with controllers): callers pass systemd's ControlGroup.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from slicectl.core import defaults

MAX_READ = 65536


def read_cgroup_files(root: Path, control_group: str, names: list[str]
                      ) -> dict[str, str | None]:
    """Several files of one cgroup (None: missing), opened relative to the cgroup's folder
    (a quarter of the cost of a full path per file); what is not a regular file (a FIFO)
reads as missing."""
    out: dict[str, str | None] = dict.fromkeys(names)
    try:
        folder = os.open(os.path.join(root, control_group.lstrip("/")),
                         os.O_RDONLY | os.O_DIRECTORY)
    except (FileNotFoundError, NotADirectoryError):
        return out
    try:
        for name in names:
            try:
                # non-blocking: a FIFO or a device in place of a cgroup file (a broken tree)
                # reads as missing instead of blocking the open or the read for ever
                fd = os.open(name, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=folder)
            except (FileNotFoundError, NotADirectoryError):
                continue
            try:
                if stat.S_ISREG(os.fstat(fd).st_mode):
                    out[name] = os.read(fd, MAX_READ).decode(errors="replace")
            finally:
                os.close(fd)
    finally:
        os.close(folder)
    return out


def read_cgroup_file(root: Path, control_group: str, name: str) -> str | None:
    """One cgroup file of a unit (None: missing)."""
    return read_cgroup_files(root, control_group, [name])[name]


def read_cgroup_bytes(root: Path, control_group: str, name: str) -> bytes | None:
    """One cgroup file's bytes exactly as the kernel gives them (None: no such file)."""
    try:
        return Path(root, control_group.lstrip("/"), name).read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None


def write_cgroup_file(root: Path, control_group: str, name: str, data: bytes) -> None:
    """Write one cgroup file in a single write(2), as the kernel takes a value; never creates
    it (a file the kernel does not offer raises FileNotFoundError), and raises the kernel's
    refusal (EINVAL, EBUSY) as OSError. Only slicectl.apply.partitions writes cgroupfs: the
    exclusive CPUs systemd has no setting for."""
    fd = os.open(Path(root, control_group.lstrip("/"), name),
                 os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def populated(root: Path, control_group: str) -> bool:
    """Whether processes live in the cgroup or below it, as its cgroup.events says (no such
    file: the cgroup is gone, nothing lives in it).

    When the file cannot be read (an error other than its absence, not a regular file) or says
    nothing of it, the cgroup counts as populated, the safe side for every caller: apply
    leaves a slice running that it would stop as empty (stopping it would kill its
    processes), the shares keep a unit they would leave out as unable to fill up."""
    try:
        text = read_cgroup_files(root, control_group, ["cgroup.events"])["cgroup.events"]
    except OSError:
        return True
    if text is None and not os.path.lexists(os.path.join(root, control_group.lstrip("/"),
                                                         "cgroup.events")):
        return False
    for line in (text or "").splitlines():
        if line.startswith("populated "):
            return line.split()[1:2] != ["0"]
    return True


def block_device(path: str, sysfs: Path = Path(defaults.SYSFS)) -> str | None:
    """The whole disk a device path (or a file on a disk's file system) is on, as "MAJ:MIN",
    resolved as systemd does for IO settings (`/dev/block/MAJ:MIN` taken as it is; a file's
    own device; a partition or a single dm/LUKS mapping up to its disk); None when there is
    no such block device (a missing path, a character device, tmpfs, btrfs)."""
    m = _DEV_BLOCK.fullmatch(path)
    if m:
        number = f"{int(m[1])}:{int(m[2])}"
    else:
        try:
            st = os.stat(path)
        except OSError:
            return None
        if stat.S_ISCHR(st.st_mode):
            return None
        dev = st.st_rdev if stat.S_ISBLK(st.st_mode) else st.st_dev
        if os.major(dev) == 0:
            return None
        number = f"{os.major(dev)}:{os.minor(dev)}"
    return _whole_disk(number, sysfs)


_DEV_BLOCK = re.compile(r"/dev/block/(\d+):(\d+)")


def _whole_disk(number: str, sysfs: Path) -> str:
    """A partition's disk, and a dm/LUKS mapping's single lower device, up to the disk."""
    for _ in range(8):  # mappings of mappings, bounded
        folder = sysfs / "dev" / "block" / number
        slaves = sorted((folder / "slaves").glob("*")) if (folder / "slaves").is_dir() else []
        if len(slaves) == 1:
            number = (slaves[0] / "dev").read_text().strip()
            continue
        if (folder / "partition").is_file():
            return (folder.resolve().parent / "dev").read_text().strip()
        return number
    return number
