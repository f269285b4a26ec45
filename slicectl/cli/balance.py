"""`slicectl balance`: the balancer's decisions on the live host, observe-only (docs/balance.md).

Samples the slices every interval, keeps each elastic tenant's readings
(slicectl.core.balance_input), asks slicectl.core.balance.decide for the moves and prints
them. Only `--dry-run` exists in this release: nothing is moved, written or sent to systemd.
A move printed is remembered as made for the cooldown (so a dry run paces its suggestions as
the controller would), but the tenants keep the CPUs of the plan.
"""

from __future__ import annotations

import sys
import time

from slicectl.cli.common import EXIT_OK, load_config, load_topology
from slicectl.core import defaults

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Callable
    from typing import TextIO

    from slicectl.core.balance import Move, Reading
    from slicectl.core.tenants import BalancePolicy

JSON_FORMAT = "slicectl-balance/1"
_US = 1_000_000


def _policy(policy: BalancePolicy, interval: float | None) -> BalancePolicy:
    """The policy with `--interval` in place of `balance.interval`; UsageError when it is
    below the shortest meaningful rate window or above the window."""
    from dataclasses import replace

    from slicectl.core.errors import UsageError
    from slicectl.core.metrics import MIN_RATE_WINDOW

    if interval is None:
        return policy
    if interval < MIN_RATE_WINDOW or interval * _US > policy.window:
        raise UsageError(f"--interval {interval:g}: must be at least {MIN_RATE_WINDOW:g} s and "
                         f"at most balance.window ({policy.window / _US:g} s)",
                         "pick an interval between the two, or change balance: in TENANTS")
    return replace(policy, interval=round(interval * _US))


def _print_round(moves: list[Move], elapsed: float, as_json: bool, once: bool,
                 policy: BalancePolicy, out: TextIO) -> None:
    from slicectl.core.balance_input import move_json, move_line

    if as_json:
        import json

        json.dump({"format": JSON_FORMAT, "dry_run": True, "elapsed_s": round(elapsed, 3),
                   "moves": [move_json(m) for m in moves]}, out)
        out.write("\n")
    else:
        for m in moves:
            out.write(move_line(m) + "\n")
        if once and not moves:
            out.write(f"no move: no elastic tenant starved and a neighbour idle over the "
                      f"last {policy.window / _US:g}s\n")
    out.flush()


def cmd_balance(args: Namespace, *, sleep: Callable[[float], None] = time.sleep,
                out: TextIO | None = None) -> int:
    """`slicectl balance --dry-run`: print the moves the balancer would make, every interval
    (with --once: after one window, then exit)."""
    from pathlib import Path

    from slicectl.core.balance import decide
    from slicectl.core.balance_input import (
        elastic_tenants,
        readings,
        remember,
        untouchable,
    )
    from slicectl.core.errors import SlicectlError, UsageError
    from slicectl.core.metrics import MetricsMemo
    from slicectl.host.planning import plan_for_host
    from slicectl.host.sampler import Sampler

    out = out or sys.stdout
    if not args.dry_run:
        raise UsageError("acting on the balancer's decisions is not available yet: this "
                         "release only shows them",
                         "run `slicectl balance TENANTS --dry-run` to see the moves it would "
                         "make")
    config = load_config(args)
    if not any(t.elastic for t in config.tenants):
        raise SlicectlError(f"{args.tenants}: no elastic tenant, nothing to balance",
                            "give a tenant cpus_min or cpus_max (docs/balance.md)")
    topo = load_topology(args)
    layout = plan_for_host(config, topo, Path(args.unit_dir or defaults.UNIT_DIR)).layout
    policy = _policy(config.balance, args.interval)
    interval, window = policy.interval / _US, policy.window / _US
    housekeeping, fixed = untouchable(config, layout)
    memo = MetricsMemo()
    history: dict[str, tuple[Reading, ...]] = {}
    last_moves: dict[str, float] = {}
    with Sampler(Path(args.cgroup_root)) as sampler:
        prev = sampler.sample()
        if not args.json:
            print(f"dry run: sampling every {interval:g}s; a core moves after {window:g}s "
                  "starved beside an idle neighbour (nothing is changed)", file=sys.stderr)
        start, first = prev.time, None
        rounds = 0
        while True:
            rounds += 1
            sleep(max(0.0, start + rounds * interval - time.monotonic()))
            cur = sampler.sample()
            now = cur.time
            metrics = memo.compute(prev, cur)
            prev = cur
            history = remember(history, readings(config, layout, metrics, now), now, policy)
            first = now if first is None else first
            # --once: one window of readings (the first comes one interval after the start).
            if args.once and now - first < window - interval:
                continue
            tenants = elastic_tenants(config, layout, history, last_moves)
            moves = decide(tenants, topo, policy, now, housekeeping, fixed)
            for m in moves:
                last_moves[m.donor] = last_moves[m.receiver] = now
            _print_round(moves, now - start, args.json, args.once, policy, out)
            if args.once:
                return EXIT_OK
