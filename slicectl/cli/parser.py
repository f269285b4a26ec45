"""The argument parser: one small function per verb (DESIGN §8, README's CLI section).

`build_parser()` builds every verb (for `slicectl completion`, the README test); `main()`
builds only what the command line needs (`parser_for`, BENCHMARKS.md on start-up).

Why this module runs past 400 lines: every verb's options with their help texts, and each
verb's description and example, in one place that `--help` and completion read.
"""

from __future__ import annotations

import argparse
import math

from slicectl import __version__
from slicectl.core import defaults

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

Parser = argparse.ArgumentParser


def _number(text: str) -> float:
    """float(text) for ASCII text only: float() takes every script's digits (٥, ５)."""
    if not text.isascii():
        raise ValueError(text)
    return float(text)


def seconds(text: str) -> float:
    """An interval in seconds: a finite number, 0 or more (argparse type)."""
    try:
        value = _number(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number of seconds: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: must be a finite number of seconds, "
                                         "0 or more (e.g. 1 or 0.5)")
    return value


def positive(unit: str, example: str = "60") -> Callable[[str], float]:
    """An argparse type: a finite number of `unit` (seconds, days) above 0; `example`: a
    value that makes sense for the option, for the error."""

    def parse(text: str) -> float:
        try:
            value = _number(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid number of {unit}: {text!r}") from None
        if not math.isfinite(value) or value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r}: must be a finite number of {unit} "
                                             f"above 0 (e.g. {example})")
        return value

    return parse


def directory(text: str) -> str:
    """A directory argument: an empty one would silently mean the current directory."""
    if not text:
        raise argparse.ArgumentTypeError("must not be empty (use . for the current directory)")
    return text


def release(text: str) -> int:
    """--systemd-version: a release number such as 252 (argparse type)."""
    if not (text.isascii() and text.isdigit()) or not 0 < int(text) < 100_000:
        raise argparse.ArgumentTypeError(f"{text!r} is not a systemd release such as 252")
    return int(text)


def _topology_source(p: Parser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--topology", metavar="FILE",
                   help="topology JSON from `slicectl topology --json` (plan for another host)")
    g.add_argument("--sysfs", metavar="ROOT", help="sysfs root to read the topology from "
                   f"(default: {defaults.SYSFS})")
    p.add_argument("--systemd-version", metavar="N", type=release, default=None,
                   help="the target's systemd release (default: from --topology, or this "
                   "host's); keys it cannot take are refused")
    _proc_root(p)


def _node_map(p: Parser) -> None:
    p.add_argument("--sysfs", metavar="ROOT", default=None,
                   help="sysfs root whose NUMA nodes and CPUs give memory locality "
                   f"(default: {defaults.SYSFS}; a fixture tree or another host's copy)")
    _proc_root(p)


def _proc_root(p: Parser) -> None:
    p.add_argument("--proc-root", metavar="DIR", default=None,
                   help="proc root whose meminfo gives the memory of a kernel without NUMA "
                        "(default: the proc beside the sysfs root, /proc for /sys), and "
                        "whose mount table says which cgroup hierarchy the host runs")


def _force(p: Parser) -> None:
    p.add_argument("--force", action="store_true",
                   help="replace or remove files slicectl generated even if they were edited "
                        "by hand since, and drop manifest entries that are not slicectl's")


def _host(p: Parser) -> None:
    p.add_argument("--unit-dir", metavar="DIR", default=None,
                   help=f"unit directory slicectl owns files in (default: {defaults.UNIT_DIR})")
    _cgroup_root(p, f"cgroup v2 mount (default: {defaults.CGROUP_ROOT})")
    p.add_argument("--bus", metavar="ADDRESS", default=None,
                   help="D-Bus address of systemd (default: the system bus)")
    _balance_state(p)


def _balance_state(p: Parser) -> None:
    p.add_argument("--balance-state", metavar="FILE", default=defaults.BALANCE_STATE,
                   help="the balancer's state file: its moves are not drift (default: "
                   f"{defaults.BALANCE_STATE})")


def _cgroup_root(p: Parser, help: str | None = None) -> None:
    p.add_argument("--cgroup-root", metavar="DIR", default=defaults.CGROUP_ROOT,
                   help=help or f"cgroup v2 tree to read (default: {defaults.CGROUP_ROOT}; "
                                "a fixture tree in tests)")


