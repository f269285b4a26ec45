"""The package's folders are its layers (DESIGN §1, §12): the import rules between them, read
from the folders themselves, and no import cycles."""

from __future__ import annotations

import ast
import builtins
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Layers (DESIGN §1, §12) are the package's folders: slicectl/core/ (pure), slicectl/host/ (the
# edges), slicectl/apply/, slicectl/views/ (what the front ends show), slicectl/demo/ (a
# synthetic host: moving cgroup tree, fake systemd; only front ends may use it, so the product's
# own layers can never reach the fake), then one folder per front end. A module may import its
# own layer and the layers this table lists for it; a front end may import any layer. A folder
# (or top-level module) in no layer fails the test.
MAY_IMPORT = {"core": {"core"}, "host": {"core", "host"}, "apply": {"core", "host", "apply"},
              "views": {"core", "views"}, "demo": {"core", "host", "apply", "demo"}}
# "": the package's own __init__
FRONT_ENDS = {"cli", "tui", "exporter", "generator", "balancer", "", "__main__"}
FORBIDDEN_IN_CORE = ("textual", "dbus_fast", "rich", "prometheus_client")
# Import cycles allowed, each named with its reason; no other cycle is allowed (none is).
ALLOWED_CYCLES: list[set[str]] = []


def module_name(path: Path, root: Path = ROOT) -> str:
    """slicectl/cli/parser.py -> slicectl.cli.parser; a package's __init__.py -> the package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, module) for every import statement anywhere in the file (lazy ones too), with
    relative imports made absolute; `from a import b` yields both a and a.b."""
    tree = ast.parse(path.read_text(), str(path))
    package = module_name(path, root).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    result: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            result += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            result.append((node.lineno, module))
            result += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return result


def scan(root: Path = ROOT) -> dict[str, list[tuple[int, str]]]:
    """slicectl module -> every import in its file (line, module), each file parsed once."""
    return {module_name(p, root): imported_names(p, root)
            for p in sorted((root / "slicectl").rglob("*.py"))}


def import_graph(modules: dict[str, list[tuple[int, str]]]) -> dict[str, dict[str, int]]:
    """slicectl module -> {slicectl module it imports: line}."""
    return {name: {imported: line for line, imported in names
                   if imported in modules and imported != name}
            for name, names in modules.items()}


