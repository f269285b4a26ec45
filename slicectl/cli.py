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
    from slicectl.apply import ApplyOptions, Diff
    from slicectl.calendar import InForce
    from slicectl.config import Config
    from slicectl.plan import ScheduleCommand
    from slicectl.topology import Topology

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_DIFF = 0, 1, 2, 3


def _add_topology_args(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--topology", metavar="FILE",
                   help="topology JSON from `slicectl topology --json` (plan for another host)")
    g.add_argument("--sysfs", metavar="ROOT", help="sysfs root to read the topology from "
                   "(default: /sys)")
    p.add_argument("--systemd-version", metavar="N", type=_release, default=None,
                   help="the target's systemd release (default: from --topology, or this "
                   "host's); keys it cannot take are refused")
    _add_proc_root(p)


def _add_proc_root(p: argparse.ArgumentParser) -> None:
    p.add_argument("--proc-root", metavar="DIR", default=None,
                   help="proc root whose meminfo gives the memory of a kernel without NUMA "
                        "(default: the proc beside the sysfs root, /proc for /sys)")


def _release(text: str) -> int:
    """--systemd-version: a release number such as 252."""
    if not text.isdigit() or not 0 < int(text) < 100_000:
        raise argparse.ArgumentTypeError(f"{text!r} is not a systemd release such as 252")
    return int(text)


def _check_target_version(args: argparse.Namespace, config: Config, topo: Topology) -> None:
    """Refuse keys the target's systemd cannot take: --systemd-version, else the topology
    export's, else (planning for this host) the installed one."""
    from slicectl.versions import check_version

    if args.systemd_version is not None:
        check_version(config, args.systemd_version, "--systemd-version")
    elif topo.systemd_version is not None:
        check_version(config, topo.systemd_version, f"recorded in {topo.source}")
    elif not (getattr(args, "topology", None) or getattr(args, "sysfs", None)):
        from slicectl.hostinfo import systemd_version

        check_version(config, systemd_version(), "systemd on this host")


