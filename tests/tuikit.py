"""What the TUI's test modules share: a test topology and tenants file, moving trees, a way
to run the app under Textual's pilot and read what it shows, and tmux for a real terminal."""

from __future__ import annotations

import asyncio
import io
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from cgtree import Motion, MovingTree
from rich.console import Console
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Static

from slicectl.core.placement.topology import Cpu, Node, Topology
from slicectl.tui import tui_sampler
from slicectl.tui.app import SlicectlApp, TuiSettings
from slicectl.tui.components.slice_table import SliceTable

FIXTURE = Path(__file__).parent / "fixtures" / "cgroup"

YAML = """\
# tenants of the test host
version: 1
housekeeping: {cpus: 2}   # keep two for the host
tenants:
  # the database: heavy, pinned
  db1:
    cpus: 2          # placed by slicectl
    cpu_weight: 300  # more than web
    memory_max: 512M
  db2: {cpus: 2, cpu_quota: 150%}   # flow style stays flow style
profiles:
  night:
    db1: {cpus: 4, numa: any}
    db2: {cpus: 1, cpu_quota: 100%}
"""


def make_topology() -> Topology:
    """8 CPUs in 4 nodes, interleaved like the testbed (node0 = 0,4; node1 = 1,5; …)."""
    nodes = tuple(Node(n, frozenset({n, n + 4}), 1 << 30,
                       {m: 10 if m == n else 20 for m in range(4)}) for n in range(4))
    cpus = tuple(Cpu(c, True, c % 4, package=c, core=0, siblings=frozenset({c}))
                 for c in range(8))
    return Topology(nodes, cpus, "test")


def moving_tree(root: Path) -> MovingTree:
    tree = MovingTree(root)
    tree.add("system.slice", Motion(cpu_cores=0.5))
    tree.add("tenants.slice")
    tree.add("tenants.slice/tenants-db1.slice", Motion(cpu_cores=3.0), cpus="0-3",
             memory_current=900 << 20, memory_max=str(1 << 30), memory_high=str(950 << 20))
    tree.add("tenants.slice/tenants-web.slice", Motion(cpu_cores=1.0, psi_some={"cpu": 40.0}),
             cpu_max="100000 100000", memory_current=2 << 30)
    return tree


async def wait_for(pilot: Pilot[int], cond: Callable[[], bool], timeout: float = 60.0) -> None:
    """Let the app run until `cond()` holds (the timeout only detects a hang: on a busy
    machine an apply over the private bus can take seconds)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError("timed out waiting for the app")
        await pilot.pause(0.02)


def table_rows(app: SlicectlApp) -> list[list[str]]:
    """The overview's rows as shown, but for the slice cell: its unit name without the tree's
    indentation and fold marker (`tree_names` has those)."""
    table = app.screen.query_one(SliceTable)
    rows = [table.get_row_at(i) for i in range(table.row_count)]
    return [[r[0].lstrip(" ▾▸"), *r[1:]] for r in rows]


def tree_names(app: SlicectlApp) -> list[str]:
    """The slice cells of the overview as shown: indented, with ▾/▸ on parents."""
    table = app.screen.query_one(SliceTable)
    return [table.get_row_at(i)[0] for i in range(table.row_count)]


def showing(app: SlicectlApp, screen: type[Screen[Any]], selector: str) -> bool:
    """Whether the app shows a `screen` whose widget `selector` is mounted (a screen becomes
    the app's screen before its children are composed: on a busy machine a query between the
    two finds nothing)."""
    return isinstance(app.screen, screen) and bool(app.screen.query(selector))


def static_text(app: SlicectlApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).content)


def static_rendered(app: SlicectlApp, selector: str, width: int = 120) -> str:
    """A Static's rich content (tables, groups) as the plain text a terminal would show."""
    out = io.StringIO()
    Console(width=width, file=out, color_system=None).print(
        app.screen.query_one(selector, Static).content)
    return out.getvalue()


@asynccontextmanager
async def running(settings: TuiSettings, size: tuple[int, int] = (80, 24)
                  ) -> AsyncIterator[tuple[SlicectlApp, Pilot[int]]]:
    with tui_sampler(settings.cgroup_root) as sampler:  # as run_tui samples
        app = SlicectlApp(settings, sampler)
        async with app.run_test(size=size) as pilot:
            await wait_for(pilot, lambda: app.samples >= 1)
            yield app, pilot


def monitor_settings(root: Path, **kw: object) -> TuiSettings:
    settings = TuiSettings(cgroup_root=root, interval=0.05, readonly=["no TENANTS file given"],
                           topology=make_topology(), host_memory=make_topology().total_memory)
    for key, value in kw.items():
        setattr(settings, key, value)
    return settings




# The tests' own tmux server (`tmux -L`): a user's sessions on the default server are never
# seen, nor killed, by a test.
TMUX = ["tmux", "-L", "slicectl-tests"]


def tmux(*args: str) -> str:
    """Run a tmux command on the tests' server; its output.

    Tests share one tmux server, which exits when its last session ends: a command that
    reaches it as it exits (another test's last session just killed) fails with "server
    exited unexpectedly", and the same command then starts a new server. So that, and only
    that, is tried again.
    """
    for _ in range(5):
        done = subprocess.run([*TMUX, *args], capture_output=True, text=True)
        if "server exited unexpectedly" not in done.stderr:
            break
    done.check_returncode()
    return done.stdout


def wait_screen(session: str, cond: Callable[[str], bool], timeout: float = 20.0) -> str:
    """The screen of tmux `session` once `cond` holds for it (the timeout detects a hang)."""
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = tmux("capture-pane", "-p", "-t", session)
        if cond(screen):
            return screen
        time.sleep(0.1)
    raise AssertionError(f"screen never matched; last screen:\n{screen}")
