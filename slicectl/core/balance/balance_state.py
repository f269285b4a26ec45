"""The balancer's runtime state (pure): per elastic tenant its declared CPUs, the CPUs it
holds now, its moves by direction and its last move; the JSON of the state file; and whether
a tenant's live CPUs are a state the balancer left (balanced) rather than drift.

The file (slicectl.host.files.balance_state_file) is written by the balancer before every move (the
move recorded as under way: each of its two tenants may then hold its CPUs before the move or
after it), after it (made, or not), by a stop of the balancer and by `apply` (both put every
tenant back to its declared CPUs); `plan`, the exporter and the TUI read it. Times are
wall-clock seconds (time.time): the file outlives the process that wrote it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field, replace
from typing import Any

from slicectl.core.balance.balance import ElasticRange, Move
from slicectl.core.config.jsoninput import JsonReader
from slicectl.core.cpulist import format_cpulist
from slicectl.core.errors import StateError
from slicectl.core.frozen import frozen

FORMAT = "slicectl-balance-state/1"
GROW, SHRINK = "grow", "shrink"
_COUNT_MAX = 2**53  # JSON numbers stay exact below this
_HINT = ("the balancer rewrites it after its next move, apply after its next run; or remove "
         "it (it holds runtime state only)")


@frozen
class TenantBalance:
    """One elastic tenant: declared and current CPUs, moves so far, the last one and why."""

    declared: frozenset[int]
    cpus: frozenset[int]
    grown: int = 0
    shrunk: int = 0
    last_move: float | None = None  # wall-clock seconds
    last_reason: str = ""
    # The CPUs a move under way gives it: recorded before the move is made, so that the
    # tenant holding these is the balancer's doing too (a stop undoes it) however the move
    # ended, even if its outcome could not be recorded.
    pending: frozenset[int] | None = None

    def to_json(self) -> dict[str, Any]:
        doc = {"declared": format_cpulist(self.declared), "cpus": format_cpulist(self.cpus),
               "declared_count": len(self.declared), "cpu_count": len(self.cpus),
               "moves": {GROW: self.grown, SHRINK: self.shrunk},
               "last_move": self.last_move, "last_reason": self.last_reason}
        if self.pending is not None:
            doc["pending"] = format_cpulist(self.pending)
        return doc

    def holds(self, cpus: frozenset[int]) -> bool:
        """Whether `cpus` is what the balancer left this tenant holding (before or after a
        move recorded as under way)."""
        return cpus == self.cpus or cpus == self.pending


@frozen
class BalanceState:
    """What the state file says: tenant name -> TenantBalance."""

    tenants: Mapping[str, TenantBalance]

    def to_json(self) -> dict[str, Any]:
        """The state file's document (docs/balance.md)."""
        return {"format": FORMAT,
                "tenants": {name: t.to_json() for name, t in sorted(self.tenants.items())}}

    @classmethod
    def from_json(cls, data: Any, where: str) -> BalanceState:
        """Read back a state file's document; StateError names the file and the JSON path."""
        r = JsonReader(where, _HINT, StateError)
        doc = r.document(data, FORMAT)
        tenants = {}
        for name, raw in r.mapping(r.field(doc, "tenants", ""), "tenants").items():
            path = f"tenants.{name}"
            t = r.mapping(raw, path)
            moves = r.mapping(r.field(t, "moves", path), f"{path}.moves")
            last = t.get("last_move")
            pending = t.get("pending")
            if last is not None and (isinstance(last, bool)
                                     or not isinstance(last, int | float)):
                raise r.fail(f"{path}.last_move", "must be a number or null")
            tenants[name] = TenantBalance(
                r.cpulist(r.field(t, "declared", path), f"{path}.declared"),
                r.cpulist(r.field(t, "cpus", path), f"{path}.cpus"),
                r.integer(r.field(moves, GROW, f"{path}.moves"), f"{path}.moves.{GROW}", 0,
                          _COUNT_MAX),
                r.integer(r.field(moves, SHRINK, f"{path}.moves"), f"{path}.moves.{SHRINK}",
                          0, _COUNT_MAX),
                None if last is None else float(last),
                r.text(t.get("last_reason", ""), f"{path}.last_reason"),
                None if pending is None else r.cpulist(pending, f"{path}.pending"))
        return cls(tenants)

    def with_move(self, move: Move, when: float) -> BalanceState:
        """The state after `move` (made at wall-clock `when`): the core handed over, the
        receiver's grow and the donor's shrink counted, both tenants' last move recorded."""
        d, r = self.tenants[move.donor], self.tenants[move.receiver]
        return BalanceState({**self.tenants,
                             move.donor: replace(d, cpus=d.cpus - move.cpus, shrunk=d.shrunk + 1,
                                                 last_move=when, last_reason=move.reason,
                                                 pending=None),
                             move.receiver: replace(r, cpus=r.cpus | move.cpus,
                                                    grown=r.grown + 1, last_move=when,
                                                    last_reason=move.reason, pending=None)})

    def with_pending(self, move: Move) -> BalanceState:
        """The state with `move` under way: each of its two tenants holds its CPUs now or
        those the move gives it (written before the move is made)."""
        d, r = self.tenants[move.donor], self.tenants[move.receiver]
        return BalanceState({**self.tenants,
                             move.donor: replace(d, pending=d.cpus - move.cpus),
                             move.receiver: replace(r, pending=r.cpus | move.cpus)})

    def declared(self, ranges: tuple[ElasticRange, ...]) -> BalanceState:
        """Every elastic tenant of `ranges` back at its declared CPUs (apply, a stop of the
        balancer), its counters and last move kept; tenants no longer elastic dropped."""
        out = {}
        for e in ranges:
            old = self.tenants.get(e.tenant)
            out[e.tenant] = (TenantBalance(e.declared, e.declared) if old is None else
                             replace(old, declared=e.declared, cpus=e.declared, pending=None))
        return BalanceState(out)

    def for_plan(self, ranges: tuple[ElasticRange, ...]) -> BalanceState:
        """The state of the plan's elastic tenants: an entry kept while its declared CPUs
        are the plan's (a balancer restarted finds its moves), else new at the declared."""
        out = {}
        for e in ranges:
            old = self.tenants.get(e.tenant)
            out[e.tenant] = (old if old is not None and old.declared == e.declared
                             else TenantBalance(e.declared, e.declared))
        return BalanceState(out)

    def adopt(self, tenant: str, cpus: frozenset[int]) -> BalanceState:
        """The state with `tenant` holding `cpus` (what its cgroup shows), nothing counted
        and no move under way."""
        return BalanceState({**self.tenants, tenant: replace(self.tenants[tenant], cpus=cpus,
                                                             pending=None)})


