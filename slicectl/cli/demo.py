"""`slicectl demo [tui|top|status|shell|run]`: slicectl on a synthetic host (slicectl.demo).

The views are the real verbs, run as child processes with the demo's folders and bus in place
of the host's: `with_demo_options` adds them to any command line (`--cgroup-root`, `--sysfs`,
`--unit-dir`, `--bus`, ... whichever the verb takes and the user did not give), and the demo's
shell puts a `slicectl` first on PATH that does the same (`slicectl demo run`). The demo's own
process keeps the fake systemd and the moving tree running until the view or shell exits.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Sequence
    from pathlib import Path

    from slicectl.demo.session import DemoPaths

ENV_DIR = "SLICECTL_DEMO_DIR"  # the running demo's folder, in its shell


def host_options(paths: DemoPaths) -> list[tuple[str, str]]:
    """Each option that points a verb at the host, with the demo's value for it."""
    return [("--cgroup-root", str(paths.cgroup)), ("--sysfs", str(paths.sysfs)),
            ("--unit-dir", str(paths.units)), ("--bus", paths.bus_address),
            ("--control-dir", str(paths.control)), ("--root", str(paths.root)),
            ("--balance-state", str(paths.balance_state)), ("--db", str(paths.record_db))]


# An option the user gave that stands for one of the demo's (they exclude each other).
_INSTEAD = {"--sysfs": "--topology", "--db": "--samples"}


def with_demo_options(paths: DemoPaths, argv: Sequence[str]) -> list[str]:
    """`argv` (a slicectl command line, verb first) with the demo's host options added: those
    the verb takes and the command line does not give already."""
    from slicectl.cli.parser import VERBS, verb_parser
    from slicectl.core.errors import UsageError

    if argv and all(word.startswith("-") for word in argv):
        return list(argv)  # `slicectl --help`, `--version`: nothing of the demo's to add
    if argv[:1] == ["demo"]:
        raise UsageError("slicectl demo run demo: this slicectl already acts on a running demo",
                         "leave the demo's shell (exit) to start another demo")
    if not argv or argv[0] not in VERBS:
        raise UsageError(f"slicectl demo run: {' '.join(argv[:1]) or 'no command'}: not a "
                         "slicectl verb", "name one, e.g. slicectl demo run plan tenants.yaml")
    offered = {s for action in verb_parser(argv[0])._actions for s in action.option_strings}
    given = {word.split("=", 1)[0] for word in argv[1:] if word.startswith("--")}
    extra: list[str] = []
    for option, value in host_options(paths):
        if option in offered and option not in given and _INSTEAD.get(option) not in given:
            extra += [option, value]
    return [*argv, *extra]


def slicectl_in_demo(paths: DemoPaths, argv: Sequence[str]) -> list[str]:
    """The command that runs the slicectl command `argv` against the demo in `paths`."""
    return [sys.executable, "-m", "slicectl", *with_demo_options(paths, argv)]


def _running(args: Namespace) -> DemoPaths:
    import os
    from pathlib import Path

    from slicectl.core.errors import UsageError
    from slicectl.demo.session import DemoPaths

    folder = args.dir or os.environ.get(ENV_DIR)
    if not folder:
        raise UsageError("slicectl demo run: which demo? no --dir and no $" + ENV_DIR,
                         "start one with `slicectl demo shell` and run slicectl in its shell")
    paths = DemoPaths(Path(folder).resolve())
    if not paths.running():
        raise UsageError(f"{folder}: no demo is running there",
                         "start one with `slicectl demo shell` (or `slicectl demo --dir "
                         f"{folder} shell`)")
    return paths


def _leading_dir(args: Namespace) -> list[str]:
    """The words after the view, with a leading `--dir DIR` (the demo's own option, also
    accepted after the view) taken into `args.dir` and a `--` before the rest dropped."""
    from slicectl.core.errors import UsageError

    words = list(args.command)
    while words and (words[0].startswith("--dir=") or words[0] == "--dir" and len(words) > 1):
        if words[0] == "--dir":
            value, words = words[1], words[2:]
        else:
            value, words = words[0].partition("=")[2], words[1:]
        if not value:
            raise UsageError("--dir must not be empty",
                             "name a folder, or leave out --dir for a temporary one")
        args.dir = value
    return words[1:] if words[:1] == ["--"] else words


