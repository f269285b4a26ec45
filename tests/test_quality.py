"""Linters run as part of the suite, and the core/front-end import boundary (DESIGN §1)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The pure core (DESIGN §1); lint and recommend join it once they exist.
CORE = ["config", "settings", "values", "cpulist", "topology", "jsoninput", "sysfs", "placement",
        "packing", "cores", "plan",
        "render", "unitdir", "metrics", "errors"]
CORE += [m for m in ("lint", "recommend") if (ROOT / "slicectl" / f"{m}.py").exists()]
# Packages and front-end modules the core must never import, directly or through another module.
FORBIDDEN_PACKAGES = ("textual", "dbus_fast", "rich")
FORBIDDEN_MODULES = ("slicectl.cli", "slicectl.views", "slicectl.apply", "slicectl.systemd",
                     "slicectl.tui")


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff() -> None:
    proc = run(sys.executable, "-m", "ruff", "check", ".")
    assert proc.returncode == 0, f"ruff check . failed:\n{proc.stdout}{proc.stderr}"


def test_mypy_strict() -> None:
    proc = run(sys.executable, "-m", "mypy")
    assert proc.returncode == 0, f"mypy failed:\n{proc.stdout}{proc.stderr}"
    assert "Success" in proc.stdout


def imported_names(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import statement anywhere in the file (lazy ones too)."""
    tree = ast.parse(path.read_text(), str(path))
    result: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            result += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            result.append((node.lineno, node.module))
            # `from slicectl import views` names a module, too.
            result += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return result


def forbidden(module: str) -> bool:
    return (module.split(".")[0] in FORBIDDEN_PACKAGES
            or any(module == m or module.startswith(m + ".") for m in FORBIDDEN_MODULES))


@pytest.mark.parametrize("module", CORE)
def test_core_source_imports_no_front_end(module: str) -> None:
    path = ROOT / "slicectl" / f"{module}.py"
    bad = [f"{path.name}:{line}: imports {name}" for line, name in imported_names(path)
           if forbidden(name)]
    assert not bad, "\n".join(bad)


def test_import_scan_catches_forbidden_imports(tmp_path: Path) -> None:
    # The scanner itself must see lazy and from-imports, or the test above proves nothing.
    sample = tmp_path / "sample.py"
    sample.write_text("import os\ndef f():\n    from rich.table import Table\n"
                      "    from slicectl import views\n    import dbus_fast.aio\n")
    seen = {name for _, name in imported_names(sample)}
    assert {name for name in seen if forbidden(name)} == {
        "rich.table", "rich.table.Table", "slicectl.views", "dbus_fast.aio"}
    assert "os" in seen and not forbidden("os") and not forbidden("slicectl.placement")


def test_core_modules_load_no_front_end_at_runtime() -> None:
    code = (
        "import importlib, json, sys\n"
        f"for m in {CORE!r}:\n"
        "    importlib.import_module('slicectl.' + m)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    proc = run(sys.executable, "-c", code)
    assert proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stdout)
    assert "slicectl.placement" in loaded and "slicectl.render" in loaded
    bad = sorted(m for m in loaded if forbidden(m))
    assert not bad, f"importing the core loaded {bad}"
