"""tenants.yaml on disk: the one reader and the one writer of the file, and `slicectl write`
(a mapping, JSON or YAML, merged into it with its comments kept; the merge itself is
slicectl.core.config.yamledit's).

Every front end reads the file with `read_tenants_text`, so each refuses the same files with
the same located error: not a regular file, larger than yamldoc.MAX_TEXT, not UTF-8, holding a
NUL, or (run as root) writable by another user. Every edit (`slicectl write`, `recommend
--write`, the TUI's edit dialog) writes it with `replace_tenants`, a compare-and-swap under the
file's own lock (slicectl.host.files.lock): the text the edit was made from must still be the
file's, or nothing is written, so two editors never lose each other's change.

Two places stay apart, each for its reason: the generator reads the file's bytes itself, with
the same slicectl.host.files.trust checks, because its boot path compares them undecoded with
the recorded placement's and imports as little as it can (when it plans, it loads the file
through this reader); and generator mode replaces its own copy in /etc/slicectl whole, under
the unit directory's lock (slicectl.apply.generator_mode).

Configuration tools (the Ansible collection in ansible/, a CMDB export) hold tenants as data,
while operators annotate tenants.yaml by hand. The result of `slicectl write` is validated like
any tenants.yaml (a file slicectl cannot read is never written).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from slicectl.core.errors import ConfigError, OutputError, Problem, shown
from slicectl.core.frozen import frozen

# How long an edit waits for another one writing the same tenants file (seconds).
WRITE_TIMEOUT = 60.0


def read_tenants_text(path: str) -> str:
    """tenants.yaml's text; a byte that is not UTF-8, or a NUL, is refused with its line.

    Only a regular file is read (a FIFO or a device is refused without blocking), at most
    yamldoc.MAX_TEXT of it, and, run as root, only one no other user could have written
    (slicectl.host.files.trust). Raises ConfigError."""
    from slicectl.core.config.yamldoc import MAX_TEXT
    from slicectl.host.files.trust import read_bounded

    name = shown(path)  # bytes that are not UTF-8 as \xNN, on one line
    raw = read_bounded(path, "tenants.yaml", MAX_TEXT)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        column = e.start - raw.rfind(b"\n", 0, e.start)
        raise ConfigError([Problem(name, line, "", f"is not UTF-8 text (byte "
                                   f"{raw[e.start]:#04x} in column {column})",
                                   "save the file as UTF-8")]) from None
    if "\0" in text:
        at = text.index("\0")
        raise ConfigError([Problem(name, text.count("\n", 0, at) + 1, "",
                                   "contains a NUL character", "remove it; tenants.yaml is "
                                   "text")])
    return text


def read_tenants_if_any(path: str) -> str | None:
    """read_tenants_text, or None when there is no file at `path` (a link to nothing is an
    error: it names a file that is not there)."""
    if not os.path.lexists(path):
        return None
    return read_tenants_text(path)


class LockedTenants:
    """A tenants file whose lock this process holds (see `locked_tenants`)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def holds(self, expected: str | None) -> bool:
        """Whether the file's text is still `expected` (None: there is no file); a file that
        cannot be read any more holds nothing that was read from it."""
        try:
            return read_tenants_if_any(self.path) == expected
        except ConfigError:
            return False

    def replace(self, new_text: str, expected: str | None) -> bool:
        """Write `new_text` over the file if it still holds `expected` (None: no file), its
        mode kept; returns whether anything was written (False: the text was the same).

        Raises OutputError, naming the file, when it changed since it was read; ConfigError
        when it cannot be read."""
        now = read_tenants_if_any(self.path)
        if now != expected:
            raise OutputError(f"{shown(self.path)} changed since it was read (another edit?); "
                              "nothing was written", "read it again and redo the change")
        if now == new_text:
            return False
        from slicectl.host.files.owned import write_atomically

        # The file a link names is rewritten, the link kept (as the lock, by the real path).
        real = Path(os.path.realpath(self.path))
        try:
            real.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(real, new_text)
        except OSError as e:
            raise OutputError(f"cannot write {shown(self.path)}: {e.strerror or e}",
                              "check the permissions of the file and its folder") from e
        return True


@contextmanager
def locked_tenants(path: str, timeout: float = WRITE_TIMEOUT,
                   on_wait: Callable[[str], None] | None = None) -> Iterator[LockedTenants]:
    """Hold the lock of tenants file `path` for the `with` block: no other slicectl edit
    writes it meanwhile. `on_wait(holder)` is called once if another edit holds it. Raises
    OutputError when another holds it for `timeout` seconds, or when the lock cannot be
    taken."""
    from slicectl.core.errors import LockTimeout
    from slicectl.host.files.lock import locked_file

    with ExitStack() as stack:
        try:
            stack.enter_context(locked_file(Path(path), timeout, on_wait))
        except LockTimeout as e:
            raise OutputError(f"{shown(path)} is being written by {e.holder}: gave up after "
                              f"waiting {timeout:g} s",
                              "let that edit finish, then read the file again and redo the "
                              "change") from None
        yield LockedTenants(path)


def replace_tenants(path: str, new_text: str, expected: str | None,
                    timeout: float = WRITE_TIMEOUT,
                    on_wait: Callable[[str], None] | None = None) -> bool:
    """Write `new_text` into tenants file `path`, atomically and under its lock, if the file
    still holds `expected` (the text the change was made from; None: there was no file);
    returns whether it was written. `timeout`, `on_wait`: as locked_tenants'; see
    LockedTenants.replace for the errors."""
    with locked_tenants(path, timeout, on_wait) as held:
        return held.replace(new_text, expected)


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
    from slicectl.core.config.yamledit import merge_document

    before = read_tenants_if_any(path)
    if before is not None:
        load_yaml(before, path, round_trip=True)  # a broken file: its error, located
    after = merge_document(before, data)
    parse_config(load_yaml(after, path), path)  # never write a file slicectl cannot read
    return TenantsFileChange(path, before, after)


def write_tenants(path: str, data: Mapping[str, Any], check: bool = False) -> TenantsFileChange:
    """Write `data` into tenants file `path` (atomically, comments kept) unless `check`;
    refused when the file changes meanwhile (replace_tenants)."""
    change = plan_write(path, data)
    if change.changed and not check:
        replace_tenants(path, change.after, change.before)
    return change
