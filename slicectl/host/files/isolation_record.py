"""The isolation record (an edge): what slicectl changed to keep host noise off isolated CPUs,
written atomically before the change; read back to restore it.

/run/slicectl/isolation.json by default, beside the balancer's state (tmpfs: a reboot forgets
it, as the kernel forgets the IRQ affinities and the workqueue mask it records); tests and
other roots pass their own path. What it holds is slicectl.core.properties.isolation.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from slicectl.core.errors import StateError, shown
from slicectl.core.properties.isolation import IsolationRecord
from slicectl.host.files.trust import untrusted

_LIMIT = 1 << 22  # bytes: a record of every IRQ of a large host is a few hundred KiB


def read_record(path: Path) -> IsolationRecord | None:
    """The record in `path`; None when there is none (nothing is steered). StateError,
    naming the file, when it cannot be read, is not a record, or is not root's alone."""
    try:
        with path.open("rb") as f:
            why = untrusted(str(path), os.fstat(f.fileno()))
            if why is not None:
                raise StateError(f"not used: {why}",
                                 "remove it: only root may write slicectl's records")
            raw = f.read(_LIMIT + 1)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise StateError(f"{shown(path)}: cannot read: {e.strerror}",
                         "run as root") from None
    if len(raw) > _LIMIT:
        raise StateError(f"{shown(path)}: larger than {_LIMIT} bytes", "remove it")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise StateError(f"{shown(path)}: not JSON ({e})",
                         "restore the IRQ affinities by hand (or reboot), then remove it"
                         ) from None
    return IsolationRecord.from_json(data, shown(path))


def record_bytes(record: IsolationRecord) -> bytes:
    """The record file's bytes."""
    return (json.dumps(record.to_json(), indent=2) + "\n").encode()
