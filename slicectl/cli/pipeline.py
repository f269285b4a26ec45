"""The verbs of the pipeline: topology, validate, plan, generate, apply (DESIGN §1, §5, §6).

Each imports what it needs inside itself: `--help` and `generate` never load textual or
dbus_fast (tests/test_cli.py checks).

Why this module runs past 400 lines: the five verbs of the pipeline share their loading, their
host diff and their printing of plans and changes; split apart they would import each other.
"""

from __future__ import annotations

import sys

from slicectl.cli.common import (
    EXIT_DIFF,
    EXIT_OFFLINE,
    EXIT_OK,
    EXIT_USAGE,
    apply_options,
    load_config,
    load_topology,
    require_unified,
)
from slicectl.cli.schedule import (
    check_target_version,
    in_force,
    local_paths_note,
    schedule_command,
)
from slicectl.core import defaults

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from argparse import Namespace
    from pathlib import Path

    from slicectl.apply.applier import ApplyOptions, ApplyReport, Diff
    from slicectl.core.config.config import Config
    from slicectl.core.placement.topology import Topology
    from slicectl.core.plan import Plan
    from slicectl.host.files.unitdir import FileChanges


def cmd_topology(args: Namespace) -> int:
    """`slicectl topology`: the host's NUMA topology, as tables or JSON (`--live`: the live
    NUMA map)."""
    if args.live:
        return run_live_map(args)
    if args.tenants or args.profile:
        print("error: --tenants and --profile go with --live\n"
              "  hint: slicectl topology --live --tenants FILE [--profile P]", file=sys.stderr)
        return EXIT_USAGE
    topo = load_topology(args)
    if not (args.sysfs or args.topology):  # this host: record its systemd for other hosts
        from dataclasses import replace

        from slicectl.host.systemd.hostinfo import systemd_version

        topo = replace(topo, systemd_version=systemd_version())
    if args.json:
        import json

        print(json.dumps(topo.to_json(), indent=2))
        return EXIT_OK

    from slicectl.views import maps, page, tables

    page.show(tables.topology_summary(topo), tables.topology_table(topo),
              tables.cache_table(topo), maps.numa_map(topo))
    return EXIT_OK


def run_live_map(args: Namespace) -> int:
    """`slicectl topology --live`: the live map (rich or --json), beside the plan of
    --tenants when given."""
    from pathlib import Path

    from slicectl.core.monitor.metrics import MetricsMemo
    from slicectl.core.monitor.numa_map import build_live_map, default_tenant_of, live_map_json
    from slicectl.host.cgroup.readers import cpu_overrides
    from slicectl.host.cgroup.sampler import Sampler

    require_unified(args)
    topo = load_topology(args)
    plan_sets = None
    housekeeping: frozenset[int] = frozenset()
    overrides: dict[str, str] = {}
    parent = "tenants"
    if args.tenants:
        from slicectl.host.planning import plan_for_host

        config = load_config(args)
        parent = config.slice
        layout = plan_for_host(config, topo, Path(defaults.UNIT_DIR)).layout
        plan_sets = {p.tenant: p.cpus for p in layout.tenants}
        housekeeping = layout.housekeeping
        overrides = cpu_overrides({t.name: config.slice_unit(t.name) for t in config.tenants},
                                  (defaults.CONTROL_DIR, defaults.ETC_CONTROL_DIR))
    with Sampler(Path(args.cgroup_root)) as sampler:
        metrics = MetricsMemo().compute(None, sampler.sample())
    live = build_live_map(topo, metrics, tenant_of=default_tenant_of(parent), plan=plan_sets,
                          plan_housekeeping=housekeeping, overrides=overrides)
    if args.json:
        import json

        print(json.dumps(live_map_json(live), indent=2))
        return EXIT_OK
    from slicectl.views import maps, page

    page.show(maps.live_map_view(live))
    return EXIT_OK


