"""What the pipeline verbs add for schedules (profiles switched by timers) and for the target's
systemd: checks before anything is planned, the profile in force, the timers' command line.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from argparse import Namespace

    from slicectl.core.config.config import Config
    from slicectl.core.placement.topology import Topology
    from slicectl.core.plan import ScheduleCommand
    from slicectl.host.systemd.systemd_calendar import InForce


def check_target_version(args: Namespace, config: Config, topo: Topology) -> None:
    """Refuse keys the target's systemd cannot take: --systemd-version, else the topology
    export's, else (planning for this host) the installed one."""
    from slicectl.core.properties.versions import check_version

    if args.systemd_version is not None:
        check_version(config, args.systemd_version, "--systemd-version")
    elif topo.systemd_version is not None:
        check_version(config, topo.systemd_version, f"recorded in {topo.source}")
    elif not (getattr(args, "topology", None) or getattr(args, "sysfs", None)):
        import os

        from slicectl.host.systemd.hostinfo import systemd_version

        check_version(config, systemd_version(), "systemd on this host", os.uname().release)


def in_force(config: Config) -> bool:
    """Whether `config`'s profile is the one its schedule has in force now; says so if not."""
    from slicectl.host.systemd import systemd_calendar

    now = systemd_calendar.in_force(config.schedule, base_name=_base_name(config))
    if now.profile == config.profile:
        return True
    print(f"slicectl: profile {config.profile or 'default (the base file)'} is not in force "
          f"now: {_schedule_name(now)} is; nothing changed", file=sys.stderr)
    return False


def _base_name(config: Config) -> str | None:
    """The schedule's name for the base file: `default`, unless a profile has that name."""
    from slicectl.core.config.tenants import BASE_PROFILE

    return None if BASE_PROFILE in config.profiles else BASE_PROFILE


def _schedule_name(now: InForce) -> str:
    from slicectl.core.human import human_time

    name = now.profile or "the base file"
    if now.since is None:
        return f"{name} (no schedule has elapsed)"
    return f"{name} (since {human_time(now.since)})"


def schedule_json(config: Config) -> dict[str, object]:
    """`plan --json`'s "schedule": each timer's next elapse, and the profile in force now."""
    from time import gmtime, strftime

    from slicectl.host.systemd import systemd_calendar

    def stamp(t: float | None) -> str | None:
        return None if t is None else strftime("%Y-%m-%dT%H:%M:%SZ", gmtime(t))

    now = systemd_calendar.in_force(config.schedule, base_name=_base_name(config))
    elapses = systemd_calendar.next_elapses(e for es in config.schedule.values() for e in es)
    timers = []
    for profile, expressions in config.schedule.items():
        nexts = [t for e in expressions if (t := elapses[e]) is not None]
        timers.append({"profile": profile, "timer": f"slicectl-profile@{profile}.timer",
                       "calendars": list(expressions),
                       "next_elapse": stamp(min(nexts) if nexts else None)})
    return {"timers": timers,
            "in_force": {"profile": now.profile, "since": stamp(now.since)}}


def schedule_command(args: Namespace, config: Config | None = None) -> ScheduleCommand:
    """How the schedule's timers run slicectl on the host: `--target-slicectl` and
    `--target-tenants` when given, else the `target:` section of tenants.yaml (`config`),
    else this slicectl (the installed console script when that is what runs, else this
    interpreter with -m slicectl) on the tenants file by its absolute path."""
    import os

    from slicectl.core.plan import ScheduleCommand

    declared = config.target_tenants if config is not None else None
    given = getattr(args, "target_tenants", None)
    tenants = given or declared or os.path.abspath(args.tenants)
    tenants_from = ("--target-tenants" if given else "target.tenants" if declared
                    else "TENANTS's absolute path")
    target = getattr(args, "target_slicectl", None)
    target_from = "--target-slicectl"
    if not target and config is not None and config.target_slicectl:
        target, target_from = config.target_slicectl, "target.slicectl"
    if target:
        return ScheduleCommand((target,), tenants, target_from, tenants_from)
    return ScheduleCommand(this_slicectl(), tenants,
                           "this slicectl's path (give --target-slicectl PATH)", tenants_from)


def local_paths_note(args: Namespace, config: Config) -> str | None:
    """What generate says when the units it writes run paths of this machine (the schedule's
    service, with no target declared), or None."""
    if not config.schedule:
        return None
    command = schedule_command(args, config)
    local = [p for p, declared in (
        (" ".join(command.executable), getattr(args, "target_slicectl", None) or
         config.target_slicectl),
        (command.tenants, getattr(args, "target_tenants", None) or config.target_tenants))
        if not declared]
    if not local:
        return None
    return (f"slicectl-profile@.service runs {' and '.join(local)}: "
            f"{'paths' if len(local) > 1 else 'a path'} of this machine; for units meant for "
            "other hosts, declare `target: {slicectl: PATH, tenants: PATH}` in tenants.yaml "
            "(or give --target-slicectl/--target-tenants)")


def this_slicectl() -> tuple[str, ...]:
    """The command line that runs this slicectl: the console script by its absolute path when
    that is what runs, else this interpreter with -m slicectl."""
    import os

    script = sys.argv[0]
    if os.path.basename(script) == "slicectl" and os.path.isfile(script):
        return (os.path.abspath(script),)
    return (sys.executable, "-m", "slicectl")
