"""`slicectl write`: tenants.yaml from a mapping (JSON or YAML), keeping the file's comments
(an edge: it reads and writes files; the merge itself is slicectl.core.config.yamledit's).

Configuration tools (the Ansible collection in ansible/, a CMDB export) hold tenants as data,
while operators annotate tenants.yaml by hand. The result is validated like any tenants.yaml
(a file slicectl cannot read is never written) and replaces the old one atomically.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from slicectl.core.config.yamledit import merge_document
from slicectl.core.errors import ConfigError, Problem
from slicectl.core.frozen import frozen
from slicectl.host.files.atomic import write_atomically


@frozen
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

    def diff(self) -> str:
        """The change as a unified diff (empty when nothing changes)."""
        import difflib

        return "".join(difflib.unified_diff(
            (self.before or "").splitlines(keepends=True), self.after.splitlines(keepends=True),
            fromfile=self.path if self.before is not None else "/dev/null",
            tofile=f"{self.path} (new)"))


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


def plan_write(path: str, data: Mapping[str, Any]) -> TenantsFileChange:
    """What writing `data` into tenants file `path` gives, validated; writes nothing.

    Raises ConfigError with the problems located in the new text (the lines it would have).
    """
    from slicectl.core.config.config import load_yaml, parse_config

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
    after = merge_document(before, data)
    parse_config(load_yaml(after, path), path)  # never write a file slicectl cannot read
    return TenantsFileChange(path, before, after)


def write_tenants(path: str, data: Mapping[str, Any], check: bool = False) -> TenantsFileChange:
    """Write `data` into tenants file `path` (atomically, comments kept) unless `check`."""
    change = plan_write(path, data)
    if change.changed and not check:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, change.after)
    return change
