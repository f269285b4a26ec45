"""The `slicectl` command line: argparse, lazy imports, one error handler.

`--help` and `generate` must not import textual or dbus_fast (a test checks); every verb
imports what it needs inside its function. Exit codes: 0 ok, 1 error, 2 usage, 3
`plan --exit-code` found differences.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from slicectl import __version__
from slicectl.errors import ConfigError, SlicectlError

if TYPE_CHECKING:
    from slicectl.config import Config
    from slicectl.topology import Topology

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_DIFF = 0, 1, 2, 3


def _add_topology_args(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--topology", metavar="FILE",
                   help="topology JSON from `slicectl topology --json` (plan for another host)")
    g.add_argument("--sysfs", metavar="ROOT", help="sysfs root to read the topology from "
                   "(default: /sys)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every verb (DESIGN §8)."""
    parser = argparse.ArgumentParser(
        prog="slicectl",
        description="Place tenants on NUMA nodes as systemd slices, apply them live, and "
                    "watch their CPU load and memory pressure.",
    )
    parser.add_argument("--version", action="version", version=f"slicectl {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")

    p = sub.add_parser("topology", help="show the host's NUMA topology (or export it as JSON)")
    p.add_argument("--sysfs", metavar="ROOT", default=None, help="sysfs root (default: /sys)")
    p.add_argument("--topology", metavar="FILE", help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", help="print the topology as JSON")

    p = sub.add_parser("validate", help="check tenants.yaml and list every problem")
    p.add_argument("tenants", metavar="TENANTS", help="path to tenants.yaml")

    p = sub.add_parser("plan", help="show where each tenant goes and what changes")
    p.add_argument("tenants", metavar="TENANTS")
    _add_topology_args(p)
    p.add_argument("--profile", metavar="P", help="apply profile P's overrides")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.add_argument("--exit-code", action="store_true",
                   help="exit 3 when the host differs from the plan, 0 when it matches")
    p.add_argument("--unit-dir", metavar="DIR", default=None,
                   help="compare generated files with DIR (default: /etc/systemd/system "
                        "on a live host)")

    p = sub.add_parser("generate", help="write unit files and drop-ins into a directory")
    p.add_argument("tenants", metavar="TENANTS")
    _add_topology_args(p)
    p.add_argument("--profile", metavar="P")
    p.add_argument("--out", metavar="DIR", required=True,
                   help="directory laid out like /etc/systemd/system")
    p.add_argument("--templates", metavar="DIR", help="use templates from DIR")

    p = sub.add_parser("status", help="per-slice CPU, memory and pressure, two samples ~1 s "
                                      "apart")
    p.add_argument("--cgroup-root", metavar="DIR", default="/sys/fs/cgroup")
    p.add_argument("--json", action="store_true")
    p.add_argument("--interval", metavar="S", type=float, default=1.0)

    p = sub.add_parser("top", help="live per-slice load with limits, pressure and throttling")
    p.add_argument("--cgroup-root", metavar="DIR", default="/sys/fs/cgroup")
    p.add_argument("--interval", metavar="S", type=float, default=1.0)
    p.add_argument("-n", "--iterations", metavar="N", type=int, default=None)
    return parser


def _load_topology(args: argparse.Namespace) -> Topology:
    if getattr(args, "topology", None):
        from slicectl.topology import load_topology_file

        return load_topology_file(args.topology)
    from slicectl.sysfs import read_topology

    return read_topology(args.sysfs or "/sys")


def _load_config(args: argparse.Namespace) -> Config:
    from slicectl.config import load_config

    return load_config(args.tenants).with_profile(getattr(args, "profile", None))


def cmd_topology(args: argparse.Namespace) -> int:
    topo = _load_topology(args)
    if args.json:
        import json

        print(json.dumps(topo.to_json(), indent=2))
        return EXIT_OK
    from slicectl import views

    out = views.console()
    out.print(views.topology_summary(topo))
    out.print(views.topology_table(topo))
    out.print(views.numa_map(topo))
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    config = _load_config(args)
    profiles = f", {len(config.profiles)} profile(s)" if config.profiles else ""
    print(f"{args.tenants}: ok ({len(config.tenants)} tenant(s){profiles})")
    return EXIT_OK


def cmd_plan(args: argparse.Namespace) -> int:
    from slicectl.plan import build_plan
    from slicectl.unitdir import UnitDir

    config = _load_config(args)
    topo = _load_topology(args)
    unit_dir = UnitDir(Path(args.unit_dir)) if args.unit_dir else None
    previous = unit_dir.manifest().placements if unit_dir else None
    plan = build_plan(config, topo, previous)
    changes = None
    if unit_dir is not None:
        from slicectl.render import render

        changes = unit_dir.diff(render(plan))
    if args.json:
        import json

        data = plan.to_json()
        if changes is not None:
            data["files"] = {"created": list(changes.created), "updated": list(changes.updated),
                             "removed": list(changes.removed),
                             "unchanged": list(changes.unchanged)}
        print(json.dumps(data, indent=2))
    else:
        from slicectl import views

        out = views.console()
        out.print(views.plan_table(plan))
        out.print(views.plan_files_table(plan))
        out.print(views.numa_map(topo, plan.layout))
        if changes is not None:
            _print_changes(changes, args.unit_dir)
    if args.exit_code and changes is not None and changes.changed:
        return EXIT_DIFF
    return EXIT_OK


def _print_changes(changes: object, where: str) -> None:
    from slicectl.unitdir import FileChanges

    assert isinstance(changes, FileChanges)
    for label, paths in (("create", changes.created), ("update", changes.updated),
                         ("remove", changes.removed)):
        for path in paths:
            print(f"  {label:7} {where}/{path}")
    if not changes.changed:
        print(f"  {where}: up to date ({len(changes.unchanged)} file(s))")


def cmd_generate(args: argparse.Namespace) -> int:
    from slicectl.plan import build_plan
    from slicectl.render import render
    from slicectl.unitdir import Manifest, UnitDir

    config = _load_config(args)
    topo = _load_topology(args)
    unit_dir = UnitDir(Path(args.out))
    plan = build_plan(config, topo, unit_dir.manifest().placements)
    files = render(plan, args.templates)
    changes, _ = unit_dir.write(files, Manifest(placements=plan.placements(),
                                                source=Path(config.path).name))
    _print_changes(changes, args.out.rstrip("/"))
    return EXIT_OK


def cmd_status(args: argparse.Namespace) -> int:
    from slicectl.monitor import run_status

    return run_status(Path(args.cgroup_root), args.json, args.interval)


def cmd_top(args: argparse.Namespace) -> int:
    from slicectl.monitor import run_top

    return run_top(Path(args.cgroup_root), args.interval, args.iterations)


COMMANDS = {
    "topology": cmd_topology, "validate": cmd_validate, "plan": cmd_plan,
    "generate": cmd_generate, "status": cmd_status, "top": cmd_top,
}


def report_error(e: SlicectlError) -> None:
    """Print an error and its hint(s) to stderr (no traceback)."""
    if isinstance(e, ConfigError):
        for p in e.problems:
            print(f"error: {p}", file=sys.stderr)
            if p.hint:
                print(f"  hint: {p.hint}", file=sys.stderr)
        if len(e.problems) > 1:
            print(f"{len(e.problems)} problems found", file=sys.stderr)
        return
    print(f"error: {e.message}", file=sys.stderr)
    if e.hint:
        print(f"  hint: {e.hint}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `slicectl` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.verb is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        return COMMANDS[args.verb](args)
    except SlicectlError as e:
        if args.debug:
            raise
        report_error(e)
        return e.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as e:  # the last line of defence: no traceback without --debug
        if args.debug:
            raise
        print(f"error: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        print("  hint: run again with --debug for a traceback, and please report it",
              file=sys.stderr)
        return EXIT_ERROR
