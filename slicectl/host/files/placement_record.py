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
modules (os, re, stat) and slicectl.host.files.owned (which writes the record, and digests it
without hashlib), nothing of the planner; the fingerprint is the material itself, compared
whole.
"""

from __future__ import annotations

import errno
import os
import re
import stat

from slicectl.host.files.owned import (
    read_regular_file,
    replace_link,
    sha256,
    sync_folder,
    write_folder,
)

RECORD = "placement"
CURRENT = "current"
FINGERPRINT = "fingerprint"

# The sysfs files a topology is read from (slicectl.host.topology.sysfs), relative to the
# sysfs root.
_CPU = "devices/system/cpu"
_NODE = "devices/system/node"
_CPU_FILES = ("online", "topology/thread_siblings_list", "topology/core_id",
              "topology/physical_package_id", "topology/die_id")
_NODE_FILES = ("cpulist", "distance")


def record_dir(tenants: str) -> str:
    """Where the placement record of the tenants file `tenants` lives."""
    return os.path.join(os.path.dirname(os.path.abspath(tenants)), RECORD)


def fingerprint(tenants: str, sysfs: str, text: bytes | None = None) -> bytes | None:
    """Everything a placement depends on, as bytes (a few KiB), or None when something cannot
    be read (then the generator plans, as without a record). `text`: tenants.yaml's bytes,
    when the caller has read them."""
    parts: list[bytes] = []
    try:
        if text is None:
            with open(tenants, "rb") as f:
                text = f.read()
        parts.append(text)
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
        _cache_files(parts, os.path.join(cpu, name), name)
    node = os.path.join(sysfs, _NODE)
    if not os.path.isdir(node):
        return
    for name in _numbered(node, "node"):
        for rel in _NODE_FILES:
            parts.append(f"{name}/{rel}=".encode() + _read(os.path.join(node, name, rel)))
        meminfo = _read(os.path.join(node, name, "meminfo"))
        parts.append(b"".join(line for line in meminfo.splitlines() if b"MemTotal" in line))


def _cache_files(parts: list[bytes], cpu: str, name: str) -> None:
    """The CPU's cache indexes by name and the CPUs sharing its last one: the last-level
    cache group comes from there (x86 and arm64 number a CPU's caches from level 1 up, so
    the last index is the last level; slicectl.host.topology.cpu_caches reads the levels). One list
    read per CPU, not one per cache: this is the generator's fast path."""
    try:
        indexes = _numbered(os.path.join(cpu, "cache"), "index")
    except (FileNotFoundError, NotADirectoryError):
        return  # no cache facts: the groups are unknown
    if indexes:
        rel = f"cache/{indexes[-1]}/shared_cpu_list"
        parts.append(f"{name}/{','.join(indexes)}/{rel}=".encode()
                     + _read(os.path.join(cpu, rel), b"-"))


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
    base = record_dir(tenants)
    folder = os.path.realpath(os.path.join(base, CURRENT))
    if os.path.dirname(folder) != os.path.realpath(base):
        return None  # `current` names a folder elsewhere: no record slicectl made
    try:
        return folder, read_regular_file(os.path.join(folder, FINGERPRINT))
    except OSError:
        return None


def recorded_files(folder: str) -> dict[str, bytes]:
    """Every file of a recorded placement (relative path → bytes), the manifest included,
    the fingerprint not. Only regular files and folders are read: a link, or any other kind
    of file, is refused (OSError), never followed."""
    files: dict[str, bytes] = {}
    for rel, _ in _entries(folder):
        if rel != FINGERPRINT:
            files[rel] = read_regular_file(os.path.join(folder, rel))
    return files


def _entries(folder: str) -> list[tuple[str, os.stat_result]]:
    """(relative path, lstat) of every file under `folder`, folders walked, none followed."""
    found = []
    pending = [""]
    while pending:
        rel_dir = pending.pop()
        with os.scandir(os.path.join(folder, rel_dir)) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            rel = os.path.join(rel_dir, entry.name)
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                pending.append(rel)
            elif stat.S_ISREG(st.st_mode):
                found.append((rel, st))
            else:
                link = stat.S_ISLNK(st.st_mode)
                raise OSError(errno.ELOOP if link else errno.EINVAL,
                              "a symbolic link" if link else "not a regular file", entry.path)
    return sorted(found)


# A recorded file's path: a unit or a drop-in folder and its file, in systemd's alphabet.
_PART = re.compile(r"[A-Za-z0-9:_.@\\-]{1,255}")


def verified_files(folder: str, manifest: str) -> dict[str, bytes]:
    """recorded_files(folder), once the record has shown it is what slicectl wrote: run as
    root, no other user can have written the record or a folder above it
    (slicectl.host.files.trust); every file is listed in the record's manifest (file `manifest`)
    with its SHA-256, and every file listed is there. Raises OSError saying what is wrong."""
    from slicectl.host.files.trust import untrusted, untrusted_status

    why = untrusted(folder)
    if why is not None:
        raise OSError(errno.EPERM, f"not used: {why}")
    files: dict[str, bytes] = {}
    try:
        entries = _entries(folder)
    except OSError as e:
        raise OSError(e.errno, f"not used: {e.filename} is {e.strerror}") from None
    for rel, st in entries:
        why = untrusted_status(st, False)
        if why is not None:
            raise OSError(errno.EPERM, f"not used: {rel} {why}")
        if rel != FINGERPRINT:
            files[rel] = read_regular_file(os.path.join(folder, rel))
    _check_manifest(files, manifest)
    return files


def _check_manifest(files: dict[str, bytes], manifest: str) -> None:
    """Every file of `files` but the manifest is a unit file listed in the manifest (file
    `manifest`) with its SHA-256, and every file listed is there; else OSError."""
    import json

    try:
        listed = json.loads(files[manifest])["files"]
        if not isinstance(listed, dict):
            raise TypeError("files is not an object")
    except (KeyError, ValueError, TypeError) as e:
        raise OSError(errno.EINVAL, f"not used: its manifest cannot be read ({e})") from None
    for rel, data in files.items():
        if rel == manifest:
            continue
        parts = rel.split(os.sep)
        if len(parts) > 2 or not all(_PART.fullmatch(p) and p not in (".", "..")
                                     for p in parts):
            raise OSError(errno.EINVAL, f"not used: {rel!r} is no unit file slicectl writes")
        if listed.get(rel) != sha256(data):
            raise OSError(errno.EINVAL, f"not used: {rel} is not what its manifest lists "
                          "(changed since it was recorded, or never recorded)")
    missing = sorted(set(listed) - set(files))
    if missing:
        raise OSError(errno.EINVAL, f"not used: {missing[0]}, listed in its manifest, is "
                      "missing")


def save(tenants: str, files: dict[str, bytes], print_: bytes) -> str:
    """Record `files` (a unit directory's files, the manifest included) as the last good
    placement of `tenants`, with fingerprint `print_`; the old record is removed once the new
    one is current. Returns the record's folder."""
    import shutil
    import time

    base = record_dir(tenants)
    os.makedirs(base, exist_ok=True)
    folder = os.path.join(base, f"units-{time.time_ns()}")
    write_folder(folder, {**files, FINGERPRINT: print_}, staging=f"{folder}.new")
    replace_link(os.path.join(base, CURRENT), os.path.basename(folder))
    sync_folder(base)
    for entry in os.listdir(base):
        path = os.path.join(base, entry)
        if entry.startswith("units-") and os.path.realpath(path) != os.path.realpath(folder):
            shutil.rmtree(path, ignore_errors=True)
    return folder

