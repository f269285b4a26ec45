"""The one tenants.yaml editor: set tenants' keys, keeping the user's comments and layout.

The TUI's edit form and `recommend --write` both go through `edit_tenants`. ruamel's
round-trip loader keeps comments, key order, flow/block style and quoting; it still respaces
some lines it did not need to touch (`user.slice:   {…}` loses its alignment), so every line
outside the edited tenants is taken back from the original text, byte for byte, whenever the
result means the same. The new text is validated with the same parser as `slicectl validate`
before it is returned; callers write it atomically. Pure: text in, text out.
"""

from __future__ import annotations

import difflib
import io
from collections.abc import Mapping
from typing import Any

from slicectl.core.config.config import Config, load_yaml, parse_config
from slicectl.core.properties.properties import EDITABLE_KEYS

# Keys the TUI's edit form offers: the settings table's editable rows, in its order.
EDITABLE = EDITABLE_KEYS

Span = tuple[int, int]  # lines [start, end) of one tenant in the original text, 0-based


def current_values(text: str, path: str, tenant: str) -> dict[str, str]:
    """The editable keys of a tenant as the user wrote them ("" = not set)."""
    data = load_yaml(text, path)
    body = (data.get("tenants") or {}).get(tenant) or {}
    return {key: _text(body.get(key)) for key in EDITABLE}


def _text(value: Any) -> str:
    """A value as the form shows it: YAML's spelling of booleans, lists as "0,1"."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(map(_text, value))
    return str(value)


def edit_tenant(text: str, path: str, tenant: str, values: Mapping[str, str]) -> tuple[str,
                                                                                       Config]:
    """tenants.yaml with `values` set on `tenant` ("" removes a key); raises ConfigError."""
    return edit_tenants(text, path, {tenant: values})


def edit_tenants(text: str, path: str, changes: Mapping[str, Mapping[str, str]]
                 ) -> tuple[str, Config]:
    """tenants.yaml with each tenant's `values` set ("" removes a key) and the config it
    parses to; raises ConfigError when the result is not a valid tenants.yaml.

    A key the tenant lacks goes right after the nearest key before it in `values` that the
    tenant has, else at the end of the tenant.
    """
    yaml = _round_trip_yaml(text)
    data = yaml.load(text)
    tenants = data["tenants"]
    spans = [_span(data, name) for name in changes]
    for name, values in changes.items():
        _set_values(tenants, name, values)
    out = io.StringIO()
    yaml.dump(data, out)
    new_text = _keep_other_lines(text, out.getvalue(), spans, path)
    config = parse_config(load_yaml(new_text, path), path)  # never write what we cannot read
    return new_text, config


def _round_trip_yaml(text: str) -> Any:
    """yamldoc's round-trip YAML, writing with the indentation `text` uses."""
    from ruamel.yaml.util import load_yaml_guess_indent

    from slicectl.core.config.yamldoc import round_trip_yaml

    _, indent, block_seq_indent = load_yaml_guess_indent(text)
    yaml = round_trip_yaml()
    yaml.preserve_quotes = True
    yaml.width = 4096  # never re-wrap long lines or flow mappings
    yaml.indent(mapping=indent or 2, sequence=(indent or 2) + (block_seq_indent or 0),
                offset=block_seq_indent or 0)
    return yaml


def _yaml_value(key: str, text: str) -> Any:
    """A value as the YAML scalar the user would have typed."""
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    if text.isascii() and text.isdigit():  # not ٥ or ５: refused by the key's parser
        return int(text)
    if key in ("cpus", "nodes"):
        # "0-3,16-19" must be quoted: a bare comma would split a flow mapping.
        return DoubleQuotedScalarString(text)
    if text in ("true", "false"):  # exclusive: a YAML boolean, not the string
        return text == "true"
    return text


def _set_values(tenants: Any, name: str, values: Mapping[str, str]) -> None:
    from ruamel.yaml.comments import CommentedMap

    body = tenants[name]
    if body is None:
        body = tenants[name] = CommentedMap()
    previous: str | None = None
    for key, raw in values.items():
        new = raw.strip()
        old = body.get(key)
        if not new:
            body.pop(key, None)
        elif old is not None and _text(old) == new:
            pass  # unchanged: keep the user's spelling and quoting
        elif old is None and previous is not None and previous in body:
            body.insert(list(body).index(previous) + 1, key, _yaml_value(key, new))
        else:
            body[key] = _yaml_value(key, new)
        if key in body:
            previous = key


def _span(data: Any, name: str) -> Span:
    """The lines of tenant `name`: from its key to the next tenant or top-level key."""
    tenants = data["tenants"]
    start = tenants.lc.key(name)[0]
    after = [tenants.lc.key(k)[0] for k in tenants] + [data.lc.key(k)[0] for k in data]
    end = min((line for line in after if line > start), default=1 << 30)
    return start, end


def _touches(i1: int, i2: int, spans: list[Span]) -> bool:
    """Whether the original lines [i1, i2) (or, when empty, an insertion at i1) belong to an
    edited tenant."""
    if i1 == i2:
        return any(start < i1 <= end for start, end in spans)
    return any(start < i2 and i1 < end for start, end in spans)


