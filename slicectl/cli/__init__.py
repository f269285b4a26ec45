"""The `slicectl` command line: the parser, the verbs, and the one error handler in `main()`.

`parser.py` builds the argument parser (one function per verb); the verbs live by what they
do: `pipeline.py` (topology, validate, plan, generate, apply), `watch.py` (status, top, tui,
record), `advise.py` (lint, recommend), `demo.py` (the synthetic host) and `completion.py`.
`--help` and `generate` must not import textual or dbus_fast (a test checks); every verb
imports what it needs inside itself, and `--help` builds only the parser it shows. Exit codes:
0 ok, 1 error, 2 usage, 3 `plan --exit-code` found differences.
"""

from __future__ import annotations

import sys

from slicectl.cli.advise import cmd_lint, cmd_recommend
from slicectl.cli.balance import cmd_balance
from slicectl.cli.common import EXIT_ERROR, EXIT_OK, EXIT_USAGE
from slicectl.cli.completion import cmd_completion
from slicectl.cli.demo import cmd_demo
from slicectl.cli.exporter import cmd_exporter
from slicectl.cli.generator import cmd_generator
from slicectl.cli.install import cmd_install, cmd_uninstall
from slicectl.cli.parser import build_parser, parser_for
from slicectl.cli.pipeline import (
    cmd_apply,
    cmd_generate,
    cmd_plan,
    cmd_topology,
    cmd_validate,
    cmd_write,
)
from slicectl.cli.watch import cmd_record, cmd_status, cmd_top, cmd_tui

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Callable, Sequence

    from slicectl.core.errors import SlicectlError

__all__ = ["COMMANDS", "build_parser", "main", "report_error"]

COMMANDS: dict[str, Callable[[Namespace], int]] = {
    "topology": cmd_topology, "validate": cmd_validate, "plan": cmd_plan,
    "generate": cmd_generate, "apply": cmd_apply, "status": cmd_status, "top": cmd_top,
    "lint": cmd_lint, "record": cmd_record, "recommend": cmd_recommend, "tui": cmd_tui,
    "completion": cmd_completion, "write": cmd_write, "exporter": cmd_exporter,
    "generator": cmd_generator, "balance": cmd_balance, "install": cmd_install,
    "uninstall": cmd_uninstall, "demo": cmd_demo,
}


def _readable(text: object) -> str:
    """A message with the bytes of a file name that are not UTF-8 shown as \\xNN."""
    try:
        return str(text).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return str(text).encode("utf-8", "backslashreplace").decode("utf-8")


def report_error(e: SlicectlError) -> None:
    """Print an error and its hint(s) to stderr (no traceback)."""
    from slicectl.core.errors import ConfigError

    if isinstance(e, ConfigError):
        for p in e.problems:
            print(f"error: {_readable(p)}", file=sys.stderr)
            if p.hint:
                print(f"  hint: {_readable(p.hint)}", file=sys.stderr)
        if len(e.problems) > 1:
            print(f"{len(e.problems)} problems found", file=sys.stderr)
        return
    print(f"error: {_readable(e.message)}", file=sys.stderr)
    if e.hint:
        print(f"  hint: {_readable(e.hint)}", file=sys.stderr)


def _run(args: Namespace) -> int:
    """Run the verb; map slicectl's errors to their exit codes, and anything else to 1."""
    from slicectl.core.errors import SlicectlError

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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `slicectl` console script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = parser_for(argv)
    args = parser.parse_args(argv)
    if args.verb is None:
        parser.print_help()
        return EXIT_USAGE
    return _run(args)
