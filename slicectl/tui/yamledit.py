"""Edits of one tenant written back into tenants.yaml, keeping the user's comments and layout.

ruamel's round-trip loader keeps comments, key order, flow/block style and quoting; the new
text is validated with the same parser as `slicectl validate` before anything is written, and
it replaces the file atomically (temp file + rename), so a crash never leaves half a file.
No textual imports here.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from slicectl.config import Config, load_yaml, parse_config
from slicectl.settings import EDITABLE_KEYS

# Keys the edit form offers: the settings table's editable rows, in its order.
EDITABLE = EDITABLE_KEYS


def current_values(text: str, path: str, tenant: str) -> dict[str, str]:
    """The editable keys of a tenant as the user wrote them ("" = not set)."""
    data = load_yaml(text, path)
    body = (data.get("tenants") or {}).get(tenant) or {}
    return {key: "" if body.get(key) is None else str(body[key]) for key in EDITABLE}


def _yaml_value(key: str, text: str) -> Any:
    """A form field as the YAML scalar the user would have typed."""
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    if text.isdigit():
        return int(text)
    if key == "cpus":
        # "0-3,16-19" must be quoted: a bare comma would split a flow mapping.
        return DoubleQuotedScalarString(text)
    return text


def edit_tenant(text: str, path: str, tenant: str, values: Mapping[str, str]) -> tuple[str,
                                                                                       Config]:
    """tenants.yaml with `values` set on `tenant` ("" removes a key); raises ConfigError."""
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap
    from ruamel.yaml.util import load_yaml_guess_indent

    _, indent, block_seq_indent = load_yaml_guess_indent(text)
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096  # never re-wrap long lines or flow mappings
    yaml.indent(mapping=indent or 2, sequence=(indent or 2) + (block_seq_indent or 0),
                offset=block_seq_indent or 0)
    data = yaml.load(text)
    tenants = data["tenants"]
    body = tenants[tenant]
    if body is None:
        body = tenants[tenant] = CommentedMap()
    for key in EDITABLE:
        if key not in values:
            continue
        new = values[key].strip()
        old = body.get(key)
        if not new:
            body.pop(key, None)
        elif old is None or str(old) != new:
            body[key] = _yaml_value(key, new)
    out = io.StringIO()
    yaml.dump(data, out)
    new_text = out.getvalue()
    config = parse_config(load_yaml(new_text, path), path)  # never write what we cannot read
    return new_text, config


