"""Facts about this host that are not in sysfs (an edge: it reads systemd's installation, or
runs a command)."""

from __future__ import annotations

import os
import subprocess

from slicectl.core.properties.versions import parse_version

# Where distributions install systemd's private shared library, named after its release
# (Debian and Ubuntu: /usr/lib/systemd/libsystemd-shared-252.so; Fedora and RHEL: lib64).
_SHARED_LIBRARY_FOLDERS = ("/usr/lib/systemd", "/usr/lib64/systemd", "/lib/systemd")
_SHARED_LIBRARY = "libsystemd-shared-"


def systemd_version(library_folders: tuple[str, ...] = _SHARED_LIBRARY_FOLDERS) -> int | None:
    """The release of the systemd installed here, or None when there is none (a build host
    without systemd). Read from the name of systemd's shared library when there is exactly
    one (no process to start: the generator asks at every boot), else `systemctl --version`."""
    found: set[int] = set()
    for folder in library_folders:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        found.update(v for name in names if name.startswith(_SHARED_LIBRARY)
                     and name.endswith(".so")
                     and (v := parse_version(name[len(_SHARED_LIBRARY):])) is not None)
    if len(found) == 1:
        return found.pop()
    try:
        proc = subprocess.run(["systemctl", "--version"], capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    first = proc.stdout.partition("\n")[0]
    return parse_version(first) if proc.returncode == 0 else None
