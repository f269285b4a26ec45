"""The Textual app: owns the poll loop, the shared state and the edit → plan → apply flow.

Polling: one thread worker reads the cgroup tree and posts one `Sampled` message; only when
that message has been handled is a one-shot timer armed for the next poll, so a slow read
(thousands of slices, a stalled kernfs) stretches the interval instead of stacking reads.

Why this module runs past 400 lines: app state lives in one place (screens read it through
`tui.state.TuiState` and post messages; the app owns it), so every flow that changes it is
here: the poll loop, sorting, edit → plan → apply with its check of the confirmed diff,
profile switches.
"""

from __future__ import annotations

import asyncio
import gc
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.timer import Timer

from slicectl.core import defaults
from slicectl.core.errors import ApplyError, SlicectlError
from slicectl.core.monitor.metrics import MetricsMemo, SliceMetrics
from slicectl.core.monitor.samples import Snapshot
from slicectl.host.cgroup.sampler import Sampler
from slicectl.tui.messages import (
    Applied,
    ApplyRefused,
    DiffReady,
    EditLoaded,
    EditRequested,
    ProfileRequested,
    Sampled,
    SampleFailed,
    SharesRead,
    SortChanged,
)
from slicectl.tui.model import History, SortKey, clamp_interval, next_interval
from slicectl.tui.screens.base import DataScreen
from slicectl.tui.screens.overview import OverviewScreen
from slicectl.tui.settings import TuiSettings

__all__ = ["STALE", "PendingChange", "SlicectlApp", "TuiSettings"]

if TYPE_CHECKING:
    from slicectl.apply.host_diff import Diff
    from slicectl.core.config.config import Config
    from slicectl.core.shares.contention import CpuShares
    from slicectl.host.files.tenantsfile import LockedTenants
    from slicectl.tui.screens.edit import EditResult
    from slicectl.tui.state import TuiState


# Python's cyclic GC makes a young-generation pass every 700 allocations; a refresh of 100
# moving slices allocates thousands of short-lived objects (samples, metrics, rows, strips),
# nearly all freed by reference counting anyway, so passes ran several times per refresh
# (BENCHMARKS.md, tui.100.host). While the app runs: a pass every GC_YOUNG allocations, and
# what start-up made (Textual's widgets, styles, imports) frozen out of the full passes.
GC_YOUNG = 20_000


# What the operator sees when apply finds the host no longer matching the diff they confirmed.
STALE = "the host changed since you confirmed; nothing was changed"
STALE_HINT = "review the new diff and confirm again"


@dataclass(frozen=True)
class PendingChange:
    """An edit or profile switch between planning and applying."""

    title: str
    config: Config  # with the profile applied: what apply gets
    base: Config  # without it: what the app keeps
    profile: str | None
    text: str | None  # new tenants.yaml text, or None when the file does not change
    original: str | None = None  # the tenants.yaml text `text` was edited from
    diff: Diff | None = None  # the diff the operator was shown: the only one apply may apply
    repack: bool = False  # planned and applied with --repack (the re-pack key)


