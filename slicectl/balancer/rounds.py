"""What the balancer's rounds take from tenants.yaml (slicectl.balancer.daemon): the plan
placed as the manifest says, the policy, the mover, which tenants take part each round (against the
state file); and tenants.yaml and the manifest looked at every round, the plan made again when
either changed (docs/balance.md, "Moving cores").
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from slicectl.cli.common import load_config
from slicectl.core import defaults

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

    from slicectl.apply.applier import ApplyOptions
    from slicectl.balancer.mover import Mover
    from slicectl.core.balance.balance import ElasticRange
    from slicectl.core.balance.balance_input import BalanceInput
    from slicectl.core.config.config import Config
    from slicectl.core.config.tenants import BalancePolicy
    from slicectl.core.monitor.samples import Snapshot
    from slicectl.core.placement.topology import Topology
    from slicectl.core.plan import Plan

_US = 1_000_000


def policy_for(policy: BalancePolicy, interval: float | None) -> BalancePolicy:
    """The policy with `--interval` in place of `balance.interval`; UsageError when it is
    below the shortest meaningful rate window or above the window."""
    from dataclasses import replace

    from slicectl.core.errors import UsageError
    from slicectl.core.monitor.metrics import MIN_RATE_WINDOW

    if interval is None:
        return policy
    if interval < MIN_RATE_WINDOW or interval * _US > policy.window:
        raise UsageError(f"--interval {interval:g}: must be at least {MIN_RATE_WINDOW:g} s and "
                         f"at most balance.window ({policy.window / _US:g} s)",
                         "pick an interval between the two, or change balance: in TENANTS")
    return replace(policy, interval=round(interval * _US))


class Held:
    """Which tenants the balancer may move this round and the CPUs they hold (from the
    cgroups, against the state file), telling once about tenants someone else changed."""

    def __init__(self, config: Config, mover: Mover) -> None:
        self.config = config
        self.mover = mover
        self.told: dict[str, frozenset[int]] = {}
        self.unwritten = ""  # why the state file could not be written, said last

    def __call__(self, cur: Snapshot) -> Mapping[str, frozenset[int]]:
        from dataclasses import replace

        from slicectl.core.balance.balance_input import current_cpus
        from slicectl.core.balance.balance_state import reconcile
        from slicectl.core.cpulist import format_cpulist

        # The elastic slices' CPUs read now: the sampler reads an empty cgroup (an idle
        # tenant) in full only every few refreshes, so its sample may predate a move.
        units = set(self.mover.units.values())
        samples = [replace(s, cpus=cpus) if s.unit in units
                   and (cpus := self.mover.effective(s.path)) is not None else s
                   for s in cur.cgroups.values()]
        found = reconcile(self.mover.state(), current_cpus(self.config, samples))
        # Back at the declared CPUs without the balancer; or how a move recorded as under way
        # ended, its outcome unrecorded: the state file says so now.
        adopted = {**found.settled, **{name: found.taking_part[name] for name in found.restored}}
        if adopted:
            self._adopt(adopted)
        if found.restored:
            print(f"back at their declared CPUs without the balancer (a daemon-reload?): "
                  f"{', '.join(found.restored)}", file=sys.stderr, flush=True)
        for name, cpus in found.foreign.items():
            if self.told.get(name) != cpus:
                print(f"left alone: {name} holds CPUs {format_cpulist(cpus)}, set by someone "
                      "else (neither declared nor the balancer's); `slicectl apply` returns "
                      "it", file=sys.stderr, flush=True)
        self.told = dict(found.foreign)
        return found.taking_part

    def _adopt(self, cpus: Mapping[str, frozenset[int]]) -> None:
        from slicectl.core.errors import SlicectlError

        def adopt(state: Any) -> Any:
            for name, held in cpus.items():
                state = state.adopt(name, held)
            return state

        try:
            self.mover.record(adopt)
        except (SlicectlError, OSError) as e:  # the next move is not made without it
            why = f"state file not written: {getattr(e, 'message', None) or e}"
            if why != self.unwritten:  # said once, not every round while it lasts
                print(why, file=sys.stderr, flush=True)
            self.unwritten = why
        else:
            self.unwritten = ""


@dataclass
class Planned:
    """What the rounds take from tenants.yaml and the plan; made again when they change."""

    config: Config
    plan: Plan
    policy: BalancePolicy
    mover: Mover | None  # None: a dry run
    inputs: BalanceInput
    untouchable: tuple[frozenset[int], frozenset[int]]  # housekeeping, fixed tenants' CPUs
    held: Held | None

    @property
    def slices(self) -> frozenset[str]:
        """The elastic tenants' slice units: all the sampler reads."""
        return frozenset(self.config.slice_unit(e.tenant) for e in self.plan.elastic)

    @property
    def ranges(self) -> dict[str, ElasticRange]:
        return {e.tenant: e for e in self.plan.elastic}