def _add_host_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--unit-dir", metavar="DIR", default=None,
                   help="unit directory slicectl owns files in (default: /etc/systemd/system)")
    p.add_argument("--cgroup-root", metavar="DIR", default="/sys/fs/cgroup",
                   help="cgroup v2 mount (default: /sys/fs/cgroup)")
    p.add_argument("--bus", metavar="ADDRESS", default=None,
                   help="D-Bus address of systemd (default: the system bus)")


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
    _add_proc_root(p)
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
    p.add_argument("--contents", action="store_true",
                   help="with --json: add each changed file's text before and after")
    p.add_argument("--templates", metavar="DIR", help="use templates from DIR (as apply will)")
    _add_host_args(p)

    p = sub.add_parser("apply", help="apply tenants.yaml to this host live (files + systemd)")
    p.add_argument("tenants", metavar="TENANTS")
    p.add_argument("--profile", metavar="P", help="apply profile P's overrides")
    p.add_argument("--dry-run", action="store_true", help="show what would change; change "
                   "nothing")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    p.add_argument("--if-in-force", action="store_true",
                   help="apply --profile P only if P is the profile the schedule has in force "
                   "now (its schedule elapsed last); else change nothing (the timers use it)")
    p.add_argument("--json", action="store_true", help="print a JSON report")
    p.add_argument("--sysfs", metavar="ROOT", help=argparse.SUPPRESS)
    p.add_argument("--topology", metavar="FILE", help=argparse.SUPPRESS)
    p.add_argument("--templates", metavar="DIR", help="use templates from DIR")
    _add_host_args(p)
    p.add_argument("--lock", metavar="FILE", default="/run/slicectl.lock",
                   help=argparse.SUPPRESS)
    p.add_argument("--control-dir", metavar="DIR", default="/run/systemd/system.control",
                   help=argparse.SUPPRESS)

    p = sub.add_parser("write", help="write a mapping (JSON or YAML) into tenants.yaml, "
                                     "keeping the file's comments")
    p.add_argument("tenants", metavar="TENANTS")
    p.add_argument("--from", dest="source", metavar="FILE", required=True,
                   help="the whole tenants document as JSON or YAML (- reads standard input)")
    p.add_argument("--check", action="store_true", help="validate and show; write nothing")
    p.add_argument("--json", action="store_true",
                   help="print {path, changed, before, after} as JSON")

    p = sub.add_parser("generate", help="write unit files and drop-ins into a directory")
    p.add_argument("tenants", metavar="TENANTS")
    _add_topology_args(p)
    p.add_argument("--profile", metavar="P")
    p.add_argument("--out", metavar="DIR", required=True,
                   help="directory laid out like /etc/systemd/system")
    p.add_argument("--templates", metavar="DIR", help="use templates from DIR")

    p = sub.add_parser("lint", help="check tenants.yaml against the seeds' recommendations")
    p.add_argument("tenants", metavar="TENANTS")
    _add_topology_args(p)
    p.add_argument("--live", action="store_true",
                   help="also inspect the running host (processes outside managed groups)")
    p.add_argument("--strict", action="store_true", help="warnings fail too (exit 1)")
    p.add_argument("--json", action="store_true", help="print findings as JSON")
    p.add_argument("--cgroup-root", metavar="DIR", default="/sys/fs/cgroup")

    p = sub.add_parser("record", help="record per-slice memory, pressure and CPU into SQLite")
    p.add_argument("--cgroup-root", metavar="DIR", default="/sys/fs/cgroup")
    p.add_argument("--db", metavar="FILE", default="/var/lib/slicectl/record.db")
    p.add_argument("--interval", metavar="S", type=float, default=60.0)
    p.add_argument("--retention", metavar="DAYS", type=float, default=14.0)
    p.add_argument("--once", action="store_true", help="take one sample and exit")
    p.add_argument("-n", "--iterations", metavar="N", type=int, default=None)

    p = sub.add_parser("recommend", help="suggest memory_max/high/low from recorded data "
                                         "(seed 001's sizing)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--db", metavar="FILE", default=None)
    g.add_argument("--samples", metavar="CSV", help="CSV with header time,unit,anon,active_file")
    p.add_argument("--json", action="store_true")
    p.add_argument("--startup", metavar="S", type=float, default=3600.0,
                   help="ignore the first S seconds of each series (default: 1 hour)")
    p.add_argument("--hold", metavar="S", type=float, default=600.0,
                   help="a level counts only if held S seconds (default: 10 minutes)")
    p.add_argument("--headroom", metavar="SIZE", default="1G")
    p.add_argument("--write", metavar="TENANTS",
                   help="write the suggestions into TENANTS (comments preserved)")

    p = sub.add_parser("tui", help="interactive view of every slice; edit and apply live")
    p.add_argument("tenants", metavar="TENANTS", nargs="?",
                   help="tenants.yaml to show on the NUMA map and to edit (omit: view only)")
    p.add_argument("--cgroup-root", metavar="DIR", default="/sys/fs/cgroup")
    p.add_argument("--interval", metavar="S", type=float, default=1.0,
                   help="refresh interval (default 1 s; never below 0.03 s, seed 002)")
    _add_topology_args(p)
    p.add_argument("--unit-dir", metavar="DIR", default=None, help=argparse.SUPPRESS)
    p.add_argument("--bus", metavar="ADDRESS", default=None, help=argparse.SUPPRESS)

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
    from slicectl.sysfs import load_topology

    topo = load_topology(getattr(args, "topology", None), getattr(args, "sysfs", None),
                         getattr(args, "proc_root", None))
    for warning in topo.warnings:  # once per command: what the topology's reader repaired
        print(f"warning: {warning}", file=sys.stderr)
    return topo


def _load_config(args: argparse.Namespace) -> Config:
    from slicectl.config import load_config

    config = load_config(args.tenants)
    if config.schedule:
        _check_schedule(config)
    return config.with_profile(getattr(args, "profile", None))


