"""The TUI on the real guest: real cgroups, real systemd over the system bus.

Driven with Textual's pilot (the guest image has no terminal multiplexer; the tmux test runs on
the host over a fake tree). Edit → plan diff → confirm → live apply, then the view and the
kernel both show the new weight and tenants.yaml keeps its comments.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Static

from slicectl.host.cgroup.sampler import Sampler
from slicectl.tui import tui_settings
from slicectl.tui.app import SlicectlApp
from slicectl.tui.components.slice_table import SliceTable
from slicectl.tui.screens.edit import DiffScreen, EditScreen

from . import guest

Run = Callable[..., subprocess.CompletedProcess[str]]

TENANTS = """\
# tenants of the guest
version: 1
tenants:
  db1:
    cpus: 2
    cpu_weight: 300  # the important one
  web: {memory_max: 256M}
"""


@pytest.fixture
def tenants(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "tenants.yaml"
    path.write_text(TENANTS)
    yield path
    Path("/etc/systemd/system/.slicectl-manifest.json").unlink(missing_ok=True)


async def wait_for(pilot: Pilot[int], cond: Callable[[], bool],
                   timeout: float = guest.HANG) -> None:
    """Let the app run until `cond()` holds (the bound only turns a hang into a failure)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError("timed out waiting for the app")
        await pilot.pause(0.1)


async def test_tui_shows_real_slices_and_applies_an_edit_live(slicectl: Run,
                                                             tenants: Path) -> None:
    proc = slicectl("apply", str(tenants), "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    settings = tui_settings(str(tenants), Path("/sys/fs/cgroup"), 0.5)
    assert settings.readonly == []  # root, system bus, cgroup v2: editing allowed
    with Sampler(settings.cgroup_root) as sampler:
        app = SlicectlApp(settings, sampler)
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(pilot, lambda: app.samples >= 2)
            table = app.screen.query_one(SliceTable)
            names = {str(table.get_row_at(i)[0]).strip() for i in range(table.row_count)}
            assert {"tenants-db1.slice", "tenants-web.slice", "system.slice",
                    "init.scope"} <= {n.split()[-1] for n in names} | names, names
            await pilot.press("e")
            await wait_for(pilot, lambda: isinstance(app.screen, EditScreen)
                           and bool(app.screen.query("#f-cpu_weight")))
            weight = app.screen.query_one("#f-cpu_weight", Input)
            assert weight.value == "300"
            weight.value = "500"
            await pilot.press("enter")
            # the screen is current before its children are composed: wait for its text
            await wait_for(pilot, lambda: isinstance(app.screen, DiffScreen)
                           and bool(app.screen.query("#diff-text")))
            diff = str(app.screen.query_one("#diff-text", Static).content)
            assert "tenants-db1.slice: CPUWeight 300 -> 500" in diff
            await pilot.press("y")
            await wait_for(pilot, lambda: app._pending is None)  # noqa: SLF001
            await wait_for(pilot, lambda: any(
                m.unit == "tenants-db1.slice" and m.cpu_weight == 500 for m in app.metrics))
    assert guest.cgroup_file("tenants-db1.slice", "cpu.weight") == "500"  # the kernel has it
    text = tenants.read_text()
    assert "    cpu_weight: 500  # the important one\n" in text
    assert text.startswith("# tenants of the guest\n")
    assert slicectl("plan", str(tenants), "--exit-code").returncode == 0