def _banner(paths: DemoPaths, keep: bool) -> str:
    root = paths.root
    end = f"`exit` ends the demo{'' if keep else f' and removes {root}'}."
    return f"""\
slicectl demo: a two-socket server (16 CPUs, 2 NUMA nodes) with 4 tenants, in {root}
In this shell `slicectl` acts on the demo: its cgroup tree, unit directory and fake systemd.
  slicectl status                   one snapshot (the cache is held at its memory_high)
  slicectl top                      live, until Ctrl-C
  slicectl tui tenants.yaml         the TUI: e edits a tenant, then review and apply
  slicectl plan tenants.yaml        the host matches tenants.yaml
  $EDITOR tenants.yaml              e.g. cache's memory_high: 1G -> 1792M
  slicectl plan tenants.yaml        what apply would change, file by file, live
  slicectl apply tenants.yaml       write the units, set the properties over D-Bus, verify
  cp tenants.yaml.orig tenants.yaml && slicectl apply tenants.yaml     roll back
  touch fail-next-apply             the next apply fails midway and rolls back by itself
{end}
"""


def _shell(paths: DemoPaths, command: Sequence[str], keep: bool) -> int:
    """A shell (or `command`) in the demo's folder, with its `slicectl` first on PATH."""
    import os

    env = dict(os.environ, PATH=f"{paths.bin}{os.pathsep}{os.environ.get('PATH', '')}")
    env[ENV_DIR] = str(paths.root)
    if not command:
        print(_banner(paths, keep), file=sys.stderr, flush=True)
    return _wait_for(list(command) or [os.environ.get("SHELL") or "/bin/sh"], paths, env)


def _wait_for(argv: list[str], paths: DemoPaths, env: dict[str, str] | None = None) -> int:
    """Run `argv` in the demo's folder until it exits; its exit status."""
    import signal
    import subprocess

    # A Ctrl-C typed in the view or shell is theirs: the demo waits for it to exit, then
    # cleans up. A handler, not SIG_IGN, which the child would inherit.
    previous = signal.signal(signal.SIGINT, lambda *_: None)
    try:
        return subprocess.run(argv, cwd=paths.root, env=env).returncode
    except FileNotFoundError as e:
        from slicectl.core.errors import UsageError

        raise UsageError(f"{argv[0]}: command not found", "") from e
    finally:
        signal.signal(signal.SIGINT, previous)


def _help(view: str) -> int:
    """`slicectl demo VIEW --help`: the verb's own help for status, top and tui (what their
    options mean), the demo's for shell."""
    from slicectl.cli.parser import verb_parser

    verb_parser(view if view in ("status", "top", "tui") else "demo").print_help()
    return 0


def _start(args: Namespace) -> tuple[Path, bool]:
    """The demo's folder, and whether to keep it at exit."""
    import tempfile
    from pathlib import Path

    if args.dir:
        return Path(args.dir), True
    return Path(tempfile.mkdtemp(prefix="slicectl-demo-")), False


def _stop_on_signals() -> None:
    """SIGTERM, and SIGHUP (its terminal closed), end the demo as Ctrl-C does: through its
    clean-up."""
    import signal

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)


def cmd_demo(args: Namespace) -> int:
    """`slicectl demo`: start the demo, show a view (or a shell), stop and clean up."""
    from slicectl.demo.session import running_demo

    command = _leading_dir(args)
    if command[:1] and command[0] in ("-h", "--help") and args.view != "run":
        return _help(args.view)  # no demo to start for that
    if args.view == "run":  # this process becomes the command (the demo's shell's slicectl)
        import os

        argv = slicectl_in_demo(_running(args), command)
        sys.stdout.flush()
        os.execv(argv[0], argv)
    if args.view == "tui" and not (sys.stdin.isatty() and sys.stdout.isatty()):
        from slicectl.core.errors import UsageError

        raise UsageError("slicectl demo tui needs a terminal",
                         "for output to a pipe or a file use `slicectl demo status`")
    folder, keep = _start(args)
    _stop_on_signals()
    with running_demo(folder, keep=keep) as demo:
        demo.moved.wait(10)  # numbers to show from the first refresh
        if args.view == "shell":
            return _shell(demo.paths, command, keep)
        view = [args.view, str(demo.paths.tenants)] if args.view == "tui" else [args.view]
        return _wait_for(slicectl_in_demo(demo.paths, [*view, *command]), demo.paths)
