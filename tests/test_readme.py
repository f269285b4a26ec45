"""The README is part of the interface: its reference tables and CLI list follow the code."""

from __future__ import annotations

import re
from pathlib import Path

from slicectl.cli import build_parser
from slicectl.settings import CONFINE_SETTINGS, TENANT_SETTINGS, Setting

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def row(s: Setting) -> str:
    prop = f"`{s.prop}`" if s.prop else "—"
    return f"| `{s.key}` | {s.default_doc} | {prop} | {s.doc} |"


def test_tenant_and_confine_tables_match_the_settings_table() -> None:
    for s in TENANT_SETTINGS + CONFINE_SETTINGS:
        assert row(s) in README, f"README lacks or misstates the row for {s.key}:\n{row(s)}"


def test_every_verb_is_documented() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "verb")
    verbs = set(getattr(sub, "choices", {}))
    documented = set(re.findall(r"^slicectl (\w+)", README, re.M))
    assert verbs <= documented, f"undocumented verbs: {sorted(verbs - documented)}"


def test_quick_start_has_the_two_commands() -> None:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    assert len(blocks) == 2
    assert "pip install" in blocks[0] and "slicectl generate" in blocks[0]
    assert blocks[1].strip() == "tests/run"
