"""The argument parser (slicectl.cli.parser): the value types' messages, the parser a command
line gets (only its verb's, for start-up), and the same verbs and options however it is built.
Every verb's --help text is checked in test_help.py."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import pytest

from slicectl.cli.parser import (
    VERBS,
    Listed,
    build_parser,
    directory,
    parser_for,
    positive,
    release,
    seconds,
    verb_parser,
)


@pytest.mark.parametrize(("parse", "text", "value"), [
    (seconds, "0", 0.0), (seconds, "0.5", 0.5), (positive("days"), "14", 14.0),
    (release, "252", 252), (directory, ".", "."),
])
def test_types_accept(parse: Callable[[str], object], text: str, value: object) -> None:
    assert parse(text) == value


@pytest.mark.parametrize(("parse", "text", "message"), [
    (seconds, "soon", "invalid number of seconds: 'soon'"),
    (seconds, "-1", "'-1': must be a finite number of seconds, 0 or more (e.g. 1 or 0.5)"),
    (seconds, "inf", "'inf': must be a finite number of seconds, 0 or more (e.g. 1 or 0.5)"),
    (positive("days"), "0", "'0': must be a finite number of days above 0 (e.g. 60)"),
    (positive("days"), "x", "invalid number of days: 'x'"),
    (release, "v252", "'v252' is not a systemd release such as 252"),
    (release, "0", "'0' is not a systemd release such as 252"),
    (directory, "", "must not be empty (use . for the current directory)"),
])
def test_types_refuse(parse: Callable[[str], object], text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as e:
        parse(text)
    assert str(e.value) == message


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_a_command_line_naming_a_verb_builds_that_verb_alone() -> None:
    assert list(subparsers(parser_for(["--debug", "plan", "t.yaml"]))) == ["plan"]


@pytest.mark.parametrize("argv", [[], ["--help"], ["--help", "plan"], ["nonsense"]])
def test_otherwise_every_verb_listed_without_its_arguments(argv: list[str]) -> None:
    verbs = subparsers(parser_for(argv))
    assert list(verbs) == list(VERBS)
    assert all(isinstance(p, Listed) for p in verbs.values())


def test_a_listed_verb_gives_argparse_a_formatter_to_check_its_help() -> None:
    """Python 3.14's add_parser checks a verb's help with the new parser's formatter, made as
    its _get_formatter makes one: `formatter_class(prog=prog)`, then `_set_color(color)`.
    A Listed parser skips ArgumentParser.__init__, so it must carry both itself (without
    them `slicectl --help` died with an AttributeError on 3.14)."""
    listed = next(iter(subparsers(parser_for(["--help"])).values()))
    assert isinstance(listed, Listed)
    formatter = listed.formatter_class(prog=listed.prog)
    assert listed.color is False
    action = argparse.Action(["verb"], "verb", help="plan 50%% of the CPUs for %(prog)s")
    assert formatter._expand_help(action) == f"plan 50% of the CPUs for {listed.prog}"


def test_a_verb_parses_the_same_alone_or_among_all() -> None:
    argv = ["apply", "t.yaml", "--profile", "night", "--dry-run", "--lock-timeout", "5"]
    assert parser_for(argv).parse_args(argv) == build_parser().parse_args(argv)


def test_a_verbs_own_options_for_completion() -> None:
    options = {o for a in verb_parser("status")._actions for o in a.option_strings}
    assert {"--cgroup-root", "--json", "--interval"} <= options
    assert "--debug" not in options  # the global option is not the verb's


def test_a_bad_value_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        build_parser(["status"]).parse_args(["status", "--interval", "-1"])
    assert e.value.code == 2
    assert capsys.readouterr().err.endswith(
        "argument --interval: '-1': must be a finite number of seconds, 0 or more "
        "(e.g. 1 or 0.5)\n")
