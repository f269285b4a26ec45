"""Shared pytest fixtures. Each group below is self-contained; add yours in its own section."""

from __future__ import annotations

import importlib
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio
from examplecounts import FUZZ, QUICK, THOROUGH
from hypothesis import settings

if TYPE_CHECKING:
    # Imported lazily in the fixtures below, so that loading conftest does not import
    # dbus_fast into every test session (an import-hygiene test may check sys.modules).
    from cgtree import MovingTree

    from slicectl.demo.bus import PrivateBus
    from slicectl.demo.fakesystemd import FakeSystemd
    from slicectl.host.systemd.systemd import Systemd

# --- bytecode: written, also where PYTHONDONTWRITEBYTECODE is set --------------------------------

# pytest rewrites the asserts of the test modules (and of syrupy, a plugin loaded by its package
# name, pyproject.toml) and keeps the result as a .pyc, unless bytecode writing is off
# (PYTHONDONTWRITEBYTECODE, set in some CI and agent environments): then every process of every
# run (xdist's controller and each worker) rewrote them all again, ~4.5 s of CPU for the test
# modules alone. Turned on here, before the test modules are imported, pytest writes them once.
sys.dont_write_bytecode = False

# --- hypothesis: example counts by profile (tests/examplecounts.py) -----------------------

# No deadline in either: a per-example time limit is a timing assertion, which fails on a busy
# machine (test_rates_stay_in_range took 347 ms against the default 200 ms at load 8); speed
# targets live in bench/run.
settings.register_profile("thorough", max_examples=THOROUGH, deadline=None)  # tests/run, CI
settings.register_profile("quick", max_examples=QUICK, deadline=None)  # bare `python -m pytest`
settings.register_profile("fuzz", max_examples=FUZZ, deadline=None)  # on demand
settings.load_profile("quick")  # --hypothesis-profile=thorough loads the other one after this

# --- bytecode: slicectl's .pyc files written once, for the many `slicectl` processes -----------


def pytest_sessionstart(session: pytest.Session) -> None:
    """Compile slicectl's modules (only those changed since) before the tests start.

    Dozens of tests run the `slicectl` console script. Where PYTHONDONTWRITEBYTECODE is set
    (some CI and agent environments), an interpreter never writes the .pyc files it would
    read next time, so every one of those processes compiled all of slicectl's modules from
    source again. compileall writes them regardless of that setting; the processes read them.
    """
    import compileall

    if not hasattr(session.config, "workerinput"):  # once, in xdist's controller
        compileall.compile_dir(Path(__file__).resolve().parent.parent / "slicectl", quiet=1)


NOT_COLLECTED = {"e2e", "testbed", "fixtures", "golden"}  # pyproject.toml's norecursedirs


