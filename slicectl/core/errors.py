"""One error hierarchy: every error carries a message and a hint for the user.

The CLI's single handler in `main()` prints `error: MESSAGE` and `hint: HINT` and maps the
class to an exit code; tracebacks are shown only with `--debug`.

Below the hierarchy, the exceptions the package raises and catches itself (never shown to a
user as they are): a caller turns each into a `SlicectlError` or a fallback. Every exception
class of the package is here, but a few that never leave their module (tests/test_layers.py
lists them with the reason each stays).
"""

from __future__ import annotations

import os

from slicectl.core.frozen import frozen


def shown(name: str | os.PathLike[str]) -> str:
    """A file name as one line of printable text: bytes that are not UTF-8 (which Python keeps
    as lone surrogates) as `\\xNN`, control characters escaped. For messages, and for the
    header comment and manifest of generated files, which must be UTF-8 and one line."""
    text = os.fsencode(name).decode("utf-8", "backslashreplace")
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


class SlicectlError(Exception):
    """Base class of all errors slicectl reports to the user."""

    exit_code = 1

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


@frozen
class Problem:
    """One problem found in an input file, located by file, line and key path."""

    file: str
    line: int
    key: str
    message: str
    hint: str = ""

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        key = f" {self.key}:" if self.key else ""
        return f"{where}:{key} {self.message}"


class ConfigError(SlicectlError):
    """tenants.yaml is invalid; carries every problem found, not just the first."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        first = problems[0] if problems else Problem("?", 0, "", "invalid configuration")
        super().__init__(
            "\n".join(str(p) for p in problems) or str(first), first.hint
        )


class TopologyError(SlicectlError):
    """The NUMA topology could not be read or is inconsistent."""


class PlacementError(SlicectlError):
    """The tenants do not fit the topology; `problem` locates it in tenants.yaml when known."""

    def __init__(self, message: str | Problem, hint: str = "") -> None:
        self.problem = message if isinstance(message, Problem) else None
        if isinstance(message, Problem):
            super().__init__(str(message), message.hint)
        else:
            super().__init__(message, hint)


class RepackNeeded(PlacementError):
    """Keeping every tenant in place would split a local tenant, and a re-pack avoids it:
    `--repack` (the TUI's re-pack key) makes the moves the message names."""


class RenderError(SlicectlError):
    """A value cannot be written safely into a unit file, or a template failed."""


class OutputError(SlicectlError):
    """Generated files could not be written."""


class SystemdError(SlicectlError):
    """systemd refused or failed a D-Bus call; names the unit and property when known."""

    def __init__(
        self, message: str, hint: str = "", *, unit: str = "", prop: str = "", name: str = ""
    ) -> None:
        super().__init__(message, hint)
        self.unit = unit
        self.prop = prop
        self.dbus_error = name


class ApplyError(SlicectlError):
    """Applying failed; the host was rolled back to its previous state."""


class SamplerError(SlicectlError):
    """The cgroup tree could not be read."""


class HierarchyError(SlicectlError):
    """The host runs cgroup v1 or the hybrid hierarchy: slicectl needs the unified one."""


class StateError(SlicectlError):
    """The balancer's runtime state file is unreadable or malformed."""


class UsageError(SlicectlError):
    """A command run in a way it cannot work (exit 2, as argparse's usage errors)."""

    exit_code = 2


class InstallError(SlicectlError):
    """Install or uninstall refused, or failed and put everything back."""


class ExporterError(SlicectlError):
    """The exporter cannot start: address, port, output file."""


class CalendarError(SlicectlError):
    """systemd-analyze could not be run, or its output was not understood."""


class RecordError(SlicectlError):
    """The sample database could not be opened, written or read."""


class RecommendError(SlicectlError):
    """The samples could not be read, or the suggestions could not be written."""


# Exceptions the package catches itself.


class ValueHint(ValueError):
    """A value refused with a hint of what to write instead (config shows the hint)."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


class LockTimeout(Exception):
    """A unit directory stayed locked by another run for the whole wait
    (slicectl.host.files.lock); the unit directory reports it as an OutputError naming `holder`."""

    def __init__(self, holder: str) -> None:
        super().__init__(holder)
        self.holder = holder


class InotifyUnavailable(OSError):
    """This process cannot use inotify (slicectl.host.cgroup.inotify); the sampler then reads every
    `cgroup.events` instead."""
