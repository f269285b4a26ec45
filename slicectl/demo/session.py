"""A running demo host in one folder: the bundled topology as a sysfs tree, tenants.yaml, a
private bus with the fake systemd on it, the moving cgroup tree, and a unit directory.

`running_demo(folder)` builds it, applies tenants.yaml to the fake systemd with slicectl's own
apply (so the limits on screen are the ones apply set), keeps the tree moving in a thread, and
on exit stops everything it started. Nothing is written outside the folder.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from importlib import resources
from pathlib import Path

from slicectl.core.errors import SlicectlError, UsageError
from slicectl.core.placement.topology import Topology

TICK_S = 0.25  # how often the tree moves; status, top and the TUI sample every second
MARKER = ".slicectl-demo"  # names a folder as a demo's (and the demo as running: its pid)
# Created in the folder (`touch fail-next-apply`), it makes the fake systemd refuse the next
# property change: the next apply fails midway and rolls back, as on any failure.
FAULT = "fail-next-apply"


@dataclass(frozen=True)
class DemoPaths:
    """Where a demo keeps each part, under `root`."""

    root: Path

    @property
    def tenants(self) -> Path:
        return self.root / "tenants.yaml"

    @property
    def original(self) -> Path:
        """tenants.yaml as the demo started: copy it back to undo your edits."""
        return self.root / "tenants.yaml.orig"

    @property
    def topology(self) -> Path:
        return self.root / "host.json"

    @property
    def sysfs(self) -> Path:
        return self.root / "sys"

    @property
    def cgroup(self) -> Path:
        return self.root / "cgroup"

    @property
    def units(self) -> Path:
        return self.root / "units"

    @property
    def control(self) -> Path:
        return self.root / "run" / "systemd" / "system.control"

    @property
    def balance_state(self) -> Path:
        return self.root / "run" / "slicectl" / "balance.json"

    @property
    def record_db(self) -> Path:
        return self.root / "record.db"

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def bus_address(self) -> str:
        return f"unix:path={self.root / 'bus'}"

    @property
    def marker(self) -> Path:
        return self.root / MARKER

    def running(self) -> bool:
        """Whether a demo is running in this folder (its marker names a live process)."""
        import os

        try:
            pid = int(self.marker.read_text().strip())
            os.kill(pid, 0)
        except (OSError, ValueError):
            return False
        return (self.root / "bus").exists()


def prepare(folder: Path) -> DemoPaths:
    """Make `folder` (new, or empty) a demo's: tenants.yaml, the topology, its sysfs tree."""
    from slicectl.demo.sysfs_tree import write_sysfs
    from slicectl.host.topology.sysfs import load_topology_file

    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise UsageError(f"{folder}: exists and is not an empty directory",
                         "give a new or empty folder, or leave out --dir for a temporary one")
    folder.mkdir(parents=True, exist_ok=True)
    paths = DemoPaths(folder.resolve())
    data = resources.files("slicectl.demo")
    for target in (paths.tenants, paths.original):
        target.write_text(data.joinpath("tenants.yaml").read_text(encoding="utf-8"))
    paths.topology.write_text(data.joinpath("host.json").read_text(encoding="utf-8"))
    write_sysfs(load_topology_file(str(paths.topology)), paths.sysfs)
    for folder_ in (paths.units, paths.control, paths.bin):
        folder_.mkdir(parents=True)
    return paths


class _FakeOnItsLoop:
    """The fake systemd on an event loop of its own, in a thread (the views own the main one)."""

    def __init__(self, paths: DemoPaths, topology: Topology, address: str) -> None:
        from slicectl.demo.fakesystemd import FakeSystemd

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="fake-systemd",
                                       daemon=True)
        self.thread.start()
        self.fake = FakeSystemd(paths.cgroup,
                                cpus=(c.id for c in topology.cpus if c.online),
                                nodes=(n.id for n in topology.nodes),
                                memory=topology.total_memory)
        self.fake.control_dir = paths.control  # runtime changes leave drop-ins, as systemd's
        try:
            self._call(self.fake.start(address))
        except BaseException:
            self._end_loop()
            raise

    def _call(self, coroutine: object) -> None:
        asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(30)  # type: ignore[arg-type]

    def arm_fault(self, flag: Path) -> None:
        """If `flag` exists: remove it and fail the next SetUnitProperties (a D-Bus error)."""
        if not flag.exists():
            return
        flag.unlink(missing_ok=True)
        self.loop.call_soon_threadsafe(partial(
            self.fake.fail_on, "SetUnitProperties", nth=1,
            message=f"the demo's systemd refuses this change ({flag.name} was created)"))

    def stop(self) -> None:
        try:
            self._call(self.fake.stop())
        finally:
            self._end_loop()

    def _end_loop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