class SlicectlApp(App[int]):
    """slicectl's TUI."""

    CSS_PATH = "slicectl.tcss"
    TITLE = "slicectl"
    ENABLE_COMMAND_PALETTE = False  # its ctrl+p entry would crowd the footer at 80 columns
    BINDINGS = [
        # Help before Quit, and +/- only in the help: at 80 columns the footer keeps both.
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),
        Binding("plus", "slower", "Slower", show=False),
        Binding("minus", "faster", "Faster", show=False),
        Binding("R", "repack", "Re-pack", show=False),
    ]

    def __init__(self, settings: TuiSettings, sampler: Sampler) -> None:
        super().__init__()
        self.settings = settings
        self.sampler = sampler
        self.interval, clamped = clamp_interval(settings.interval)
        self.notes = [*settings.notes, *([clamped] if clamped else [])]
        self.metrics: list[SliceMetrics] = []
        self.balance: dict[str, str] = {}  # slice unit -> "[6/4 cpus]" (the balancer's)
        self.history = History()
        self.sort_key = SortKey.CPU
        self.sort_reverse = False
        self.config = settings.config
        self.profile: str | None = None
        self.readonly = list(settings.readonly)
        self.samples = 0
        self._prev: Snapshot | None = None
        self._older: Snapshot | None = None  # the sample before _prev
        topo = settings.topology
        self._memo = MetricsMemo(None if topo is None else topo.cpus_by_node)
        self._timer: Timer | None = None
        self._polling = False
        self._pending: PendingChange | None = None
        self._repackable: PendingChange | None = None  # refused as a split: R re-packs it
        # (config, profile) -> when read, and the shares; whether a read is in flight
        self._shares: tuple[object, float, CpuShares | None] | None = None
        self._reading_shares = False
        self._gc_threshold = gc.get_threshold()

    # -- polling --------------------------------------------------------------------------

    def on_mount(self) -> None:
        gc.set_threshold(GC_YOUNG, *self._gc_threshold[1:])
        self.sub_title = f"every {self.interval:g}s"
        self.push_screen(OverviewScreen(numa=self.sampler.numa))
        for note in self.notes:
            self.notify(note, severity="warning", timeout=10)
        self.poll_now()

    def poll_now(self) -> None:
        """Sample now (unless a sample is in flight: its result re-arms the timer)."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if self._polling:
            return
        self._polling = True
        self._sample()

    @work(thread=True, exclusive=True, group="sample")
    def _sample(self) -> None:
        try:
            snapshot = self.sampler.sample()
            base = self._rate_base(snapshot)
            metrics = self._memo.compute(base, snapshot)
        except SlicectlError as e:
            self.post_message(SampleFailed(e.message, e.hint))
            return
        except OSError as e:
            self.post_message(SampleFailed(f"cannot read the cgroup tree: {e}", ""))
            return
        self.post_message(Sampled(snapshot, metrics, self._balance(), base))

    def _rate_base(self, snapshot: Snapshot) -> Snapshot | None:
        """The sample to compute rates against: the previous one, or the one before it when
        the previous is less than half an interval old (a sample taken out of turn, right
        after an apply): over so short a window rates are noise, and a tree that moves in
        steps (the demo's) shows 0.00 cores for every slice."""
        prev, older = self._prev, self._older
        if prev is not None and older is not None and (
                snapshot.time - prev.time < self.interval / 2):
            return older
        return prev

    def _balance(self) -> dict[str, str]:
        """The elastic tenants' sizes now and declared, from the balancer's state file (none
        when it has not run or cannot be read)."""
        from slicectl.host.files.balance_state_file import state_or_none
        from slicectl.views.monitor import balance_labels

        options, config = self.settings.options, self.settings.config
        path = Path(options.balance_state if options is not None else defaults.BALANCE_STATE)
        return balance_labels(state_or_none(path),
                              config.slice if config is not None else "tenants")

    def on_sampled(self, message: Sampled) -> None:
        self._polling = False
        if message.base is self._prev:  # else rates skipped _prev: the one before stays
            self._older = self._prev
        self._prev = message.snapshot
        self.metrics = message.metrics
        self.balance = message.balance
        self.history.add(message.metrics)
        self.samples += 1
        self.refresh_screens()
        if self.samples == 1:
            gc.freeze()  # start-up is over: what it made stays
        self._arm()

    def on_unmount(self) -> None:
        gc.unfreeze()
        gc.set_threshold(*self._gc_threshold)

    def on_sample_failed(self, message: SampleFailed) -> None:
        self._polling = False
        hint = f"\nhint: {message.hint}" if message.hint else ""
        self.notify(message.message + hint, severity="error", timeout=5)
        self._arm()

    def _arm(self) -> None:
        self._timer = self.set_timer(self.interval, self.poll_now)

    def refresh_screens(self) -> None:
        """Redraw every data screen on the stack (the hidden ones too, so back is current)."""
        for screen in self.screen_stack:
            if isinstance(screen, DataScreen) and screen.is_mounted:
                try:
                    screen.refresh_data()
                except NoMatches:
                    pass  # still composing, or torn down on exit: the next sample draws it

    def set_interval_s(self, seconds: float) -> None:
        """Change the refresh interval (clamped to the 30 ms floor, with a message)."""
        self.interval, clamped = clamp_interval(seconds)
        self.sub_title = f"every {self.interval:g}s"
        self.notify(clamped or f"refresh every {self.interval:g}s",
                    severity="warning" if clamped else "information", timeout=3)
        if not self._polling:
            self.poll_now()  # re-arm with the new interval (and show it at once)

    def action_slower(self) -> None:
        """Longer refresh interval."""
        self.set_interval_s(next_interval(self.interval, slower=True))

    def action_faster(self) -> None:
        """Shorter refresh interval (stops at the cpu controller's 30 ms window)."""
        if self.interval <= clamp_interval(0.0)[0]:
            self.notify(clamp_interval(0.0)[1], severity="warning", timeout=5)
            return
        self.set_interval_s(next_interval(self.interval, slower=False))

    def on_sort_changed(self, message: SortChanged) -> None:
        """Next sort key, or the other order; every screen redraws."""
        if message.reverse:
            self.sort_reverse = not self.sort_reverse
        else:
            keys = list(SortKey)
            self.sort_key = keys[(keys.index(self.sort_key) + 1) % len(keys)]
        self.refresh_screens()

    def on_edit_requested(self, message: EditRequested) -> None:
        self.start_edit(message.tenant)

    def on_profile_requested(self, message: ProfileRequested) -> None:
        self.start_profile()

    def action_help(self) -> None:
        """Show the key bindings."""
        from slicectl.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    # -- tenants and plans ----------------------------------------------------------------

    def tenant_of(self, cgroup: str | None) -> str | None:
        """The tenant whose slice is `cgroup`, if any."""
        if self.config is None or cgroup is None:
            return None
        return self.config.tenant_of(cgroup)

    def cpu_shares(self) -> CpuShares | None:
        """Each tenant's guaranteed CPU when everything is busy, against this host's
        competitors (the cpu.shares experiments, docs/background.md), as last read; read
        again (in a worker, then the screens redraw) when the plan changed or 10 s have
        passed. None until the first read."""
        import time

        key = (self.config, self.profile)
        known = self._shares
        if known is None or known[0] != key or time.monotonic() - known[1] >= 10:
            if not self._reading_shares:
                self._reading_shares = True
                self._read_shares(key, self.config, self.profile)
        return None if known is None or known[0] != key else known[2]

    @work(thread=True, exclusive=True, group="shares")
    def _read_shares(self, key: tuple[object, str | None], config: Config | None,
                     profile: str | None) -> None:
        from slicectl.tui.plans import cpu_shares

        self.post_message(SharesRead(key, cpu_shares(self.settings, config, profile)))

    def on_shares_read(self, message: SharesRead) -> None:
        import time

        self._reading_shares = False
        self._shares = (message.key, time.monotonic(), message.shares)
        self.refresh_screens()

    def _can_edit(self) -> bool:
        if self.readonly:
            self.notify("read-only: " + "; ".join(self.readonly), severity="warning")
            return False
        if self._pending is not None:
            self.notify("a change is being planned or applied; wait for it", severity="warning")
            return False
        return True

    def start_edit(self, tenant: str | None) -> None:
        """Open the edit dialog for `tenant` (or the first tenant), once tenants.yaml and
        today's plan are read (in a worker)."""
        if not self._can_edit() or self.config is None or self.settings.tenants is None:
            return
        if not self.config.tenants:
            self.notify(f"{self.settings.tenants} has no tenants to edit", severity="warning")
            return
        self._load_edit(tenant, self.config, self.profile)

    @work(thread=True, exclusive=True, group="edit")
    def _load_edit(self, tenant: str | None, config: Config, profile: str | None) -> None:
        from slicectl.host.files.tenantsfile import read_tenants_text
        from slicectl.tui.plans import plan_for

        path = self.settings.tenants
        assert path is not None
        try:
            text = read_tenants_text(path)
        except SlicectlError as e:
            hint = f"\nhint: {e.hint}" if e.hint else ""
            self.post_message(EditLoaded(tenant, "", None, e.message + hint))
            return
        before, _ = plan_for(self.settings, config, profile, shares=False)  # once per dialog
        self.post_message(EditLoaded(tenant, text, before))

    def on_edit_loaded(self, message: EditLoaded) -> None:
        from slicectl.tui.plans import placement_preview
        from slicectl.tui.screens.edit import EditScreen

        if message.error:
            self.notify(message.error, severity="error")
            return
        if self.config is None or self.settings.tenants is None or not self._can_edit():
            return
        names = [t.name for t in self.config.tenants]
        preview = partial(placement_preview, self.settings, self.profile, message.before)
        target = (self.settings.systemd_version, self.settings.systemd_source)
        self.push_screen(EditScreen(message.text, self.settings.tenants, names, message.tenant,
                                    preview, target), self._edited)

    def _edited(self, result: EditResult | None) -> None:
        if result is None:
            return
        try:
            config = result.config.with_profile(self.profile)
        except SlicectlError as e:
            self.notify(e.message, severity="error")
            return
        self._pending = PendingChange(f"Edit {result.tenant}: plan", config, result.config,
                                      self.profile, result.text, result.original)
        self._plan()

    def start_profile(self) -> None:
        """Open the profile chooser."""
        if not self._can_edit() or self.config is None:
            return
        if not self.config.profiles:
            self.notify("tenants.yaml defines no profiles", severity="warning")
            return
        from slicectl.tui.screens.edit import ProfileScreen

        self.push_screen(ProfileScreen(sorted(self.config.profiles), self.profile),
                         self._profile_chosen)

    def _profile_chosen(self, name: str | None) -> None:
        from slicectl.tui.screens.edit import BASE

        if name is None or self.config is None:
            return
        profile = None if name == BASE else name
        if profile == self.profile:
            self.notify(f"{name} is already active: nothing to switch", timeout=4)
            return
        self._pending = PendingChange(f"Switch to {name}: plan",
                                      self.config.with_profile(profile), self.config, profile,
                                      None)
        self._plan()

    @work(thread=True, exclusive=True, group="apply")
    def _plan(self) -> None:
        # A thread with its own event loop: planning reads the unit directory and the diff
        # reads unit files, none of which may stall the UI's loop.
        from slicectl.apply.applier import compute_diff
        from slicectl.core.errors import RepackNeeded

        p, options, topo = self._pending, self.settings.options, self.settings.topology
        assert p is not None and options is not None and topo is not None
        try:
            diff = asyncio.run(compute_diff(p.config, topo, replace(options, repack=p.repack)))
        except SlicectlError as e:
            self.post_message(DiffReady(None, [], [], False, e.message, e.hint,
                                        isinstance(e, RepackNeeded)))
            return
        self.post_message(DiffReady(diff, diff.lines(options.unit_dir), diff.notes,
                                    diff.changed))

    def on_diff_ready(self, message: DiffReady) -> None:
        p = self._pending
        if p is None:
            return
        if message.error or message.diff is None:
            self._pending = None
            self._repackable = p if message.repackable else None
            hint = f"\nhint: {message.hint}" if message.hint else ""
            key = "\npress R to plan that re-pack" if message.repackable else ""
            self.notify(f"cannot plan: {message.error}{hint}{key}", severity="error",
                        timeout=20 if key else 10)
            return
        if not message.changed and p.text is None:
            self._pending = None
            self.notify("nothing to change: the host already matches", timeout=4)
            return
        self._confirm(message.diff, message.lines)

    def action_repack(self) -> None:
        """R: plan again the change just refused as a split, with the re-pack it named (the
        fewest moves, shown for confirmation like any change)."""
        p = self._repackable
        if p is None:
            self.notify("nothing to re-pack: R follows a change refused because it would "
                        "split a tenant over nodes", timeout=5)
            return
        if not self._can_edit():
            return
        self._repackable = None
        self._pending = replace(p, title=p.title.replace(": plan", ": re-pack"), repack=True)
        self._plan()

    def _confirm(self, diff: Diff, lines: list[str], warning: str = "") -> None:
        """Show `diff` for confirmation; it becomes the one diff apply may carry out."""
        from slicectl.tui.screens.edit import DiffScreen

        p = self._pending
        assert p is not None
        self._pending = replace(p, diff=diff)
        self.push_screen(DiffScreen(p.title, lines, diff.notes, diff.changed,
                                    rewrites_file=p.text is not None, warning=warning),
                         self._confirmed)

    def _confirmed(self, yes: bool | None) -> None:
        if not yes:
            self._pending = None
            self.notify("cancelled; nothing was changed", timeout=3)
            return
        self._apply()

    def _refusal(self, p: PendingChange, diff: Diff, tenants: LockedTenants | None
                 ) -> ApplyRefused | None:
        """Why `diff` (the host's, under apply's lock) may not be applied for `p`, or None:
        the operator confirmed a different diff, or tenants.yaml (`tenants`, held locked) no
        longer holds the text the edit was made from (rewriting it would lose what changed
        it)."""
        if tenants is not None and not tenants.holds(p.original):
            return ApplyRefused(f"{self.settings.tenants} changed since you confirmed; "
                                "nothing was changed", "edit it again")
        if diff != p.diff:
            options = self.settings.options
            assert options is not None
            return ApplyRefused(STALE, STALE_HINT, diff, diff.lines(options.unit_dir))
        return None

    @work(thread=True, exclusive=True, group="apply")
    def _apply(self) -> None:
        """Apply the pending change in a thread with its own event loop (as `_plan`); an edit
        holds tenants.yaml's lock from its check to its write, so no other edit lands between
        them."""
        from contextlib import nullcontext

        from slicectl.host.files.tenantsfile import locked_tenants

        p = self._pending
        assert p is not None
        path = self.settings.tenants if p.text is not None else None
        try:
            with nullcontext() if path is None else locked_tenants(path) as tenants:
                message = self._apply_locked(p, tenants)
        except SlicectlError as e:  # the lock could not be taken
            message = Applied("", f"{e.message}; nothing was changed", e.hint)
        self.post_message(message)

    def _apply_locked(self, p: PendingChange, tenants: LockedTenants | None
                      ) -> Applied | ApplyRefused:
        """Apply `p`, then write its text into `tenants` (when it has one); what to show."""
        from slicectl.apply.applier import apply_plan

        options, topo = self.settings.options, self.settings.topology
        assert options is not None and topo is not None
        refused: list[ApplyRefused] = []

        def confirm(diff: Diff) -> bool:
            # Called under apply's lock with the diff it is about to carry out: only the one
            # the operator saw goes ahead (a saved plan, as `terraform apply PLAN` has it).
            refusal = self._refusal(p, diff, tenants)
            if refusal is not None:
                refused.append(refusal)
                raise ApplyError(refusal.error, refusal.hint)
            return True

        try:
            report = asyncio.run(apply_plan(p.config, topo, replace(options, repack=p.repack),
                                            confirm=confirm))
            if not refused and not report.diff.changed:
                # Nothing to change on the host, so `confirm` was not asked: check here.
                refusal = self._refusal(p, report.diff, tenants)
                if refusal is not None:
                    refused.append(refusal)
            if refused:
                return refused[0]
        except SlicectlError as e:
            return refused[0] if refused else Applied("", e.message, e.hint)
        except OSError as e:
            return Applied("", f"cannot apply: {e}")
        # Written only after a successful apply: a rolled-back apply leaves the file as is.
        if p.text is not None and tenants is not None:
            try:
                tenants.replace(p.text, p.original)
            except SlicectlError as e:  # an editor that takes no lock changed it meanwhile
                return Applied("", f"applied to the host, but {self.settings.tenants} was not "
                               f"written: {e.message}", e.hint)
        files = report.diff.files
        n_files = len(files.created) + len(files.updated) + len(files.removed)
        return Applied(
            f"applied: {len(report.set_live)} live change(s), {n_files} file(s), "
            f"{len(report.started)} slice(s) started, verified {len(report.verified)} unit(s)"
            + (f" ({', '.join(report.not_running)} not running)" if report.not_running else "")
            + ("; tenants.yaml written" if p.text is not None else ""))

    def on_apply_refused(self, message: ApplyRefused) -> None:
        """Nothing was changed: say why and, when the host moved, show its diff now."""
        self.notify(f"{message.error}\nhint: {message.hint}", severity="error", timeout=15)
        if message.diff is None or self._pending is None:
            self._pending = None
            return
        self._confirm(message.diff, message.lines, warning=f"{message.error}: {message.hint}")

    def on_applied(self, message: Applied) -> None:
        p, self._pending = self._pending, None
        if message.error:
            hint = f"\nhint: {message.hint}" if message.hint else ""
            self.notify(message.error + hint, severity="error", timeout=15)
            return
        if p is not None:
            self.config, self.profile = p.base, p.profile
        self._shares = None  # the placement may have moved
        self.notify(message.summary, timeout=6)
        self.poll_now()  # show the effect now, not one interval later
        from slicectl.tui.screens.numa import NumaScreen

        for screen in self.screen_stack:
            if isinstance(screen, NumaScreen):
                screen.show_map()


if TYPE_CHECKING:
    # mypy checks here that the app offers everything the screens read.
    _STATE: type[TuiState] = SlicectlApp
