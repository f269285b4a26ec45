"""slicectl's defaults (slicectl.core.defaults): the values the CLI falls back to and the
shipped units spell out agree, and the module stays free to import for `--help`."""

from __future__ import annotations

import ast
import shlex
from pathlib import Path

import pytest
from paths import ROOT

from slicectl.cli.parser import build_parser
from slicectl.core import defaults


def test_imports_nothing() -> None:
    """`slicectl --help` reads these for the price of one small module."""
    tree = ast.parse(Path(defaults.__file__).read_text())
    for node in tree.body:  # names for the type checker only are never imported
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            tree.body.remove(node)
    imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert [getattr(n, "module", None) for n in imports] == ["__future__"]


@pytest.mark.parametrize(("argv", "expected"), [
    (["status"], {"cgroup_root": defaults.CGROUP_ROOT, "interval": defaults.MONITOR_INTERVAL_S}),
    (["record"], {"db": defaults.RECORD_DB, "interval": defaults.RECORD_INTERVAL_S,
                  "retention": defaults.RECORD_RETENTION_DAYS}),
    (["exporter"], {"listen": defaults.EXPORTER_LISTEN}),
])
def test_the_cli_falls_back_to_them(argv: list[str], expected: dict[str, object]) -> None:
    args = vars(build_parser().parse_args(argv))
    assert {k: args[k] for k in expected} == expected


@pytest.mark.parametrize("unit", ["slicectl-record.service", "slicectl-exporter.service"])
def test_the_shipped_units_spell_out_the_same_values(unit: str) -> None:
    """A unit's explicit options mean what slicectl would do without them."""
    line = next(x for x in (ROOT / "units" / unit).read_text().splitlines()
                if x.startswith("ExecStart="))
    argv = shlex.split(line.removeprefix("ExecStart="))
    verb = argv.index(unit.removeprefix("slicectl-").removesuffix(".service"))
    parser = build_parser()
    assert parser.parse_args(argv[verb:]) == parser.parse_args(argv[verb:verb + 1])


def test_the_system_bus() -> None:
    """--bus first, then $DBUS_SYSTEM_BUS_ADDRESS, then the D-Bus default, for the TUI's check
    of the socket and apply's connection alike."""
    env = {"DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/tmp/other"}
    assert defaults.system_bus_address("unix:path=/x", env) == "unix:path=/x"
    assert defaults.system_bus_address(None, env) == "unix:path=/tmp/other"
    assert defaults.system_bus_address(None, {}) == "unix:path=/var/run/dbus/system_bus_socket"
