"""The one way to load tenants.yaml and the one way to plan for a host: every front end (CLI,
TUI, exporter, apply, the generator) calls these two, so each gets the same checks and the
same placement.

`load_tenants` reads the file (slicectl.host.files.tenantsfile's one reader) and runs every
check: the schema (slicectl.core.config.config) and the schedule's calendar events, by
systemd's own parser. `plan_for_host` places the tenants where
the unit directory's manifest says the last apply or generate left them, so that what `plan`
shows is what `apply` does and a tenant keeps its CPUs from one run to the next.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from slicectl.core.config.config import Config, load_yaml, parse_config
from slicectl.core.errors import ConfigError, shown

if TYPE_CHECKING:
    from slicectl.core.placement.topology import Topology
    from slicectl.core.plan import Plan, ScheduleCommand
    from slicectl.host.files.unitdir import Manifest

__all__ = ["generator_command", "generator_files", "load_tenants", "plan_for_host",
           "read_text"]


def read_text(path: str) -> str:
    """tenants.yaml's text, with every check (slicectl.host.files.tenantsfile's
    read_tenants_text, the one reader of the file)."""
    from slicectl.host.files.tenantsfile import read_tenants_text

    return read_tenants_text(path)


def load_tenants(path: str, profile: str | None = None, *, check_schedule: bool = True,
                 warn: Callable[[str], None] | None = None,
                 contradictions_are_errors: bool = True) -> Config:
    """tenants.yaml at `path`, every problem raised at once as a ConfigError, with profile
    `profile`'s overrides when given. `check_schedule`: check the schedule's calendar events
    with `systemd-analyze calendar` (skipped, with a `warn`ing, where it is not installed)."""
    name = shown(path)
    config = parse_config(load_yaml(read_text(path), name), name,
                          contradictions_are_errors=contradictions_are_errors)
    if check_schedule and config.schedule:
        _check_schedule(config, warn)
    return config.with_profile(profile)


def _check_schedule(config: Config, warn: Callable[[str], None] | None) -> None:
    """Calendar events systemd does not understand, or two profiles at one moment, are
    located errors."""
    from slicectl.host.systemd import systemd_calendar

    if not systemd_calendar.available():
        if warn is not None:
            warn("schedule: not checked (systemd-analyze is not installed); the timers check "
                 "it on the host")
        return
    problems = systemd_calendar.schedule_problems(config)
    if problems:
        raise ConfigError(problems)


def plan_for_host(config: Config, topology: Topology, unit_dir: Path | None,
                  command: ScheduleCommand | None = None, shares: bool = True,
                  manifest: Manifest | None = None, repack: bool = False,
                  may_split: bool = False) -> Plan:
    """The plan for a host: `config` placed on `topology`, keeping each tenant where the last
    apply or generate into `unit_dir` placed it (its manifest; `manifest` when the caller has
    read it already). `unit_dir` None: a plan with no history (another host's, offline).
    `command`: how the schedule's timers run slicectl; `shares`, `repack`, `may_split`: as
    build_plan's."""
    from slicectl.core.plan import build_plan

    placements: Mapping[str, frozenset[int]] = {}
    if manifest is not None:
        placements = manifest.placements
    elif unit_dir is not None:
        from slicectl.host.files.unitdir import UnitDir

        placements = UnitDir(unit_dir).manifest().placements
    return build_plan(config, topology, placements, command, shares=shares, repack=repack,
                      may_split=may_split)


def generator_command(generator: str, tenants: str) -> ScheduleCommand:
    """How the schedule's timers run slicectl on a host in generator mode: the slicectl
    installed beside `generator` (the slicectl-generator systemd runs, links followed), else
    this interpreter with -m slicectl; on `tenants`, the host's tenants.yaml."""
    import os
    import sys

    from slicectl.core.plan import ScheduleCommand

    beside = os.path.join(os.path.dirname(os.path.realpath(generator)), "slicectl")
    executable = (beside,) if os.path.isfile(beside) else (sys.executable, "-m", "slicectl")
    return ScheduleCommand(executable, os.path.abspath(tenants),
                           "the slicectl beside slicectl-generator", "the host's tenants.yaml")


def generator_files(config: Config, topology: Topology, previous: Manifest | None,
                    command: ScheduleCommand, templates: str | None = None,
                    repack: bool = False, said: Callable[[str], None] | None = None,
                    may_split: bool = False) -> dict[str, bytes]:
    """The files the generator writes for `config` on `topology`, the manifest included,
    each tenant kept where `previous` (the record's manifest) placed it: the one builder of
    them, for the generator at boot and for generator mode's record, which the generator
    copies as they are while nothing changes. `repack`, `may_split`: as build_plan's (the
    generator at boot, where nothing runs yet, may re-pack, and place a tenant over nodes
    when CPUs are gone); `said` is told each move of a re-pack and each such split."""
    from slicectl.core.render import render
    from slicectl.host.files.templates import load_templates
    from slicectl.host.files.unitdir import MANIFEST_NAME, Manifest, manifest_text

    plan = plan_for_host(config, topology, None, command, shares=False, manifest=previous,
                         repack=repack, may_split=may_split)
    if said is not None:
        for line in plan.layout.repack_notes() + [
                n for n in plan.layout.notes if "(numa: local) spans nodes" in n]:
            said(line)
    texts = render(plan, load_templates(templates))
    files = {rel: text.encode() for rel, text in texts.items()}
    files[MANIFEST_NAME] = manifest_text(texts, Manifest(placements=plan.placements(),
                                                         source=Path(config.path).name))
    return files