def _tenants(p: Parser) -> None:
    p.add_argument("tenants", metavar="TENANTS", help="the tenants file (tenants.yaml)")


def _interval(p: Parser, help: str | None = "seconds between the two samples rates are "
              f"computed from (default: {defaults.MONITOR_INTERVAL_S:g})") -> None:
    p.add_argument("--interval", metavar="S", type=seconds,
                   default=defaults.MONITOR_INTERVAL_S, help=help)


def _profile(p: Parser, help: str | None = "apply profile P's overrides") -> None:
    p.add_argument("--profile", metavar="P", help=help)


def topology(p: Parser) -> None:
    p.add_argument("--sysfs", metavar="ROOT", default=None,
                   help=f"sysfs root (default: {defaults.SYSFS})")
    _proc_root(p)
    p.add_argument("--topology", metavar="FILE", help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", help="print the topology as JSON")
    p.add_argument("--live", action="store_true",
                   help="the live NUMA map: each CPU coloured by the slice whose "
                   "cpuset.cpus.effective holds it, each tenant's memory per node")
    _cgroup_root(p, "cgroup v2 root for --live (default: %(default)s)")
    p.add_argument("--tenants", metavar="FILE",
                   help="with --live: show the plan of this tenants.yaml beside the live map "
                   "and mark the CPUs where they differ")
    _profile(p, "with --tenants: the plan of profile P")


def validate(p: Parser) -> None:
    p.add_argument("tenants", metavar="TENANTS", help="path to tenants.yaml")
    # Without a topology only the file is checked: placement needs the host's CPUs and nodes.
    _topology_source(p)


def plan(p: Parser) -> None:
    _tenants(p)
    _topology_source(p)
    _profile(p)
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.add_argument("--exit-code", action="store_true",
                   help="exit 3 when the host differs from the plan, 0 when it matches (a "
                   "tenant the balancer moved counts as matching), "
                   "4 when there is no host to compare with (--topology or --sysfs without "
                   "--unit-dir or --bus); with --unit-dir and no system bus to ask (a config "
                   "repo's CI), the files alone are compared: 0 when DIR holds what generate "
                   "writes, 3 when not")
    p.add_argument("--contents", action="store_true",
                   help="with --json: add each changed file's text before and after")
    p.add_argument("--templates", metavar="DIR", help="use templates from DIR (as apply will)")
    _repack(p)
    p.add_argument("--explain", metavar="TENANT",
                   help="say why TENANT got its CPUs: kept from the last apply, best fit on a "
                   "node, inside one cache group, or why not")
    _targets(p)
    _host(p)
    _generator_root(p)


def write(p: Parser) -> None:
    _tenants(p)
    p.add_argument("--from", dest="source", metavar="FILE", required=True,
                   help="the whole tenants document as JSON or YAML (- reads standard input)")
    p.add_argument("--check", action="store_true", help="validate and show; write nothing")
    p.add_argument("--json", action="store_true",
                   help="print {path, changed, before, after} as JSON")


def apply(p: Parser) -> None:
    _tenants(p)
    _profile(p)
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
    _repack(p)
    _force(p)
    _host(p)
    _lock_timeout(p, "the unit directory")
    _control_dir(p)
    _generator_root(p)
    _hidden_proc_root(p)


def _hidden_proc_root(p: Parser) -> None:
    # The mount table's proc root (tests); verbs that read no meminfo keep it out of --help.
    p.add_argument("--proc-root", metavar="DIR", default=None, help=argparse.SUPPRESS)


def _control_dir(p: Parser) -> None:
    p.add_argument("--control-dir", metavar="DIR", default=defaults.CONTROL_DIR,
                   help=argparse.SUPPRESS)


def _generator_root(p: Parser) -> None:
    # Where generator mode's files are looked for (tests, the demo); the host's is /.
    p.add_argument("--root", metavar="DIR", help=argparse.SUPPRESS)


def generate(p: Parser) -> None:
    _tenants(p)
    _topology_source(p)
    _profile(p, "generate profile P's allocation instead of the base file's")
    p.add_argument("--out", metavar="DIR", required=True, type=directory,
                   help="directory laid out like /etc/systemd/system")
    p.add_argument("--templates", metavar="DIR", help="use templates from DIR")
    _repack(p)
    _targets(p)
    _force(p)
    _lock_timeout(p, "DIR")


def _repack(p: Parser) -> None:
    p.add_argument("--repack", action="store_true",
                   help="when keeping every tenant where it is would split a numa: local "
                   "tenant over nodes, move the fewest other tenants (then the fewest CPUs) "
                   "so that every local tenant is on one node; without it such a plan is "
                   "refused, naming those moves")


def _targets(p: Parser) -> None:
    p.add_argument("--target-slicectl", metavar="PATH",
                   help="the slicectl the schedule's timers run on the target host (default: "
                   "target.slicectl in TENANTS, else this slicectl)")
    p.add_argument("--target-tenants", metavar="PATH",
                   help="where tenants.yaml lives on the target host, for the schedule's "
                   "timers (default: target.tenants in TENANTS, else TENANTS's absolute path "
                   "here)")


def _lock_timeout(p: Parser, where: str) -> None:
    p.add_argument("--lock-timeout", metavar="S", type=seconds, default=None,
                   help=f"wait at most S seconds for another slicectl writing {where} "
                   "(default 60)")


def lint(p: Parser) -> None:
    _tenants(p)
    _topology_source(p)
    p.add_argument("--live", action="store_true",
                   help="also inspect the running host (processes outside managed groups)")
    p.add_argument("--strict", action="store_true", help="warnings fail too (exit 1)")
    p.add_argument("--json", action="store_true", help="print findings as JSON")
    _cgroup_root(p)


def record(p: Parser) -> None:
    _cgroup_root(p)
    p.add_argument("--db", metavar="FILE", default=defaults.RECORD_DB,
                   help=f"SQLite database to record into (default: {defaults.RECORD_DB})")
    p.add_argument("--interval", metavar="S", type=positive("seconds"),
                   default=defaults.RECORD_INTERVAL_S,
                   help=f"seconds between samples (default: {defaults.RECORD_INTERVAL_S:g})")
    p.add_argument("--retention", metavar="DAYS", type=positive("days", "14"),
                   default=defaults.RECORD_RETENTION_DAYS,
                   help="delete samples older than DAYS days "
                        f"(default: {defaults.RECORD_RETENTION_DAYS:g})")
    p.add_argument("--once", action="store_true", help="take one sample and exit")
    p.add_argument("-n", "--iterations", metavar="N", type=int, default=None,
                   help="take N samples and exit (default: until stopped)")
    _node_map(p)


def recommend(p: Parser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--db", metavar="FILE", default=None,
                   help=f"database written by `slicectl record` (default: {defaults.RECORD_DB})")
    g.add_argument("--samples", metavar="CSV", help="CSV with header time,unit,anon,active_file")
    p.add_argument("--json", action="store_true", help="print the suggestions as JSON")
    p.add_argument("--startup", metavar="S", type=float, default=defaults.RECOMMEND_STARTUP_S,
                   help="ignore the first S seconds of each series (default: 1 hour)")
    p.add_argument("--hold", metavar="S", type=float, default=defaults.RECOMMEND_HOLD_S,
                   help="a level counts only if held S seconds (default: 10 minutes)")
    p.add_argument("--headroom", metavar="SIZE", default=defaults.RECOMMEND_HEADROOM,
                   help="added to the footprint, e.g. 512M (default: 1G, as LinkedIn, 2016 "
                        "adds)")
    p.add_argument("--write", metavar="TENANTS",
                   help="write the suggestions into TENANTS (comments preserved)")


def tui(p: Parser) -> None:
    p.add_argument("tenants", metavar="TENANTS", nargs="?",
                   help="tenants.yaml to show on the NUMA map and to edit (omit: view only)")
    _cgroup_root(p)
    _interval(p, "refresh interval (default 1 s; never below 0.03 s, Togashi et al.)")
    _topology_source(p)
    p.add_argument("--unit-dir", metavar="DIR", default=None, help=argparse.SUPPRESS)
    p.add_argument("--bus", metavar="ADDRESS", default=None, help=argparse.SUPPRESS)
    p.add_argument("--balance-state", metavar="FILE", default=defaults.BALANCE_STATE,
                   help=argparse.SUPPRESS)
    _control_dir(p)


def status(p: Parser) -> None:
    _cgroup_root(p)
    p.add_argument("--json", action="store_true",
                   help="print the slices as JSON (docs/status-json.md)")
    _interval(p)
    _node_map(p)


def top(p: Parser) -> None:
    _cgroup_root(p)
    # Above 0: top refreshes every interval until stopped (0 would spin a core).
    p.add_argument("--interval", metavar="S", type=positive("seconds", "1 or 0.5"),
                   default=defaults.MONITOR_INTERVAL_S,
                   help=f"seconds between refreshes (default: {defaults.MONITOR_INTERVAL_S:g})")
    p.add_argument("-n", "--iterations", metavar="N", type=int, default=None,
                   help="refresh N times and exit (default: until stopped)")
    _node_map(p)


def balance(p: Parser) -> None:
    _tenants(p)
    p.add_argument("--dry-run", action="store_true",
                   help="print the moves the balancer would make; move nothing")
    p.add_argument("--once", action="store_true",
                   help="sample for one balance.window, decide (and move) once and exit")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object per decision with its moves")
    p.add_argument("--interval", metavar="S", type=positive("seconds"), default=None,
                   help="seconds between samples and decisions (default: balance.interval "
                   "of TENANTS)")
    _cgroup_root(p)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--topology", metavar="FILE",
                   help="topology JSON from `slicectl topology --json` instead of this host's")
    g.add_argument("--sysfs", metavar="ROOT", help="sysfs root to read the topology from "
                   f"(default: {defaults.SYSFS})")
    _proc_root(p)
    p.add_argument("--unit-dir", metavar="DIR", default=None,
                   help="unit directory whose manifest says where apply placed the tenants, "
                   f"and whose lock each move takes (default: {defaults.UNIT_DIR}; only read)")
    p.add_argument("--bus", metavar="ADDRESS", default=None,
                   help="D-Bus address of systemd (default: the system bus)")
    _balance_state(p)
    _lock_timeout(p, "the unit directory, before each move (a move it cannot make is skipped)")
    p.add_argument("--control-dir", metavar="DIR", default=defaults.CONTROL_DIR,
                   help=argparse.SUPPRESS)


