"""The man pages: the ones in man/ are what the parser and the property table make now, and
the real `man` shows a reader each page's name, its synopsis with the verb's options, and every
option with its help text."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
from functools import cache

import pytest
from paths import ROOT

from slicectl.cli.manpages import pages
from slicectl.cli.parser import VERBS, build_parser
from slicectl.core.properties.properties import BALANCE_SETTINGS, CONFINE_SETTINGS, TENANT_SETTINGS

MAN = ROOT / "man"


@cache
def made() -> dict[str, str]:
    return pages()


def rendered(name: str) -> str:
    """What `man -l` shows for man/NAME, without hyphenation, as one line per paragraph's
    words: whitespace collapsed, so wrapping does not matter."""
    man = shutil.which("man")
    if man is None:
        pytest.fail("man is not installed (tests/run installs man-db)")
    proc = subprocess.run([man, "--no-hyphenation", "--no-justification", "-l",
                           str(MAN / name)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "MANPAGER": "cat", "MANWIDTH": "100",
                               "MAN_KEEP_FORMATTING": ""})
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    return proc.stdout


def words(text: str) -> str:
    return " ".join(text.split())


def section(text: str, heading: str) -> str:
    """The body of one section of a rendered page (headings start in column 0)."""
    match = re.search(rf"^{re.escape(heading)}\n(.*?)(?=^\S|\Z)", text, re.M | re.S)
    assert match, f"no {heading} section in:\n{text[:400]}"
    return words(match.group(1))


def verb_parsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_the_pages_are_what_the_parser_makes_now() -> None:
    """No stale page, none missing, none left over: docs/update-man rewrites them."""
    shipped = {p.name: p.read_text() for p in MAN.glob("slicectl*.[15]")}
    assert set(shipped) == set(made()), "run docs/update-man"
    stale = [name for name, text in made().items() if shipped[name] != text]
    assert not stale, f"stale man pages (run docs/update-man): {stale}"


def test_making_them_does_not_depend_on_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "37")
    assert pages() == made()


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_a_verb_page_shows_its_synopsis_and_every_option_with_its_help(verb: str) -> None:
    text = rendered(f"slicectl-{verb}.1")
    assert text.startswith(f"SLICECTL-{verb.upper()}(1)")
    assert section(text, "NAME") == words(f"slicectl-{verb} - {VERBS[verb][0]}")
    parser = verb_parsers()[verb]
    synopsis = section(text, "SYNOPSIS")
    assert synopsis.startswith(f"slicectl {verb} ")
    whole = words(text)
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        choices = "{" + ",".join(action.choices or ()) + "}"
        name = action.option_strings[0] if action.option_strings else str(
            action.metavar or choices)
        assert name in synopsis, (verb, name)
        assert action.help and words(action.help % vars(action)) in whole, (verb, name)
    assert words(str(parser.description)) in section(text, "DESCRIPTION")
    assert f"slicectl {verb}" in section(text, "EXAMPLE")


def test_the_overview_names_every_verb_page_and_the_exit_codes() -> None:
    text = rendered("slicectl.1")
    assert section(text, "NAME").startswith("slicectl - place tenants on NUMA nodes")
    commands = section(text, "COMMANDS")
    for verb, (summary, _) in VERBS.items():
        assert f"slicectl-{verb}(1) {words(summary)}" in commands
    assert "3 plan --exit-code: the files or the live state differ" in section(
        text, "EXIT STATUS")
    assert "slicectl-tenants(5)" in section(text, "SEE ALSO")


def test_the_tenants_page_has_every_key_of_the_property_table() -> None:
    text = rendered("slicectl-tenants.5")
    assert text.startswith("SLICECTL-TENANTS(5)")
    for heading, settings in (("TENANT KEYS", TENANT_SETTINGS),
                              ("CONFINE KEYS", CONFINE_SETTINGS),
                              ("BALANCE KEYS", BALANCE_SETTINGS)):
        body = section(text, heading)
        for s in settings:
            assert f"{s.key} {words(s.doc)}" in body, (heading, s.key)
            if s.prop is not None:
                assert f"systemd property {s.prop.name}, since systemd {s.prop.since}" in body
    assert "memory_max: 24G" in section(text, "EXAMPLE")
