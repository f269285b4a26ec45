"""tenants.yaml files no front end may read, and what each must say of them: every front end
reads the file through slicectl.host.files.tenantsfile, so the CLI's verbs and the TUI refuse
them with the same located message and hint."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from slicectl.core.config.yamldoc import MAX_TEXT


def _bytes(raw: bytes) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        path.unlink(missing_ok=True)
        path.write_bytes(raw)
    return make


def _fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


# name: (how to make the file at a path, the message after the path, the hint)
UNREADABLE: dict[str, tuple[Callable[[Path], None], str, str]] = {
    "not UTF-8": (_bytes(b"version: 1\ntenants:\n  db1: {cpus: 2, description: caf\xe9}\n"),
                  ":3: is not UTF-8 text (byte 0xe9 in column 34)", "save the file as UTF-8"),
    "a NUL": (_bytes(b"version: 1\n\ntenants: \x00\n"), ":3: contains a NUL character",
              "remove it; tenants.yaml is text"),
    "too large": (_bytes(b"#" * (MAX_TEXT + 1)),
                  ": is larger than 16 MiB; slicectl reads no more than that",
                  "check that this is tenants.yaml"),
    "a FIFO": (_fifo, ": cannot read: it is a FIFO, not a regular file",
               "give the path of tenants.yaml itself"),
}
