"""`--help` says what every verb does, shows one example, and explains every visible option;
global options work after the verb too."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from slicectl.cli import main
from slicectl.cli.parser import VERBS, build_parser, parser_for


def _verb_parsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _undocumented(parser: argparse.ArgumentParser) -> list[str]:
    return [", ".join(a.option_strings) or a.dest for a in parser._actions
            if a.help is None and not isinstance(a, argparse._SubParsersAction)]


def test_every_visible_option_has_help() -> None:
    missing = {verb: _undocumented(p) for verb, p in _verb_parsers().items()}
    missing["(global)"] = _undocumented(build_parser())
    assert not {verb: m for verb, m in missing.items() if m}


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_every_verb_has_a_description_and_an_example(verb: str) -> None:
    parser = _verb_parsers()[verb]
    assert parser.description and len(parser.description) > 30, verb
    assert parser.epilog and parser.epilog.startswith("example:\n"), verb
    example = parser.epilog.split("\n", 1)[1].strip()
    assert f"slicectl {verb}" in example, example
    text = parser.format_help()
    assert parser.description.split()[0] in text and example in text


@pytest.mark.parametrize("argv", [["--debug", "plan", "t.yaml"], ["plan", "t.yaml", "--debug"],
                                  ["plan", "--debug", "t.yaml"]])
def test_debug_before_or_after_the_verb(argv: list[str]) -> None:
    assert parser_for(argv).parse_args(argv).debug is True


def test_debug_defaults_to_off() -> None:
    assert parser_for(["plan", "t.yaml"]).parse_args(["plan", "t.yaml"]).debug is False


def test_debug_after_the_verb_shows_the_traceback(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "t.yaml"
    broken.write_text("version: 2\n")
    assert main(["validate", str(broken)]) == 1
    assert "Traceback" not in capsys.readouterr().err
    with pytest.raises(Exception, match="version"):
        main(["validate", str(broken), "--debug"])