def cmd_validate(args: Namespace) -> int:
    """`slicectl validate`: ok, or every problem of tenants.yaml (raised as ConfigError);
    with --topology or --sysfs, the placement of the base file and of every profile too."""
    config = load_config(args)
    profiles = f", {len(config.profiles)} profile(s)" if config.profiles else ""
    if not (args.topology or args.sysfs):
        target = ""
        if args.systemd_version is not None:  # the keys, without placement
            from slicectl.core.properties.versions import check_version

            check_version(config, args.systemd_version, "--systemd-version")
            target = f", keys checked for systemd {args.systemd_version}"
        print(f"{args.tenants}: ok ({len(config.tenants)} tenant(s){profiles}{target}; file "
              "only: give --topology or --sysfs to check placement)")
        return EXIT_OK
    from slicectl.core.plan import build_plan

    topo = load_topology(args)
    check_target_version(args, config, topo)
    for name in (None, *config.profiles):
        build_plan(config.with_profile(name), topo, shares=False)
    print(f"{args.tenants}: ok ({len(config.tenants)} tenant(s){profiles}, placed on "
          f"{topo.source})")
    return EXIT_OK


def _host_diff(args: Namespace, config: Config, topo: Topology) -> tuple[
        Plan, Diff, str, dict[str, str]]:
    """The plan placed from where apply left the tenants, the host's differences from it,
    a warning when systemd could not be asked (then only the files are compared), and the
    plan's files."""
    import asyncio

    from slicectl.apply.applier import Diff, diff_plan, load_plan
    from slicectl.core.errors import SlicectlError
    from slicectl.host.files.unitdir import UnitDir

    options = apply_options(args, config)
    from slicectl.apply import generator_mode
    from slicectl.cli.generator import paths_of

    paths = paths_of(args)
    if args.unit_dir is None and generator_mode.enabled(paths):
        from dataclasses import replace  # the generator's units are the ones in force

        options = replace(options, unit_dir=paths.output)
    plan, files = load_plan(config, topo, options)
    if not (args.topology or args.sysfs):  # this host: count its actual competitors for CPU
        plan = _live_shares(args, config, topo, plan)
    elif args.bus is None:  # another host's units (a config repo): no live state is theirs
        return plan, Diff(files=UnitDir(options.unit_dir).diff(files, force=True)), (
            f"files only: compared {options.unit_dir} with what generate writes (a plan for "
            "--topology or --sysfs asks no systemd; --bus names one to ask)"), files
    try:
        return plan, asyncio.run(diff_plan(plan, files, options)), "", files
    except SlicectlError as e:
        # No systemd to ask (a config repo's CI, a build host, a container, not root): compare
        # the files alone, and say so. --exit-code then says whether the unit directory holds
        # what generate would write; only a bus named with --bus must answer.
        if args.exit_code and not _no_bus(e, args):
            raise
        diff = Diff(files=UnitDir(options.unit_dir).diff(files, force=True))
        return plan, diff, (f"live state not compared: {e.message}; compared the files in "
                            f"{options.unit_dir} only"), files


def _no_bus(error: Exception, args: Namespace) -> bool:
    """Whether `error` says there is no system bus to ask (none was named with --bus)."""
    from slicectl.core.errors import SystemdError

    return (args.bus is None and isinstance(error, SystemdError)
            and error.dbus_error == "org.freedesktop.DBus.Error.Disconnected")


def _live_shares(args: Namespace, config: Config, topo: Topology, plan: Plan) -> Plan:
    """The plan with each tenant's guaranteed CPU against this host's actual competitors
    (its cgroup tree); without a cgroup v2 tree the standard ones stay assumed, and say so."""
    from dataclasses import replace

    from slicectl.core.errors import SlicectlError
    from slicectl.core.shares.contention import predict_shares
    from slicectl.host.cgroup.readers import read_competition

    try:
        competition = read_competition(config, args.cgroup_root, args.proc_root or defaults.PROC)
    except SlicectlError as e:
        print(f"warning: {e.message}", file=sys.stderr)
        return plan
    return replace(plan, shares=predict_shares(config, plan.layout, topo, competition))


