"""Facts about this host that are not in sysfs (an edge: it runs a command)."""

from __future__ import annotations

import subprocess

from slicectl.core.versions import parse_version


def systemd_version() -> int | None:
    """The release of the systemd installed here (`systemctl --version`), or None when
    there is none (a build host without systemd)."""
    try:
        proc = subprocess.run(["systemctl", "--version"], capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    first = proc.stdout.partition("\n")[0]
    return parse_version(first) if proc.returncode == 0 else None
