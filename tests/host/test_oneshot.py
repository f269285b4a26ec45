"""slicectl.host.oneshot: the collector paused for a run, and given back as it was."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from slicectl.host.oneshot import one_shot


def test_pauses_collection_and_restores_it_after_an_error() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), one_shot(exiting=False):
        assert not gc.isenabled()
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_leaves_it_off_when_it_was_off() -> None:
    gc.disable()
    try:
        with one_shot(exiting=False):
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_run_in_the_same_process_freezes_nothing() -> None:
    before = gc.get_freeze_count()
    with one_shot(exiting=False):
        [[] for _ in range(1000)]
    assert gc.get_freeze_count() == before


def test_a_program_about_to_exit_freezes_what_it_made() -> None:
    """In a process of its own (freezing is for good): what the run made is out of every
    later collection, and the collector is on again."""
    code = ("import gc; from slicectl.host.oneshot import one_shot\n"
            "with one_shot(exiting=True):\n"
            "    keep = [[i] for i in range(5000)]\n"
            "print(gc.isenabled(), gc.get_freeze_count() >= 5000)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["True", "True"]
