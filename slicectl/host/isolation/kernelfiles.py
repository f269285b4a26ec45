"""IRQ affinities (`/proc/irq/N/smp_affinity_list`), the unbound workqueues' mask
(`/sys/devices/virtual/workqueue/cpumask`), the online CPUs and a process's environment: read
and written under a procfs and a sysfs root, so tests use fixture trees.

What to write is decided purely (slicectl.core.properties.isolation); apply writes through
its transaction (slicectl.apply.transaction), which records each file's bytes first.
"""

from __future__ import annotations

import os
from pathlib import Path

from slicectl.core.cpulist import parse_cpulist

WORKQUEUE_MASK = "devices/virtual/workqueue/cpumask"
ONLINE = "devices/system/cpu/online"
AFFINITY = "smp_affinity_list"


def affinity_path(proc: Path, irq: int) -> Path:
    """Where IRQ `irq`'s affinity list is under the procfs root `proc`."""
    return proc / "irq" / str(irq) / AFFINITY


def workqueue_path(sysfs: Path) -> Path:
    """Where the unbound workqueues' mask is under the sysfs root `sysfs`."""
    return sysfs / WORKQUEUE_MASK


def read_kernel_file(path: Path) -> bytes | None:
    """A procfs or sysfs file's bytes as the kernel gives them (None: no such file)."""
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None


def write_kernel_file(path: Path, data: bytes) -> None:
    """Write a procfs or sysfs file in a single write(2), as the kernel takes a value; never
    creates it (FileNotFoundError), and raises the kernel's refusal (EIO, EINVAL) as
    OSError."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _text(path: Path) -> str | None:
    try:
        data = read_kernel_file(path)
    except OSError:
        return None  # unreadable (permissions): as good as absent for steering
    try:
        return None if data is None else data.decode("ascii")
    except UnicodeDecodeError:
        return None


def read_affinities(proc: Path) -> dict[int, str]:
    """IRQ -> its `smp_affinity_list` text exactly as read, for every IRQ under `proc/irq`
    whose list can be read (none when there is no such folder)."""
    try:
        entries = [e for e in os.scandir(proc / "irq") if e.name.isdigit() and e.is_dir()]
    except (FileNotFoundError, NotADirectoryError):
        return {}
    out = {}
    for entry in entries:
        text = _text(Path(entry.path, AFFINITY))
        if text is not None:
            out[int(entry.name)] = text
    return out


def read_affinity(proc: Path, irq: int) -> str | None:
    """IRQ `irq`'s `smp_affinity_list` as read (None: the IRQ is gone)."""
    return _text(affinity_path(proc, irq))


def read_workqueue_mask(sysfs: Path) -> str | None:
    """The unbound workqueues' mask as read (None: this kernel has no such file)."""
    return _text(workqueue_path(sysfs))


def read_online(sysfs: Path) -> frozenset[int]:
    """The online CPUs (`devices/system/cpu/online`; empty when it cannot be read)."""
    text = _text(sysfs / ONLINE)
    try:
        return parse_cpulist(text or "")
    except ValueError:
        return frozenset()


def read_environ(proc: Path, pid: int) -> bytes | None:
    """Process `pid`'s environment as its `environ` file holds it (None: no such process,
    or it cannot be read)."""
    try:
        return read_kernel_file(proc / str(pid) / "environ")
    except OSError:
        return None
