"""The messages the TUI's workers post (slicectl.tui.messages): which ones a newer one replaces
while still queued (a newer sample makes an older one worthless) and which never are."""

from __future__ import annotations

from textual.message import Message

from slicectl.core.monitor.samples import Snapshot
from slicectl.tui.messages import (
    Applied,
    ApplyRefused,
    DiffReady,
    PreviewReady,
    ProcessesRead,
    Sampled,
    SampleFailed,
    SharesRead,
    SortChanged,
)

SNAP = Snapshot(time=1.0, cgroups={}, host_cpus=4)


def test_a_newer_sample_replaces_a_pending_one() -> None:
    assert Sampled(SNAP, []).can_replace(Sampled(SNAP, []))
    assert not Sampled(SNAP, []).can_replace(SampleFailed("x", ""))


def test_processes_replace_only_those_of_the_same_slice() -> None:
    db1 = ProcessesRead("tenants.slice/tenants-db1.slice", [])
    assert db1.can_replace(ProcessesRead("tenants.slice/tenants-db1.slice", []))
    assert not db1.can_replace(ProcessesRead("tenants.slice/tenants-web.slice", []))


def test_a_newer_preview_replaces_a_pending_one() -> None:
    assert PreviewReady("after").can_replace(PreviewReady("before"))


def test_outcomes_and_requests_are_never_dropped() -> None:
    """Each apply, failure and key press is handled, however many are queued."""
    kept: list[Message] = [Applied("applied"), ApplyRefused("changed", "confirm again"),
                           DiffReady(None, [], [], False), SampleFailed("x", ""),
                           SharesRead(((), None), None), SortChanged()]
    for message in kept:
        assert not message.can_replace(message), type(message).__name__


def test_a_refusal_without_a_new_diff_has_no_lines() -> None:
    refused = ApplyRefused("the host changed", "review it")
    assert (refused.diff, refused.lines) == (None, [])