def exporter(p: Parser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--listen", metavar="ADDR:PORT", default=defaults.EXPORTER_LISTEN,
                   help=f"serve /metrics there (default: {defaults.EXPORTER_LISTEN}, every "
                        "address)")
    g.add_argument("--textfile", metavar="PATH",
                   help="write the metrics into PATH instead (node_exporter's textfile "
                        "collector), atomically: once, or every --interval seconds")
    p.add_argument("--web-config", metavar="FILE",
                   help="TLS, client certificates and basic auth for /metrics: a web "
                        "configuration file as Prometheus' exporters read (exporter-toolkit)")
    p.add_argument("--interval", metavar="S", type=positive("seconds"), default=None,
                   help="with --textfile: write every S seconds (default: once)")
    p.add_argument("-n", "--iterations", metavar="N", type=int, default=None,
                   help="with --textfile --interval: stop after N writes")
    p.add_argument("--tenants", metavar="FILE",
                   help="tenants.yaml: adds slicectl_drift (as `plan --exit-code` compares) "
                        "and the tenant label from it")
    _profile(p, "with --tenants: compare against profile P")
    p.add_argument("--sysfs", metavar="ROOT", default=None,
                   help=f"sysfs root for the NUMA nodes (default: {defaults.SYSFS})")
    p.add_argument("--topology", metavar="FILE", help=argparse.SUPPRESS)
    _proc_root(p)
    _host(p)


