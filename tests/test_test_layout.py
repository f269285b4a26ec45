"""Tests mirror the package folder by folder: every module has a test file at its place.

slicectl/X/Y.py is tested in tests/X/test_Y.py (slicectl/core/placement/repack.py ->
tests/core/placement/test_repack.py, slicectl/cli/balance.py -> tests/cli/test_balance.py,
slicectl/install.py -> tests/test_install.py). A package's `__init__.py` that defines
functions or classes is the package's module, so it is tested where a module of the
package's name would be (slicectl/cli/__init__.py -> tests/test_cli.py); `__main__.py` files
only call one. Tests that span modules (a verb end to end, the README, the linters, a
package as a whole) live in files of their own names, at the top or in the folder they are
about. tests/ has no __init__.py files: pytest imports the test modules by name from tests/
(pyproject.toml), so two folders may each hold a test_balance.py.

The folders of tests/ that mirror no package folder are listed in OWN_FOLDERS, with why.
"""

from __future__ import annotations

import ast
from pathlib import Path

from paths import ROOT

# Folders of tests/ that are not the package's: what each holds.
OWN_FOLDERS = {
    "cases": "quadlet-style case files with their `## assert-...` lines (test_cases.py)",
    "e2e": "the e2e tier, run inside the VM testbed (tests/testbed/e2e), not on the host",
    "fixtures": "sysfs, proc and cgroup trees and topologies the tests read",
    "golden": "expected outputs the tests compare with",
    "shell": "the zsh script cli/test_completion.py drives in a pseudo-terminal",
    "snapshots": "the TUI's SVG snapshots (conftest.py's svg_snapshot), whichever folder "
                 "the test is in",
    "testbed": "the VM testbed the e2e tier runs in",
}


def defines_something(path: Path) -> bool:
    """Whether a file holds a function or class definition (an __init__.py that is code)."""
    tree = ast.parse(path.read_text(), str(path))
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
               for n in tree.body)


def file_for(module: Path) -> str:
    """The test file of `module` (a path relative to the project root)."""
    parts = list(module.relative_to("slicectl").with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1] or ["slicectl"]  # a package's own code: named after the package
    return "/".join(["tests", *parts[:-1], f"test_{parts[-1]}.py"])


def modules(root: Path = ROOT) -> list[Path]:
    """Every module that wants a test file, relative to `root`."""
    found = []
    for path in sorted((root / "slicectl").rglob("*.py")):
        if path.name == "__main__.py" or (path.name == "__init__.py"
                                          and not defines_something(path)):
            continue
        found.append(path.relative_to(root))
    return found


def missing(root: Path = ROOT) -> list[str]:
    """What to create: one line per module without its test file."""
    return sorted(f"{module}: create {file_for(module)}" for module in modules(root)
                  if not (root / file_for(module)).exists())


def strays(root: Path = ROOT) -> list[str]:
    """Test files in a folder of tests/ that mirrors no folder of the package (a folder
    renamed or removed, its tests left behind), OWN_FOLDERS aside."""
    tests = root / "tests"
    return sorted(str(path.relative_to(root)) for path in tests.rglob("test_*.py")
                  if path.parent != tests
                  and path.relative_to(tests).parts[0] not in OWN_FOLDERS
                  and not (root / "slicectl" / path.parent.relative_to(tests)).is_dir())


def test_every_module_has_its_test_file() -> None:
    gaps = missing()
    assert not gaps, "modules without their test file:\n" + "\n".join(gaps)


def test_every_test_folder_mirrors_a_package_folder() -> None:
    assert not strays(), "test files in a folder the package does not have:\n" + "\n".join(
        strays())


def test_the_own_folders_exist() -> None:
    """OWN_FOLDERS lists no folder that is gone."""
    assert [f for f in OWN_FOLDERS if not (ROOT / "tests" / f).is_dir()] == []


def test_the_rule(tmp_path: Path) -> None:
    """The rule as the docstring states it, on a made-up package."""
    files = {"slicectl/__init__.py": "", "slicectl/__main__.py": "main()\n",
             "slicectl/install.py": "", "slicectl/core/__init__.py": '"""core"""\n',
             "slicectl/core/balance/__init__.py": '"""balance"""\n',
             "slicectl/core/balance/balance.py": "", "slicectl/host/sysfs.py": "",
             "slicectl/cli/__init__.py": "def main(): ...\n", "slicectl/cli/balance.py": "",
             "slicectl/tui/screens/edit.py": "", "slicectl/tui/components/edit.py": "",
             "slicectl/web/__init__.py": "class Web: ...\n", "slicectl/web/tree.py": "",
             "tests/host/test_sysfs.py": "", "tests/cases/test_x.py": "",
             "tests/test_readme.py": "", "tests/gone/test_old.py": ""}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert missing(tmp_path) == [
        "slicectl/cli/__init__.py: create tests/test_cli.py",
        "slicectl/cli/balance.py: create tests/cli/test_balance.py",
        "slicectl/core/balance/balance.py: create tests/core/balance/test_balance.py",
        "slicectl/install.py: create tests/test_install.py",
        "slicectl/tui/components/edit.py: create tests/tui/components/test_edit.py",
        "slicectl/tui/screens/edit.py: create tests/tui/screens/test_edit.py",
        "slicectl/web/__init__.py: create tests/test_web.py",
        "slicectl/web/tree.py: create tests/web/test_tree.py"]
    assert strays(tmp_path) == ["tests/gone/test_old.py"]
