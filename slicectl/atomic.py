"""Atomic file replacement: readers see the old file or the new one, never half of either."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomically(path: str | Path, data: bytes | str, mode: int | None = None) -> None:
    """Write `data` to a temporary file beside `path`, fsync it, then rename it over `path`.

    The new file keeps the mode of the one it replaces (else `mode`, else 0644). On any error
    the temporary file is removed and `path` is untouched.
    """
    path = Path(path)
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o644
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".slicectl-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