def pytest_collection(session: pytest.Session) -> None:
    """On an xdist worker collecting the whole suite, import the test modules first, each
    worker starting at its own share of them.

    Every worker collects (imports) every test module. In a fresh clone none has its rewritten
    .pyc yet, and the workers, importing them in the same order at the same time, each rewrote
    all of them (~4.5 s of CPU). Started at different places, each rewrites about its share and
    reads the .pyc files the other wrote. Collection then finds the modules imported; one that
    fails to import here is left to it, to be reported as usual.
    """
    workerinput = getattr(session.config, "workerinput", None)
    tests = Path(__file__).resolve().parent
    if workerinput is None or [Path(a).resolve() for a in session.config.args] != [tests]:
        return
    # Named as pytest names them (--import-mode=importlib, consider_namespace_packages,
    # pyproject.toml): from tests/, core.placement.test_repack; the folders pytest does not
    # collect (norecursedirs) left out.
    names = sorted(".".join(path.relative_to(tests).with_suffix("").parts)
                   for path in tests.rglob("test_*.py")
                   if path.relative_to(tests).parts[0] not in NOT_COLLECTED)
    share = len(names) * int(workerinput["workerid"].removeprefix("gw")) // int(
        workerinput["workercount"])
    for name in names[share:] + names[:share]:
        try:
            importlib.import_module(name)
        except (Exception, pytest.skip.Exception):  # collection imports it again and says why
            continue


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked `long` first (mypy, the fuzz and property tests, ...), the ones marked
    `long(first=True)` before them; otherwise the order is unchanged.

    pytest-xdist (`--dist worksteal`, pyproject.toml) gives each worker a run of tests in
    this order, and a worker that runs out takes tests from the end of another's: a long test
    started last would run alone on one core at the end while the other cores idle.
    """
    def rank(item: pytest.Item) -> int:
        mark = item.get_closest_marker("long")
        return 2 if mark is None else 0 if mark.kwargs.get("first") else 1

    items.sort(key=rank)


def pytest_configure(config: pytest.Config) -> None:
    scratch_in_memory(config)


# --- tmp_path in memory: the suite writes ~36,000 small files per run ----------------------------

_MEMORY = Path("/dev/shm")
_MEMORY_NEEDED = 4 << 30  # free bytes: three kept runs (pytest's default) of ~160 MB, and room


def scratch_in_memory(config: pytest.Config) -> None:
    """pytest's numbered tmp_path folders under /dev/shm (tmpfs) rather than $TMPDIR.

    The fake cgroup and sysfs trees are ~36,000 small files a run; on a disk file system
    (ext4 mounted with `discard` here) making and removing them cost ~6 s of system CPU, a
    tenth of the suite. Only where /dev/shm is a tmpfs with room to spare, and never over the
    user's --basetemp or PYTEST_DEBUG_TEMPROOT (pytest's own setting for this root); xdist's
    workers get their folders from the controller, so only the controller decides.
    """
    if (hasattr(config, "workerinput") or config.option.basetemp
            or "PYTEST_DEBUG_TEMPROOT" in os.environ or not _is_tmpfs(_MEMORY)):
        return
    stat = os.statvfs(_MEMORY)
    if stat.f_bavail * stat.f_frsize >= _MEMORY_NEEDED and os.access(_MEMORY, os.W_OK):
        os.environ["PYTEST_DEBUG_TEMPROOT"] = str(_MEMORY)


def _is_tmpfs(path: Path) -> bool:
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return False
    return any(f.split()[1:3] == [str(path), "tmpfs"] for f in mounts)


# --- D-Bus: a private dbus-daemon with a fake org.freedesktop.systemd1 -----------------------

@pytest.fixture
def bus_daemon() -> Iterator[PrivateBus]:
    """A private dbus-daemon for one test (restartable: `stop()`, `start()`)."""
    from slicectl.core.errors import SlicectlError
    from slicectl.demo.bus import PrivateBus

    # Not tmp_path: a unix socket path must stay under ~108 bytes.
    folder = Path(tempfile.mkdtemp(prefix="slicectl-bus-"))
    try:
        try:
            daemon = PrivateBus(folder)
            daemon.start()
        except SlicectlError as e:
            pytest.fail(f"{e.message} (tests/run installs it)")
        try:
            yield daemon
        finally:
            daemon.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def dbus_daemon(bus_daemon: PrivateBus) -> str:
    """A private dbus-daemon for one test; its address."""
    return bus_daemon.address


@pytest_asyncio.fixture
async def fake_systemd(dbus_daemon: str, tmp_path: Path) -> AsyncIterator[FakeSystemd]:
    """A FakeSystemd owning org.freedesktop.systemd1 on `dbus_daemon`.

    It mirrors live settings into cgroup files under `fake_systemd.cgroup_root`
    (tmp_path / "cgroup").
    """
    from slicectl.demo.fakesystemd import FakeSystemd

    fake = FakeSystemd(tmp_path / "cgroup")
    await fake.start(dbus_daemon)
    try:
        yield fake
    finally:
        await fake.stop()


@pytest_asyncio.fixture
async def systemd_client(dbus_daemon: str, fake_systemd: FakeSystemd) -> AsyncIterator[Systemd]:
    """A slicectl Systemd client connected to the fake."""
    from slicectl.host.systemd.systemd import Systemd

    async with await Systemd.connect(dbus_daemon) as client:
        yield client


# --- TUI: a moving fake cgroup tree, SVG snapshots ------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> MovingTree:
    """The TUI tests' moving tree (tests/tuikit.py) under tmp_path/cgroup."""
    from tuikit import moving_tree

    return moving_tree(tmp_path / "cgroup")


@pytest.fixture
def svg_snapshot(request: pytest.FixtureRequest) -> Any:
    """syrupy's `snapshot`, one SVG file per test in tests/snapshots/."""
    import syrupy.extensions.single_file as single_file

    class SvgFile(single_file.SingleFileSnapshotExtension):
        file_extension = "svg"  # syrupy >= 5
        _file_extension = "svg"  # syrupy 4
        _write_mode = single_file.WriteMode.TEXT

        @classmethod
        def dirname(cls, *, test_location: Any) -> str:
            return str(Path(__file__).resolve().parent / "snapshots")  # from any folder of tests/

    return request.getfixturevalue("snapshot").use_extension(SvgFile)


# --- the demo: a temporary folder with a short path --------------------------------------------


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A folder in /tmp for `slicectl demo`'s TMPDIR: tmp_path is too deep for the demo's
    socket path (a unix socket path stays under ~108 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="sd-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# --- the unit directories' lock files: in this session's own folder, not /run ------------------


@pytest.fixture(autouse=True, scope="session")
def private_lock_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every lock slicectl takes in the host tests (and in the processes they start) is a
    file in a folder of this session (SLICECTL_LOCK_DIR), not in the host's
    /run/slicectl/locks. Not in the testbed guest (SLICECTL_TESTBED): there the e2e tier's
    applies share the real lock with the balancer's and the schedule's services."""
    from slicectl.host.files.lock import LOCK_DIR_ENV

    if LOCK_DIR_ENV in os.environ or os.environ.get("SLICECTL_TESTBED"):
        yield
        return
    os.environ[LOCK_DIR_ENV] = str(tmp_path_factory.mktemp("locks"))
    try:
        yield
    finally:
        del os.environ[LOCK_DIR_ENV]
