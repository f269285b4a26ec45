"""Where slicectl looks and writes on a host by default: defined once, here.

Every reader takes a root (tests and other hosts' dumps point elsewhere); these are the
defaults the CLI, the TUI and the units in units/ use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

SYSFS_ROOT: Final = Path("/sys")
PROC_ROOT: Final = Path("/proc")
CGROUP_ROOT: Final = Path("/sys/fs/cgroup")
UNIT_DIR: Final = Path("/etc/systemd/system")
# `systemctl set-property --runtime` and runtime SetUnitProperties write here.
CONTROL_DIR: Final = Path("/run/systemd/system.control")
APPLY_LOCK: Final = Path("/run/slicectl.lock")
RECORD_DB: Final = Path("/var/lib/slicectl/record.db")