def plan_rounds(args: Namespace, config: Config, topo: Topology, options: ApplyOptions
             ) -> Planned:
    """The plan of `config` on the host (placed where the manifest says), its policy, and
    the mover that makes its moves (none for a dry run)."""
    from slicectl.core.balance.balance_input import BalanceInput, untouchable
    from slicectl.host.planning import plan_for_host

    plan = plan_for_host(config, topo, placed_in(args))
    policy = policy_for(config.balance, args.interval)
    mover = None
    if not args.dry_run:
        from slicectl.balancer.mover import Mover

        mover = Mover(config, plan, options, on_wait=lambda holder, what: print(
            f"waiting for {holder}, which holds {options.unit_dir}, to {what}",
            file=sys.stderr, flush=True))
    return Planned(config, plan, policy, mover, BalanceInput(config, plan.layout),
                    untouchable(config, plan.layout),
                    None if mover is None else Held(config, mover))


class Inputs:
    """tenants.yaml and the manifest that says where its tenants are placed: looked at every
    round (a stat each), and the plan made again when either changed (an apply resized a
    tenant). A file that cannot be used is said once; the plan before it stays."""

    def __init__(self, args: Namespace, topo: Topology, options: ApplyOptions,
                 planned: Planned) -> None:
        from pathlib import Path

        from slicectl.host.files.unitdir import MANIFEST_NAME

        self.args, self.topo, self.options, self.planned = args, topo, options, planned
        self.paths = (Path(args.tenants), placed_in(args) / MANIFEST_NAME)
        self.seen = self._stat()

    def _stat(self) -> tuple[tuple[int, int, int, int] | None, ...]:
        import os

        out: list[tuple[int, int, int, int] | None] = []
        for path in self.paths:
            try:
                st = os.stat(path)
            except OSError:
                out.append(None)
            else:
                out.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
        return tuple(out)

    def changed(self) -> bool:
        """Whether a new plan was made (the files changed and can be used)."""
        from slicectl.core.errors import SlicectlError

        now = self._stat()
        if now == self.seen:
            return False
        self.seen = now  # a file that cannot be used is said once, not every round
        try:
            new = plan_rounds(self.args, load_config(self.args), self.topo, self.options)
        except SlicectlError as e:
            print(f"{self.args.tenants} changed but cannot be used: {e.message}; balancing on "
                  "as before it changed", file=sys.stderr, flush=True)
            return False
        self.planned = new
        elastic = ", ".join(f"{e.tenant} {len(e.declared)}" for e in new.plan.elastic)
        print(f"{self.args.tenants} changed: planned again; elastic tenants and their declared "
              f"CPUs: {elastic or 'none (nothing to balance)'}", file=sys.stderr, flush=True)
        return True


def placed_in(args: Namespace) -> Path:
    """The unit directory whose manifest says where the tenants are: the generator's output
    on a host in generator mode (as for `plan`), else --unit-dir or /etc/systemd/system. The
    lock is always --unit-dir's (or /etc/systemd/system's): the one apply takes."""
    from pathlib import Path

    from slicectl.apply import generator_mode
    from slicectl.cli.generator import paths_of

    if args.unit_dir is None and generator_mode.enabled(paths := paths_of(args)):
        return paths.output
    return Path(args.unit_dir or defaults.UNIT_DIR)
