"""`slicectl write`: tenants.yaml from a mapping (JSON or YAML), keeping the file's comments.

Configuration tools (the Ansible collection in ansible/, a CMDB export) hold tenants as data,
while operators annotate tenants.yaml by hand. Writing the data over the file must not lose
those notes, so the new mapping is merged into ruamel's round-trip tree of the existing file:
keys that stay keep their comments, their place and, when the value is unchanged, its
spelling (`24G` is not rewritten as `"24G"`); keys that go are removed; new keys are added at
the end of their mapping in the style of their siblings. The result is validated like any
tenants.yaml (a file slicectl cannot read is never written) and replaces the old one
atomically.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slicectl.atomic import write_atomically
from slicectl.errors import ConfigError, Problem


@dataclass(frozen=True)
class TenantsFileChange:
    """What writing a mapping into a tenants file changes: its text before (None: no file)
    and after."""

    path: str
    before: str | None
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "changed": self.changed, "before": self.before,
                "after": self.after}


def read_mapping(source: str) -> Mapping[str, Any]:
    """The mapping in FILE (JSON or YAML; `-`: standard input)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    name = "<stdin>" if source == "-" else source
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) else "is not UTF-8 text"
        raise ConfigError([Problem(name, 0, "", f"cannot read: {reason}",
                                   "give a JSON or YAML file with the tenants mapping")]) from e
    try:
        data = YAML(typ="safe").load(text)  # JSON is YAML: one loader reads both
    except YAMLError as e:
        raise ConfigError([Problem(name, 0, "", f"invalid JSON/YAML: {e}",
                                   "check the file's syntax")]) from e
    if not isinstance(data, Mapping):
        raise ConfigError([Problem(name, 0, "", "expected a mapping (version, tenants, ...)",
                                   "give the whole tenants.yaml document as one mapping")])
    return data


def merge(text: str | None, data: Mapping[str, Any]) -> str:
    """`data` as YAML, written into the document `text` (None or blank: a new document) so
    that comments, order and spelling of what stays are kept."""
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap
    from ruamel.yaml.util import load_yaml_guess_indent

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096
    indent, seq_indent = 2, 0
    tree: Any = None
    if text and text.strip():
        _, guessed, block_seq_indent = load_yaml_guess_indent(text)
        indent, seq_indent = guessed or 2, block_seq_indent or 0
        tree = yaml.load(text)
    yaml.indent(mapping=indent, sequence=indent + seq_indent, offset=seq_indent)
    if not isinstance(tree, CommentedMap):
        tree = CommentedMap()
    out = io.StringIO()
    yaml.dump(_update(tree, data), out)
    return out.getvalue()


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


def plan_write(path: str, data: Mapping[str, Any]) -> TenantsFileChange:
    """What writing `data` into tenants file `path` gives, validated; writes nothing.

    Raises ConfigError with the problems located in the new text (the lines it would have).
    """
    from slicectl.config import load_yaml, parse_config

    try:
        before: str | None = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        before = None
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) else "is not UTF-8 text"
        raise ConfigError([Problem(path, 0, "", f"cannot read: {reason}",
                                   "check the path and permissions of tenants.yaml")]) from e
    if before is not None:
        load_yaml(before, path, round_trip=True)  # a broken file: its error, located
    after = merge(before, data)
    parse_config(load_yaml(after, path), path)  # never write a file slicectl cannot read
    return TenantsFileChange(path, before, after)


def write_tenants(path: str, data: Mapping[str, Any], check: bool = False) -> TenantsFileChange:
    """Write `data` into tenants file `path` (atomically, comments kept) unless `check`."""
    change = plan_write(path, data)
    if change.changed and not check:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, change.after)
    return change


def run_write(path: str, source: str, check: bool, as_json: bool) -> int:
    """`slicectl write TENANTS --from FILE [--check] [--json]`."""
    change = write_tenants(path, read_mapping(source), check)
    if as_json:
        print(json.dumps(change.to_json(), indent=2))
    elif not change.changed:
        print(f"{path}: up to date")
    else:
        verb = "would write" if check else "wrote"
        state = "new file" if change.before is None else "comments kept"
        print(f"{path}: {verb} {len(change.after.splitlines())} line(s) ({state})")
    return 0