def cycles(graph: dict[str, dict[str, int]]) -> list[set[str]]:
    """The import cycles: strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def layer(module: str) -> str:
    """The layer of a module: the folder (or top-level module) under slicectl/ it lives in."""
    name = module.split(".")[1] if "." in module else ""
    if name in MAY_IMPORT or name in FRONT_ENDS:
        return name
    return "unclassified"


def boundary_violations(root: Path = ROOT) -> list[str]:
    """Imports that cross the layers the wrong way, modules in no layer, and import cycles
    but the allowed ones."""
    modules = scan(root)
    graph = import_graph(modules)
    found = cycles(graph)
    bad = [f"import cycle: {' <-> '.join(sorted(c))}" for c in found if c not in ALLOWED_CYCLES]
    bad += [f"allowed cycle gone, remove it: {sorted(c)}" for c in ALLOWED_CYCLES
            if root == ROOT and c not in found]
    for module, imports in graph.items():
        where = layer(module)
        if where == "unclassified":
            bad.append(f"{module}: in no layer (a folder of MAY_IMPORT or FRONT_ENDS)")
            continue
        if where == "core":
            bad += [f"{module}:{line}: core imports {name}" for line, name in modules[module]
                    if name.split(".")[0] in FORBIDDEN_IN_CORE]
        allowed = MAY_IMPORT.get(where)
        for imported, line in imports.items():
            if allowed is not None and layer(imported) not in allowed and imported != "slicectl":
                bad.append(f"{module}:{line}: {where} imports {layer(imported)} {imported}")
    return bad


def test_import_boundaries() -> None:
    """DESIGN §12: core -> core only; host -> core and host; apply -> core, host and apply;
    views -> core and views; demo -> core, host, apply and demo; nothing but a front end
    imports demo; no import cycles (lazy imports included) but the named ones."""
    bad = boundary_violations()
    assert not bad, "\n".join(bad)


def test_import_checker_sees_lazy_relative_and_crossing_imports(tmp_path: Path) -> None:
    # The checker itself must see lazy, relative and from-imports, and the layers by folder,
    # or the test above proves nothing.
    pkg = tmp_path / "slicectl"
    for folder in ("tui", "core", "host", "views", "demo", "odd"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "tui" / "__init__.py").write_text("from .app import run\n")
    (pkg / "tui" / "app.py").write_text("def run():\n    from .. import tui\n")
    (pkg / "core" / "config.py").write_text(
        "import os\ndef f():\n    from rich.table import Table\n"
        "    from slicectl.host import sysfs\n")
    (pkg / "host" / "sysfs.py").write_text("import slicectl.core.config\n"
                                           "from slicectl.views.tables import x\n"
                                           "from slicectl.demo import fakesystemd\n")
    (pkg / "demo" / "fakesystemd.py").write_text("")
    (pkg / "views" / "tables.py").write_text("from slicectl.core.config import f\n")
    (pkg / "views" / "rows.py").write_text("from ..tui import app\n")
    (pkg / "odd" / "thing.py").write_text("")
    (pkg / "core" / "placement").mkdir()  # a topic folder of the core is the core too
    (pkg / "core" / "placement" / "__init__.py").write_text('"""placement"""\n')
    (pkg / "core" / "placement" / "cores.py").write_text(
        "import textual\ndef f():\n    from slicectl.views import tables\n"
        "    from ..config import f\n")
    (pkg / "loose.py").write_text("")
    graph = import_graph(scan(tmp_path))
    assert graph["slicectl.core.config"] == {"slicectl.host.sysfs": 4, "slicectl.host": 4}
    assert graph["slicectl.tui"] == {"slicectl.tui.app": 1}
    assert graph["slicectl.core.placement.cores"] == {
        "slicectl.views": 3, "slicectl.views.tables": 3, "slicectl.core.config": 4}
    assert graph["slicectl.tui.app"] == {"slicectl.tui": 2, "slicectl": 2}
    assert sorted(map(sorted, cycles(graph))) == [
        ["slicectl.core.config", "slicectl.host.sysfs", "slicectl.views.tables"],
        ["slicectl.tui", "slicectl.tui.app"]]
    assert sorted(boundary_violations(tmp_path)) == [
        "import cycle: slicectl.core.config <-> slicectl.host.sysfs <-> slicectl.views.tables",
        "import cycle: slicectl.tui <-> slicectl.tui.app",
        "slicectl.core.config:3: core imports rich.table",
        "slicectl.core.config:3: core imports rich.table.Table",
        "slicectl.core.config:4: core imports host slicectl.host",
        "slicectl.core.config:4: core imports host slicectl.host.sysfs",
        "slicectl.core.placement.cores:1: core imports textual",
        "slicectl.core.placement.cores:3: core imports views slicectl.views",
        "slicectl.core.placement.cores:3: core imports views slicectl.views.tables",
        "slicectl.host.sysfs:2: host imports views slicectl.views.tables",
        "slicectl.host.sysfs:3: host imports demo slicectl.demo",
        "slicectl.host.sysfs:3: host imports demo slicectl.demo.fakesystemd",
        "slicectl.loose: in no layer (a folder of MAY_IMPORT or FRONT_ENDS)",
        "slicectl.odd.thing: in no layer (a folder of MAY_IMPORT or FRONT_ENDS)",
        "slicectl.odd: in no layer (a folder of MAY_IMPORT or FRONT_ENDS)",
        "slicectl.views.rows:1: views imports tui slicectl.tui",
        "slicectl.views.rows:1: views imports tui slicectl.tui.app"]
    assert cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {}}) == []


def test_top_level_is_small() -> None:
    """A newcomer reads the package's layout in a minute: few top-level modules, every folder a
    layer or a front end."""
    top = sorted(p.name for p in (ROOT / "slicectl").iterdir()
                 if p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))
    assert len([n for n in top if n.endswith(".py")]) <= 10, top
    folders = {n for n in top if not n.endswith(".py")}
    assert folders <= set(MAY_IMPORT) | FRONT_ENDS, folders - set(MAY_IMPORT) - FRONT_ENDS


def test_every_folder_of_the_package_is_installed() -> None:
    """`pip install .` installs the packages pyproject.toml lists: a folder left out of the
    list works from the checkout and fails on a host ("No module named ...")."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())
                 ["tool"]["setuptools"]["packages"])
    folders = {".".join(p.parent.relative_to(ROOT).parts)
               for p in (ROOT / "slicectl").rglob("__init__.py")}
    assert folders - listed == set(), "add them to [tool.setuptools] packages in pyproject.toml"