def completion(p: Parser) -> None:
    p.add_argument("shell", choices=("bash", "zsh", "fish"),
                   help="the shell to print the completion script for")
    # Called by the scripts: the profiles of the tenants file on the command line so far.
    p.add_argument("--profiles", metavar="WORD", nargs=argparse.REMAINDER,
                   help=argparse.SUPPRESS)


def generator(p: Parser) -> None:
    p.add_argument("action", choices=("enable", "disable"),
                   help="enable: install tenants.yaml into /etc/slicectl and the generator; "
                   "disable: back to files in /etc/systemd/system, as before enable")
    p.add_argument("tenants", metavar="TENANTS", nargs="?",
                   help="tenants file to install (enable; default: /etc/slicectl/tenants.yaml)")
    p.add_argument("--sysfs", metavar="ROOT", help=argparse.SUPPRESS)
    p.add_argument("--topology", metavar="FILE", help=argparse.SUPPRESS)
    _generator_root(p)
    p.add_argument("--templates", metavar="DIR", help=argparse.SUPPRESS)
    _host(p)
    _lock_timeout(p, "the unit directory")
    _control_dir(p)
    _hidden_proc_root(p)


DEMO_VIEWS = ("tui", "top", "status", "shell", "run")


def demo(p: Parser) -> None:
    # argparse writes a REMAINDER as "...": name it, as the help below does.
    p.usage = ("%(prog)s [-h] [--dir DIR] [--debug] [{" + ",".join(DEMO_VIEWS) + "}] "
               "[ARGS ...]")
    p.add_argument("view", nargs="?", choices=DEMO_VIEWS, default="tui",
                   help="tui (default): the TUI, e edits a tenant; top: live until Ctrl-C; "
                   "status: one snapshot, then exit; shell: a shell whose `slicectl` acts on "
                   "the demo (exit ends it); run: one slicectl command against a running demo")
    p.add_argument("command", metavar="ARGS", nargs=argparse.REMAINDER,
                   help="tui, top, status: more options of that verb (status --json, top -n "
                   "3); shell: a command to run instead of a shell; run: the slicectl command "
                   "(plan tenants.yaml)")
    p.add_argument("--dir", metavar="DIR", type=directory,
                   help="build the demo in DIR (new or empty) and keep it at exit (default: a "
                   "temporary folder, removed at exit); with run: the running demo's folder "
                   "(default: $SLICECTL_DEMO_DIR, set in the demo's shell)")