def _print_plan(args: Namespace, config: Config, plan: Plan, topo: Topology,
                diff: Diff | None, files: dict[str, str]) -> None:
    from slicectl.cli.schedule import schedule_json

    if args.json:
        import json

        data = plan.to_json()
        if config.schedule:
            data["schedule"] = schedule_json(config)
        if diff is not None:
            data["changes"] = diff_json(diff)
            if args.contents:
                data["changes"]["files"]["contents"] = _contents(
                    diff, files, args.unit_dir or defaults.UNIT_DIR)
        print(json.dumps(data, indent=2))
        return
    from pathlib import Path

    from slicectl.apply.host_diff import balanced_line
    from slicectl.views import maps, page, tables

    schedule = [tables.schedule_table(schedule_json(config))] if config.schedule else []
    page.show(tables.plan_table(plan, page.output_width()), *schedule,
              tables.plan_files_table(plan), maps.numa_map(topo, plan.layout))
    _print_notes(plan, diff)
    if diff is not None:
        lines = diff.lines(Path(args.unit_dir or defaults.UNIT_DIR), balanced=False)
        print("Changes on this host:" if lines else "This host matches the plan.")
        for line in lines:
            print(f"  {line}")
        if diff.balanced:
            print("Balanced by slicectl balance (not drift; apply returns them to their "
                  "declared CPUs):")
        for c in diff.balanced:
            print(f"  {balanced_line(c)}")
        for note in diff.notes:
            print(f"  note: {note}")


def _explain(args: Namespace, config: Config, plan: Plan, topo: Topology) -> int:
    """`plan --explain TENANT`: why the tenant got its CPUs and memory, one reason a line."""
    from slicectl.core.errors import SlicectlError
    from slicectl.core.placement.explain import explain

    names = [t.name for t in config.tenants]
    if args.explain not in names:
        raise SlicectlError(f"--explain {args.explain}: no such tenant in {args.tenants}",
                            f"tenants: {', '.join(names) or 'none'}")
    reasons = explain(config, topo, plan.layout, args.explain)
    if args.json:
        import json

        print(json.dumps({"tenant": args.explain, "reasons": reasons}, indent=2))
    else:
        print(f"{args.explain}:")
        for reason in reasons:
            print(f"  - {reason}")
    return EXIT_OK


def _print_notes(plan: Plan, diff: Diff | None) -> None:
    """The placement's notes, and a re-pack's moves where no host's changes say them."""
    moves = plan.layout.repack_notes() if diff is None else []
    for note in [*plan.layout.notes, *moves]:
        print(f"note: {note}")


def _contents(diff: Diff, files: dict[str, str], unit_dir: str) -> dict[str, dict[str, object]]:
    """`plan --json --contents`: each changed file's text before and after (None: absent)."""
    from pathlib import Path

    def text(rel: str) -> str | None:
        try:
            return (Path(unit_dir) / rel).read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return None

    changed = diff.files.created + diff.files.updated + diff.files.removed
    return {rel: {"before": text(rel), "after": files.get(rel)} for rel in changed}


def cmd_write(args: Namespace) -> int:
    """`slicectl write TENANTS --from FILE [--check] [--json]`: the mapping into the file,
    its comments kept (slicectl.host.files.tenantsfile)."""
    import json

    from slicectl.host.files.tenantsfile import read_mapping, write_tenants

    change = write_tenants(args.tenants, read_mapping(args.source), args.check)
    if args.json:
        print(json.dumps(change.to_json(), indent=2))
    elif not change.changed:
        print(f"{args.tenants}: up to date")
    else:
        verb = "would write" if args.check else "wrote"
        state = "new file" if change.before is None else "comments kept"
        print(f"{args.tenants}: {verb} {len(change.after.splitlines())} line(s) ({state})")
        if args.check:
            print(change.diff(), end="")
    return EXIT_OK


