"""`slicectl balance`: the balancer on the live host (docs/balance.md).

Samples the slices every interval, keeps each elastic tenant's readings
(slicectl.core.balance_input), asks slicectl.core.balance.decide for the moves, and makes them
(slicectl.balancer.mover: runtime AllowedCPUs under apply's lock, verified, recorded in the
state file) or, with --dry-run, only prints them. Every decision is one line on stdout (the
journal, under systemd); what could not be done goes to stderr. A stop by SIGTERM or SIGINT
returns every tenant the balancer moved to its declared CPUs before the process exits.

A dry run changes nothing: the tenants keep the CPUs of the plan, and a move printed is
remembered as made for the cooldown (so a dry run paces its suggestions as the balancer would).
"""

from __future__ import annotations

import signal
import sys
import time

from slicectl.cli.common import EXIT_ERROR, EXIT_OK, apply_options, load_config, load_topology
from slicectl.core import defaults

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Callable, Iterator, Mapping
    from pathlib import Path
    from typing import Any, TextIO

    from slicectl.balancer.mover import Mover, Outcome
    from slicectl.core.balance import Move, Reading
    from slicectl.core.config import Config
    from slicectl.core.plan import Plan
    from slicectl.core.samples import Snapshot
    from slicectl.core.tenants import BalancePolicy
    from slicectl.core.topology import Topology

JSON_FORMAT = "slicectl-balance/1"
_US = 1_000_000
# The cgroup files a decision reads (CPU time, cpu.pressure, the CPUs a slice runs on).
_DECISION_FILES = frozenset({"cpu.stat", "cpu.pressure", "cpuset.cpus.effective"})
_REDISCOVER = 60.0  # seconds between full walks of the elastic tenants' slices


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


class _Stop(Exception):
    """SIGTERM or SIGINT arrived while the balancer waited for its next sample."""


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
    from slicectl.core.balance_input import move_json, move_line

    if args.json:
        import json

        moves = [move_json(o.move) | ({} if args.dry_run else {"made": o.made})
                 | ({"why_not": o.why_not} if o.why_not else {}) for o in outcomes]
        # one write: json.dump writes each token on its own
        out.write(json.dumps({"format": JSON_FORMAT, "dry_run": args.dry_run,
                              "elapsed_s": round(elapsed, 3), "moves": moves}) + "\n")
    else:
        for o in outcomes:
            if o.made or args.dry_run:
                out.write(move_line(o.move, args.dry_run) + "\n")
            else:
                print(f"not moved: {move_line(o.move, True).removeprefix('would move ')}: "
                      f"{o.why_not}", file=sys.stderr, flush=True)
        if args.once and not outcomes:
            out.write(f"no move: no elastic tenant starved and a neighbour idle over the "
                      f"last {policy.window / _US:g}s\n")
    out.flush()


class _Held:
    """Which tenants the balancer may move this round and the CPUs they hold (from the
    cgroups, against the state file), telling once about tenants someone else changed."""

    def __init__(self, config: Config, mover: Mover) -> None:
        self.config = config
        self.mover = mover
        self.told: dict[str, frozenset[int]] = {}

    def __call__(self, cur: Snapshot) -> Mapping[str, frozenset[int]]:
        from dataclasses import replace

        from slicectl.core.balance_input import current_cpus
        from slicectl.core.balance_state import reconcile
        from slicectl.core.cpulist import format_cpulist

        # The elastic slices' CPUs read now: the sampler reads an empty cgroup (an idle
        # tenant) in full only every few refreshes, so its sample may predate a move.
        units = set(self.mover.units.values())
        samples = [replace(s, cpus=cpus) if s.unit in units
                   and (cpus := self.mover.effective(s.path)) is not None else s
                   for s in cur.cgroups.values()]
        found = reconcile(self.mover.state(), current_cpus(self.config, samples))
        if found.restored:
            names = found.restored

            def adopt(state: Any) -> Any:
                for name in names:
                    state = state.adopt(name, state.tenants[name].declared)
                return state

            self.mover.record(adopt)
            print(f"back at their declared CPUs without the balancer (a daemon-reload?): "
                  f"{', '.join(names)}", file=sys.stderr, flush=True)
        for name, cpus in found.foreign.items():
            if self.told.get(name) != cpus:
                print(f"left alone: {name} holds CPUs {format_cpulist(cpus)}, set by someone "
                      "else (neither declared nor the balancer's); `slicectl apply` returns "
                      "it", file=sys.stderr, flush=True)
        self.told = dict(found.foreign)
        return found.taking_part


def cmd_balance(args: Namespace, *, sleep: Callable[[float], None] = time.sleep,
                out: TextIO | None = None) -> int:
    """`slicectl balance`: move whole cores between elastic tenants every interval (with
    --dry-run: print the moves only; with --once: after one window, then exit)."""

    from slicectl.core.errors import SlicectlError
    from slicectl.host.planning import plan_for_host

    out = out or sys.stdout
    config = load_config(args)
    if not any(t.elastic for t in config.tenants):
        raise SlicectlError(f"{args.tenants}: no elastic tenant, nothing to balance",
                            "give a tenant cpus_min or cpus_max (docs/balance.md)")
    topo = load_topology(args)
    options = apply_options(args)
    plan = plan_for_host(config, topo, _placed_in(args))
    policy = _policy(config.balance, args.interval)
    mover = None
    if not args.dry_run:
        from slicectl.balancer.mover import Mover

        mover = Mover(config, plan, options, on_wait=lambda holder, what: print(
            f"waiting for {holder}, which holds {options.unit_dir}, to {what}",
            file=sys.stderr, flush=True))
        try:  # the state file before the first decision, unless apply runs (then: at a move)
            mover.record(lambda state: state, wait=False)
        except (SlicectlError, OSError) as e:
            print(f"state file not written yet: {getattr(e, 'message', e)}",
                  file=sys.stderr, flush=True)
    signals = _Signals()
    if mover is not None and not args.once:
        signals.install()
    try:
        return _run(args, config, topo, plan, policy, mover, signals, sleep, out)
    except _Stop:
        pass
    from slicectl.host.notify import notify

    notify(STOPPING="1", STATUS="returning the moved tenants to their declared CPUs")
    assert mover is not None  # signals are installed only when there is something to undo
    for line in mover.restore():
        print(line, file=out, flush=True)
    return EXIT_OK