def _install_place(p: Parser) -> None:
    p.add_argument("--prefix", metavar="DIR", default=None,
                   help="install under DIR: units in DIR/lib/systemd/system, man pages in "
                        "DIR/share/man, completions in DIR/share, command links in DIR/bin "
                        "(default: /usr/local)")
    p.add_argument("--root", metavar="DIR", default=None,
                   help="the root of the system to install into: an image being built, a "
                        "folder in tests (default: /; systemd is reloaded only then)")
    p.add_argument("--dry-run", action="store_true",
                   help="list what would be written, linked, kept and removed; change nothing")


def install(p: Parser) -> None:
    _install_place(p)
    p.add_argument("--slicectl", metavar="PATH", default=None,
                   help="the slicectl the installed units run, by its absolute path on the "
                        "target (default: this slicectl, the console script now running)")


def uninstall(p: Parser) -> None:
    _install_place(p)


# verb → (its line in `slicectl --help`, the function adding its arguments), in help order.
VERBS: dict[str, tuple[str, Callable[[Parser], None]]] = {
    "topology": ("show the host's NUMA topology (or export it as JSON)", topology),
    "validate": ("check tenants.yaml and list every problem", validate),
    "plan": ("show where each tenant goes and what changes", plan),
    "apply": ("apply tenants.yaml to this host live (files + systemd)", apply),
    "generate": ("write unit files and drop-ins into a directory", generate),
    "write": ("write a mapping (JSON or YAML) into tenants.yaml, keeping the file's comments",
              write),
    "lint": ("check tenants.yaml against published cgroup findings and systemd's rules",
             lint),
    "record": ("record per-slice memory, pressure and CPU into SQLite", record),
    "recommend": ("suggest memory_max/high/low from recorded data (LinkedIn, 2016's sizing)",
                  recommend),
    "tui": ("interactive view of every slice; edit and apply live", tui),
    "status": ("per-slice CPU, memory and pressure, two samples ~1 s apart", status),
    "top": ("live per-slice load with limits, pressure and throttling", top),
    "exporter": ("serve every slice's metrics to Prometheus (or write a textfile)", exporter),
    "balance": ("move whole cores from idle elastic tenants to starved ones (runtime only)",
                balance),
    "completion": ("print a shell completion script (bash, zsh, fish)", completion),
    "generator": ("place tenants at every boot and daemon-reload (enable), or not (disable)",
                  generator),
    "install": ("put units, completions and man pages where systemd and the shells look",
                install),
    "uninstall": ("remove exactly what install placed (files changed since are kept)",
                  uninstall),
    "demo": ("try slicectl on a synthetic host: moving load, a fake systemd, no root", demo),
}