# The layers split into topic folders, each an __init__.py with only a docstring.
TOPIC_LAYERS = ("core", "host")


def topic_folders(layer: str, root: Path = ROOT) -> str:
    """docs/development.md's list of a layer's topic folders, each told by its __init__'s
    docstring: the folders describe themselves, so the list cannot drift from them."""
    lines = []
    for init in sorted((root / "slicectl" / layer).glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        lines += textwrap.wrap(f"`{init.parent.name}/`: {' '.join(doc.split())}", 96,
                               initial_indent="    - ", subsequent_indent="      ")
    return "\n".join(lines)


def test_topic_folders_say_what_they_own_and_hold_nothing_else() -> None:
    """Each topic folder of the core and the host has a docstring saying what it owns and
    nothing else: no re-exports (imports name the module), and importing a folder loads
    nothing (the generator's start-up)."""
    for layer in TOPIC_LAYERS:
        for init in sorted((ROOT / "slicectl" / layer).glob("*/__init__.py")):
            body = ast.parse(init.read_text()).body
            assert len(body) == 1 and ast.get_docstring(ast.Module(body, [])), init


@pytest.mark.parametrize("layer", TOPIC_LAYERS)
def test_development_md_lists_the_topic_folders_from_their_docstrings(layer: str) -> None:
    text = (ROOT / "docs" / "development.md").read_text()
    assert f"\n{topic_folders(layer)}\n" in text, (
        f"docs/development.md's list of the {layer}'s folders is stale; replace it with:\n"
        + topic_folders(layer))


def test_no_folder_holds_more_than_fifteen_modules() -> None:
    """A folder of many modules told apart by prefixes is the flat-folder problem: past 15,
    split it into topic folders."""
    crowded = {str(folder.relative_to(ROOT)): n
               for folder in [ROOT / "slicectl", *(ROOT / "slicectl").rglob("*/")]
               if folder.is_dir() and (n := len(list(folder.glob("*.py")))) > 15}
    assert not crowded, crowded


def top_level_classes(root: Path = ROOT) -> dict[str, list[str]]:
    """Class name -> the modules of slicectl/ that define it at their top level."""
    found: dict[str, list[str]] = {}
    for path in sorted((root / "slicectl").rglob("*.py")):
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append(module_name(path, root))
    return found


def duplicate_classes(root: Path = ROOT) -> list[str]:
    """Class names defined by more than one module, each with its modules."""
    return [f"{name}: {', '.join(modules)}"
            for name, modules in sorted(top_level_classes(root).items()) if len(modules) > 1]


def test_class_names_are_unique_in_the_package() -> None:
    """A class name means one thing across the package: a reader (or a grep) meeting `Row`
    knows which one it is without looking at the imports."""
    bad = duplicate_classes()
    assert not bad, "rename one of each to say what it is:\n" + "\n".join(bad)


def test_duplicate_class_checker_sees_classes_in_different_folders(tmp_path: Path) -> None:
    for folder in ("core", "host"):
        (tmp_path / "slicectl" / folder).mkdir(parents=True)
    (tmp_path / "slicectl" / "core" / "a.py").write_text("class Row:\n    pass\n")
    (tmp_path / "slicectl" / "host" / "b.py").write_text(
        "class Row:\n    pass\nclass Other:\n    class Row:\n        pass\n")
    assert duplicate_classes(tmp_path) == ["Row: slicectl.core.a, slicectl.host.b"]


# Every exception class of the package is in slicectl/core/errors.py but these, each with the
# reason it stays in its module.
EXCEPTIONS_ELSEWHERE = {
    "slicectl.core.config.yamldoc.UnreadableScalar": "a ruamel ConstructorError subclass, made "
    "when a YAML file is read: core.errors must not import ruamel",
    "slicectl.balancer.daemon._Stop": "a signal to end the loop, raised and caught in its module",
    "slicectl.generator._Failed": "planning failed, raised and caught in its module",
    "slicectl.host.cgroup.sampler._Vanished": "a cgroup gone, raised and caught in its module",
}
_BUILTIN_EXCEPTIONS = {name for name, value in vars(builtins).items()
                       if isinstance(value, type) and issubclass(value, BaseException)}


def exception_classes(root: Path = ROOT) -> set[str]:
    """module.Class for every exception class defined in slicectl/ (nested ones too): a class
    whose base is a built-in exception, is named *Error or *Exception (a library's), or is an
    exception class of the package."""
    classes = [(module_name(path, root), node)
               for path in sorted((root / "slicectl").rglob("*.py"))
               for node in ast.walk(ast.parse(path.read_text(), str(path)))
               if isinstance(node, ast.ClassDef)]
    known = set(_BUILTIN_EXCEPTIONS)
    found: set[str] = set()
    while True:
        new = {(module, node.name) for module, node in classes
               if any(_base_name(b) in known or _base_name(b).endswith(("Error", "Exception"))
                      for b in node.bases)}
        if {f"{m}.{n}" for m, n in new} == found:
            return found
        found = {f"{m}.{n}" for m, n in new}
        known |= {n for _, n in new}


def _base_name(base: ast.expr) -> str:
    """The last name of a base class expression: `errors.SlicectlError` -> SlicectlError."""
    if isinstance(base, ast.Attribute):
        return base.attr
    return base.id if isinstance(base, ast.Name) else ""


def misplaced_exceptions(root: Path = ROOT) -> list[str]:
    """Exception classes outside slicectl/core/errors.py and not in EXCEPTIONS_ELSEWHERE."""
    return sorted(name for name in exception_classes(root)
                  if not name.startswith("slicectl.core.errors.")
                  and name not in EXCEPTIONS_ELSEWHERE)


def test_exception_classes_live_in_core_errors() -> None:
    """One place to read every error the package can raise (STYLE: one error hierarchy)."""
    bad = misplaced_exceptions()
    assert not bad, ("move them to slicectl/core/errors.py, or list one in "
                     "EXCEPTIONS_ELSEWHERE with its reason:\n" + "\n".join(bad))
    gone = set(EXCEPTIONS_ELSEWHERE) - exception_classes()
    assert not gone, f"listed in EXCEPTIONS_ELSEWHERE but gone, remove them: {sorted(gone)}"


def test_exception_checker_sees_nested_inherited_and_library_exceptions(tmp_path: Path) -> None:
    for folder in ("core", "host"):
        (tmp_path / "slicectl" / folder).mkdir(parents=True)
    (tmp_path / "slicectl" / "core" / "errors.py").write_text(
        "class SlicectlError(Exception):\n    pass\n")
    (tmp_path / "slicectl" / "host" / "a.py").write_text(
        "from slicectl.core import errors\n"
        "class Gone(OSError):\n    pass\n"
        "class Refused(errors.SlicectlError):\n    pass\n"
        "class Worse(Refused):\n    pass\n"
        "class Plain:\n    pass\n"
        "def f():\n    class Odd(ConstructorError):\n        pass\n")
    assert misplaced_exceptions(tmp_path) == [
        "slicectl.host.a.Gone", "slicectl.host.a.Odd", "slicectl.host.a.Refused",
        "slicectl.host.a.Worse"]
