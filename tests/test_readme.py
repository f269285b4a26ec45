"""The README is part of the interface: its reference tables and CLI list follow the code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from slicectl.cli import build_parser
from slicectl.core.properties.properties import (
    CONFINE_SETTINGS,
    TENANT_SETTINGS,
    Setting,
    dbus_reference_table,
    reference_table,
)

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


@pytest.mark.parametrize("settings", [TENANT_SETTINGS, CONFINE_SETTINGS],
                         ids=["tenant", "confine"])
def test_reference_tables_are_the_settings_table(settings: tuple[Setting, ...]) -> None:
    table = reference_table(settings)
    assert f"\n{table}\n" in README, f"README lacks or misstates the table:\n{table}"


def test_dbus_reference_is_the_property_table() -> None:
    """docs/dbus.md lists every property slicectl sets, from the table (docs/update-reference
    writes it)."""
    table = dbus_reference_table()
    dbus = (Path(__file__).resolve().parent.parent / "docs" / "dbus.md").read_text()
    assert f"\n{table}\n" in dbus, f"docs/dbus.md lacks or misstates the table:\n{table}"
    from slicectl.core.properties.properties import PROPERTIES

    assert table.count("\n| `") == len(PROPERTIES)


def test_reference_table_has_a_row_per_key() -> None:
    table = reference_table(TENANT_SETTINGS)
    assert table.count("\n| `") == len(TENANT_SETTINGS) >= 14
    assert "| `memory_max` | unset | `MemoryMax` | 231 |" in table


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
    assert "slicectl demo" in blocks[0]  # the first command shows numbers moving
    assert "[test]" not in blocks[0]  # trying it installs the package alone; tests/run the rest
    assert blocks[1].strip() == "tests/run"


def test_the_readme_opens_with_trying_it_then_installing_it() -> None:
    headings = re.findall(r"^## (.+)$", README, re.M)
    assert headings[:2] == ["Quick start", "Install on a host"]


def test_balance_reference_is_the_settings_table() -> None:
    from slicectl.core.properties.properties import BALANCE_SETTINGS, balance_reference_table

    table = balance_reference_table()
    assert f"\n{table}\n" in README, f"README lacks or misstates the table:\n{table}"
    assert table.count("\n| `") == len(BALANCE_SETTINGS)
