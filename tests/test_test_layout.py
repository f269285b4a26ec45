"""Tests mirror modules: every module of the package has a test file named after it.

The name: `tests/test_<module>.py` for a module of a layer folder (core, host, apply, views),
its topic folders left out (slicectl/core/placement/packing.py -> tests/test_packing.py), or
of the package's top level; `tests/test_<front end>_<module>.py` for a module of a front
end's folder, subfolders left out (slicectl/cli/balance.py -> tests/test_cli_balance.py,
slicectl/tui/screens/edit.py -> tests/test_tui_edit.py), so `cli/balance.py` and
`core/balance/balance.py` each have their own file. A name two layer folders share takes its
folder too (were there a slicectl/core/balance/state.py and a slicectl/host/state.py:
tests/test_core_state.py and tests/test_host_state.py); two modules that would
share a file (two topic folders' modules of one name) are named apart.
A package's `__init__.py` that defines functions or classes is its front end's module
(slicectl/generator/__init__.py -> tests/test_generator.py); `__main__.py` files only call
one. Tests that span modules (a verb end to end, the README, the linters) live in files of
their own names besides these.
"""

from __future__ import annotations

import ast
from pathlib import Path

from test_layers import MAY_IMPORT

ROOT = Path(__file__).resolve().parent.parent


def defines_something(path: Path) -> bool:
    """Whether a file holds a function or class definition (an __init__.py that is code)."""
    tree = ast.parse(path.read_text(), str(path))
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
               for n in tree.body)


def file_for(module: Path, shared: frozenset[str] = frozenset()) -> str:
    """The test file named after `module` (a path relative to the project root); `shared`:
    the module names that more than one layer folder has."""
    parts = list(module.relative_to("slicectl").with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1] or ["slicectl"]  # a package's own code: named after the package
    folder, name = parts[0], parts[-1]
    if len(parts) == 1 or (folder in MAY_IMPORT and name not in shared):
        return f"tests/test_{name}.py"
    return f"tests/test_{folder}_{name}.py"


def shared_names(found: list[Path]) -> frozenset[str]:
    """Module names that modules of two or more layer folders have."""
    folders: dict[str, set[str]] = {}
    for m in found:
        parts = m.relative_to("slicectl").parts
        if len(parts) > 1 and parts[0] in MAY_IMPORT and parts[-1] != "__init__.py":
            folders.setdefault(m.stem, set()).add(parts[0])
    return frozenset(name for name, where in folders.items() if len(where) > 1)


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
    """What to create: one line per module without its test file, and per test file two
    modules would share."""
    found = modules(root)
    shared = shared_names(found)
    named: dict[str, list[Path]] = {}
    for module in found:
        named.setdefault(file_for(module, shared), []).append(module)
    lines = sorted(f"{mods[0]}: create {test}" for test, mods in named.items()
                   if len(mods) == 1 and not (root / test).exists())
    lines += [f"{', '.join(map(str, mods))}: each would be tested in {test}; rename a module"
              for test, mods in sorted(named.items()) if len(mods) > 1]
    return lines


def test_every_module_has_a_test_file_named_after_it() -> None:
    gaps = missing()
    assert not gaps, "modules without their test file:\n" + "\n".join(gaps)


def test_the_names(tmp_path: Path) -> None:
    """The rule as the docstring states it, on a made-up package."""
    files = {"slicectl/__init__.py": "", "slicectl/__main__.py": "main()\n",
             "slicectl/install.py": "", "slicectl/core/__init__.py": '"""core"""\n',
             "slicectl/core/balance/__init__.py": '"""balance"""\n',
             "slicectl/core/balance/balance.py": "", "slicectl/host/sysfs.py": "",
             "slicectl/core/balance/state.py": "", "slicectl/host/state.py": "",
             "slicectl/core/monitor/tree.py": "", "slicectl/core/shares/tree.py": "",
             "slicectl/cli/__init__.py": "def main(): ...\n", "slicectl/cli/balance.py": "",
             "slicectl/tui/screens/edit.py": "", "slicectl/tui/components/edit.py": "",
             "slicectl/web/__init__.py": "class Web: ...\n", "slicectl/web/tree.py": ""}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_sysfs.py").write_text("")
    assert missing(tmp_path) == [
        "slicectl/cli/__init__.py: create tests/test_cli.py",
        "slicectl/cli/balance.py: create tests/test_cli_balance.py",
        "slicectl/core/balance/balance.py: create tests/test_balance.py",
        "slicectl/core/balance/state.py: create tests/test_core_state.py",
        "slicectl/host/state.py: create tests/test_host_state.py",
        "slicectl/install.py: create tests/test_install.py",
        "slicectl/web/__init__.py: create tests/test_web.py",
        "slicectl/web/tree.py: create tests/test_web_tree.py",
        "slicectl/core/monitor/tree.py, slicectl/core/shares/tree.py: each would be tested in "
        "tests/test_tree.py; rename a module",
        "slicectl/tui/components/edit.py, slicectl/tui/screens/edit.py: each would be tested "
        "in tests/test_tui_edit.py; rename a module"]
