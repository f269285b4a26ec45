"""A command run on a real pseudo-terminal (the pty module): what it writes, as a user would see
it, and keys typed when a prompt shows. For the prompts of the CLI (apply's confirmation)."""

from __future__ import annotations

import os
import select
import subprocess
import time
from collections.abc import Mapping, Sequence


def run_in_pty(argv: Sequence[str], answers: Mapping[str, bytes],
               env: Mapping[str, str] | None = None, timeout: float = 60) -> tuple[int, str]:
    """Run `argv` with its stdin, stdout and stderr on a new pty; when the text of a key of
    `answers` shows, type its value (b"\\x04" is Ctrl-D: end of input). Returns the exit
    status and everything the terminal showed (line ends as "\\n")."""
    master, slave = os.openpty()
    try:
        proc = subprocess.Popen(list(argv), stdin=slave, stdout=slave, stderr=slave,
                                env=None if env is None else dict(env),
                                start_new_session=True)
    finally:
        os.close(slave)
    shown, pending = b"", dict(answers)
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f"{argv[:3]}…: still running after {timeout} s; it showed:\n" \
                             + shown.decode(errors="replace")
            ready, _, _ = select.select([master], [], [], left)
            if not ready:
                continue
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: every process that had the terminal open closed it
                data = b""
            if not data:
                break
            shown += data
            for prompt in [p for p in pending if p.encode() in shown]:
                os.write(master, pending.pop(prompt))
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return code, shown.decode(errors="replace").replace("\r\n", "\n")