def cmd_plan(args: Namespace) -> int:
    """`slicectl plan`: where each tenant goes and, on a host, what apply would change."""
    config = load_config(args)
    topo = load_topology(args)
    check_target_version(args, config, topo)
    # Offline (a plan for another host, or a fixture) unless pointed at a host's units/bus.
    live = bool(args.unit_dir or args.bus) or not (args.topology or args.sysfs)
    diff: Diff | None = None
    warning = ""
    files: dict[str, str] = {}
    if live:
        from slicectl.cli.generator import generator_note

        if args.bus or not (args.topology or args.sysfs):  # this host's cgroups, or a bus's
            require_unified(args)  # (another host's files alone, a config repo's, are not)
        generator_note(args)
        plan, diff, warning, files = _host_diff(args, config, topo)
    else:
        from slicectl.host.planning import plan_for_host

        plan = plan_for_host(config, topo, None)
    if args.explain:
        return _explain(args, config, plan, topo)
    _print_plan(args, config, plan, topo, diff, files)
    if warning:
        kind = "note" if warning.startswith("files only") else "warning"
        print(f"{kind}: {warning}", file=sys.stderr)
    if args.exit_code and diff is None:
        print("slicectl: offline: nothing compared with a host (--topology or --sysfs without "
              "--unit-dir or --bus); exit 4", file=sys.stderr)
        return EXIT_OFFLINE
    if args.exit_code and diff is not None and diff.drifted:
        return EXIT_DIFF
    return EXIT_OK


def diff_json(diff: Diff) -> dict[str, object]:
    """The `changes` object of `plan --json` and `apply --json` (docs/plan-json.md)."""
    from slicectl.core.cpulist import format_cpulist
    from slicectl.core.properties.live_values import format_live

    return {
        "changed": diff.drifted,
        "files": {"created": list(diff.files.created), "updated": list(diff.files.updated),
                  "removed": list(diff.files.removed)},
        "properties": [{"unit": c.unit, "property": c.prop,
                        "live": format_live(c.prop, c.live),
                        "desired": format_live(c.prop, c.want), "source": c.source}
                       for c in diff.props],
        "balanced": [{"unit": c.unit, "live": format_live(c.prop, c.live),
                      "declared": format_live(c.prop, c.want)} for c in diff.balanced],
        "exclusive": [{"cgroup": c.control_group, "live": format_cpulist(c.live),
                       "desired": format_cpulist(c.want)} for c in diff.exclusive],
        "reload": diff.reload, "start": diff.start, "stop": diff.stop, "notes": diff.notes,
    }


def _ask(unit_dir: Path, first: list[str], diff: Diff) -> bool:
    """Show the changes (`first`, then the diff's with its files in `unit_dir`) and ask the
    user to confirm them; end of input (Ctrl-D) is a no."""
    print("slicectl will make these changes:")
    for line in [*first, *diff.lines(unit_dir)]:
        print(f"  {line}")
    try:
        answer = input("Apply them? [y/N] ").strip().lower()
    except EOFError:
        print()  # the answer's line, which Ctrl-D did not end
        return False
    return answer in ("y", "yes")


def _progress(line: str) -> None:
    print(f"slicectl: {line}", file=sys.stderr, flush=True)


def _report_json(args: Namespace, config: Config, report: ApplyReport) -> None:
    import json

    print(json.dumps({
        "dry_run": args.dry_run, "profile": config.profile,
        "changes": diff_json(report.diff), "reloaded": report.reloaded,
        "started": report.started, "stopped": report.stopped,
        "set_live": [{"unit": c.unit, "property": c.prop} for c in report.set_live],
        "verified": report.verified, "notes": report.notes, "phases": report.phases,
    }, indent=2))