def _keep_other_lines(old: str, new: str, spans: list[Span], path: str) -> str:
    """`new`, with the lines outside `spans` that the round trip changed taken back from
    `old`; `new` itself when that would change what the document means."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    merged: list[str] = []
    # Lines that differ only in spacing match (ruamel respaced them): each is taken back
    # unless it belongs to an edited tenant.
    matcher = difflib.SequenceMatcher(None, [" ".join(line.split()) for line in a],
                                      [" ".join(line.split()) for line in b], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):  # line for line
            merged += [b[j1 + k] if _touches(i, i + 1, spans) else a[i]
                       for k, i in enumerate(range(i1, i2))]
            continue
        merged += b[j1:j2] if _touches(i1, i2, spans) else a[i1:i2]
    text = "".join(merged)
    if text != new and load_yaml(text, path) != load_yaml(new, path):
        return new
    return text


# --- the whole document (`slicectl write`) -------------------------------------------


def merge_document(text: str | None, data: Mapping[str, Any]) -> str:
    """The whole document `data` written into `text` (None or blank: a new document): keys
    that stay keep their comments, their place and, when the value is unchanged, its
    spelling (`24G` is not rewritten as `"24G"`); keys that go are removed; new keys are
    added at the end of their mapping in the style of their siblings (`slicectl write`)."""
    from ruamel.yaml.comments import CommentedMap

    yaml = _round_trip_yaml(text or "")
    tree = yaml.load(text) if text and text.strip() else None
    if not isinstance(tree, CommentedMap):
        tree = CommentedMap()
    spans = _changed_spans(tree, data)
    out = io.StringIO()
    yaml.dump(_update(tree, data), out)
    if not text or not tree:
        return out.getvalue()
    # Lines outside what changed, as the user wrote them (ruamel respaces some: `db:   {…}`).
    return _keep_other_lines(text, out.getvalue(), spans, "<merged>")


def _changed_spans(tree: Any, data: Mapping[str, Any]) -> list[Span]:
    """The lines of `tree` (as loaded, before the merge) that merging `data` changes: each
    tenant changed or removed, each other top-level key changed or removed, and the last
    tenant or key where new ones are added after it."""
    keys = list(tree)
    if not keys:
        return []
    spans = []
    for key in keys:
        old, new = tree[key], data.get(key)
        if key == "tenants" and isinstance(old, Mapping) and isinstance(new, Mapping) and old:
            names = list(old)
            spans += [_span(tree, n) for n in names if n not in new or not _same(old[n], new[n])]
            if any(n not in old for n in new):
                spans.append(_span(tree, names[-1]))
        elif key not in data or not _same(old, new):
            spans.append(_top_span(tree, key))
    if any(k not in tree for k in data):
        spans.append(_top_span(tree, keys[-1]))
    return spans


def _top_span(data: Any, key: Any) -> Span:
    """The lines of top-level `key`: from it to the next top-level key."""
    start = data.lc.key(key)[0]
    end = min((data.lc.key(k)[0] for k in data if data.lc.key(k)[0] > start), default=1 << 30)
    return start, end


def _same(old: Any, new: Any) -> bool:
    """Equal as data, bools apart from numbers (YAML `true` is not `1`)."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        return old.keys() == new.keys() and all(_same(old[k], new[k]) for k in new)
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(_same(a, b) for a, b in zip(old, new, strict=True))
    return isinstance(old, bool) == isinstance(new, bool) and old == new and (
        isinstance(old, str) == isinstance(new, str))


def _flow(node: Any) -> bool:
    fa = getattr(node, "fa", None)
    return bool(fa is not None and fa.flow_style())


def _fresh(value: Any, flow: bool) -> Any:
    """A new node for `value`; in flow style when its siblings are (`db1: {cpus: 2}`)."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(value, Mapping):
        node: Any = CommentedMap((k, _fresh(v, False)) for k, v in value.items())
    elif isinstance(value, list):
        node = CommentedSeq(_fresh(v, False) for v in value)
    else:
        return value
    children = node.values() if isinstance(node, Mapping) else node
    if flow and not any(isinstance(v, Mapping | list) for v in children):
        node.fa.set_flow_style()
    return node


def _update(node: Any, new: Any) -> Any:
    """`new`, reusing `node` (and its comments and styles) where the two agree."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(node, CommentedMap) and isinstance(new, Mapping):
        for key in [k for k in node if k not in new]:
            del node[key]
        flow = any(_flow(v) for v in node.values())
        for key, value in new.items():
            if key in node:
                updated = _update(node[key], value)
                if updated is not node[key]:
                    node[key] = updated
            else:
                node[key] = _fresh(value, flow)
        return node
    if _same(node, new):
        return node
    if isinstance(node, CommentedSeq) and isinstance(new, list):
        seq = _fresh(new, False)
        if _flow(node):
            seq.fa.set_flow_style()
        return seq
    return _fresh(new, False)
