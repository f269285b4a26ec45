"""`slicectl recommend`: memory sizes per slice from recorded footprints (seed 001, rec. 2).

The footprint is anon + active_file (001: "RSS + active_file"), measured after start-up, with
anomalies that do not last discarded: a level counts only if it is held for `hold_s` (10 min).
memory_max = sustained footprint + headroom (1G); memory_high halfway into the headroom;
memory_low = the footprint, because a limit is not a reservation (001 pitfall 1).
`recommend()` is pure; reading CSV, printing and `--write` are the edges (docs/recommend.md).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from slicectl.atomic import write_atomically
from slicectl.errors import SlicectlError
from slicectl.values import INFINITY, format_size, parse_size

DEFAULT_STARTUP_S = 3600.0  # 001: no measurements during the application's start-up
DEFAULT_HOLD_S = 600.0  # 001: consider only values that last ~10 minutes
DEFAULT_HEADROOM = 1 << 30  # 001: LinkedIn adds 1 GB for page cache beyond active_file
MIN_STABLE_S = 7 * 86400  # 001: the stable period should be at least a week
MIB = 1 << 20
CSV_COLUMNS = ("time", "unit", "anon", "active_file")
SIZE_KEYS = ("memory_max", "memory_high", "memory_low")


class RecommendError(SlicectlError):
    """The samples could not be read, or the suggestions could not be written."""


class Sample(NamedTuple):
    """One measurement of one slice: epoch seconds, memory.stat anon and active_file (bytes)."""

    time: float
    anon: int
    active_file: int

    @property
    def footprint(self) -> int:
        return self.anon + self.active_file


@dataclass(frozen=True)
class Recommendation:
    """Suggested sizes for one slice, with the facts they come from; None: too little data."""

    unit: str
    samples: int
    first: float
    last: float
    stable_seconds: float  # span of the data after start-up
    peak: int | None  # highest footprint after start-up, anomalies included
    footprint: int | None  # sustained maximum: held for at least hold_s
    memory_low: int | None
    memory_high: int | None
    memory_max: int | None
    warnings: tuple[str, ...] = ()
    reasons: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "unit": self.unit, "samples": self.samples, "first": self.first, "last": self.last,
            "stable_seconds": self.stable_seconds, "peak": self.peak,
            "footprint": self.footprint, "memory_low": self.memory_low,
            "memory_high": self.memory_high, "memory_max": self.memory_max,
            "warnings": list(self.warnings), "reasons": dict(self.reasons),
        }


def _round_up(size: int, unit: int = MIB) -> int:
    return -(-size // unit) * unit


def format_duration(seconds: float) -> str:
    """7d 2h, 3h 5m, 45m, 30s."""
    s = int(seconds)
    d, h, m = s // 86400, s % 86400 // 3600, s % 3600 // 60
    if d:
        return f"{d}d {h}h"
    if h:
        return f"{h}h {m}m"
    return f"{m}m" if m else f"{s}s"


def sustained_max(points: Sequence[tuple[float, int]], hold_s: float) -> int | None:
    """The highest level held for `hold_s`: the maximum over time of the rolling-window minimum.

    Each sample's value holds until the next sample (a step function); the window starting at
    a sample covers the samples in [t, t + hold_s) and counts only when a later sample closes
    it. None when no window closes (the series is shorter than `hold_s`).
    """
    if not points:
        return None
    if hold_s <= 0:
        return max(v for _, v in points)
    times = [t for t, _ in points]
    values = [v for _, v in points]
    n = len(points)
    window: deque[int] = deque()  # indices of increasing values: window[0] is the minimum
    best: int | None = None
    k = 0
    for i in range(n):
        while k < n and times[k] < times[i] + hold_s:
            while window and values[window[-1]] >= values[k]:
                window.pop()
            window.append(k)
            k += 1
        if k >= n:
            break
        while window[0] < i:
            window.popleft()
        low = values[window[0]]
        best = low if best is None else max(best, low)
    return best


def recommend_one(
    unit: str, samples: Sequence[Sample], startup_s: float, hold_s: float, headroom: int
) -> Recommendation:
    """The recommendation for one slice's samples (any order)."""
    ordered = sorted(samples)
    first, last = ordered[0].time, ordered[-1].time
    stable = [s for s in ordered if s.time >= first + startup_s]
    stable_s = stable[-1].time - stable[0].time if stable else 0.0
    warnings: list[str] = []
    if not stable:
        warnings.append(f"all {len(ordered)} samples fall in the start-up period "
                        f"({format_duration(startup_s)}): nothing to size from")
    elif stable_s < MIN_STABLE_S:
        warnings.append(f"only {format_duration(stable_s)} of data after start-up: size from "
                        "at least a week that includes busy hours (001)")
    footprint = sustained_max([(s.time, s.footprint) for s in stable], hold_s)
    if stable and footprint is None:
        warnings.append(f"no level was held for {format_duration(hold_s)}: record longer")
    peak = max((s.footprint for s in stable), default=None)
    if footprint is None:
        return Recommendation(unit, len(ordered), first, last, stable_s, peak, None, None,
                              None, None, tuple(warnings))
    low = _round_up(footprint)
    high = _round_up(low + headroom // 2)
    max_ = low + _round_up(headroom)
    hold = format_duration(hold_s)
    reasons = {
        "footprint": f"highest anon + active_file held for {hold} after the first "
                     f"{format_duration(startup_s)} (peak {format_size(_round_up(peak or 0))} "
                     "ignored as an anomaly)" if peak and peak > footprint else
                     f"highest anon + active_file held for {hold} after the first "
                     f"{format_duration(startup_s)}",
        "memory_low": "the sustained footprint, protected from reclaim: a limit is not a "
                      "reservation (001)",
        "memory_high": "halfway into the headroom: reclaim and throttling start before the "
                       "hard limit (systemd.resource-control(5))",
        "memory_max": f"footprint + {format_size(headroom)} headroom for page cache beyond "
                      "active_file (001)",
    }
    return Recommendation(unit, len(ordered), first, last, stable_s, peak, footprint, low, high,
                          max_, tuple(warnings), reasons)


def recommend(
    series: Mapping[str, Sequence[Sample]],
    startup_s: float = DEFAULT_STARTUP_S,
    hold_s: float = DEFAULT_HOLD_S,
    headroom: int = DEFAULT_HEADROOM,
) -> list[Recommendation]:
    """One recommendation per unit with samples, sorted by unit name."""
    return [recommend_one(unit, samples, startup_s, hold_s, headroom)
            for unit, samples in sorted(series.items()) if samples]


# --- CSV input ------------------------------------------------------------------------------


def _parse_time(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        stamp = datetime.fromisoformat(text.strip())  # ValueError goes to the caller
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=UTC)  # documented: ISO times without a zone are UTC
        return stamp.timestamp()
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def _parse_bytes(text: str, column: str) -> int:
    if not text.strip().isdigit():
        raise ValueError(f"{column} {text!r} is not a whole number of bytes")
    return int(text)


def read_csv(path: str | Path) -> dict[str, list[Sample]]:
    """unit → samples from a CSV with the header `time,unit,anon,active_file`."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            reader = csv.reader(f)
            header = [h.strip() for h in next(reader, [])]
            missing = [c for c in CSV_COLUMNS if c not in header]
            if missing:
                raise RecommendError(
                    f"{path}:1: the header lacks {', '.join(missing)}",
                    "the first line must be `time,unit,anon,active_file` (sizes in bytes, "
                    "time in epoch seconds or ISO 8601)")
            col = {c: header.index(c) for c in CSV_COLUMNS}
            series: dict[str, list[Sample]] = {}
            for row in reader:
                if not row or not "".join(row).strip():
                    continue
                line = reader.line_num
                if len(row) < len(header):
                    raise RecommendError(f"{path}:{line}: expected {len(header)} fields, got "
                                         f"{len(row)}", "every row needs time,unit,anon,"
                                         "active_file")
                try:
                    when = _parse_time(row[col["time"]])
                except ValueError:
                    raise RecommendError(
                        f"{path}:{line}: time {row[col['time']]!r} is neither epoch seconds "
                        "nor ISO 8601", "e.g. 1718000000 or 2024-06-10T08:00:00Z") from None
                try:
                    anon = _parse_bytes(row[col["anon"]], "anon")
                    active = _parse_bytes(row[col["active_file"]], "active_file")
                except ValueError as e:
                    raise RecommendError(f"{path}:{line}: {e}",
                                         "sizes are plain byte counts, e.g. 4294967296") from None
                unit = row[col["unit"]].strip()
                if not unit:
                    raise RecommendError(f"{path}:{line}: empty unit",
                                         "name the slice, e.g. tenants-web.slice")
                series.setdefault(unit, []).append(Sample(when, anon, active))
    except OSError as e:
        raise RecommendError(f"{path}: cannot read: {e.strerror}",
                             "check the path given to --samples") from e
    except UnicodeDecodeError:
        raise RecommendError(f"{path}: is not UTF-8 text", "save the CSV as UTF-8") from None
    except csv.Error as e:
        raise RecommendError(f"{path}: malformed CSV: {e}", "check quoting") from e
    if not series:
        raise RecommendError(f"{path}: no samples", "add rows after the header line")
    return series


# --- --write: suggestions into tenants.yaml (round-trip, atomic) ----------------------------


def write_tenants(path: str, recs: Sequence[Recommendation]) -> list[str]:
    """Set memory_max/high/low of the tenants whose slice has a recommendation; returns them."""
    from slicectl.config import load_config, load_yaml, parse_config

    config = load_config(path)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    by_unit = {r.unit: r for r in recs if r.memory_max is not None}
    values: dict[str, dict[str, str]] = {}
    for t in config.tenants:
        rec = by_unit.get(config.slice_unit(t.name))
        if rec is not None:
            values[t.name] = {"memory_max": format_size(rec.memory_max or 0),
                              "memory_high": format_size(rec.memory_high or 0),
                              "memory_low": format_size(rec.memory_low or 0)}
    if not values:
        return []
    new_text = _edit_lines(text, path, values)
    if new_text is None or not _has_values(new_text, path, values):
        new_text = _round_trip(text, values)
    parse_config(load_yaml(new_text, path), path)  # never write a file slicectl cannot read
    write_atomically(Path(path), new_text)
    return list(values)


def _has_values(text: str, path: str, values: Mapping[str, Mapping[str, str]]) -> bool:
    from slicectl.config import load_yaml, parse_config
    from slicectl.errors import ConfigError

    try:
        config = parse_config(load_yaml(text, path), path)
    except ConfigError:
        return False
    return all(getattr(config.tenant(name), key) == parse_size(value)
               for name, sizes in values.items() for key, value in sizes.items())


_TOKEN = re.compile(r"\"[^\"]*\"|'[^']*'|[^\s#,}]+")


def _edit_lines(text: str, path: str, values: Mapping[str, Mapping[str, str]]) -> str | None:
    """Edit only the value tokens (and insert missing keys) of block-style tenant mappings,
    so everything else stays byte for byte; None when a tenant is not in block style."""
    from slicectl.config import load_yaml

    data = load_yaml(text, path, round_trip=True)  # block or flow style, value columns
    lines = text.splitlines(keepends=True)
    replace: dict[int, tuple[int, str]] = {}  # line -> (column of the value, new value)
    insert: dict[int, list[str]] = {}  # insert before this line index
    for name, sizes in values.items():
        body = data["tenants"][name]
        if not body or body.fa.flow_style():
            return None
        keys = list(body)
        indent = body.lc.key(keys[0])[1]
        present = [k for k in SIZE_KEYS if k in body]
        for key in SIZE_KEYS:
            if key in body:
                line, col = body.lc.value(key)
                if line != body.lc.key(key)[0]:
                    return None  # value on its own line: leave it to the round-trip writer
                replace[line] = (col, sizes[key])
                continue
            before = [k for k in SIZE_KEYS[:SIZE_KEYS.index(key)] if k in present]
            after = [k for k in SIZE_KEYS[SIZE_KEYS.index(key) + 1:] if k in present]
            if before:
                at = body.lc.key(before[-1])[0] + 1
            elif after:
                at = body.lc.key(after[0])[0]
            else:
                at = body.lc.key(keys[0])[0]
            insert.setdefault(at, []).append(f"{' ' * indent}{key}: {sizes[key]}\n")
    for line, (col, value) in replace.items():
        old = lines[line]
        m = _TOKEN.match(old, col)
        if m is None:
            return None
        rest = old[m.end():]
        pad = len(rest) - len(rest.lstrip(" "))
        if rest.lstrip(" ").startswith("#"):
            # Keep the comment in its column (at least one space before it).
            pad = max(1, pad + len(m.group()) - len(value))
        lines[line] = old[:col] + value + " " * pad + rest.lstrip(" ")
    for at in sorted(insert, reverse=True):
        if at > 0 and not lines[at - 1].endswith("\n"):
            lines[at - 1] += "\n"
        lines[at:at] = insert[at]
    return "".join(lines)


def _round_trip(text: str, values: Mapping[str, Mapping[str, str]]) -> str:
    """ruamel round-trip: keeps comments and order, may respace flow mappings."""
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap
    from ruamel.yaml.util import load_yaml_guess_indent

    _, indent, block_seq_indent = load_yaml_guess_indent(text)
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.indent(mapping=indent or 2, sequence=(indent or 2) + (block_seq_indent or 0),
                offset=block_seq_indent or 0)
    data = yaml.load(text)
    for name, sizes in values.items():
        body = data["tenants"][name]
        if body is None:
            body = data["tenants"][name] = CommentedMap()
        previous: str | None = None
        for key in SIZE_KEYS:
            if key in body:
                body[key] = sizes[key]
            elif previous is not None and previous in body:
                body.insert(list(body).index(previous) + 1, key, sizes[key])
            else:
                body[key] = sizes[key]
            previous = key
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


# --- CLI entry point ------------------------------------------------------------------------


def _print_text(recs: Sequence[Recommendation]) -> None:
    for r in recs:
        print(f"{r.unit}: {r.samples} sample(s) over {format_duration(r.last - r.first)}")
        if r.footprint is not None:
            assert r.memory_low is not None and r.memory_high is not None
            assert r.memory_max is not None
            print(f"  footprint    {format_size(_round_up(r.footprint)):>8}  "
                  f"{r.reasons['footprint']}")
            for key, value in (("memory_low", r.memory_low), ("memory_high", r.memory_high),
                               ("memory_max", r.memory_max)):
                print(f"  {key:<12} {format_size(value):>8}  {r.reasons[key]}")
        for w in r.warnings:
            print(f"  warning: {w}")


def run_recommend(
    db: str | None,
    samples: str | None,
    as_json: bool,
    startup_s: float = DEFAULT_STARTUP_S,
    hold_s: float = DEFAULT_HOLD_S,
    headroom: int | str = DEFAULT_HEADROOM,
    write: str | None = None,
) -> int:
    """`slicectl recommend`: print suggestions (and write them into TENANTS with --write)."""
    try:
        head = parse_size(headroom)
    except ValueError as e:
        raise RecommendError(f"--headroom: {e}", "e.g. --headroom 1G") from None
    if head is INFINITY or head < 0 or startup_s < 0 or hold_s < 0:
        raise RecommendError("--headroom, --startup and --hold must not be negative or "
                             "infinity", "e.g. --startup 3600 --hold 600 --headroom 1G")
    if samples is not None:
        series = read_csv(samples)
    else:
        from slicectl.record import DEFAULT_DB, load_series

        series = load_series(db or DEFAULT_DB)
    recs = recommend(series, startup_s, hold_s, head)
    written = write_tenants(write, recs) if write else []
    if as_json:
        print(json.dumps({
            "format": "slicectl-recommend/1", "startup_seconds": startup_s,
            "hold_seconds": hold_s, "headroom": head,
            "units": [r.to_json() for r in recs], "written": written,
        }, indent=2))
    else:
        _print_text(recs)
        if not recs:
            print("no samples")
        if write:
            print(f"{write}: wrote memory_max/memory_high/memory_low for "
                  f"{', '.join(written) if written else 'no tenant (no matching slice)'}")
    return 0
