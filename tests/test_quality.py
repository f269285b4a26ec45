"""Linters run as part of the suite (ruff, mypy --strict), and long modules say why."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff() -> None:
    proc = run(sys.executable, "-m", "ruff", "check", ".")
    assert proc.returncode == 0, f"ruff check . failed:\n{proc.stdout}{proc.stderr}"


@pytest.mark.long(first=True)  # the longest test: mypy from a fresh clone has no cache
def test_mypy_strict() -> None:
    proc = run(sys.executable, "-m", "mypy")
    assert proc.returncode == 0, f"mypy failed:\n{proc.stdout}{proc.stderr}"
    assert "Success" in proc.stdout


def python_sources() -> list[Path]:
    """Every Python file of the project: the package, tests, the collection, the scripts."""
    scripts = [ROOT / "bench" / "run", ROOT / "docs" / "evidence" / "run",
               ROOT / "tests" / "testbed" / "run", ROOT / "tests" / "testbed" / "matrix",
               ROOT / "tests" / "testbed" / "compat"]
    found = [p for top in ("slicectl", "tests", "ansible", "bench", "docs")
             for p in (ROOT / top).rglob("*.py")]
    return sorted(found + scripts)


def test_long_modules_say_why() -> None:
    """No module over 400 lines without a reason written at its top (the package,
    its tests, the collection and the scripts alike)."""
    long = []
    for path in python_sources():
        text = path.read_text()
        if text.count("\n") > 400 and "Why this module runs past 400 lines" not in (
                ast.get_docstring(ast.parse(text)) or ""):
            long.append(f"{path.relative_to(ROOT)}: {text.count(chr(10))} lines, no reason")
    assert not long, long
