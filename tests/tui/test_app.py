"""The Textual app (slicectl.tui.app): its poll loop (one read at a time, the next armed only
after the last is shown) and what a failed read tells the user. The interval keys are tested
in test_tui.py, edit → plan → apply in test_tui_edit.py, the screens in their own files."""

from __future__ import annotations

import threading

from cgtree import MovingTree
from tuikit import monitor_settings, running, wait_for

from slicectl.core.errors import SamplerError
from slicectl.core.monitor.samples import Snapshot


def notes(app: object) -> list[str]:
    return [n.message for n in app._notifications]  # type: ignore[attr-defined]  # noqa: SLF001


async def test_polls_never_overlap(tree: MovingTree) -> None:
    """While a read of the cgroup tree is in flight (held here until the test lets it go),
    neither a poll asked for (poll_now, as after an apply) nor the interval's timer starts a
    second one; once its result is shown, polling goes on."""
    entered, release = threading.Event(), threading.Event()
    calls = 0
    async with running(monitor_settings(tree.root)) as (app, pilot):
        real = app.sampler.sample

        def held() -> Snapshot:
            nonlocal calls
            calls += 1
            entered.set()
            release.wait(60)
            return real()

        app.sampler.sample = held  # type: ignore[method-assign]
        try:
            app.poll_now()
            await wait_for(pilot, entered.is_set)
            start = app.samples
            for _ in range(5):
                app.poll_now()
                await pilot.pause(app.interval)  # a free-running timer would fire here
            assert calls == 1 and app.samples == start
        finally:
            release.set()
        await wait_for(pilot, lambda: calls >= 3)  # the timer is armed again after each
        assert app.samples >= start + 2


async def test_a_failed_read_is_shown_and_polling_goes_on(tree: MovingTree) -> None:
    async with running(monitor_settings(tree.root)) as (app, pilot):
        real = app.sampler.sample
        failing = True

        def flaky() -> Snapshot:
            if failing:
                raise SamplerError("cannot read /sys/fs/cgroup: gone", "is cgroup2 mounted?")
            return real()

        app.sampler.sample = flaky  # type: ignore[method-assign]
        await wait_for(pilot, lambda: any("gone" in n for n in notes(app)))
        assert "cannot read /sys/fs/cgroup: gone\nhint: is cgroup2 mounted?" in notes(app)
        start = app.samples
        failing = False
        await wait_for(pilot, lambda: app.samples > start)


async def test_an_os_error_while_reading_is_said_too(tree: MovingTree) -> None:
    async with running(monitor_settings(tree.root)) as (app, pilot):
        def broken() -> Snapshot:
            raise OSError(5, "Input/output error")

        app.sampler.sample = broken  # type: ignore[method-assign]
        await wait_for(pilot, lambda: any("cannot read the cgroup tree" in n
                                          for n in notes(app)))
        assert "cannot read the cgroup tree: [Errno 5] Input/output error" in notes(app)


async def test_a_sample_out_of_turn_keeps_rates_over_a_whole_interval(tree: MovingTree) -> None:
    """A sample taken right after another (poll_now, as after an apply) computes its rates
    against the sample before: over so short a window a tree that moves in steps (the demo's)
    would show 0.00 cores for every slice."""
    async with running(monitor_settings(tree.root, interval=30.0)) as (app, pilot):
        def db1_cores() -> float | None:
            return next(m.cpu_cores for m in app.metrics if m.unit == "tenants-db1.slice")

        tree.advance(1.0)  # the counters move, once
        app.poll_now()
        await wait_for(pilot, lambda: app.samples >= 2)
        assert (db1_cores() or 0.0) > 0
        app.poll_now()  # at once, the tree has not moved since
        await wait_for(pilot, lambda: app.samples >= 3)
        assert (db1_cores() or 0.0) > 0
