"""Every message the TUI's workers post: each worker run ends in exactly one of these."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

from slicectl.core.monitor.metrics import SliceMetrics
from slicectl.core.monitor.samples import Snapshot
from slicectl.tui.model import Process

if TYPE_CHECKING:
    from rich.console import RenderableType

    from slicectl.apply.host_diff import Diff
    from slicectl.core.plan import Plan
    from slicectl.core.shares.contention import CpuShares
    from slicectl.tui.plans import PlanView


class Sampled(Message):
    """A new snapshot and the metrics computed from it and the previous one."""

    def __init__(self, snapshot: Snapshot, metrics: list[SliceMetrics],
                 balance: dict[str, str] | None = None, base: Snapshot | None = None) -> None:
        """`base`: the snapshot the rates were computed against."""
        super().__init__()
        self.snapshot = snapshot
        self.metrics = metrics
        self.base = base
        self.balance = balance or {}  # slice unit -> its label from the balancer's state

    def can_replace(self, message: Message) -> bool:
        # A newer sample makes a pending older one worthless: coalesce.
        return isinstance(message, Sampled)


class SampleFailed(Message):
    """The sampler raised; the poll loop keeps going."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__()
        self.message = message
        self.hint = hint


class ProcessesRead(Message):
    """The processes of the slice a detail screen shows."""

    def __init__(self, cgroup: str, processes: list[Process]) -> None:
        super().__init__()
        self.cgroup = cgroup
        self.processes = processes

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ProcessesRead) and message.cgroup == self.cgroup


class DiffReady(Message):
    """What apply would change (or why it cannot tell), for the confirmation dialog: `diff`
    is what the operator confirms, and what apply must find again to change anything."""

    def __init__(self, diff: Diff | None, lines: list[str], notes: list[str], changed: bool,
                 error: str = "", hint: str = "", repackable: bool = False) -> None:
        super().__init__()
        self.diff = diff
        self.lines = lines
        self.notes = notes
        self.changed = changed
        self.error = error
        self.hint = hint
        self.repackable = repackable  # refused as a split a re-pack avoids (key R)


class Applied(Message):
    """Apply finished: a one-line summary, or an error with its hint."""

    def __init__(self, summary: str, error: str = "", hint: str = "") -> None:
        super().__init__()
        self.summary = summary
        self.error = error
        self.hint = hint


class ApplyRefused(Message):
    """Apply found the host or tenants.yaml changed since the operator confirmed and changed
    nothing; `diff` (with its `lines`), when given, is the host's diff now, to confirm again."""

    def __init__(self, error: str, hint: str, diff: Diff | None = None,
                 lines: list[str] | None = None) -> None:
        super().__init__()
        self.error = error
        self.hint = hint
        self.diff = diff
        self.lines = lines or []


class EditLoaded(Message):
    """tenants.yaml as the edit dialog starts from, and the plan it places today (or an
    error: the file could not be read)."""

    def __init__(self, tenant: str | None, text: str, before: Plan | None,
                 error: str = "") -> None:
        super().__init__()
        self.tenant = tenant
        self.text = text
        self.before = before
        self.error = error


class PreviewReady(Message):
    """The placement preview of the values the edit dialog holds."""

    def __init__(self, drawing: RenderableType | str) -> None:
        super().__init__()
        self.drawing = drawing

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, PreviewReady)


class SharesRead(Message):
    """The tenants' guaranteed CPU for one config and profile (`key`)."""

    def __init__(self, key: tuple[object, str | None], shares: CpuShares | None) -> None:
        super().__init__()
        self.key = key
        self.shares = shares


class PlanRead(Message):
    """The plan of tenants.yaml for the NUMA map."""

    def __init__(self, view: PlanView) -> None:
        super().__init__()
        self.view = view


class SortChanged(Message):
    """The operator asked for the next sort key (`reverse`: the other order instead)."""

    def __init__(self, reverse: bool = False) -> None:
        super().__init__()
        self.reverse = reverse


class EditRequested(Message):
    """The operator asked to edit a tenant (None: the first one)."""

    def __init__(self, tenant: str | None) -> None:
        super().__init__()
        self.tenant = tenant


class ProfileRequested(Message):
    """The operator asked to switch profile."""