def _check_schedule(config: Config) -> None:
    """Calendar events systemd does not understand, or two profiles at one moment, are
    located errors (systemd's own parser: slicectl.calendar)."""
    from slicectl import calendar

    if not calendar.available():
        print("warning: schedule: not checked (systemd-analyze is not installed); the "
              "timers check it on the host", file=sys.stderr)
        return
    problems = calendar.schedule_problems(config)
    if problems:
        raise ConfigError(problems)


def _in_force(config: Config) -> bool:
    """Whether `config`'s profile is the one its schedule has in force now; says so if not."""
    from slicectl import calendar

    now = calendar.in_force(config.schedule, base_name=_base_name(config))
    if now.profile == config.profile:
        return True
    print(f"slicectl: profile {config.profile or 'default (the base file)'} is not in force "
          f"now: {_schedule_name(now)} is; nothing changed", file=sys.stderr)
    return False


def _base_name(config: Config) -> str | None:
    """The schedule's name for the base file: `default`, unless a profile has that name."""
    from slicectl.tenants import BASE_PROFILE

    return None if BASE_PROFILE in config.profiles else BASE_PROFILE


def _schedule_name(now: InForce) -> str:
    from time import gmtime, strftime

    name = now.profile or "the base file"
    if now.since is None:
        return f"{name} (no schedule has elapsed)"
    return f"{name} (since {strftime('%Y-%m-%d %H:%M:%S UTC', gmtime(now.since))})"


def _schedule_json(config: Config) -> dict[str, object]:
    """`plan --json`'s "schedule": each timer's next elapse, and the profile in force now."""
    from time import gmtime, strftime

    from slicectl import calendar

    def stamp(t: float | None) -> str | None:
        return None if t is None else strftime("%Y-%m-%dT%H:%M:%SZ", gmtime(t))

    now = calendar.in_force(config.schedule, base_name=_base_name(config))
    timers = []
    for profile, expressions in config.schedule.items():
        nexts = [t for e in expressions if (t := calendar.next_elapse(e)) is not None]
        timers.append({"profile": profile, "timer": f"slicectl-profile@{profile}.timer",
                       "calendars": list(expressions),
                       "next_elapse": stamp(min(nexts) if nexts else None)})
    return {"timers": timers,
            "in_force": {"profile": now.profile, "since": stamp(now.since)}}


def _schedule_command(args: argparse.Namespace) -> ScheduleCommand:
    """How the schedule's timers run slicectl on the host: this slicectl (the installed
    console script when that is what runs, else this interpreter with -m slicectl) on the
    tenants file by its absolute path."""
    import os

    from slicectl.plan import ScheduleCommand

    script = sys.argv[0]
    if os.path.basename(script) == "slicectl" and os.path.isfile(script):
        executable: tuple[str, ...] = (os.path.abspath(script),)
    else:
        executable = (sys.executable, "-m", "slicectl")
    return ScheduleCommand(executable, os.path.abspath(args.tenants))


def cmd_topology(args: argparse.Namespace) -> int:
    topo = _load_topology(args)
    if not (args.sysfs or args.topology):  # this host: record its systemd for other hosts
        from dataclasses import replace

        from slicectl.hostinfo import systemd_version

        topo = replace(topo, systemd_version=systemd_version())
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


def _options(args: argparse.Namespace) -> ApplyOptions:
    from slicectl.apply import ApplyOptions

    return ApplyOptions(
        unit_dir=Path(args.unit_dir or "/etc/systemd/system"),
        cgroup_root=Path(args.cgroup_root), bus_address=args.bus,
        control_dir=Path(getattr(args, "control_dir", "/run/systemd/system.control")),
        lock_path=Path(getattr(args, "lock", "/run/slicectl.lock")),
        templates=getattr(args, "templates", None),
        schedule_command=_schedule_command(args) if getattr(args, "tenants", None) else None,
    )


