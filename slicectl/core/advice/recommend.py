"""`slicectl recommend`: memory sizes per slice from recorded footprints (LinkedIn, 2016, rec. 2).

The footprint is anon + active_file (001: "RSS + active_file"), measured after start-up, with
anomalies that do not last discarded: a level counts only if it is held for `hold_s` (10 min).
memory_max = sustained footprint + headroom (1G); memory_high halfway into the headroom;
memory_low = the footprint, because a limit is not a reservation (001 pitfall 1).
`recommend()` is pure: the samples come from `slicectl.host.cgroup.recorder` (SQLite) or
`slicectl.host.cgroup.readers` (CSV), and `slicectl recommend` prints and writes them in the CLI
(docs/recommend.md).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any, NamedTuple

from slicectl.core import defaults
from slicectl.core.config.values import format_size
from slicectl.core.frozen import frozen
from slicectl.core.human import exact_size

if TYPE_CHECKING:
    from slicectl.core.config.config import Config

DEFAULT_STARTUP_S = defaults.RECOMMEND_STARTUP_S
DEFAULT_HOLD_S = defaults.RECOMMEND_HOLD_S
DEFAULT_HEADROOM = defaults.RECOMMEND_HEADROOM
MIN_STABLE_S = 7 * 86400  # 001: the stable period should be at least a week
MIB = 1 << 20
SIZE_KEYS = ("memory_max", "memory_high", "memory_low")


class Sample(NamedTuple):
    """One measurement of one slice: epoch seconds, memory.stat anon and active_file (bytes)."""

    time: float
    anon: int
    active_file: int

    @property
    def footprint(self) -> int:
        return self.anon + self.active_file


@frozen
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


def round_up(size: int, unit: int = MIB) -> int:
    """`size` rounded up to a whole `unit` (a MiB)."""
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
    low = round_up(footprint)
    high = round_up(low + headroom // 2)
    max_ = low + round_up(headroom)
    hold = format_duration(hold_s)
    reasons = {
        "footprint": f"highest anon + active_file held for {hold} after the first "
                     f"{format_duration(startup_s)} (peak {exact_size(round_up(peak or 0))} "
                     "ignored as an anomaly)" if peak and peak > footprint else
                     f"highest anon + active_file held for {hold} after the first "
                     f"{format_duration(startup_s)}",
        "memory_low": "the sustained footprint, protected from reclaim: a limit is not a "
                      "reservation (001)",
        "memory_high": "halfway into the headroom: reclaim and throttling start before the "
                       "hard limit (systemd.resource-control(5))",
        "memory_max": f"footprint + {exact_size(headroom)} headroom for page cache beyond "
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


def tenant_sizes(config: Config, recs: Sequence[Recommendation]) -> dict[str, dict[str, str]]:
    """tenant → {memory_max, memory_high, memory_low} as tenants.yaml spells them, for the
    tenants whose slice has a recommendation (what `recommend --write` sets)."""
    by_unit = {r.unit: r for r in recs if r.memory_max is not None}
    sizes: dict[str, dict[str, str]] = {}
    for t in config.tenants:
        rec = by_unit.get(config.slice_unit(t.name))
        if rec is not None:
            sizes[t.name] = {key: format_size(getattr(rec, key) or 0) for key in SIZE_KEYS}
    return sizes
