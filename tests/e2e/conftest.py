"""Fixtures for the e2e tier: these tests run as root inside the testbed guest.

Run them with `tests/testbed/e2e`; anywhere else (no SLICECTL_TESTBED in the environment) they
are skipped, because they change the system manager's state.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from . import guest

# Where unit files, drop-ins and `set-property` results end up; a test's leftovers are removed.
UNIT_DIRS = (
    Path("/etc/systemd/system"),
    Path("/etc/systemd/system.control"),
    Path("/run/systemd/system"),
    Path("/run/systemd/system.control"),
    Path("/run/systemd/transient"),
)
UNIT_SUFFIXES = (".slice", ".service", ".scope")


PROGRESS = "e2e-progress.jsonl"  # in the results share: one line per test done, every boot
EARLIER = pytest.StashKey[dict[str, str]]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "smoke: the release matrix's short selection, run on every Debian release the "
        "testbed boots (tests/testbed/matrix --smoke): apply, verify, exact rollback, confine, "
        "the generator at boot and at reload, status and the exporter, one balancer move")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not os.environ.get("SLICECTL_TESTBED"):
        skip = pytest.mark.skip(reason="e2e tests run inside the testbed VM: tests/testbed/e2e")
        for item in items:
            item.add_marker(skip)
        return
    # After a reboot a test asked for (guest.reboot), pytest runs again from the start: leave
    # out what earlier boots did, and count their outcomes in this run's result.
    path = guest.results() / PROGRESS
    earlier: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            record = json.loads(line)
            earlier[record["test"]] = record["outcome"]
    config.stash[EARLIER] = earlier
    done = [item for item in items if item.nodeid in earlier]
    if done:
        config.hook.pytest_deselected(items=done)
        items[:] = [item for item in items if item.nodeid not in earlier]


_outcomes: dict[str, str] = {}
_failures: dict[str, str] = {}
_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Record each test's outcome and seconds (set-up, call and tear-down) in the results
    share when it is done, with the end of a failure's report: a test that fails before a
    reboot another test asks for has no summary at the end of its boot (the release matrix
    keeps these)."""
    if not os.environ.get("SLICECTL_TESTBED"):
        return
    outcome = _outcomes.get(report.nodeid, "passed")
    _seconds[report.nodeid] = _seconds.get(report.nodeid, 0.0) + report.duration
    if report.failed:
        outcome = "failed"
        _failures[report.nodeid] = _failures.get(report.nodeid, "") + report.longreprtext[-3000:]
    elif report.skipped and outcome == "passed":
        outcome = "skipped"
    _outcomes[report.nodeid] = outcome
    if report.when == "teardown":
        with (guest.results() / PROGRESS).open("a") as f:
            record = {"test": report.nodeid, "outcome": outcome, "boot": guest.boot_number(),
                      "seconds": round(_seconds[report.nodeid], 1)}
            if report.nodeid in _failures:
                record["failure"] = _failures[report.nodeid]
            f.write(json.dumps(record) + "\n")


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    earlier = config.stash.get(EARLIER, {})
    if earlier:
        counts = Counter(earlier.values())
        failed = sorted(t for t, o in earlier.items() if o == "failed")
        terminalreporter.write_line(
            f"earlier boots of this run: {', '.join(f'{n} {o}' for o, n in sorted(counts.items()))}"
            + "".join(f"\nFAILED (earlier boot) {t}" for t in failed))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    earlier = session.config.stash.get(EARLIER, {})
    if "failed" in earlier.values():
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    elif earlier and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.OK


@pytest.fixture
def cgroup_root() -> Path:
    """The guest's cgroup v2 mount."""
    return guest.CGROUP_ROOT


@pytest.fixture
def systemctl() -> Callable[..., subprocess.CompletedProcess[str]]:
    """`systemctl(*args, check=True)` -> CompletedProcess with text stdout/stderr."""
    return guest.systemctl


@pytest.fixture
def slicectl() -> Callable[..., subprocess.CompletedProcess[str]]:
    """`slicectl(*args, check=False)` -> CompletedProcess; runs the checkout's CLI."""
    return guest.slicectl


@pytest.fixture
def tenants_file(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """`tenants_file(text)`: a tenants.yaml holding `text`; apply's manifest (which would make
    the next test's plan keep this one's CPUs) is removed when the test ends."""

    def write(text: str) -> Path:
        path = tmp_path / "tenants.yaml"
        path.write_text(text)
        return path

    yield write
    Path("/etc/systemd/system/.slicectl-manifest.json").unlink(missing_ok=True)


@pytest.fixture
def cgroup_file() -> Callable[[str, str], str]:
    """`cgroup_file(unit, name)`: a cgroup file of a unit, found via its ControlGroup."""
    return guest.cgroup_file


def _unit_files() -> set[Path]:
    return {p for d in UNIT_DIRS if d.exists() for p in d.rglob("*")}


def _unit_of(path: Path) -> str | None:
    """The unit a file under one of UNIT_DIRS configures (`x.slice.d/50-y.conf` -> x.slice)."""
    for parent in UNIT_DIRS:
        if path.is_relative_to(parent):
            name = path.relative_to(parent).parts[0].removesuffix(".d")
            return name if name.endswith(UNIT_SUFFIXES) else None
    return None


class Units:
    """Units a test started; stopped (and their files removed) when the test ends."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def track(self, *names: str) -> None:
        self.names.extend(names)


def _active_units() -> set[str]:
    if not os.environ.get("SLICECTL_TESTBED"):
        return set()
    listing = guest.systemctl("list-units", "--all", "--plain", "--no-legend", "--state=active",
                              check=False).stdout
    return {line.split()[0] for line in listing.splitlines() if line.strip()}


@contextmanager
def undoing_unit_changes(tracked: Units) -> Iterator[Units]:
    """Stop the tracked units afterwards, and remove any unit file, drop-in or `set-property`
    result created meanwhile (then reload systemd).

    A unit that was running before (system.slice, user.slice, init.scope, ...) is
    not stopped when only its drop-ins are removed: the reload puts its old properties back,
    and stopping it would take the guest's own services (or the next test's) with it."""
    # A test that reboots the guest goes on in the next boot: what was there before it is
    # what was there before its first boot.
    saved = guest.results() / "units-before.json"
    if os.environ.get("SLICECTL_TESTBED") and guest.resuming() and saved.exists():
        record = json.loads(saved.read_text())
        before, running = {Path(p) for p in record["files"]}, set(record["running"])
    else:
        before, running = _unit_files(), _active_units()
        if os.environ.get("SLICECTL_TESTBED"):
            saved.write_text(json.dumps({"files": sorted(map(str, before)),
                                         "running": sorted(running)}))
    yield tracked
    if not os.environ.get("SLICECTL_TESTBED"):
        return
    created = _unit_files() - before
    names = {*tracked.names,
             *(n for p in created if (n := _unit_of(p)) and n not in running)}
    if names:
        guest.systemctl("stop", *sorted(names), check=False)
    # Deepest first, so drop-in directories are empty by the time they are removed.
    for path in sorted(created, key=lambda p: len(p.parts), reverse=True):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    if created:
        guest.systemctl("daemon-reload")
    if names:
        guest.systemctl("reset-failed", *sorted(names), check=False)


@pytest.fixture(autouse=True)
def units() -> Iterator[Units]:
    """Track units to stop after the test; also undoes any unit file/drop-in the test left."""
    with undoing_unit_changes(Units()) as tracked:
        yield tracked