def cmd_plan(args: argparse.Namespace) -> int:
    config = _load_config(args)
    topo = _load_topology(args)
    _check_target_version(args, config, topo)
    # Offline (a plan for another host, or a fixture) unless pointed at a host's units/bus.
    live = bool(args.unit_dir or args.bus) or not (args.topology or args.sysfs)
    diff = None
    warning = ""
    if live:
        import asyncio

        from slicectl.apply import Diff, diff_plan, load_plan
        from slicectl.unitdir import UnitDir

        # Placed from where apply left tenants (the unit dir's manifest), so plan shows
        # exactly what apply will do.
        options = _options(args)
        plan, files = load_plan(config, topo, options)
        try:
            diff = asyncio.run(diff_plan(plan, files, options))
        except SlicectlError as e:
            if args.exit_code:
                raise
            # No systemd to ask (not root, a container, a build host): compare files only.
            warning = f"live state not compared: {e.message}"
            diff = Diff(files=UnitDir(options.unit_dir).diff(files))
    else:
        from slicectl.plan import build_plan

        plan = build_plan(config, topo)
    if args.json:
        import json

        data = plan.to_json()
        if config.schedule:
            data["schedule"] = _schedule_json(config)
        if diff is not None:
            data["changes"] = _diff_json(diff)
            if args.contents:
                data["changes"]["files"]["contents"] = _contents(diff, files, options.unit_dir)
        print(json.dumps(data, indent=2))
    else:
        from slicectl import views

        out = views.console()
        out.print(views.plan_table(plan))
        if config.schedule:
            schedule = _schedule_json(config)
            out.print(views.schedule_table(schedule))
        out.print(views.plan_files_table(plan))
        out.print(views.numa_map(topo, plan.layout))
        for note in plan.layout.notes:
            print(f"note: {note}")
        if diff is not None:
            unit_dir = Path(args.unit_dir or "/etc/systemd/system")
            lines = diff.lines(unit_dir)
            print("Changes on this host:" if lines else "This host matches the plan.")
            for line in lines:
                print(f"  {line}")
            for note in diff.notes:
                print(f"  note: {note}")
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    if args.exit_code and diff is not None and diff.changed:
        return EXIT_DIFF
    return EXIT_OK


def _diff_json(diff: Diff) -> dict[str, object]:
    from slicectl.live import format_live

    return {
        "changed": diff.changed,
        "files": {"created": list(diff.files.created), "updated": list(diff.files.updated),
                  "removed": list(diff.files.removed)},
        "properties": [{"unit": c.unit, "property": c.prop,
                        "live": format_live(c.prop, c.live),
                        "desired": format_live(c.prop, c.want), "source": c.source}
                       for c in diff.props],
        "reload": diff.reload, "start": diff.start, "stop": diff.stop, "notes": diff.notes,
    }


def _contents(diff: Diff, files: dict[str, str], unit_dir: Path) -> dict[str, dict[str, object]]:
    """`plan --json --contents`: each changed file's text before and after (None: absent)."""

    def text(rel: str) -> str | None:
        try:
            return (unit_dir / rel).read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return None

    changed = diff.files.created + diff.files.updated + diff.files.removed
    return {rel: {"before": text(rel), "after": files.get(rel)} for rel in changed}


