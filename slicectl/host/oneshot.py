"""`one_shot`: run a command that computes, writes and exits without the cyclic garbage
collector (the `generate`-like verbs and `apply`, the systemd generator).

Such a run allocates a bounded amount, all of it gone at exit, yet the collector's passes over
the objects its imports create (jinja2, ruamel.yaml, the property table) are a measurable part
of its start-up, and so is the collection Python makes of every object while it exits. With the
collector paused for the run, and the objects it made frozen (`gc.freeze`: left out of every
later collection, the one at exit included) when the process is about to exit, a cold
`slicectl generate` or `slicectl-generator` skips both (BENCHMARKS.md, "start-up").
Reference counting still frees everything that is dropped, as always.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def one_shot(exiting: bool) -> Iterator[None]:
    """Pause cyclic garbage collection while the block runs. `exiting`: the process ends
    right after (a console script's run): what the block allocated is frozen, so that the
    collection at exit passes it by. Otherwise (a caller in the same process, such as a
    test) nothing is frozen. Either way the collector is left on if it was on before."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if exiting:
            gc.freeze()
        if collecting:
            gc.enable()
