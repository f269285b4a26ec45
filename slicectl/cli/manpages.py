"""The man pages, made from the parser and the property table: slicectl(1), slicectl-VERB(1)
for each verb, slicectl-tenants(5).

A verb's page is argparse-manpage's rendering of that verb's parser (its synopsis, description,
every visible option with its help text), with the verb's one-line summary as its NAME and its
example as EXAMPLE. The overview page lists the verbs and the exit codes, which argparse-manpage
would instead expand into every verb's options; the tenants.yaml page is not a parser's at all
(its key tables come from slicectl.core.properties.properties, as the README's do): those two are
written here, in the same roff.

docs/update-man writes the pages into man/ (package data that `slicectl install` places);
tests/cli/test_manpages.py fails when they differ from what the parser makes now. argparse-manpage
is needed only to make them (the test extra), not to install or read them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from slicectl import __version__
from slicectl.cli.common import EXIT_STATUS
from slicectl.cli.parser import DOCS, VERBS, Parser, build_parser

SOURCE = f"slicectl {__version__}"
MANUAL = "slicectl manual"
# Wrap the parser's prose at a fixed width, whatever the terminal: the same pages everywhere.
COLUMNS = "80"


def esc(text: str) -> str:
    """Text for a roff line: backslashes and hyphens escaped, a leading dot or quote kept
    literal (man-pages(7), groff_man(7))."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text.startswith((".", "'")) else text


def _header(name: str, section: int) -> list[str]:
    # No date: the pages are the same whenever they are made (the version says which).
    return [f'.TH {esc(name.upper())} {section} "" "{SOURCE}" "{MANUAL}"']


def _see_also(names: Iterable[str]) -> list[str]:
    refs = [f"\\fB{esc(n.rsplit('(', 1)[0])}\\fR({n.rsplit('(', 1)[1]}" for n in names]
    return [".SH SEE ALSO", ",\n".join(refs)]


def verb_page(verb: str) -> str:
    """slicectl-VERB(1), from the verb's parser."""
    import argparse

    from argparse_manpage.manpage import Manpage

    parser = _verb_parsers()[verb]
    example = DOCS[verb][1]
    parser.epilog = None  # shown as EXAMPLE below, not as argparse-manpage's COMMENTS
    page = Manpage(parser, _data={"description": VERBS[verb][0], "manual_title": MANUAL,
                                  "project_name": "slicectl", "version": __version__,
                                  "date": "-"})
    page.prog = f"slicectl-{verb}"  # the page's name; its synopsis stays `slicectl VERB …`
    page.date = ""
    # argparse-manpage leaves the synopsis' hyphens unescaped: a line could break inside an
    # option (`--lock-` / `timeout`); \- does not break.
    usage = page.synopsis
    page.add_section("synopsis", "=", f".B {esc(' '.join(usage[:2]))}\n{esc(' '.join(usage[2:]))}")
    page.add_section("example", ">", f".nf\n.RS\n{esc(example)}\n.RE\n.fi")
    see = ["slicectl(1)", "slicectl-tenants(5)"] if any(
        a.dest == "tenants" for a in parser._actions
        if not isinstance(a, argparse._HelpAction)) else ["slicectl(1)"]
    page.add_section("see also", ">", "\n".join(_see_also(see)[1:]))
    return str(page)


def _verb_parsers() -> dict[str, Parser]:
    import argparse

    with _columns():
        parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


class _columns:
    """COLUMNS set to a fixed width while argparse formats (it reads the terminal's)."""

    def __enter__(self) -> None:
        self.old = os.environ.get("COLUMNS")
        os.environ["COLUMNS"] = COLUMNS

    def __exit__(self, *exc: object) -> None:
        if self.old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = self.old


def overview_page() -> str:
    """slicectl(1): what slicectl is, its verbs (each with its page), global options, exit
    status and files."""
    about = str(build_parser(arguments=False).description).rstrip(".")
    lines = _header("slicectl", 1) + [
        ".SH NAME", f"slicectl \\- {esc(about[0].lower() + about[1:])}",
        ".SH SYNOPSIS", ".B slicectl",
        "[\\fB\\-\\-version\\fR] [\\fB\\-\\-debug\\fR] \\fIVERB\\fR [\\fIARGUMENTS\\fR]",
        ".SH DESCRIPTION",
        esc("slicectl shares one Linux server between tenants (database instances, services, "
            "customers): it models each tenant as a systemd slice, places it on CPUs and "
            "memory nodes from the host's NUMA topology, writes the unit files and drop-ins, "
            "applies them live over D-Bus, confines housekeeping, and shows each slice's load "
            "and memory pressure."),
        ".PP",
        esc("The tenants are described in a YAML file, slicectl-tenants(5). Each verb has its "
            "own page, slicectl-VERB(1), and its own --help."),
        ".SH COMMANDS"]
    for verb, (summary, _) in VERBS.items():
        lines += [".TP", f"\\fBslicectl\\-{esc(verb)}\\fR(1)", esc(summary)]
    lines += [".SH OPTIONS",
              ".TP", "\\fB\\-\\-version\\fR", "print the version and exit",
              ".TP", "\\fB\\-\\-debug\\fR",
              esc("show tracebacks on errors (before or after the verb)"),
              ".TP", "\\fB\\-h\\fR, \\fB\\-\\-help\\fR", "show the verbs, or a verb's options",
              ".SH EXIT STATUS"]
    for code, meaning in EXIT_STATUS:
        lines += [".TP", f"\\fB{code}\\fR", esc(meaning)]
    lines += [".SH FILES",
              ".TP", "\\fI/etc/slicectl/tenants.yaml\\fR",
              esc("the tenants file of a host in generator mode (slicectl generator enable), and "
                  "the usual place for it otherwise"),
              ".TP", "\\fI/etc/systemd/system/.slicectl\\-manifest.json\\fR",
              esc("the files apply wrote there, with their SHA-256, and where it placed each "
                  "tenant"),
              ".TP", "\\fI/usr/local/lib/slicectl/install\\-manifest.json\\fR",
              esc("the files slicectl install placed, for slicectl uninstall")]
    lines += _see_also([f"slicectl-{verb}(1)" for verb in VERBS] + [
        "slicectl-tenants(5)", "systemd.slice(5)", "systemd.resource-control(5)",
        "systemd.generator(7)"])
    return "\n".join(lines) + "\n"


