"""What the verbs share: exit codes, and reading tenants.yaml, the topology and host options.

Imported on every start-up, so it imports nothing but the standard library's cheapest parts;
each helper imports what it reads with inside itself.
"""

from __future__ import annotations

from slicectl.core import defaults

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up, BENCHMARKS.md)
if TYPE_CHECKING:
    from argparse import Namespace

    from slicectl.apply.applier import ApplyOptions
    from slicectl.core.config.config import Config
    from slicectl.core.placement.topology import Topology
    from slicectl.host.cgroup.mounts import Mount

# Every exit code of slicectl, with what it means: the man pages' EXIT STATUS is this table.
# An error exits with its class's exit_code (slicectl.core.errors): EXIT_ERROR, or EXIT_USAGE
# (the core cannot import this front end; tests/cli/test_common.py holds the two together).
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_DIFF, EXIT_OFFLINE = 0, 1, 2, 3, 4
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command Ctrl-C stopped
EXIT_STATUS = (
    (EXIT_OK, "success"),
    (EXIT_ERROR, "an error (the message says what and hints at a fix)"),
    (EXIT_USAGE, "a usage error"),
    (EXIT_DIFF, "plan --exit-code: the files or the live state differ from the plan"),
    # planned for a topology only (no host's files or systemd to compare with): neither
    # "matches" (0) nor "differs" (3)
    (EXIT_OFFLINE, "plan --exit-code: nothing was compared (planned for another host)"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C)"),
)


def load_topology(args: Namespace) -> Topology:
    """The topology of `--topology FILE`, else of the sysfs tree `--sysfs ROOT` (or /sys);
    prints, once, what the topology's reader repaired."""
    import sys

    from slicectl.host.topology.sysfs import load_topology as load

    topo = load(getattr(args, "topology", None), getattr(args, "sysfs", None),
                getattr(args, "proc_root", None))
    for warning in topo.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return topo


def load_config(args: Namespace, *, contradictions_are_errors: bool = True) -> Config:
    """tenants.yaml of `args.tenants` with every check, and `--profile P`'s overrides
    (`contradictions_are_errors`: as slicectl.core.config.config.parse_config's)."""
    import sys

    from slicectl.host.planning import load_tenants

    return load_tenants(args.tenants, getattr(args, "profile", None),
                        warn=lambda line: print(f"warning: {line}", file=sys.stderr),
                        contradictions_are_errors=contradictions_are_errors)


def require_unified(args: Namespace) -> Mount | None:
    """Refuse a host that runs cgroup v1 or the hybrid hierarchy at `--cgroup-root` (a
    HierarchyError naming what is mounted there); every verb that touches the live host calls
    it first. Returns the cgroup2 mount (None: the root is a fixture tree, no mount point)."""
    from slicectl.host.cgroup.mounts import unified_mount

    return unified_mount(getattr(args, "cgroup_root", None) or defaults.CGROUP_ROOT,
                         getattr(args, "proc_root", None) or defaults.PROC)


def _lock_timeout(args: Namespace) -> float:
    from slicectl.host.files.lock import LOCK_TIMEOUT

    timeout = getattr(args, "lock_timeout", None)
    return LOCK_TIMEOUT if timeout is None else float(timeout)


def apply_options(args: Namespace, config: Config | None = None) -> ApplyOptions:
    """Where plan, apply and the TUI act on the host: unit dir, cgroups, bus, lock; the
    schedule's timers run the `target:` of `config` where it declares one."""
    from pathlib import Path

    from slicectl.apply.applier import ApplyOptions
    from slicectl.cli.schedule import schedule_command

    return ApplyOptions(
        unit_dir=Path(args.unit_dir or defaults.UNIT_DIR),
        cgroup_root=Path(args.cgroup_root), bus_address=args.bus,
        control_dir=Path(getattr(args, "control_dir", defaults.CONTROL_DIR)),
        lock_timeout=_lock_timeout(args),
        templates=getattr(args, "templates", None),
        schedule_command=schedule_command(args, config) if getattr(args, "tenants", None)
        else None,
        force=getattr(args, "force", False),
        balance_state=Path(getattr(args, "balance_state", defaults.BALANCE_STATE)),
        repack=getattr(args, "repack", False),
    )
