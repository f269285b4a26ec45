"""The plans the TUI shows beside the live view: the plan of tenants.yaml for this host, the
placement an edit leads to, the tenants' guaranteed CPU, `set-property` overrides.

Each reads files (the unit directory's manifest, control files, /proc), so the app and screens
call these from thread workers only, never on the event loop. No textual here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from slicectl.core import defaults
from slicectl.core.errors import SlicectlError

if TYPE_CHECKING:
    from rich.console import RenderableType

    from slicectl.core.config.config import Config
    from slicectl.core.plan import Plan
    from slicectl.core.shares.contention import CpuShares
    from slicectl.tui.settings import TuiSettings


def plan_for(settings: TuiSettings, base: Config | None, profile: str | None,
             shares: bool = True) -> tuple[Plan | None, str]:
    """The plan for `base` (tenants.yaml as parsed) under `profile`, placed from where apply
    left the tenants, or None and why not; `shares`: as build_plan's."""
    if base is None or settings.topology is None:
        return None, ""
    from slicectl.host.planning import plan_for_host

    options = settings.options
    try:
        config = base.with_profile(profile)
        return plan_for_host(config, settings.topology,
                             None if options is None else options.unit_dir, shares=shares), ""
    except SlicectlError as e:
        return None, f"{e.message}" + (f" (hint: {e.hint})" if e.hint else "")


def cpu_shares(settings: TuiSettings, base: Config | None, profile: str | None
               ) -> CpuShares | None:
    """Each tenant's guaranteed CPU when everything is busy, against this host's
    competitors (the cpu.shares experiments, docs/background.md); the plan's assumed shares
    where the competitors cannot be read."""
    plan, _ = plan_for(settings, base, profile)
    if plan is None or base is None or settings.topology is None:
        return None
    from slicectl.core.shares.contention import predict_shares
    from slicectl.host.cgroup.readers import read_competition

    config = base.with_profile(profile)
    try:
        competition = read_competition(config, settings.cgroup_root, settings.proc_root)
        return predict_shares(config, plan.layout, settings.topology, competition)
    except SlicectlError:
        return plan.shares  # no cgroup v2 here: standard competitors assumed


def cpu_overrides(settings: TuiSettings, config: Config | None) -> dict[str, str]:
    """Tenants whose CPUs `systemctl set-property` overrides: tenant -> its file."""
    from slicectl.host.cgroup.readers import cpu_overrides as read_overrides

    if config is None:
        return {}
    options = settings.options
    dirs = [str(options.control_dir)] if options is not None else []
    dirs.append(defaults.ETC_CONTROL_DIR)
    return read_overrides({t.name: config.slice_unit(t.name) for t in config.tenants}, dirs)


@dataclass(frozen=True)
class PlanView:
    """What the NUMA map shows of the plan: the plan (or why there is none) and overrides."""

    plan: Plan | None
    problem: str
    overrides: dict[str, str] = field(default_factory=dict)


def plan_view(settings: TuiSettings, config: Config | None, profile: str | None) -> PlanView:
    """The plan of `config` under `profile` for the NUMA map, with the overrides."""
    plan, problem = plan_for(settings, config, profile)
    return PlanView(plan, problem, {} if plan is None else cpu_overrides(settings, config))


def placement_preview(settings: TuiSettings, profile: str | None, before: Plan | None,
                      edited: Config, tenant: str) -> RenderableType | str:
    """The placement an edit leads to, drawn on the NUMA map against `before` (today's
    plan); no guaranteed-CPU prediction, which the preview does not show."""
    from slicectl.views.tables import placement_preview as draw

    after, problem = plan_for(settings, edited, profile, shares=False)
    if after is None:
        return f"cannot place this: {problem}" if problem else "no placement preview"
    if before is None or settings.topology is None:
        return "no placement preview: the current tenants.yaml does not place"
    return draw(settings.topology, before.layout, after.layout, tenant)
