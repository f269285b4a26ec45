"""The `slicectl` command line: the parser, the verbs, and the one error handler in `main()`.

`parser.py` builds the argument parser (one function per verb); the verbs live by what they
do: `pipeline.py` (topology, validate, plan, generate, apply), `watch.py` (status, top, tui,
record), `advise.py` (lint, recommend), `demo.py` (the synthetic host) and `completion.py`.
`--help` and `generate` must not import textual or dbus_fast (a test checks); every verb
imports what it needs inside itself, and `--help` builds only the parser it shows. Exit codes:
the table in `common.py` (EXIT_STATUS).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping

from slicectl.cli.common import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from slicectl.cli.parser import build_parser, parser_for

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Callable, Iterator, Sequence

    from slicectl.core.errors import SlicectlError

__all__ = ["COMMANDS", "build_parser", "main", "report_error"]

# verb -> the module of slicectl.cli that holds its `cmd_VERB`: imported when the verb runs, so
# a verb loads only its own module (start-up; the parser's table is in parser.py).
_MODULES = {
    "topology": "pipeline", "validate": "pipeline", "plan": "pipeline", "generate": "pipeline",
    "apply": "pipeline", "write": "pipeline", "status": "watch", "top": "watch",
    "tui": "watch", "record": "watch", "lint": "advise", "recommend": "advise",
    "completion": "completion", "exporter": "exporter", "generator": "generator",
    "balance": "balance", "install": "install", "uninstall": "install", "demo": "demo",
}


class _Commands(Mapping[str, "Callable[[Namespace], int]"]):
    """verb -> its function, `cmd_VERB` of its module in `_MODULES`, imported on first use."""

    def __getitem__(self, verb: str) -> Callable[[Namespace], int]:
        module = importlib.import_module(f"slicectl.cli.{_MODULES[verb]}")
        command: Callable[[Namespace], int] = getattr(module, f"cmd_{verb}")
        return command

    def __iter__(self) -> Iterator[str]:
        return iter(_MODULES)

    def __len__(self) -> int:
        return len(_MODULES)


COMMANDS: Mapping[str, Callable[[Namespace], int]] = _Commands()
# Verbs that compute, print or write once and exit: no refresh loop, no server (see main()).
# `apply` too: an apply of 100 tenants leaves about 800 objects in cycles, all of it freed at
# exit, and the collection at exit alone cost it 0.3-0.7 s in the testbed (BENCHMARKS.md).
_ONE_SHOT = frozenset({"topology", "validate", "plan", "generate", "write", "apply", "lint",
                       "recommend", "completion"})


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
        return EXIT_INTERRUPTED
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
    as_program = argv is None  # the console script's run: the process exits when it returns
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = parser_for(argv)
    args = parser.parse_args(argv)
    if args.verb is None:
        parser.print_help()
        return EXIT_USAGE
    if args.verb not in _ONE_SHOT:
        return _run(args)
    from slicectl.host.oneshot import one_shot

    # A verb that runs once, without the cyclic garbage collector (start-up: host.oneshot).
    with one_shot(exiting=as_program):
        return _run(args)
