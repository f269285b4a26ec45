"""Where slicectl looks and writes on a host by default, and its other defaults: defined once.

Every reader takes a root (tests and other hosts' dumps point elsewhere); these are the
values the CLI, apply, the TUI, the readers and the units in units/ use when the user names
none. Plain strings and numbers (and the rule that picks the system bus), importing nothing,
so that `slicectl --help` reads them for free (pathlib and typing would add a third to its
start-up); callers make Paths.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Mapping

# Trees slicectl reads.
SYSFS = "/sys"
CGROUP_ROOT = "/sys/fs/cgroup"
PROC = "/proc"

# Where slicectl writes on a host (apply, plan's diff, the TUI).
UNIT_DIR = "/etc/systemd/system"
# slicectl's manifest of the files it wrote in a unit directory (and in the placement record).
MANIFEST_NAME = ".slicectl-manifest.json"
# systemd's own runtime drop-ins (`set-property --runtime`, SetUnitProperties runtime=true).
CONTROL_DIR = "/run/systemd/system.control"
# where a persistent `systemctl set-property` (without --runtime) leaves its drop-ins
ETC_CONTROL_DIR = "/etc/systemd/system.control"

# The system bus: $DBUS_SYSTEM_BUS_ADDRESS, else the D-Bus specification's default, the one
# dbus-fast connects to (/var/run is /run on a systemd host: the same socket).
SYSTEM_BUS_ENV = "DBUS_SYSTEM_BUS_ADDRESS"
SYSTEM_BUS = "unix:path=/var/run/dbus/system_bus_socket"


def system_bus_address(address: str | None, environ: Mapping[str, str]) -> str:
    """The bus slicectl talks to: `address` (--bus) if given, else the system bus as
    `environ` (os.environ) names it, else the default."""
    return address or environ.get(SYSTEM_BUS_ENV, SYSTEM_BUS)


# status, top and the TUI: one refresh a second (never below 0.03 s in the TUI, Togashi et al.).
MONITOR_INTERVAL_S = 1.0

# record: one round a minute into SQLite.
RECORD_DB = "/var/lib/slicectl/record.db"
RECORD_INTERVAL_S = 60.0
# 001: size over a stable period of at least a week; two weeks keep one full week after a
# restart or a deployment has been skipped as start-up.
RECORD_RETENTION_DAYS = 14.0

# exporter: 19116 is not in Prometheus' default port allocations (docs/metrics.md).
EXPORTER_LISTEN = ":19116"

# recommend (LinkedIn, 2016, rec. 2).
RECOMMEND_STARTUP_S = 3600.0  # no measurements during the application's start-up
RECOMMEND_HOLD_S = 600.0  # consider only values that last ~10 minutes
RECOMMEND_HEADROOM = 1 << 30  # bytes (1G): LinkedIn adds 1 GB for page cache beyond active_file

# balance: the balancer's runtime state (tmpfs: a reboot forgets it, as it forgets the moves).
BALANCE_STATE = "/run/slicectl/balance.json"
# apply: what it changed to keep IRQs and unbound work off isolated CPUs, recorded before the
# change (tmpfs: a reboot forgets it, as the kernel forgets the values it records).
ISOLATION_RECORD = "/run/slicectl/isolation.json"
# systemd's runtime unit directory: irqbalance's drop-in for isolated CPUs (gone at reboot).
RUNTIME_UNIT_DIR = "/run/systemd/system"
