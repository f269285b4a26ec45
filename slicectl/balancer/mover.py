"""The balancer's moves made on the host, and undone at its stop (docs/balance.md).

A move is made under the unit directory's one lock (the lock `apply` and `generate` take,
slicectl.host.files.lock), taken per move with a timeout and never held between moves: apply waits
for one move at most, and a move apply holds off past the timeout is skipped. Under the lock:
the two tenants' CPUs are read again (a move decided on CPUs that changed since is skipped),
the state file records the move as under way (write-ahead: if it cannot be written, the move
is not made), the donor's AllowedCPUs shrinks, then the receiver's grows (so no CPU is in
both), each as a runtime property (SetUnitProperties, runtime=true), then both cgroups'
cpuset.cpus.effective must show the new CPUs, and the state file records the move as made. A
failure puts both back and records that. Whatever of this could not be recorded, the record
of the move under way covers: each tenant may hold either side of it, and a stop undoes it.

Runtime only: systemd records a runtime property in /run/systemd/system.control/UNIT.d/
50-AllowedCPUs.conf; that file is removed again at once, as apply does with its own runtime
calls (slicectl.apply.transaction.set_live), so nothing of the balancer's outlives the live
value: a daemon-reload, a reboot or `apply` give every tenant its declared CPUs again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from slicectl.apply.transaction import set_live
from slicectl.core.balance.balance import ElasticRange, Move
from slicectl.core.balance.balance_state import BalanceState
from slicectl.core.cpulist import format_cpulist, parse_cpulist
from slicectl.core.errors import SlicectlError
from slicectl.core.frozen import frozen
from slicectl.host.cgroup.cgroupfs import read_cgroup_file
from slicectl.host.files.balance_state_file import state_or_none, write_state
from slicectl.host.files.unitdir import UnitDir

if TYPE_CHECKING:
    from slicectl.apply.applier import ApplyOptions
    from slicectl.core.config.config import Config
    from slicectl.core.plan import Plan
    from slicectl.host.systemd.systemd import Systemd

ALLOWED = "AllowedCPUs"
EFFECTIVE = "cpuset.cpus.effective"
# systemd writes the cgroup from its realize queue, right after it answers: how long to wait
# for cpuset.cpus.effective to show a new value, and how often to look.
SETTLE_S = 2.0
_POLL_S = 0.02


@frozen
class Outcome:
    """What became of one move: made, or not and why."""

    move: Move
    made: bool
    why_not: str = ""
    note: str = ""  # for a move made: what went wrong after it (the state file)


class Mover:
    """Makes moves on the host and undoes them: elastic tenants of one plan."""

    def __init__(self, config: Config, plan: Plan, options: ApplyOptions,
                 on_wait: Callable[[str, str], None] | None = None) -> None:
        """`on_wait(holder, what)` is called when the lock is busy: who holds it, and what
        waits for it ("move core 2,18 (node 0) from batch to web")."""
        self.ranges = {r.tenant: r for r in plan.elastic}
        self.units = {name: config.slice_unit(name) for name in self.ranges}
        self.options = options
        self.on_wait = on_wait

    # -- the state file -------------------------------------------------------------------

    def state(self) -> BalanceState:
        """The state file's view of the plan's elastic tenants (fresh entries where it has
        none, or none readable)."""
        old = state_or_none(self.options.balance_state) or BalanceState({})
        return old.for_plan(tuple(self.ranges.values()))

    def record(self, change: Callable[[BalanceState], BalanceState],
               wait: bool = True) -> BalanceState:
        """Read, change and write the state file under the lock (apply writes it too); not
        `wait`ing for the lock: OutputError at once when another run holds it."""
        with self._locked("write the state file", wait):
            state = change(self.state())
            write_state(self.options.balance_state, state)
            return state

    def _locked(self, what: str, wait: bool = True) -> AbstractContextManager[None]:
        on_wait = self.on_wait

        def waiting(holder: str) -> None:
            if on_wait is not None:
                on_wait(holder, what)

        return UnitDir(self.options.unit_dir).locked(
            self.options.lock_timeout if wait else 0.0, waiting)

    # -- moves ------------------------------------------------------------------------------

    def make(self, moves: list[Move], held: Mapping[str, frozenset[int]]) -> list[Outcome]:
        """Make each move, one lock at a time; `held`: the CPUs the decision saw."""
        outcomes = []
        for m in moves:
            try:
                with self._locked(f"move core {format_cpulist(m.cpus)} (node {m.node}) from "
                                  f"{m.donor} to {m.receiver}"):
                    outcomes.append(asyncio.run(self._make(m, held)))
            except (SlicectlError, OSError) as e:
                outcomes.append(Outcome(m, False, getattr(e, "message", None) or str(e)))
        return outcomes

    async def _make(self, m: Move, held: Mapping[str, frozenset[int]]) -> Outcome:
        from slicectl.host.systemd.systemd import Systemd

        donor, receiver = self.units[m.donor], self.units[m.receiver]
        async with await Systemd.connect(self.options.bus_address) as sd:
            groups = {u: await sd.control_group(u) for u in (donor, receiver)}
            now = {m.donor: self.effective(groups[donor]),
                   m.receiver: self.effective(groups[receiver])}
            if now[m.donor] != held.get(m.donor) or now[m.receiver] != held.get(m.receiver):
                return Outcome(m, False, "the tenants' CPUs changed since they were sampled ("
                               + ", ".join(f"{t} {format_cpulist(c or frozenset())}"
                                           for t, c in now.items()) + ")")
            want = {donor: held[m.donor] - m.cpus, receiver: held[m.receiver] | m.cpus}
            before = {u: (await sd.get_unit_properties(u, unit_interface=False)).props[ALLOWED]
                      for u in (donor, receiver)}
            try:  # write-ahead: no move the state file does not know of
                write_state(self.options.balance_state, self._held(m, held).with_pending(m))
            except OSError as e:
                return Outcome(m, False, f"cannot record it in the state file first "
                               f"({_why(e)}), so it was not made")
            try:
                for unit in (donor, receiver):  # shrink first: no CPU is ever in both
                    await set_live(sd, unit, {ALLOWED: want[unit]}, self.options.control_dir)
                await self._verify(want, groups)
            except (SlicectlError, OSError) as e:  # OSError: the control drop-in's folder
                failed = await self._put_back(sd, before)
                why = _why(e) + (f"; could not put back: {failed}" if failed else "; put back")
                if not failed:
                    why += _unrecorded(lambda: write_state(self.options.balance_state,
                                                           self._held(m, held)))
                return Outcome(m, False, why)
        note = _unrecorded(lambda: self.record_move(m, held))
        return Outcome(m, True, note=note.removeprefix("; "))

    def _held(self, m: Move, held: Mapping[str, frozenset[int]]) -> BalanceState:
        """The state with the move's two tenants holding what the decision saw."""
        return self.state().adopt(m.donor, held[m.donor]).adopt(m.receiver, held[m.receiver])

    def record_move(self, m: Move, held: Mapping[str, frozenset[int]]) -> None:
        """The move, made, in the state file (the lock is held by the caller)."""
        write_state(self.options.balance_state, self._held(m, held).with_move(m, time.time()))

    def effective(self, control_group: str) -> frozenset[int] | None:
        """The CPUs a cgroup runs on now (cpuset.cpus.effective), read at once."""
        if not control_group:
            return None
        text = read_cgroup_file(self.options.cgroup_root, control_group, EFFECTIVE)
        try:
            return None if text is None else parse_cpulist(text)
        except ValueError:
            return None

    async def _verify(self, want: Mapping[str, frozenset[int]],
                      groups: Mapping[str, str]) -> None:
        """Wait (SETTLE_S at most) until every unit's cgroup shows its new CPUs."""
        deadline = time.monotonic() + SETTLE_S
        while True:
            wrong = {u: self.effective(groups[u]) for u, cpus in want.items()
                     if self.effective(groups[u]) != cpus}
            if not wrong:
                return
            if time.monotonic() >= deadline:
                shown = "; ".join(f"{u}: {groups[u]}/{EFFECTIVE} is "
                                  f"{format_cpulist(c) if c is not None else '(missing)'}, "
                                  f"expected {format_cpulist(want[u])}"
                                  for u, c in wrong.items())
                raise SlicectlError(f"verification failed: {shown}",
                                    "see `systemctl status` of the slice")
            await asyncio.sleep(_POLL_S)

    async def _put_back(self, sd: Systemd, before: Mapping[str, object]) -> str:
        """AllowedCPUs of each unit as it was; what could not be put back ("" if all was)."""
        failed = []
        for unit, value in before.items():
            assert isinstance(value, frozenset)
            try:
                await set_live(sd, unit, {ALLOWED: value}, self.options.control_dir)
            except (SlicectlError, OSError) as e:
                failed.append(f"{unit}: {e.message if isinstance(e, SlicectlError) else e}")
        return "; ".join(failed)

    # -- the stop ---------------------------------------------------------------------------

    def restore(self) -> list[str]:
        """Every tenant the balancer moved back to its declared CPUs, under the lock; the
        state file says so after. Returns one line per tenant restored or left alone."""
        with self._locked("return the tenants to their declared CPUs"):
            state = self.state()
            lines = asyncio.run(self._restore(state))
            write_state(self.options.balance_state, state.declared(tuple(self.ranges.values())))
        return lines

    async def _restore(self, state: BalanceState) -> list[str]:
        from slicectl.host.systemd.systemd import Systemd

        lines = []
        async with await Systemd.connect(self.options.bus_address) as sd:
            live = {}
            for name, unit in self.units.items():
                st = await sd.get_unit_properties(unit, unit_interface=False)
                if st.control_group:
                    live[name] = st.props[ALLOWED]
            todo: list[tuple[ElasticRange, frozenset[int]]] = []
            for name, cpus in live.items():
                e = self.ranges[name]
                assert isinstance(cpus, frozenset)
                if cpus == e.declared:
                    continue
                if not state.tenants[name].holds(cpus):
                    lines.append(f"left {name} as it is: its CPUs {format_cpulist(cpus)} were "
                                 "not set by the balancer (apply restores them)")
                    continue
                todo.append((e, cpus))
            # Those that shrink first, so that no CPU is in two tenants at once.
            todo.sort(key=lambda ec: (len(ec[0].declared) - len(ec[1]), ec[0].tenant))
            for e, cpus in todo:
                unit = self.units[e.tenant]
                await set_live(sd, unit, {ALLOWED: e.declared}, self.options.control_dir)
                lines.append(f"restored {e.tenant} to its declared {len(e.declared)} CPUs "
                             f"({format_cpulist(e.declared)}; it held {len(cpus)}: "
                             f"{format_cpulist(cpus)})")
            groups = {self.units[e.tenant]: await sd.control_group(self.units[e.tenant])
                      for e, _ in todo}
            await self._verify({self.units[e.tenant]: e.declared for e, _ in todo}, groups)
        return lines


def _why(e: BaseException) -> str:
    if isinstance(e, SlicectlError):
        return e.message
    if isinstance(e, OSError) and e.strerror:
        return f"{e.filename}: {e.strerror}" if e.filename else e.strerror
    return str(e)


def _unrecorded(write: Callable[[], None]) -> str:
    """write(), a record of how a move ended; "" or, when it cannot be written, why, and that
    the record of the move under way stands (a stop undoes either side of it)."""
    try:
        write()
    except OSError as e:
        return (f"; the state file could not be updated ({_why(e)}): it still records the "
                "move as under way, which a stop undoes")
    return ""