class _Mover:
    """Moves the demo's cgroup tree every TICK_S seconds, in a thread, until stopped."""

    def __init__(self, paths: DemoPaths, topology: Topology,
                 on_tick: Callable[[], None]) -> None:
        from slicectl.demo.scenario import DemoTree

        self.tree = DemoTree(paths.cgroup, topology.cpus_by_node)
        self.start = time.monotonic()
        self.moved = threading.Event()  # set once the counters have moved (rates exist)
        self._stop = threading.Event()
        self._on_tick = on_tick
        self.thread = threading.Thread(target=self._run, name="demo-tree", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop.wait(TICK_S):
            try:
                self.tree.advance_to(time.monotonic() - self.start)
                self._on_tick()
            except OSError:
                return  # the folder is going away
            self.moved.set()

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(10)


@dataclass
class Demo:
    """A running demo: its paths, and an event set once its tree has moved."""

    paths: DemoPaths
    moved: threading.Event


def _write_shim(paths: DemoPaths) -> None:
    """bin/slicectl: slicectl pointed at this demo (`slicectl demo run`), for the demo shell."""
    import shlex
    import sys

    shim = paths.bin / "slicectl"
    shim.write_text("#!/bin/sh\n# slicectl against the demo in this folder (slicectl demo run)\n"
                    f"exec {shlex.quote(sys.executable)} -m slicectl demo "
                    f"--dir {shlex.quote(str(paths.root))} run \"$@\"\n")
    shim.chmod(0o755)


def _die_with_parent() -> None:
    """In the dbus-daemon's child before exec: end it if the demo dies without cleaning up
    (PR_SET_PDEATHSIG, prctl(2)); best effort, Linux only."""
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def _initial_apply(paths: DemoPaths, topology: Topology) -> None:
    """Apply the demo's tenants.yaml to the fake systemd with slicectl's own apply."""
    from slicectl.apply.applier import ApplyOptions, apply_plan
    from slicectl.host.planning import load_tenants

    options = ApplyOptions(unit_dir=paths.units, cgroup_root=paths.cgroup,
                           bus_address=paths.bus_address, control_dir=paths.control,
                           balance_state=paths.balance_state)
    asyncio.run(apply_plan(load_tenants(str(paths.tenants)), topology, options))


def _restore_env(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


@contextmanager
def running_demo(folder: Path, *, keep: bool = False) -> Iterator[Demo]:
    """Build the demo in `folder` (new or empty), start it, yield it; on exit stop everything
    it started and, unless `keep`, remove the folder."""
    import os

    from slicectl.demo.bus import PrivateBus
    from slicectl.host.files.lock import LOCK_DIR_ENV
    from slicectl.host.topology.sysfs import read_topology

    with ExitStack() as stack:
        if not keep:
            stack.callback(shutil.rmtree, folder, ignore_errors=True)
        paths = prepare(folder)
        # Its locks in its own folder (the demo writes nothing outside it): this process's,
        # and the shell's and every slicectl started there, which inherit it.
        before = os.environ.get(LOCK_DIR_ENV)
        os.environ[LOCK_DIR_ENV] = str(paths.root / "locks")
        stack.callback(_restore_env, LOCK_DIR_ENV, before)
        topology = read_topology(paths.sysfs)
        bus = PrivateBus(paths.root, preexec=_die_with_parent)
        stack.callback(bus.stop)
        bus.start()
        fake = _FakeOnItsLoop(paths, topology, bus.address)
        stack.callback(fake.stop)
        try:
            _initial_apply(paths, topology)
        except SlicectlError as e:
            raise SlicectlError(f"the demo could not apply its tenants.yaml: {e.message}",
                                e.hint) from e
        mover = _Mover(paths, topology, partial(fake.arm_fault, paths.root / FAULT))
        stack.callback(mover.stop)
        _write_shim(paths)
        paths.marker.write_text(f"{os.getpid()}\n")
        stack.callback(paths.marker.unlink, missing_ok=True)
        yield Demo(paths, mover.moved)
