"""The balancer's daemon loop (docs/balance.md): `slicectl balance` parses its options and
calls `run`.

Samples the slices every interval, keeps each elastic tenant's readings
(slicectl.core.balance.balance_input), asks slicectl.core.balance.balance.decide for the moves, and
makes them (slicectl.balancer.mover: runtime AllowedCPUs under apply's lock, verified, recorded in
the state file) or, with --dry-run, only prints them. Every decision is one line on stdout (the
journal, under systemd); what could not be done goes to stderr. A stop by SIGTERM or SIGINT
returns every tenant the balancer moved to its declared CPUs before the process exits.

A dry run changes nothing: the tenants keep the CPUs of the plan, and a move printed is
remembered as made for the cooldown (so a dry run paces its suggestions as the balancer would).
"""

from __future__ import annotations

import signal
import sys
import time

from slicectl.cli.common import EXIT_ERROR, EXIT_OK

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Callable, Iterator, Mapping
    from typing import TextIO

    from slicectl.apply.applier import ApplyOptions
    from slicectl.balancer.mover import Outcome
    from slicectl.balancer.rounds import Inputs, Planned
    from slicectl.core.balance.balance import Move, Reading
    from slicectl.core.config.config import Config
    from slicectl.core.config.tenants import BalancePolicy
    from slicectl.core.monitor.samples import Snapshot
    from slicectl.core.placement.topology import Topology

JSON_FORMAT = "slicectl-balance/1"
_US = 1_000_000
# The cgroup files a decision reads (CPU time, cpu.pressure, the CPUs a slice runs on).
_DECISION_FILES = frozenset({"cpu.stat", "cpu.pressure", "cpuset.cpus.effective"})
_REDISCOVER = 60.0  # seconds between full walks of the elastic tenants' slices


class _Stop(Exception):
    """SIGTERM or SIGINT arrived while the balancer waited for its next sample. Not an error,
    and it never leaves this module (the loop catches it to stop), so it is not in
    slicectl.core.errors."""


class _Signals:
    """SIGTERM and SIGINT end the loop, but only between rounds: a signal during a move lets
    the move finish (and be recorded) first, so the stop restores from a known state."""

    def __init__(self) -> None:
        self.stopping = False
        self._waiting = False

    def _handle(self, _signum: int, _frame: object) -> None:
        self.stopping = True
        if self._waiting:
            raise _Stop

    def install(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._handle)

    def wait(self, sleep: Callable[[float], None], seconds: float) -> None:
        """sleep(seconds), unless a stop was asked for: then raise _Stop."""
        self._waiting = True
        try:
            if self.stopping:
                raise _Stop
            sleep(seconds)
        finally:
            self._waiting = False


def _print_round(outcomes: list[Outcome], elapsed: float, args: Namespace,
                 policy: BalancePolicy, out: TextIO) -> None:
    """One decision: a line per move (made, would be made, or not made and why), or one
    JSON object."""
    from slicectl.core.balance.balance_input import move_json, move_line
    from slicectl.core.cpulist import format_cpulist

    if args.json:
        import json

        moves = [move_json(o.move) | ({} if args.dry_run else {"made": o.made})
                 | ({"why_not": o.why_not} if o.why_not else {})
                 | ({"note": o.note} if o.note else {}) for o in outcomes]
        # one write: json.dump writes each token on its own
        out.write(json.dumps({"format": JSON_FORMAT, "dry_run": args.dry_run,
                              "elapsed_s": round(elapsed, 3), "moves": moves}) + "\n")
    else:
        for o in outcomes:
            if o.made or args.dry_run:
                out.write(move_line(o.move, args.dry_run) + "\n")
                if o.note:
                    print(f"note: core {format_cpulist(o.move.cpus)} from {o.move.donor} to "
                          f"{o.move.receiver}: {o.note}", file=sys.stderr, flush=True)
            else:
                print(f"not moved: {move_line(o.move, True).removeprefix('would move ')}: "
                      f"{o.why_not}", file=sys.stderr, flush=True)
        if args.once and not outcomes:
            out.write(f"no move: no elastic tenant starved and a neighbour idle over the "
                      f"last {policy.window / _US:g}s\n")
    out.flush()


def run(args: Namespace, config: Config, topo: Topology, options: ApplyOptions, *,
        sleep: Callable[[float], None] = time.sleep, out: TextIO | None = None) -> int:
    """The balancer on `config`'s elastic tenants: move whole cores between them every
    interval (with --dry-run: print the moves only; with --once: after one window, then
    exit); the exit code."""
    from slicectl.balancer.rounds import Inputs, plan_rounds
    from slicectl.core.errors import SlicectlError

    out = out or sys.stdout
    inputs = Inputs(args, topo, options, plan_rounds(args, config, topo, options))
    mover = inputs.planned.mover
    if mover is not None:
        try:  # the state file before the first decision, unless apply runs (then: at a move)
            mover.record(lambda state: state, wait=False)
        except (SlicectlError, OSError) as e:
            print(f"state file not written yet: {getattr(e, 'message', e)}",
                  file=sys.stderr, flush=True)
    signals = _Signals()
    if mover is not None and not args.once:
        signals.install()
    try:
        return _run(args, topo, inputs, signals, sleep, out)
    except _Stop:
        pass
    from slicectl.host.systemd.notify import notify

    notify(STOPPING="1", STATUS="returning the moved tenants to their declared CPUs")
    mover = inputs.planned.mover
    assert mover is not None  # signals are installed only when there is something to undo
    for line in mover.restore():
        print(line, file=out, flush=True)
    return EXIT_OK


