"""The verbs that advise: lint (rules from the studies in docs/background.md) and recommend
(memory sizes from records).

The rules (`slicectl.core.advice.lint`) and the sizing (`slicectl.core.advice.recommend`) are pure;
here they get their input from the readers and print for people or as JSON (docs/lint.md,
docs/recommend.md).
"""

from __future__ import annotations

import sys

from slicectl.cli.common import (
    EXIT_ERROR,
    EXIT_OK,
    load_config,
    load_topology,
    require_unified,
)
from slicectl.core import defaults

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Sequence

    from slicectl.core.advice.lint import Finding
    from slicectl.core.advice.recommend import Recommendation


def _print_findings(path: str, findings: list[Finding]) -> None:
    from slicectl.core.advice.lint import Level

    for f in findings:  # the level first, as validate's `error:` lines
        print(f"{f.level}: {f}")
        print(f"  fix: {f.fix}")
        print(f"  source: {f.source}")
    errors = sum(f.level is Level.ERROR for f in findings)
    warnings = len(findings) - errors
    if findings:
        print(f"{path}: {errors} error(s), {warnings} warning(s)")
    else:
        print(f"{path}: no findings")


def _print_findings_json(findings: list[Finding]) -> None:
    import json

    from slicectl.core.advice.lint import Level

    print(json.dumps({
        "format": "slicectl-lint/1",
        "findings": [f.to_json() for f in findings],
        "errors": sum(f.level is Level.ERROR for f in findings),
        "warnings": sum(f.level is Level.WARNING for f in findings),
    }, indent=2))


def cmd_lint(args: Namespace) -> int:
    """`slicectl lint`: print findings; 1 if any error (with --strict: any finding), else 0."""
    from slicectl.core.advice.lint import (
        Level,
        hugetlb_rule,
        lint,
        missing_devices,
        oomd_rule,
        root_tasks,
    )

    config = load_config(args, contradictions_are_errors=False)  # reported as lint errors
    competition = None
    proc = args.proc_root or defaults.PROC
    mount = require_unified(args) if args.live else None
    if args.live:  # share-below-cpus counts the host's actual competitors for CPU
        from slicectl.core.errors import SlicectlError
        from slicectl.host.cgroup.readers import read_competition

        try:
            competition = read_competition(config, args.cgroup_root, proc)
        except SlicectlError as e:
            print(f"warning: {e.message}", file=sys.stderr)
    topology = load_topology(args)
    # Keys the target's systemd (or kernel) cannot take are refused as validate and plan
    # refuse them (validate's contract), not linted.
    from slicectl.cli.schedule import check_target_version

    check_target_version(args, config, topology)
    findings = lint(config, topology, competition)
    if args.live:
        from slicectl.host.cgroup.cgroupfs import block_device
        from slicectl.host.cgroup.readers import crowded_cgroups, oomd_running

        findings += root_tasks(crowded_cgroups(args.cgroup_root, proc))
        findings += missing_devices(config, lambda path: block_device(path) is not None)
        findings += oomd_rule(config, oomd_running(proc))
        findings += hugetlb_rule(config, mount is not None and mount.hugetlb_accounted)
    if args.json:
        _print_findings_json(findings)
    else:
        _print_findings(args.tenants, findings)
    failing = [f for f in findings if args.strict or f.level is Level.ERROR]
    return EXIT_ERROR if failing else EXIT_OK


def _parameters(args: Namespace) -> int:
    """The headroom in bytes; RecommendError for a bad --headroom, --startup or --hold."""
    import math

    from slicectl.core.config.values import INFINITY, parse_size
    from slicectl.core.errors import RecommendError

    try:
        head = parse_size(args.headroom)
    except ValueError as e:
        raise RecommendError(f"--headroom: {e}", "e.g. --headroom 1G") from None
    times = (args.startup, args.hold)
    if head is INFINITY or head < 0 or not all(math.isfinite(t) and t >= 0 for t in times):
        raise RecommendError("--headroom, --startup and --hold must not be negative, "
                             "infinity or nan", "e.g. --startup 3600 --hold 600 --headroom 1G")
    return head


def _write_tenants(path: str, recs: Sequence[Recommendation]) -> list[str]:
    """Set memory_max/high/low of the tenants whose slice has a recommendation; returns them.
    Refused, the file unchanged, when another edit changes it meanwhile."""
    from slicectl.core.advice.recommend import tenant_sizes
    from slicectl.core.config.yamledit import edit_tenants
    from slicectl.host.files.tenantsfile import read_tenants_text, replace_tenants
    from slicectl.host.planning import load_tenants

    text = read_tenants_text(path)  # the text edited: the file must still hold it to be written
    sizes = tenant_sizes(load_tenants(path), recs)
    if not sizes:
        return []
    new, _ = edit_tenants(text, path, sizes)
    replace_tenants(path, new, text)
    return list(sizes)


def _print_recommendations(recs: Sequence[Recommendation]) -> None:
    from slicectl.core.advice.recommend import format_duration, round_up
    from slicectl.core.human import exact_size

    for r in recs:
        print(f"{r.unit}: {r.samples} sample(s) over {format_duration(r.last - r.first)}")
        if r.footprint is not None:
            assert r.memory_low is not None and r.memory_high is not None
            assert r.memory_max is not None
            print(f"  footprint    {exact_size(round_up(r.footprint)):>8}  "
                  f"{r.reasons['footprint']}")
            for key, value in (("memory_low", r.memory_low), ("memory_high", r.memory_high),
                               ("memory_max", r.memory_max)):
                print(f"  {key:<12} {exact_size(value):>8}  {r.reasons[key]}")
        for w in r.warnings:
            print(f"  warning: {w}")
    if not recs:
        print("no samples")


def cmd_recommend(args: Namespace) -> int:
    """`slicectl recommend`: print suggestions (and write them into TENANTS with --write)."""
    from slicectl.core.advice.recommend import recommend

    head = _parameters(args)
    if args.samples is not None:
        from slicectl.host.cgroup.readers import read_samples_csv

        series = read_samples_csv(args.samples)
    else:
        from slicectl.host.cgroup.recorder import load_series

        series = load_series(args.db or defaults.RECORD_DB)
    recs = recommend(series, args.startup, args.hold, head)
    written = _write_tenants(args.write, recs) if args.write else []
    if args.json:
        import json

        print(json.dumps({
            "format": "slicectl-recommend/1", "startup_seconds": args.startup,
            "hold_seconds": args.hold, "headroom": head,
            "units": [r.to_json() for r in recs], "written": written,
        }, indent=2))
        return EXIT_OK
    _print_recommendations(recs)
    if args.write:
        print(f"{args.write}: wrote memory_max/memory_high/memory_low for "
              f"{', '.join(written) if written else 'no tenant (no matching slice)'}")
    return EXIT_OK