# verb → (what `slicectl VERB --help` says it does, one example command line).
DOCS: dict[str, tuple[str, str]] = {
    "topology": ("Show the host's NUMA nodes, their CPUs (SMT siblings together), the CPUs "
                 "sharing each last-level cache, and memory, read from /sys; --json exports it "
                 "for planning another host; --live draws "
                 "which tenant runs where now.",
                 "slicectl topology --json > host1.json"),
    "validate": ("Check tenants.yaml and report every problem at once, located by line; with "
                 "--topology or --sysfs also place the base file and every profile.",
                 "slicectl validate tenants.yaml --topology host1.json"),
    "plan": ("Show where each tenant goes, what it is guaranteed when the host is busy, the "
             "files and, on a live host, every change apply would make. Changes nothing.",
             "slicectl plan tenants.yaml --exit-code"),
    "apply": ("Write the units into the unit directory, reload systemd only if needed, set "
              "what differs live over D-Bus and verify it in the cgroups; roll everything "
              "back on any failure. Needs root.",
              "slicectl apply tenants.yaml --profile night"),
    "generate": ("Write the slice units and drop-ins for tenants.yaml into a directory laid "
                 "out like /etc/systemd/system, without touching the host.",
                 "slicectl generate tenants.yaml --topology host1.json --out out/units"),
    "write": ("Merge a mapping (the whole tenants document as JSON or YAML) into tenants.yaml, "
              "keeping the file's comments, order and spelling; validated first, written "
              "atomically.",
              "slicectl write tenants.yaml --from new.json --check"),
    "lint": ("Check tenants.yaml against what published studies of cgroups found and "
             "systemd's rules (docs/lint.md); each finding has a fix and its source.",
             "slicectl lint tenants.yaml --topology host1.json --strict"),
    "record": ("Record each slice's memory (anon, active_file), pressure and CPU into SQLite "
               "for `slicectl recommend`.",
               "slicectl record --interval 60 --retention 14"),
    "recommend": ("Suggest memory_max, memory_high and memory_low per tenant from recorded "
                  "footprints: anon + active_file, ignoring start-up and short peaks, plus "
                  "headroom (LinkedIn, 2016).",
                  "slicectl recommend --write tenants.yaml"),
    "tui": ("Interactive view of every slice (CPU, memory, pressure, NUMA locality); with "
            "TENANTS, edit a tenant, review the plan and apply it live.",
            "slicectl tui tenants.yaml"),
    "status": ("Each slice's CPU, memory, pressure and limits from two samples of the cgroup "
               "tree, printed once.",
               "slicectl status --json"),
    "top": ("Each slice's load, limits, pressure and throttling, refreshed until q or "
            "Ctrl-C; within the terminal's width (columns that do not fit are left out, the "
            "least wanted first, and named below the table).",
            "slicectl top --interval 2"),
    "exporter": ("Serve every slice's counters and limits to Prometheus on /metrics, or write "
                 "them for node_exporter's textfile collector.",
                 "slicectl exporter --listen :19116 --tenants /etc/slicectl/tenants.yaml"),
    "balance": ("Sample the elastic tenants' slices every balance.interval and move a whole "
                "core from an idle tenant to a starved one on the same node, at runtime "
                "(AllowedCPUs over D-Bus, under apply's lock), logging each move with its "
                "reason and figures; a stop (SIGTERM) returns every tenant to its declared "
                "CPUs. --dry-run only prints the moves (docs/balance.md). Needs root.",
                "slicectl balance tenants.yaml --dry-run --once"),
    "completion": ("Print a shell completion script for bash, zsh or fish.",
                   "source <(slicectl completion bash)"),
    "generator": ("enable: let systemd's generator place the tenants at every boot and "
                  "daemon-reload; disable: put back the files-mode units and the "
                  "/etc/slicectl/tenants.yaml enable found. Needs root. The generator "
                  "(slicectl-generator) never fails a boot and never crashes or hangs on what "
                  "it reads: a tenants.yaml that is broken, not a regular file, over 16 MiB or "
                  "nested over 200 levels, a placement that fails or takes over 45 s (in a "
                  "child process: even a crash by a signal), all write the last good "
                  "placement whole and log why to the kernel log. It trusts nothing another "
                  "user could write: a tenants.yaml, /etc/slicectl or record not root's alone "
                  "is refused (as sshd's StrictModes), the record is used only when its files "
                  "match its manifest's SHA-256s, and links in its output are replaced, never "
                  "followed.",
                  "slicectl generator enable tenants.yaml"),
    "install": ("Place slicectl's units (ExecStart= running this slicectl), shell completion "
                "for bash, zsh and fish, the man pages and links to the commands under "
                "/usr/local, where systemd, the shells and man look; record each file with its "
                "SHA-256 so that uninstall removes exactly those. Never overwrites a file "
                "slicectl did not place; keeps one changed since it placed it. Reloads systemd "
                "when a unit changed and --root is not given.",
                "sudo /opt/slicectl/bin/slicectl install"),
    "uninstall": ("Remove what slicectl install placed, as its manifest lists it: a file "
                  "changed since is kept and named, folders only once empty, nothing else "
                  "touched.",
                  "sudo slicectl uninstall --dry-run"),
    "demo": ("Start a synthetic two-socket host in a temporary folder: tenants whose load, "
             "pressure and NUMA locality move (one held at its memory_high), a fake systemd "
             "on a private D-Bus, and a unit directory; then show it, or open a shell where "
             "plan, apply and every other verb act on it. Nothing outside the folder is "
             "touched; everything stops and is removed at exit. Needs dbus-daemon.",
             "slicectl demo status"),
}


