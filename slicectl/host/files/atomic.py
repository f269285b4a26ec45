"""Atomic file replacement: readers see the old file or the new one, never half of either."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Collection, Iterable
from pathlib import Path


def write_atomically(path: str | Path, data: bytes | str, mode: int | None = None) -> None:
    """Write `data` to a temporary file beside `path`, fsync it, then rename it over `path`.

    The new file gets `mode` when given, else the mode of the file it replaces, else 0644. On
    any error the temporary file is removed and `path` is untouched.
    """
    path = Path(path)
    tmp, _ = _temp_file(path, data.encode() if isinstance(data, str) else data, mode, sync=True)
    try:
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_many(items: list[tuple[Path, bytes]], new: Collection[Path] = ()) -> None:
    """Atomically replace several files, flushing them to disk together.

    Each file is written to a temporary file beside it; then one syncfs(2) per file system
    makes all of them durable (one journal commit instead of one fsync per file, which was
    much slower; apply.100's phases are in BENCHMARKS.md); only then is each renamed over its
    target. Readers see each file old or new,
    never half. On an error before the renames nothing is replaced; an error during them
    leaves the earlier ones replaced (the caller's journal undoes them). Paths in `new` are
    known not to exist (the caller has just looked): they get mode 0644 without a stat.
    """
    pending: list[tuple[str, Path]] = []
    folders: dict[int, Path] = {}  # one folder per file system, for syncfs
    done = 0
    try:
        for path, data in items:
            tmp, dev = _temp_file(path, data, 0o644 if path in new else None, sync=False)
            pending.append((tmp, path))
            folders.setdefault(dev, path.parent)
        _flush(folders.values(), [tmp for tmp, _ in pending])
        for tmp, path in pending:
            os.replace(tmp, path)
            done += 1
    finally:
        for tmp, _ in pending[done:]:
            Path(tmp).unlink(missing_ok=True)


def _temp_file(path: Path, raw: bytes, mode: int | None, *, sync: bool) -> tuple[str, int]:
    """A temporary file next to `path` holding `raw`, with `mode` when given (no stat), else
    the mode of the file it will replace, else 0644; fsync'ed if `sync`; removed again on any
    error.
    Returns its name and its file system (st_dev)."""
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".slicectl-tmp", dir=path.parent)
    try:
        try:
            view = memoryview(raw)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, mode)
            if sync:
                os.fsync(fd)
            dev = os.fstat(fd).st_dev
        finally:
            os.close(fd)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp, dev


def _flush(folders: Iterable[Path], files: list[str]) -> None:
    """syncfs(2) the file system of each folder; fsync each file where syncfs is missing."""
    import ctypes

    try:
        syncfs = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        for name in files:
            fd = os.open(name, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        return
    for folder in folders:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            if syncfs(fd) != 0:
                err = ctypes.get_errno()
                raise OSError(err, os.strerror(err), str(folder))
        finally:
            os.close(fd)
