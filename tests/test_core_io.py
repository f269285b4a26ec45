"""The pure core does no I/O (DESIGN §1; the import rules are in test_layers.py): the edge
(slicectl/host/) reads and writes and hands the core what it read, as
slicectl.host.files.templates reads the templates slicectl.core.render uses. Read from the
core's source, so a new file access fails here before it reaches a host."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Any of these in slicectl/core/ fails the test: a built-in named, a call of a method or
# function by its last name (os.path.isfile, Path.read_text, ...), a call of os's own whose name
# lists or strings also have (os.remove, not a list's remove), an attribute read, an import, or
# the module's own file (`__file__`).
IO_BUILTINS = {"open", "print", "input", "__file__"}
IO_CALLS = {"read_text", "read_bytes", "write_text", "write_bytes", "open", "exists", "is_file",
            "is_dir", "is_symlink", "iterdir", "glob", "rglob", "stat", "lstat", "mkdir",
            "rmdir", "unlink", "touch", "listdir", "scandir", "isfile", "isdir", "islink",
            "getmtime", "getsize", "realpath", "abspath", "getcwd", "getenv", "readlink",
            "makedirs", "fsync", "import_module"}
IO_CALLS_OF_OS = {"remove", "walk", "access", "chdir", "system", "popen", "replace", "rename"}
IO_ATTRIBUTES = {"environ", "stdin", "stdout", "stderr"}
IO_MODULES = {"importlib", "subprocess", "shutil", "socket", "tempfile", "glob", "sqlite3",
              "fcntl", "mmap", "select", "urllib", "http", "ctypes"}
# "module: what" -> why that I/O stays in the core; no other is allowed (none is).
IO_IN_CORE_ALLOWED: dict[str, str] = {}


def io_in_core(root: Path = ROOT) -> list[str]:
    """module:line: what, for every file access (or other I/O) the core's modules spell out,
    but the allowed ones."""
    found: list[tuple[str, int, str]] = []
    for path in sorted((root / "slicectl" / "core").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found += [(module, node.lineno, what)
                  for node in ast.walk(ast.parse(path.read_text(), str(path)))
                  if isinstance(node, ast.expr | ast.stmt) and (what := _io_named(node))]
    return [f"{module}:{line}: {what}" for module, line, what in sorted(found)
            if f"{module}: {what}" not in IO_IN_CORE_ALLOWED]


def _io_named(node: ast.expr | ast.stmt) -> str | None:
    """What I/O `node` is (a name, a call, an attribute read, an import), or None."""
    if isinstance(node, ast.Name) and node.id in IO_BUILTINS:
        return node.id
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
            node.func.attr in IO_CALLS or node.func.attr in IO_CALLS_OF_OS
            and ast.unparse(node.func.value) in ("os", "os.path")):
        return f"{node.func.attr}()"
    if isinstance(node, ast.Attribute) and node.attr in IO_ATTRIBUTES:
        return node.attr
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and not node.level:  # relative: slicectl's own
        names = [node.module or ""]
    else:
        return None
    bad = [name for name in names if name.split(".")[0] in IO_MODULES]
    return f"import {', '.join(bad)}" if bad else None


def test_the_core_does_no_io() -> None:
    """The core opens no file, lists no folder, reads no environment and prints nothing."""
    bad = io_in_core()
    assert not bad, ("move the I/O to slicectl/host/ and hand the core what it read, or list "
                     "it in IO_IN_CORE_ALLOWED with its reason:\n" + "\n".join(bad))


def test_the_checker_sees_file_access_in_the_core_only(tmp_path: Path) -> None:
    for folder in ("core/config", "host"):
        (tmp_path / "slicectl" / folder).mkdir(parents=True)
    (tmp_path / "slicectl" / "core" / "config" / "a.py").write_text(
        "import os\nfrom pathlib import Path\n"
        "def f(p):\n"
        "    with open(p) as f:\n        return f.read()\n"
        "def g(p):\n"
        "    return Path(p).exists() and Path(p).read_text() + os.environ['X']\n"
        "def h():\n"
        "    from importlib import resources\n"
        "    return os.path.isfile(os.path.join(os.path.dirname(__file__), 'x'))\n"
        "def k(p):\n    os.remove(p)\n    import subprocess, re\n"
        "def pure(s, items):\n    items.remove(s)\n"
        "    return s.replace('a', 'b'), os.path.join('a', s)\n")
    (tmp_path / "slicectl" / "host" / "b.py").write_text("def f(p):\n    return open(p)\n")
    assert io_in_core(tmp_path) == [
        "slicectl.core.config.a:4: open", "slicectl.core.config.a:7: environ",
        "slicectl.core.config.a:7: exists()", "slicectl.core.config.a:7: read_text()",
        "slicectl.core.config.a:9: import importlib",
        "slicectl.core.config.a:10: __file__", "slicectl.core.config.a:10: isfile()",
        "slicectl.core.config.a:12: remove()", "slicectl.core.config.a:13: import subprocess"]
