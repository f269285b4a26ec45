"""The last good placement, kept beside tenants.yaml for the systemd generator.

`slicectl generator enable` (and apply on a host in generator mode) records here the unit files
it placed and the fingerprint of what they were placed from: tenants.yaml's bytes, the
topology's sysfs files and slicectl's own files. At boot and at every daemon-reload the
generator compares the fingerprint of what it sees: when nothing changed (the common case) it
copies the recorded files without planning; when tenants.yaml is broken or no longer fits the
topology, it falls back to the recorded files whole, so running tenants stay pinned.

Layout, under `DIR/placement/` (DIR: the folder of tenants.yaml, /etc/slicectl):
`units-<time>/` holds the files exactly as `generate` writes them (with the manifest),
and `current`, a symbolic link to it, is replaced atomically (rename), so a reader sees the old
record or the new one whole, never a mix, even after a power cut.

This module is on the generator's fast path: it imports only the standard library's cheapest
module (os), nothing of the planner; the fingerprint is the material itself, compared whole,
so no hash library is loaded.
"""

from __future__ import annotations

import os

RECORD = "placement"
CURRENT = "current"
FINGERPRINT = "fingerprint"

# The sysfs files a topology is read from (slicectl.host.sysfs), relative to the sysfs root.
_CPU = "devices/system/cpu"
_NODE = "devices/system/node"
_CPU_FILES = ("online", "topology/thread_siblings_list", "topology/core_id",
              "topology/physical_package_id", "topology/die_id")
_NODE_FILES = ("cpulist", "distance")


def record_dir(tenants: str) -> str:
    """Where the placement record of the tenants file `tenants` lives."""
    return os.path.join(os.path.dirname(os.path.abspath(tenants)), RECORD)


def fingerprint(tenants: str, sysfs: str) -> bytes | None:
    """Everything a placement depends on, as bytes (a few KiB), or None when something cannot
    be read (then the generator plans, as without a record)."""
    parts: list[bytes] = []
    try:
        with open(tenants, "rb") as f:
            parts.append(f.read())
        _topology_files(parts, sysfs)
        _own_files(parts)
    except OSError:
        return None
    return b"\0".join(parts)


def _topology_files(parts: list[bytes], sysfs: str) -> None:
    cpu = os.path.join(sysfs, _CPU)
    parts.append(_read(os.path.join(cpu, "online")))
    for name in _numbered(cpu, "cpu"):
        for rel in _CPU_FILES:
            parts.append(f"{name}/{rel}=".encode() + _read(os.path.join(cpu, name, rel), b"-"))
    node = os.path.join(sysfs, _NODE)
    if not os.path.isdir(node):
        return
    for name in _numbered(node, "node"):
        for rel in _NODE_FILES:
            parts.append(f"{name}/{rel}=".encode() + _read(os.path.join(node, name, rel)))
        meminfo = _read(os.path.join(node, name, "meminfo"))
        parts.append(b"".join(line for line in meminfo.splitlines() if b"MemTotal" in line))


def _own_files(parts: list[bytes]) -> None:
    """slicectl's code and templates by name, size and modification time: an upgrade (or an
    edited template) plans again."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    folders = [package, os.path.join(os.path.dirname(package), "templates")]
    while folders:
        folder = folders.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except FileNotFoundError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    folders.append(entry.path)
            elif entry.name.endswith((".py", ".j2")):
                st = entry.stat()
                parts.append(f"{entry.path}:{st.st_size}:{st.st_mtime_ns}".encode())


def _numbered(folder: str, prefix: str) -> list[str]:
    return sorted((e for e in os.listdir(folder)
                   if e.startswith(prefix) and e[len(prefix):].isdigit()),
                  key=lambda e: int(e[len(prefix):]))


def _read(path: str, missing: bytes | None = None) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        if missing is None:
            raise
        return missing


def recorded(tenants: str) -> tuple[str, bytes] | None:
    """(folder of the recorded unit files, their fingerprint), or None without a record."""
    current = os.path.join(record_dir(tenants), CURRENT)
    try:
        with open(os.path.join(current, FINGERPRINT), "rb") as f:
            return os.path.realpath(current), f.read()
    except OSError:
        return None


def recorded_files(folder: str) -> dict[str, bytes]:
    """Every file of a recorded placement (relative path → bytes), the manifest included,
    the fingerprint not."""
    files: dict[str, bytes] = {}
    for parent, dirs, names in os.walk(folder):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(parent, name)
            rel = os.path.relpath(path, folder)
            if rel != FINGERPRINT:
                with open(path, "rb") as f:
                    files[rel] = f.read()
    return files


def write_files(root: str, files: dict[str, bytes], *, sync: bool = True) -> None:
    """Write `files` under `root` (made if missing), each whole: a temporary file renamed,
    flushed to disk first with `sync` (the generator's output lives on a tmpfs made anew at
    every run: no need there)."""
    for rel, data in sorted(files.items()):
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "wb") as f:
            f.write(data)
            if sync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)


def save(tenants: str, files: dict[str, bytes], print_: bytes) -> str:
    """Record `files` (a unit directory's files, the manifest included) as the last good
    placement of `tenants`, with fingerprint `print_`; the old record is removed once the new
    one is current. Returns the record's folder."""
    import shutil
    import time

    base = record_dir(tenants)
    os.makedirs(base, exist_ok=True)
    folder = os.path.join(base, f"units-{time.time_ns()}")
    staging = f"{folder}.new"
    write_files(staging, {**files, FINGERPRINT: print_})
    os.replace(staging, folder)
    link = os.path.join(base, f".{CURRENT}.tmp{os.getpid()}")
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(os.path.basename(folder), link)
    os.replace(link, os.path.join(base, CURRENT))
    _sync(base)
    for entry in os.listdir(base):
        path = os.path.join(base, entry)
        if entry.startswith("units-") and os.path.realpath(path) != os.path.realpath(folder):
            shutil.rmtree(path, ignore_errors=True)
    return folder


def _sync(folder: str) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
