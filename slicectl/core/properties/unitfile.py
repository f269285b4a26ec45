"""systemd's unit-file syntax, read as systemd reads it (systemd.syntax(7)), for the units and
drop-ins slicectl did not write: which file sets a property, and to what (pure).

What a line regex misses, and this does not: `Key = value` (whitespace around `=`), sections
(a setting counts only in the section systemd reads it from), `#` and `;` comments, a
trailing `\\` joining the next line (with a space; comment lines inside such a continuation
are skipped, as systemd does), and the empty assignment `Key=` that resets a setting to its
default. Modelled on systemd's own parser and podman quadlet's `unitfile.go`.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import NamedTuple

# The sections of a unit that take resource-control settings (systemd.resource-control(5)).
RESOURCE_SECTIONS = frozenset({"Slice", "Scope", "Service", "Socket", "Mount", "Swap"})


class Assignment(NamedTuple):
    """One `Key=value` of a unit file: where it is, and what it says."""

    section: str
    key: str
    value: str  # "" for an empty assignment (a reset)
    line: int  # 1-based, the line the assignment starts on


def assignments(text: str) -> Iterator[Assignment]:
    """Every assignment of `text`, in order; lines outside a section, section headers and
    anything systemd would skip are left out. As systemd's config parser: each line's leading
    whitespace is skipped, comment lines are skipped (inside a continuation too), and a line
    ending in an odd number of backslashes continues on the next, its last backslash
    replaced by a space."""
    section = ""
    pending: str | None = None
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.lstrip()
        if line.startswith(("#", ";")) or (pending is None and not line):
            continue
        if pending is None:
            start = number
        line = line if pending is None else pending + line
        if (len(line) - len(line.rstrip("\\"))) % 2:
            pending = line[:-1] + " "
            continue
        pending = None
        section = yield from _one(line, section, start)
    if pending is not None:  # a continuation at the end of the file ends there
        yield from _one(pending, section, start)


def _one(line: str, section: str, number: int) -> Generator[Assignment, None, str]:
    """The assignment on one logical line, if it is one; returns the section in force after
    it (a header changes it)."""
    line = line.strip()
    if line.startswith("["):
        return line[1:line.index("]")] if line.endswith("]") else ""
    key, eq, value = line.partition("=")
    if eq and section and key.strip():
        yield Assignment(section, key.strip(), value.strip(), number)
    return section


def assigned(text: str, key: str, sections: frozenset[str] = RESOURCE_SECTIONS) -> str | None:
    """The last value `text` assigns to `key` in one of `sections` ("" for an empty
    assignment, a reset), or None when it assigns none."""
    value = None
    for a in assignments(text):
        if a.key == key and a.section in sections:
            value = a.value
    return value
