"""`python -m slicectl.tui [TENANTS] [--cgroup-root DIR] [--interval S]`: the TUI on its own."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from slicectl.core import defaults
from slicectl.core.errors import SlicectlError


def main(argv: list[str] | None = None) -> int:
    """Parse the same flags as `slicectl tui` and run it."""
    from slicectl.cli import report_error
    from slicectl.tui import run_tui

    p = argparse.ArgumentParser(prog="python -m slicectl.tui")
    p.add_argument("tenants", metavar="TENANTS", nargs="?")
    p.add_argument("--cgroup-root", metavar="DIR", default=defaults.CGROUP_ROOT)
    p.add_argument("--interval", metavar="S", type=float, default=1.0)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--sysfs", metavar="ROOT")
    g.add_argument("--topology", metavar="FILE")
    p.add_argument("--proc-root", metavar="DIR", default=defaults.PROC)
    args = p.parse_args(argv)
    try:
        return run_tui(args.tenants, Path(args.cgroup_root), args.interval, args.sysfs,
                       args.topology, proc_root=Path(args.proc_root))
    except SlicectlError as e:
        report_error(e)
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main())
