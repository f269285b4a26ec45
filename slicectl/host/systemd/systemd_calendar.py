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
from collections.abc import Iterable, Mapping

from slicectl.core.config.tenants import Config
from slicectl.core.errors import CalendarError, Problem
from slicectl.core.frozen import frozen
from slicectl.core.human import human_time

# Overlaps are looked for among the next elapses of each schedule: a year of daily events.
OVERLAP_ITERATIONS = 400
# How far back the last elapse is looked for, widening: an hour, a day, 8 days, a year, 5.
LOOKBACK = (3600, 86400, 8 * 86400, 367 * 86400, 5 * 367 * 86400)
_ENTRY = re.compile(r"^\s*(?:Next elapse|Iter\. #\d+): (.+)$")
_IN_UTC = re.compile(r"^\s*\(in UTC\): (.+)$")
_STAMP = re.compile(r"\w{3} (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) UTC$")
_ORIGINAL = re.compile(r"^\s*Original form: (.*)$")
# Expressions per systemd-analyze run: a bounded output (OVERLAP_ITERATIONS elapses each).
BATCH = 64


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
    return evaluate_all([expression], base=base, iterations=iterations)[expression]


def evaluate_all(expressions: Iterable[str], *, base: float | None = None,
                 iterations: int = 1) -> dict[str, Elapses | str]:
    """evaluate() of each expression, from one `systemd-analyze calendar` run per BATCH of
    them (a run per expression costs tens of milliseconds each)."""
    unique = list(dict.fromkeys(expressions))
    out: dict[str, Elapses | str] = {}
    for i in range(0, len(unique), BATCH):
        out.update(_evaluate_batch(unique[i:i + BATCH], base, iterations))
    return out


def _evaluate_batch(expressions: list[str], base: float | None, iterations: int
                    ) -> dict[str, Elapses | str]:
    """Several expressions in one run. systemd-analyze (252) evaluates its arguments in turn,
    prints a block that starts with "Original form: EXPR" for each valid one, only an error
    naming the expression on stderr for an invalid one (and goes on), and exits 1 if any was
    invalid: the blocks are matched to the expressions in order. What cannot be matched so is
    run again on its own."""
    if len(expressions) == 1:
        return {expressions[0]: _evaluate_one(expressions[0], base, iterations)}
    proc = _run(expressions, base, iterations)
    blocks = _blocks(proc.stdout)
    out: dict[str, Elapses | str] = {}
    alone = []
    for expression in expressions:
        if blocks and blocks[0][0] == expression:
            out[expression] = _parse(expression, blocks.pop(0)[1])
        elif proc.returncode != 0 and (why := _failure(expression, proc.stderr)) is not None:
            out[expression] = why
        else:
            alone.append(expression)
    if blocks:  # a block no expression claimed: the output is not what was expected
        alone = expressions
    out.update({e: _evaluate_one(e, base, iterations) for e in alone})
    return out


def _evaluate_one(expression: str, base: float | None, iterations: int) -> Elapses | str:
    proc = _run([expression], base, iterations)
    if proc.returncode != 0:
        why = _failure(expression, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        return why or (lines[-1] if lines else f"systemd-analyze exited with {proc.returncode}")
    return _parse(expression, proc.stdout)


def _run(expressions: list[str], base: float | None, iterations: int
         ) -> subprocess.CompletedProcess[str]:
    cmd = ["systemd-analyze", "calendar", f"--iterations={iterations}"]
    if base is not None:
        cmd.append(f"--base-time=@{int(base)}")
    cmd += ["--", *expressions]  # an expression that starts with "-" is not an option
    env = dict(os.environ, SYSTEMD_COLORS="0", LC_ALL="C")
    # The host's zone all the same, named: with TZ unset, glibc stats /etc/localtime at every
    # local-time conversion (tzset(3)), several per elapse listed; measured on systemd 252,
    # 320 expressions of OVERLAP_ITERATIONS elapses took 14 s so and 2 s with TZ named.
    env.setdefault("TZ", ":/etc/localtime")
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False,
                              env=env)
    except (OSError, subprocess.SubprocessError) as e:
        raise CalendarError(f"cannot run systemd-analyze calendar: {e}",
                            "install systemd (systemd-analyze) to use schedules") from e


def _blocks(output: str) -> list[tuple[str, str]]:
    """(original form, its block) for each expression systemd-analyze printed, in order."""
    blocks: list[tuple[str, list[str]]] = []
    for line in output.splitlines():
        if (m := _ORIGINAL.match(line)) is not None:
            blocks.append((m[1], []))
        elif blocks:
            blocks[-1][1].append(line)
    return [(original, "\n".join(lines)) for original, lines in blocks]


def _failure(expression: str, stderr: str) -> str | None:
    """systemd's error line for `expression` ("Failed to parse calendar specification
    'EXPR': …"), or None when stderr has none."""
    named = f"'{expression}': "
    return next((line for line in stderr.splitlines()
                 if line.startswith("Failed to ") and named in line), None)


def next_elapse(expression: str, now: float | None = None) -> float | None:
    """The next time `expression` elapses (None: never again, or invalid)."""
    return next_elapses([expression], now)[expression]


def next_elapses(expressions: Iterable[str], now: float | None = None
                 ) -> dict[str, float | None]:
    """next_elapse() of each expression, from one run of systemd-analyze per BATCH."""
    return {e: got.times[0] if isinstance(got, Elapses) and got.times else None
            for e, got in evaluate_all(expressions, base=now).items()}


def last_elapse(expression: str, now: float) -> float | None:
    """The last time `expression` elapsed at or before `now` (None: not within 5 years)."""
    return last_elapses([expression], now)[expression]


def last_elapses(expressions: Iterable[str], now: float) -> dict[str, float | None]:
    """last_elapse() of each expression: all of them looked back for together, widening."""
    found: dict[str, float | None] = {}
    todo = list(dict.fromkeys(expressions))
    for back in LOOKBACK:
        if not todo:
            break
        evaluated = evaluate_all(todo, base=now - back, iterations=1000)
        left = []
        for expression in todo:
            got = evaluated[expression]
            if not isinstance(got, Elapses):
                found[expression] = None
            elif (last := _last_before(expression, got, now)) is not None:
                found[expression] = last
            else:
                left.append(expression)
        todo = left
    return found | dict.fromkeys(todo)


def _last_before(expression: str, got: Elapses, now: float) -> float | None:
    """The last of `got`'s elapses at or before `now`, going on past its 1000 for a schedule
    so dense that all of them are."""
    before = [t for t in got.times if t <= now]
    while before and len(before) == len(got.times) == 1000:
        # A dense schedule: every listed elapse is still before now, go on from there.
        more = evaluate(expression, base=before[-1], iterations=1000)
        if not isinstance(more, Elapses):
            return None
        got = more
        before = [t for t in got.times if t <= now] or before
    return before[-1] if before else None


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
    last = last_elapses([e for expressions in schedule.values() for e in expressions], now)
    for profile, expressions in schedule.items():
        for expression in expressions:
            t = last[expression]
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
    evaluated = evaluate_all([e for expressions in config.schedule.values()
                              for e in expressions], iterations=OVERLAP_ITERATIONS)
    for profile, expressions in config.schedule.items():
        line = config.schedule_lines.get(profile, 0)
        for expression in expressions:
            got = evaluated[expression]
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
