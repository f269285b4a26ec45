"""The built-in templates (templates/*.j2) as Python functions (pure), so that `generate` and
`apply` render them without importing jinja2, about a seventh of a `generate` (BENCHMARKS.md).

Each function returns what jinja2 returns for its template with render.py's options: `str()`
of each value, `trim_blocks`, `lstrip_blocks`, `keep_trailing_newline`, every name required.
render.py calls one only for a template file whose text is, character for character, the
`SOURCES` entry beside it: an edited built-in template, and every template of
`--templates DIR`, goes through jinja2. tests/test_render.py renders every example and case
file both ways, and generated values, and compares; it also fails when a built-in template
no longer matches its entry here, so an edit cannot silently bring jinja2 back.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

Context = Mapping[str, Any]  # render._context's names and values

SOURCES = {
    "dropin.j2": """\
{% for line in header %}
# {{ line }}
{% endfor %}

[{{ section }}]
{% if slice %}
Slice={{ slice }}
{% endif %}
{% for key, value in extra %}
{{ key }}={{ value }}
{% endfor %}
{% for key, value in properties %}
{{ key }}={{ value }}
{% endfor %}
""",
    "slice.j2": """\
{% for line in header %}
# {{ line }}
{% endfor %}
# Resource settings: {{ unit }}.d/50-slicectl.conf

[Unit]
Description={{ description }}
{% for unit in wants %}
Wants={{ unit }}
{% endfor %}
""",
    "unit.j2": """\
{% for line in header %}
# {{ line }}
{% endfor %}
{% for section, pairs in sections %}

[{{ section }}]
{% for key, value in pairs %}
{{ key }}={{ value }}
{% endfor %}
{% endfor %}
""",
}


def _header(c: Context) -> list[str]:
    return ["# " + str(line) + "\n" for line in c["header"]]


def _lines(pairs: Any) -> list[str]:
    return [str(key) + "=" + str(value) + "\n" for key, value in pairs]


def _dropin(c: Context) -> str:
    out = _header(c)
    out.append("\n[" + str(c["section"]) + "]\n")
    if c["slice"]:
        out.append("Slice=" + str(c["slice"]) + "\n")
    out += _lines(c["extra"])
    out += _lines(c["properties"])
    return "".join(out)


def _slice(c: Context) -> str:
    out = _header(c)
    out.append("# Resource settings: " + str(c["unit"]) + ".d/50-slicectl.conf\n\n[Unit]\n"
               "Description=" + str(c["description"]) + "\n")
    out += ["Wants=" + str(unit) + "\n" for unit in c["wants"]]
    return "".join(out)


def _unit(c: Context) -> str:
    out = _header(c)
    for section, pairs in c["sections"]:
        out.append("\n[" + str(section) + "]\n")
        out += _lines(pairs)
    return "".join(out)


RENDERERS: dict[str, Callable[[Context], str]] = {
    "dropin.j2": _dropin, "slice.j2": _slice, "unit.j2": _unit}


def renderer(folder: str, name: str) -> Callable[[Context], str] | None:
    """The function for template `name` of `folder`, if the file there is the built-in
    template unchanged; None (render it with jinja2) otherwise."""
    source = SOURCES.get(name)
    if source is None:
        return None
    try:
        with open(os.path.join(folder, name), encoding="utf-8", newline="") as f:
            if f.read(len(source) + 1) != source:
                return None
    except (OSError, UnicodeDecodeError):
        return None  # jinja2 reports it as it always has
    return RENDERERS[name]