def cmd_apply(args: argparse.Namespace) -> int:
    import asyncio
    import json

    from slicectl.apply import apply_plan

    config = _load_config(args)
    if args.if_in_force and not _in_force(config):
        return EXIT_OK
    topo = _load_topology(args)
    options = _options(args)
    ask = sys.stdin.isatty() and not args.yes and not args.dry_run and not args.json

    def confirm(diff: Diff) -> bool:
        print("slicectl will make these changes:")
        for line in diff.lines(options.unit_dir):
            print(f"  {line}")
        answer = input("Apply them? [y/N] ").strip().lower()
        return answer in ("y", "yes")

    def progress(line: str) -> None:
        print(f"slicectl: {line}", file=sys.stderr, flush=True)

    report = asyncio.run(apply_plan(config, topo, options, dry_run=args.dry_run,
                                    confirm=confirm if ask else None,
                                    progress=None if args.json else progress))
    if args.json:
        print(json.dumps({
            "dry_run": args.dry_run, "profile": config.profile,
            "changes": _diff_json(report.diff), "reloaded": report.reloaded,
            "started": report.started, "stopped": report.stopped,
            "set_live": [{"unit": c.unit, "property": c.prop} for c in report.set_live],
            "verified": report.verified, "notes": report.notes,
        }, indent=2))
        return EXIT_OK
    lines = report.diff.lines(options.unit_dir)
    if not report.diff.changed:
        print("Up to date: files and live state match the plan (nothing changed, no reload).")
    elif args.dry_run:
        print("Would change (dry run, nothing changed):")
        for line in lines:
            print(f"  {line}")
    else:
        for line in lines:
            print(f"  {line}")
        print(f"Applied{' profile ' + config.profile if config.profile else ''}: "
              f"{len(report.diff.files.created) + len(report.diff.files.updated)} file(s) "
              f"written, {len(report.diff.files.removed)} removed, "
              f"{'reloaded, ' if report.reloaded else ''}{len(report.started)} slice(s) "
              f"started, {len(report.set_live)} live change(s); verified "
              f"{len(report.verified)} unit(s) in their cgroups.")
    for note in report.notes:
        print(f"note: {note}")
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
    from slicectl.apply import plan_from_manifest
    from slicectl.render import render
    from slicectl.unitdir import Manifest, UnitDir

    config = _load_config(args)
    topo = _load_topology(args)
    _check_target_version(args, config, topo)
    unit_dir = UnitDir(Path(args.out))
    plan = plan_from_manifest(config, topo, unit_dir.root, _schedule_command(args))
    files = render(plan, args.templates)
    changes, _ = unit_dir.write(files, Manifest(placements=plan.placements(),
                                                source=Path(config.path).name))
    _print_changes(changes, args.out.rstrip("/"))
    for note in plan.layout.notes:
        print(f"note: {note}", file=sys.stderr)
    return EXIT_OK


def cmd_write(args: argparse.Namespace) -> int:
    from slicectl.tenantsfile import run_write

    return run_write(args.tenants, args.source, args.check, args.json)


def cmd_status(args: argparse.Namespace) -> int:
    from slicectl.monitor import run_status

    return run_status(Path(args.cgroup_root), args.json, args.interval)


def cmd_top(args: argparse.Namespace) -> int:
    from slicectl.monitor import run_top

    return run_top(Path(args.cgroup_root), args.interval, args.iterations)


def cmd_tui(args: argparse.Namespace) -> int:
    from slicectl.tui import run_tui

    return run_tui(args.tenants, Path(args.cgroup_root), args.interval, args.sysfs,
                   args.topology, options=_options(args),
                   proc_root=Path(args.proc_root) if args.proc_root else None)


def cmd_lint(args: argparse.Namespace) -> int:
    from slicectl.lint import run_lint

    return run_lint(args.tenants, args.topology, args.sysfs, args.live, args.strict,
                    args.cgroup_root, args.proc_root, args.json)


def cmd_record(args: argparse.Namespace) -> int:
    from slicectl.record import run_record

    return run_record(args.cgroup_root, args.db, args.interval, args.retention, args.once,
                      args.iterations)


def cmd_recommend(args: argparse.Namespace) -> int:
    from slicectl.recommend import run_recommend

    return run_recommend(args.db, args.samples, args.json, args.startup, args.hold,
                         args.headroom, args.write)


COMMANDS = {
    "topology": cmd_topology, "validate": cmd_validate, "plan": cmd_plan,
    "generate": cmd_generate, "apply": cmd_apply, "status": cmd_status, "top": cmd_top,
    "lint": cmd_lint, "record": cmd_record, "recommend": cmd_recommend, "tui": cmd_tui,
    "write": cmd_write,
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
