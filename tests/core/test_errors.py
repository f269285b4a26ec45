"""The error hierarchy (slicectl.core.errors): what a user reads for each error, its hint, its
exit code, and file names shown as one printable line."""

from __future__ import annotations

import pytest

from slicectl.core.errors import (
    ApplyError,
    ConfigError,
    PlacementError,
    Problem,
    SlicectlError,
    SystemdError,
    TopologyError,
    UsageError,
    shown,
)


def test_problem_names_file_line_and_key() -> None:
    assert str(Problem("t.yaml", 3, "tenants.db1.cpus", "must be at least 1")) == \
        "t.yaml:3: tenants.db1.cpus: must be at least 1"
    assert str(Problem("t.yaml", 0, "", "empty file")) == "t.yaml: empty file"
    assert str(Problem("t.yaml", 7, "", "tab in indentation")) == "t.yaml:7: tab in indentation"


def test_config_error_reports_every_problem_and_the_first_hint() -> None:
    e = ConfigError([Problem("t.yaml", 3, "tenants.db1.cpus", "bad", "write a count"),
                     Problem("t.yaml", 9, "slice", "worse", "another hint")])
    assert e.message == "t.yaml:3: tenants.db1.cpus: bad\nt.yaml:9: slice: worse"
    assert e.hint == "write a count"
    assert len(e.problems) == 2 and e.exit_code == 1


def test_config_error_without_problems_still_says_something() -> None:
    assert str(ConfigError([])) == "?: invalid configuration"


def test_placement_error_from_a_problem_is_located() -> None:
    p = Problem("t.yaml", 4, "tenants.db1.cpus", "asks for 64 CPUs", "node0 has 8 free")
    e = PlacementError(p)
    assert (str(e), e.hint, e.problem) == ("t.yaml:4: tenants.db1.cpus: asks for 64 CPUs",
                                           "node0 has 8 free", p)
    plain = PlacementError("no room", "add CPUs")
    assert (plain.message, plain.hint, plain.problem) == ("no room", "add CPUs", None)


def test_systemd_error_names_unit_property_and_dbus_error() -> None:
    e = SystemdError("refused", "check the unit", unit="a.slice", prop="CPUWeight",
                     name="org.freedesktop.DBus.Error.InvalidArgs")
    assert (e.unit, e.prop, e.dbus_error, str(e)) == (
        "a.slice", "CPUWeight", "org.freedesktop.DBus.Error.InvalidArgs", "refused")


@pytest.mark.parametrize(("error", "code"), [
    (SlicectlError("x"), 1), (ApplyError("x"), 1), (TopologyError("x"), 1),
    (UsageError("x"), 2),  # as argparse's usage errors
])
def test_exit_codes(error: SlicectlError, code: int) -> None:
    assert error.exit_code == code


def test_every_error_is_a_slicectl_error_with_a_hint() -> None:
    for cls in (ConfigError, TopologyError, PlacementError, SystemdError, ApplyError,
                UsageError):
        assert issubclass(cls, SlicectlError)
    assert SlicectlError("message").hint == ""


@pytest.mark.parametrize(("name", "text"), [
    ("tenants.yaml", "tenants.yaml"),
    ("tenants\n.yaml", "tenants\\n.yaml"),  # one line
    (b"caf\xe9.yaml".decode("utf-8", "surrogateescape"), "caf\\xe9.yaml"),  # not UTF-8
    ("café.yaml", "café.yaml"),
    ("a\x1bb", "a\\x1bb"),  # no terminal escapes
])
def test_shown_file_names(name: str, text: str) -> None:
    assert shown(name) == text


def test_every_error_class_for_users_is_defined_here() -> None:
    """One hierarchy in one module: no SlicectlError subclass is defined anywhere else (the
    modules that raise one import it from slicectl.core.errors)."""
    import ast
    from pathlib import Path

    from slicectl.core import errors

    package = Path(errors.__file__).resolve().parent.parent
    ours = {name for name, value in vars(errors).items()
            if isinstance(value, type) and issubclass(value, SlicectlError)}
    elsewhere = [f"{path.relative_to(package.parent)}:{node.lineno}: {node.name}"
                 for path in sorted(package.rglob("*.py")) if path != Path(errors.__file__)
                 for node in ast.walk(ast.parse(path.read_text()))
                 if isinstance(node, ast.ClassDef)
                 and any(isinstance(b, ast.Name) and b.id in ours for b in node.bases)]
    assert not elsewhere, elsewhere