TENANTS_EXAMPLE = """\
version: 1
slice: tenants
housekeeping:
  cpus: 2
confine:
  system.slice: {memory_high: 2G, memory_max: 3G, cpu_weight: 50}
tenants:
  db1:
    cpus: 8
    numa: local
    cpu_weight: 200
    memory_max: 24G
    memory_low: 16G
    services: [oracle@db1.service]
profiles:
  night:
    db1: {cpus: 4}
schedule:
  night: "Mon..Fri 22:00"
  default: ["Mon..Fri 07:00"]
"""

TOP_LEVEL = (
    ("version", "required, 1"),
    ("slice", "the parent slice (default tenants): tenant NAME becomes tenants-NAME.slice"),
    ("housekeeping", "cpus: a count or a cpulist of CPUs kept for the host itself; they pin "
                     "system.slice, user.slice and init.scope"),
    ("confine", "UNIT: {KEY: VALUE}: limits for existing units (system.slice, user.slice, "
                "cron.service); the keys under CONFINE KEYS"),
    ("tenants", "NAME: {KEY: VALUE}: the tenants; names match [a-z0-9][a-z0-9_]*; the keys "
                "under TENANT KEYS"),
    ("profiles", "NAME: {TENANT: {KEY: VALUE}}: named overrides (apply --profile NAME); every "
                 "tenant key except services, description, cpus_min and cpus_max"),
    ("schedule", "PROFILE: CALENDAR or [CALENDAR, ...]: systemd timers switch the profiles "
                 "(systemd.time(7)); default names the base file"),
    ("balance", "the balancer's policy; the keys under BALANCE KEYS"),
    ("target", "slicectl: PATH, tenants: PATH: the slicectl and tenants.yaml on the hosts the "
               "units are for, which the schedule's timers run (generate, plan and apply; "
               "--target-slicectl and --target-tenants override them)"),
)


def _rows(rows: Iterable[tuple[str, str, str | None, int | None, str]]) -> Iterator[str]:
    for key, default, prop, since, doc in rows:
        facts = [f"default: {default}"]
        if prop:
            facts.append(f"systemd property {prop}" + (f", since systemd {since}" if since
                                                       else ""))
        yield from (".TP", f"\\fB{esc(key)}\\fR", esc(doc), ".br", esc("; ".join(facts)))


def tenants_page() -> str:
    """slicectl-tenants(5): the tenants file, its keys from the property table."""
    from slicectl.core.properties.properties import (
        BALANCE_SETTINGS,
        CONFINE_SETTINGS,
        TENANT_SETTINGS,
        TOP_KEYS,
        reference_rows,
    )

    assert tuple(key for key, _ in TOP_LEVEL) == TOP_KEYS, "TOP_LEVEL misses a key"
    lines = _header("slicectl-tenants", 5) + [
        ".SH NAME", "slicectl\\-tenants \\- the tenants file of slicectl (tenants.yaml)",
        ".SH SYNOPSIS", "\\fI/etc/slicectl/tenants.yaml\\fR, or any file given as TENANTS",
        ".SH DESCRIPTION",
        esc("A YAML document, version 1, naming the tenants of one host (or of hosts alike), "
            "what each may use, and how housekeeping is confined. slicectl validate reports "
            "every problem at once as FILE:LINE: key: message with a hint; unknown keys are "
            "errors."),
        ".PP",
        esc("Sizes are a number of bytes or one upper-case suffix K, M, G, T, P, E (base 1024, "
            "1.5G too), or infinity. Percents are of one CPU (150% = 1.5 CPUs). Durations: "
            "100ms, 1s. A cpus count is placed by slicectl (one NUMA node when one has room, "
            "whole cores first); a cpulist such as 0-3,16-19 is taken as written."),
        ".SH EXAMPLE", ".nf", ".RS", *map(esc, TENANTS_EXAMPLE.splitlines()), ".RE", ".fi",
        ".SH TOP-LEVEL KEYS"]
    for key, doc in TOP_LEVEL:
        lines += [".TP", f"\\fB{esc(key)}\\fR", esc(doc)]
    lines += [".SH TENANT KEYS", *_rows(reference_rows(TENANT_SETTINGS)),
              ".SH CONFINE KEYS", *_rows(reference_rows(CONFINE_SETTINGS)),
              ".SH BALANCE KEYS",
              *_rows((s.key, s.default_doc, None, None, s.doc) for s in BALANCE_SETTINGS)]
    lines += _see_also(["slicectl(1)", "slicectl-validate(1)", "slicectl-plan(1)",
                        "systemd.resource-control(5)", "systemd.time(7)"])
    return "\n".join(lines) + "\n"


def pages() -> dict[str, str]:
    """Every page by its file name: slicectl.1, slicectl-VERB.1, slicectl-tenants.5."""
    made = {"slicectl.1": overview_page()}
    made |= {f"slicectl-{verb}.1": verb_page(verb) for verb in VERBS}
    made["slicectl-tenants.5"] = tenants_page()
    return made
