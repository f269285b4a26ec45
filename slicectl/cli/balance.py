"""`slicectl balance`: the balancer on the live host (docs/balance.md). Reads tenants.yaml, the
topology and apply's options from the command line; the loop itself is
slicectl.balancer.daemon."""

from __future__ import annotations

import sys
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Callable
    from typing import TextIO


def cmd_balance(args: Namespace, *, sleep: Callable[[float], None] = time.sleep,
                out: TextIO | None = None) -> int:
    """`slicectl balance`: move whole cores between elastic tenants every interval (with
    --dry-run: print the moves only; with --once: after one window, then exit)."""
    from slicectl.balancer.daemon import run
    from slicectl.cli.common import apply_options, load_config, load_topology, require_unified
    from slicectl.core.errors import SlicectlError

    config = load_config(args)
    if not any(t.elastic for t in config.tenants):
        raise SlicectlError(f"{args.tenants}: no elastic tenant, nothing to balance",
                            "give a tenant cpus_min or cpus_max (docs/balance.md)")
    require_unified(args)
    return run(args, config, load_topology(args), apply_options(args), sleep=sleep,
               out=out or sys.stdout)