def is_balanced(e: ElasticRange, live: frozenset[int], state: BalanceState | None) -> bool:
    """Whether a tenant's live CPUs are a state the balancer left it in: what the state file
    records for it (against the same declared CPUs; either side of a move under way), within
    its floor and ceiling and the CPUs it may ever hold. Anything else differing from the plan
    is drift."""
    t = None if state is None else state.tenants.get(e.tenant)
    return (t is not None and t.declared == e.declared and t.holds(live)
            and e.allows(live))


@frozen
class Reconciled:
    """The elastic tenants' live CPUs against the state file, at the start of a round."""

    taking_part: Mapping[str, frozenset[int]]  # tenant -> its CPUs: as the state says
    restored: tuple[str, ...]  # back at their declared CPUs without the balancer (a reload)
    foreign: Mapping[str, frozenset[int]]  # changed by someone else: left alone
    # A move recorded as under way whose outcome was not recorded: the CPUs each of its
    # tenants holds (before or after it), for the state file.
    settled: Mapping[str, frozenset[int]] = field(default_factory=dict)


def reconcile(state: BalanceState, live: Mapping[str, frozenset[int]]) -> Reconciled:
    """Which tenants the balancer may move this round: those whose live CPUs are what the
    state records, and those found back at their declared CPUs (a daemon-reload re-applies
    the unit files: adopt it). A tenant holding anything else was changed by someone else
    (`systemctl set-property`) and is left alone until apply; one without a cgroup is out.
    A tenant with a move under way takes part with whichever side of it it holds."""
    part: dict[str, frozenset[int]] = {}
    restored: list[str] = []
    foreign: dict[str, frozenset[int]] = {}
    settled: dict[str, frozenset[int]] = {}
    for name, t in sorted(state.tenants.items()):
        cpus = live.get(name)
        if cpus is None:
            continue
        if t.holds(cpus):
            part[name] = cpus
            if t.pending is not None:
                settled[name] = cpus
        elif cpus == t.declared:
            part[name] = cpus
            restored.append(name)
        else:
            foreign[name] = cpus
    return Reconciled(part, tuple(restored), foreign, settled)