def build_parser(verbs: Iterable[str] | None = None, *, arguments: bool = True) -> Parser:
    """The argument parser: of every verb, or of `verbs` alone; without the verbs' own
    arguments when `arguments` is false (enough to list the verbs)."""
    parser = Parser(
        prog="slicectl",
        description="Place tenants on NUMA nodes as systemd slices, apply them live, and "
                    "watch their CPU load and memory pressure.",
    )
    parser.add_argument("--version", action="version", version=f"slicectl {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="verb", metavar="VERB",
                                parser_class=Parser if arguments else Listed)
    for verb, (help, add_arguments) in VERBS.items():
        if verbs is None or verb in verbs:
            if not arguments:
                sub.add_parser(verb, help=help)
                continue
            import textwrap  # only for a verb's own parser: `slicectl --help` stays quick

            description, example = DOCS[verb]
            p = sub.add_parser(verb, help=help, description=textwrap.fill(description, 78),
                               epilog=f"example:\n  {example}",
                               formatter_class=argparse.RawDescriptionHelpFormatter)
            add_arguments(p)
            # After the verb too (`slicectl plan x.yaml --debug`); SUPPRESS leaves the
            # global one alone when it is not given here.
            p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                           help="show tracebacks on errors")
    return parser


class Listed(Parser):
    """A verb that is only listed (`slicectl --help`, a usage error), never parsed: it skips
    ArgumentParser's set-up, whose gettext look-ups are most of a `--help`. `parser_for` never
    lets one parse: a command line naming a verb gets that verb's full parser."""

    # What ArgumentParser.__init__ would have set and Python 3.14's argparse reads of the
    # parsers add_parser made: it checks each verb's help with the new parser's own formatter
    # (_check_help -> _get_validation_formatter -> formatter_class(prog=prog), then
    # _set_color(color)); `slicectl --help`, `--version` and a wrong verb died there with an
    # AttributeError on Python 3.14.8.
    _cached_formatter = None
    formatter_class = argparse.HelpFormatter
    color = False

    def __init__(self, **kwargs: object) -> None:  # no super().__init__(), on purpose
        self.prog = str(kwargs.get("prog", ""))


def parser_for(argv: Sequence[str]) -> Parser:
    """The parser a command line needs. argparse spends most of a start-up building parsers,
    so: only the verb's when the line names one (the options before a verb take no value);
    every verb's, without their arguments, for `slicectl --help`, a wrong verb or none."""
    verb = next((word for word in argv if not word.startswith("-")), None)
    before = argv[:argv.index(verb)] if verb is not None else argv
    if verb in VERBS and not any(word in ("-h", "--help") for word in before):
        return build_parser([verb])
    return build_parser(arguments=False)


def verb_parser(verb: str) -> Parser:
    """A parser of one verb's arguments alone (`slicectl completion` reads its options)."""
    parser = Parser(prog=f"slicectl {verb}")
    VERBS[verb][1](parser)
    return parser