def _rounds(args: Namespace, inputs: Inputs, signals: _Signals,
            sleep: Callable[[float], None], ready: str) -> Iterator[tuple[Snapshot, Snapshot]]:
    """(previous, current) sample pairs of the elastic tenants' slices, one per interval, on
    the sampler's clock. Once the first sample is read, systemd hears READY=1 with `ready`
    as the status (Type=notify: `systemctl start` returns then, and units ordered after the
    balancer start then). The slices and the interval are the plan's of the round."""
    from pathlib import Path

    from slicectl.core.monitor.cgroupfiles import FILES
    from slicectl.host.cgroup.sampler import Sampler
    from slicectl.host.systemd.notify import notify

    # Only what a decision reads (the slices' CPU time, cpu.pressure and the CPUs they run
    # on), of the elastic tenants' slices only: BENCHMARKS.md, balance.100.
    skip = frozenset(f.name for f in FILES) - _DECISION_FILES

    def sampler_of(slices: frozenset[str]) -> Sampler:
        # A slice stopped, started or recreated changes its parent directory, which the
        # sampler checks every sample; the full walk that also catches what that misses comes
        # once a minute (not every 5 s as for status): the balancer's slices are few and known.
        return Sampler(Path(args.cgroup_root), _REDISCOVER, slices=slices, skip=skip)

    sampler = sampler_of(inputs.planned.slices)
    try:
        prev = sampler.sample()
        notify(READY="1", STATUS=ready)
        due = prev.time
        while True:
            due += inputs.planned.policy.interval / _US
            signals.wait(sleep, max(0.0, due - time.monotonic()))
            if signals.stopping:
                raise _Stop
            if sampler.slices != inputs.planned.slices:  # planned again: other tenants
                sampler.close()
                sampler = sampler_of(inputs.planned.slices)
            cur = sampler.sample()
            yield prev, cur
            prev = cur
    finally:
        sampler.close()


def _ready(planned: Planned, dry_run: bool) -> str:
    """The status systemd shows: how many tenants, how often."""
    return (f"{'dry run: ' if dry_run else ''}{len(planned.plan.elastic)} elastic tenants, "
            f"a sample every {planned.policy.interval / _US:g}s")


def _run(args: Namespace, topo: Topology, inputs: Inputs, signals: _Signals,
         sleep: Callable[[float], None], out: TextIO) -> int:
    """The rounds until --once's decision or a stop: each round's readings remembered, the
    moves decided, made (or only printed) and said; the exit code."""
    from slicectl.balancer.mover import Outcome
    from slicectl.core.balance.balance import decide, may_be_starved
    from slicectl.core.balance.balance_input import remember
    from slicectl.core.cpulist import format_cpulist
    from slicectl.core.monitor.metrics import MetricsMemo
    from slicectl.host.systemd.notify import notify

    p = inputs.planned
    interval, window = p.policy.interval / _US, p.policy.window / _US
    if not args.json:
        what = ("dry run: sampling" if p.mover is None else "balancing: sampling")
        print(f"{what} every {interval:g}s; a core moves after {window:g}s starved beside an "
              "idle neighbour" + (" (nothing is changed)" if p.mover is None else
                                  "; a stop returns every tenant to its declared CPUs"),
              file=sys.stderr, flush=True)
    memo = MetricsMemo()
    history: dict[str, tuple[Reading, ...]] = {}
    last_moves: dict[str, float] = {}
    expected: Mapping[str, frozenset[int]] = {}
    start = first = None
    made = 0
    ready = _ready(p, args.dry_run)
    for prev, cur in _rounds(args, inputs, signals, sleep, ready):
        now = cur.time
        start = prev.time if start is None else start
        if inputs.changed():
            # A tenant whose range changed starts anew: its readings describe another size.
            old, p = p.ranges, inputs.planned
            same = {t for t, e in p.ranges.items() if old.get(t) == e}
            history = {t: h for t, h in history.items() if t in same}
            expected = {t: c for t, c in expected.items() if t in same}
            ready = _ready(p, args.dry_run)
        policy, mover = p.policy, p.mover
        window = policy.window / _US
        held = None if p.held is None else p.held(cur)
        if held is not None:
            # A size that changed without a move of ours (apply, a reload): its readings
            # before now describe another size.
            last_moves.update({t: now for t, cpus in held.items()
                               if t in expected and expected[t] != cpus})
        metrics = memo.compute(prev, cur)
        history = remember(history, p.inputs.readings(metrics, now, held), now, policy)
        first = now if first is None else first
        # --once: one window of readings (the first comes one interval after the start).
        if args.once and now - first < window - policy.interval / _US:
            expected = held or {}
            continue
        # Most rounds no tenant is starved: no decision to make (BENCHMARKS.md, balance.100).
        moves: list[Move] = []
        if any(may_be_starved(h, now, policy) for h in history.values()):
            moves = decide(p.inputs.tenants(history, last_moves, held), topo, policy, now,
                           *p.untouchable)
        outcomes = ([Outcome(m, False) for m in moves] if mover is None or held is None
                    else mover.make(moves, held))
        expected = dict(held or {})
        for o in outcomes:
            if o.made or mover is None:
                last_moves[o.move.donor] = last_moves[o.move.receiver] = now
            if o.made:
                expected[o.move.donor] = expected[o.move.donor] - o.move.cpus
                expected[o.move.receiver] = expected[o.move.receiver] | o.move.cpus
        _print_round(outcomes, now - start, args, policy, out)
        if any(o.made for o in outcomes):
            made += sum(o.made for o in outcomes)
            last = next(o.move for o in reversed(outcomes) if o.made)
            notify(STATUS=f"{ready}; moves made: {made}, the last: core "
                   f"{format_cpulist(last.cpus)} from {last.donor} to {last.receiver}")
        if args.once:
            return EXIT_OK if all(o.made for o in outcomes) or mover is None else EXIT_ERROR
    return EXIT_OK