def _report_text(args: Namespace, config: Config, options: ApplyOptions,
                 report: ApplyReport) -> None:
    lines = report.diff.lines(options.unit_dir)
    files = report.diff.files
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
              f"{len(files.created) + len(files.updated)} file(s) "
              f"written, {len(files.removed)} removed, "
              f"{'reloaded, ' if report.reloaded else ''}{len(report.started)} slice(s) "
              f"started, {len(report.set_live)} live change(s); verified "
              f"{len(report.verified)} unit(s) in their cgroups.")
    for note in report.notes:
        print(f"note: {note}")


def cmd_apply(args: Namespace) -> int:
    """`slicectl apply`: make the host match tenants.yaml, asking first on a terminal."""
    import asyncio
    from functools import partial

    from slicectl.apply.applier import apply_plan

    config = load_config(args)
    if args.if_in_force and not in_force(config):
        return EXIT_OK
    require_unified(args)
    topo = load_topology(args)
    options = apply_options(args, config)
    ask = sys.stdin.isatty() and not args.yes and not args.dry_run and not args.json
    from slicectl.apply import generator_mode
    from slicectl.cli.generator import paths_of

    paths = paths_of(args)
    if generator_mode.enabled(paths):  # tenants.yaml to /etc/slicectl, then a reload
        written = [f"write  {paths.tenants} (the previous one kept as {paths.previous.name}), "
                   "then reload systemd (the generator places the tenants)"]
        report = asyncio.run(generator_mode.apply_generated(
            config, topo, args.sysfs or "/sys", options, paths, dry_run=args.dry_run,
            confirm=partial(_ask, paths.output, written) if ask else None,
            progress=None if args.json else _progress))
    else:
        report = asyncio.run(apply_plan(config, topo, options, dry_run=args.dry_run,
                                        confirm=partial(_ask, options.unit_dir, []) if ask
                                        else None,
                                        progress=None if args.json else _progress))
    if args.json:
        _report_json(args, config, report)
    else:
        _report_text(args, config, options, report)
    return EXIT_OK


def _print_changes(changes: FileChanges, where: str) -> None:
    from slicectl.core.errors import shown

    for label, paths in (("create", changes.created), ("update", changes.updated),
                         ("remove", changes.removed), ("forget", changes.forgotten)):
        for path in paths:
            print(f"  {label:7} {where}/{shown(path)}")
    if not changes.changed:
        print(f"  {where}: up to date ({len(changes.unchanged)} file(s))")


def cmd_generate(args: Namespace) -> int:
    """`slicectl generate`: unit files and drop-ins into `--out DIR`."""
    from pathlib import Path

    from slicectl.core.errors import shown
    from slicectl.core.render import render
    from slicectl.host.files.lock import LOCK_TIMEOUT
    from slicectl.host.files.templates import load_templates
    from slicectl.host.files.unitdir import Manifest, UnitDir
    from slicectl.host.planning import plan_for_host

    config = load_config(args)
    topo = load_topology(args)
    check_target_version(args, config, topo)
    unit_dir = UnitDir(Path(args.out))

    def waiting(holder: str) -> None:
        print(f"slicectl: {shown(args.out)} is in use by {holder}; waiting for it",
              file=sys.stderr, flush=True)

    # Locked from reading the manifest (placements) to writing it: runs never interleave.
    timeout = LOCK_TIMEOUT if args.lock_timeout is None else args.lock_timeout
    with unit_dir.locked(timeout, on_wait=waiting):
        plan = plan_for_host(config, topo, unit_dir.root, schedule_command(args, config),
                             shares=False,  # files only: no guaranteed CPU to show
                             repack=args.repack)
        files = render(plan, load_templates(args.templates))
        changes, _ = unit_dir.write(files, Manifest(placements=plan.placements(),
                                                    source=Path(config.path).name),
                                    force=args.force)
    _print_changes(changes, shown(args.out.rstrip("/")))
    for note in plan.layout.notes:
        print(f"note: {note}", file=sys.stderr)
    local = local_paths_note(args, config)
    if local is not None:
        print(f"note: {local}", file=sys.stderr)
    return EXIT_OK
