"""Calendar events of `schedule:`, read by systemd's own parser (an edge: it runs
`systemd-analyze calendar`, systemd.time(7)).

slicectl never parses calendar expressions itself: `systemd-analyze calendar` says whether an
expression is valid and when it elapses (`--base-time`, `--iterations`, systemd 250+), so
what validate accepts is exactly what the generated timers will do. Times are epoch seconds;
systemd prints them in local time and, when that is not UTC, once more "(in UTC)".
"""

from __future__ import annotations

import calendar as _stdcal
import os
import re
import shutil
import subprocess
import time
from collections.abc import Mapping

from slicectl.core.errors import Problem, SlicectlError
from slicectl.core.frozen import frozen
from slicectl.core.human import human_time
from slicectl.core.tenants import Config

# Overlaps are looked for among the next elapses of each schedule: a year of daily events.
OVERLAP_ITERATIONS = 400
# How far back the last elapse is looked for, widening: an hour, a day, 8 days, a year, 5.
LOOKBACK = (3600, 86400, 8 * 86400, 367 * 86400, 5 * 367 * 86400)
_ENTRY = re.compile(r"^\s*(?:Next elapse|Iter\. #\d+): (.+)$")
_IN_UTC = re.compile(r"^\s*\(in UTC\): (.+)$")
_STAMP = re.compile(r"\w{3} (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) UTC$")


class CalendarError(SlicectlError):
    """systemd-analyze could not be run, or its output was not understood."""


@frozen
class Elapses:
    """When one calendar expression elapses, from a base time on."""

    expression: str
    normalized: str
    times: tuple[float, ...]  # ascending; empty: never again


def available() -> bool:
    """Whether systemd-analyze is installed (schedules can be checked and evaluated)."""
    return shutil.which("systemd-analyze") is not None


def _utc(stamp: str) -> float | None:
    m = _STAMP.search(stamp.strip())
    if m is None:
        return None
    return float(_stdcal.timegm(time.strptime(m[1], "%Y-%m-%d %H:%M:%S")))


def _parse(expression: str, output: str) -> Elapses:
    """The elapses in one `systemd-analyze calendar` block."""
    normalized = ""
    entries: list[list[str]] = []  # [as printed, "(in UTC)" if printed]
    for line in output.splitlines():
        if line.strip().startswith("Normalized form:"):
            normalized = line.split(":", 1)[1].strip()
        elif (m := _ENTRY.match(line)) is not None:
            entries.append([m[1]])
        elif (m := _IN_UTC.match(line)) is not None and entries:
            entries[-1].append(m[1])
    times = [t for entry in entries if (t := _utc(entry[-1])) is not None]
    return Elapses(expression, normalized, tuple(sorted(times)))


def evaluate(expression: str, *, base: float | None = None, iterations: int = 1
             ) -> Elapses | str:
    """When `expression` elapses after `base` (default: now), or systemd's error message."""
    cmd = ["systemd-analyze", "calendar", f"--iterations={iterations}", expression]
    if base is not None:
        cmd.insert(2, f"--base-time=@{int(base)}")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False,
                              env=dict(os.environ, SYSTEMD_COLORS="0", LC_ALL="C"))
    except (OSError, subprocess.SubprocessError) as e:
        raise CalendarError(f"cannot run systemd-analyze calendar: {e}",
                            "install systemd (systemd-analyze) to use schedules") from e
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        return lines[-1] if lines else f"systemd-analyze exited with {proc.returncode}"
    return _parse(expression, proc.stdout)


def next_elapse(expression: str, now: float | None = None) -> float | None:
    """The next time `expression` elapses (None: never again, or invalid)."""
    got = evaluate(expression, base=now)
    return got.times[0] if isinstance(got, Elapses) and got.times else None


def last_elapse(expression: str, now: float) -> float | None:
    """The last time `expression` elapsed at or before `now` (None: not within 5 years)."""
    for back in LOOKBACK:
        base = now - back
        got = evaluate(expression, base=base, iterations=1000)
        if not isinstance(got, Elapses):
            return None
        before = [t for t in got.times if t <= now]
        while before and len(before) == len(got.times) == 1000:
            # A dense schedule: every listed elapse is still before now, go on from there.
            got = evaluate(expression, base=before[-1], iterations=1000)
            if not isinstance(got, Elapses):
                return None
            before = [t for t in got.times if t <= now] or before
        if before:
            return before[-1]
    return None


@frozen
class InForce:
    """The profile whose schedule elapsed last (None: the base file), and when."""

    profile: str | None
    since: float | None


def in_force(schedule: Mapping[str, tuple[str, ...]], now: float | None = None,
             base_name: str | None = "default") -> InForce:
    """Which profile the schedule has in force at `now` (default: now); the schedule of
    `base_name` means the base file (profile None)."""
    now = time.time() if now is None else now
    best: tuple[float, str] | None = None
    for profile, expressions in schedule.items():
        for expression in expressions:
            t = last_elapse(expression, now)
            if t is not None and (best is None or t > best[0]):
                best = (t, profile)
    if best is None:
        return InForce(None, None)
    return InForce(None if best[1] == base_name else best[1], best[0])


def schedule_problems(config: Config) -> list[Problem]:
    """Calendar expressions systemd does not understand, and two profiles scheduled at the
    same moment, located in tenants.yaml."""
    problems: list[Problem] = []
    owner: dict[float, str] = {}
    now = time.time()
    for profile, expressions in config.schedule.items():
        line = config.schedule_lines.get(profile, 0)
        for expression in expressions:
            got = evaluate(expression, base=now, iterations=OVERLAP_ITERATIONS)
            if not isinstance(got, Elapses):
                problems.append(Problem(
                    config.path, line, f"schedule.{profile}",
                    f"{expression!r} is not a calendar event systemd understands ({got})",
                    "see systemd.time(7), e.g. \"Mon..Fri 22:00\" or \"*-*-* 06:30\"; "
                    "`systemd-analyze calendar EXPR` shows how systemd reads it"))
                continue
            for t in got.times:
                other = owner.setdefault(t, profile)
                if other != profile:
                    problems.append(Problem(
                        config.path, line, f"schedule.{profile}",
                        f"{expression!r} and the schedule of {other!r} both elapse at "
                        f"{human_time(t)}",
                        "two profiles cannot switch in at the same moment: move one"))
                    break
    return problems