def _placed_in(args: Namespace) -> Path:
    """The unit directory whose manifest says where the tenants are: the generator's output
    on a host in generator mode (as for `plan`), else --unit-dir or /etc/systemd/system. The
    lock is always --unit-dir's (or /etc/systemd/system's): the one apply takes."""
    from pathlib import Path

    from slicectl.apply import generator_mode
    from slicectl.cli.generator import paths_of

    if args.unit_dir is None and generator_mode.enabled(paths := paths_of(args)):
        return paths.output
    return Path(args.unit_dir or defaults.UNIT_DIR)


def _rounds(args: Namespace, config: Config, policy: BalancePolicy, signals: _Signals,
            sleep: Callable[[float], None], ready: str) -> Iterator[tuple[Snapshot, Snapshot]]:
    """(previous, current) sample pairs of the elastic tenants' slices, one per interval, on
    the sampler's clock. Once the first sample is read, systemd hears READY=1 with `ready`
    as the status (Type=notify: `systemctl start` returns then, and units ordered after the
    balancer start then)."""
    from pathlib import Path

    from slicectl.core.balance_input import tenant_unit
    from slicectl.core.cgroupfiles import FILES
    from slicectl.host.notify import notify
    from slicectl.host.sampler import Sampler

    interval = policy.interval / _US
    # Only what a decision reads (the slices' CPU time, cpu.pressure and the CPUs they run
    # on), of the elastic tenants' slices only: BENCHMARKS.md, balance.100.
    slices = frozenset(tenant_unit(config, t.name) for t in config.tenants if t.elastic)
    skip = frozenset(f.name for f in FILES) - _DECISION_FILES
    # A slice stopped, started or recreated changes its parent directory, which the sampler
    # checks every sample; the full walk that also catches what that misses comes once a
    # minute (not every 5 s as for status): the balancer's slices are few and known.
    with Sampler(Path(args.cgroup_root), _REDISCOVER, slices=slices, skip=skip) as sampler:
        prev = sampler.sample()
        notify(READY="1", STATUS=ready)
        start, rounds = prev.time, 0
        while True:
            rounds += 1
            signals.wait(sleep, max(0.0, start + rounds * interval - time.monotonic()))
            if signals.stopping:
                raise _Stop
            cur = sampler.sample()
            yield prev, cur
            prev = cur


def _run(args: Namespace, config: Config, topo: Topology, plan: Plan, policy: BalancePolicy,
         mover: Mover | None, signals: _Signals, sleep: Callable[[float], None],
         out: TextIO) -> int:
    from slicectl.balancer.mover import Outcome
    from slicectl.core.balance import decide, may_be_starved
    from slicectl.core.balance_input import BalanceInput, remember, untouchable
    from slicectl.core.cpulist import format_cpulist
    from slicectl.core.metrics import MetricsMemo
    from slicectl.host.notify import notify

    layout = plan.layout
    interval, window = policy.interval / _US, policy.window / _US
    housekeeping, fixed = untouchable(config, layout)
    inputs = BalanceInput(config, layout)
    if not args.json:
        what = ("dry run: sampling" if mover is None else "balancing: sampling")
        print(f"{what} every {interval:g}s; a core moves after {window:g}s starved beside an "
              "idle neighbour" + (" (nothing is changed)" if mover is None else
                                  "; a stop returns every tenant to its declared CPUs"),
              file=sys.stderr, flush=True)
    held_now = None if mover is None else _Held(config, mover)
    memo = MetricsMemo()
    history: dict[str, tuple[Reading, ...]] = {}
    last_moves: dict[str, float] = {}
    expected: Mapping[str, frozenset[int]] = {}
    start = first = None
    elastic = sum(t.elastic for t in config.tenants)
    made = 0
    ready = (f"{'dry run: ' if mover is None else ''}{elastic} elastic tenants, "
             f"a sample every {interval:g}s")
    for prev, cur in _rounds(args, config, policy, signals, sleep, ready):
        now = cur.time
        start = prev.time if start is None else start
        held = None if held_now is None else held_now(cur)
        if held is not None:
            # A size that changed without a move of ours (apply, a reload): its readings
            # before now describe another size.
            last_moves.update({t: now for t, cpus in held.items()
                               if t in expected and expected[t] != cpus})
        metrics = memo.compute(prev, cur)
        history = remember(history, inputs.readings(metrics, now, held), now, policy)
        first = now if first is None else first
        # --once: one window of readings (the first comes one interval after the start).
        if args.once and now - first < window - interval:
            expected = held or {}
            continue
        # Most rounds no tenant is starved: no decision to make (BENCHMARKS.md, balance.100).
        moves: list[Move] = []
        if any(may_be_starved(h, now, policy) for h in history.values()):
            moves = decide(inputs.tenants(history, last_moves, held), topo, policy, now,
                           housekeeping, fixed)
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
