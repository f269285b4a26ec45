"""The unit-file templates read for slicectl.core.render: the built-in ones from the installed
package (read once per process) and `--templates DIR`'s over them (read at each load, so an
edited template renders as edited). The one reader of templates: every render gets its
templates here."""

from __future__ import annotations

import functools
import os

from slicectl.core.errors import RenderError
from slicectl.core.render import TEMPLATES, UnitTemplates

SUFFIX = ".j2"


def builtin_dir() -> str:
    """The built-in templates' folder: the checkout's templates/ or, when installed, the
    package data's."""
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    checkout = os.path.join(os.path.dirname(package), "templates")
    if os.path.isfile(os.path.join(checkout, TEMPLATES["unit"])):
        return checkout
    # The package's folder, not importlib.resources: that import alone is ~2% of `generate`
    # (the templates are plain files beside the modules, as jinja2 read them before).
    import importlib

    return os.path.dirname(str(importlib.import_module("slicectl.templates").__file__))


@functools.cache
def builtin_templates() -> UnitTemplates:
    """The built-in templates, read once per process."""
    return UnitTemplates(_read_folder(builtin_dir()))


def load_templates(folder: str | None = None) -> UnitTemplates:
    """The templates a render uses: `folder`'s (--templates DIR) first; a template it does not
    have comes from the built-in ones (unit.j2 for the schedule's files is newer than many
    custom template folders). Refused when `folder` lacks slice.j2 or dropin.j2."""
    builtin = builtin_templates()
    if folder is None:
        return builtin
    for required in (TEMPLATES["unit"], TEMPLATES["dropin"]):
        if not os.path.isfile(os.path.join(folder, required)):
            raise RenderError(f"template {required} not found in {folder}",
                              "--templates DIR must hold slice.j2 and dropin.j2")
    return UnitTemplates({**builtin.sources, **_read_folder(folder)}, folder)


def _read_folder(folder: str) -> dict[str, tuple[str, str]]:
    """Every template (*.j2 file) at the top of `folder`: name -> (text, path), read as
    jinja2's FileSystemLoader reads one (UTF-8, universal newlines; the path as it names it,
    for the messages of a template's errors)."""
    found: dict[str, tuple[str, str]] = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.normpath(os.path.join(folder, name))
        if name.endswith(SUFFIX) and os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                found[name] = (f.read(), path)
    return found
