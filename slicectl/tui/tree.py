"""The overview's slice tree (headless, no textual): nesting, folding, filtering, sorting among
siblings, and the limits a parent imposes on its children.

cgroup v2 counts hierarchically: a parent's CPU time, memory.current, pressure stalls, events
and pids.current already include everything below it, so a parent's row *is* its subtree's
total. Limits are not: a child's memory.max may say "max" while its parent caps it at 2G. The
effective limit is the smallest along the path to the root (cgroup-v2.rst, "Top-down
constraint"), and the tree shows it with the ancestor it comes from.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from slicectl.core.human import human_size
from slicectl.core.monitor.field_values import NO_LIMIT_CELL
from slicectl.core.monitor.metrics import SliceMetrics
from slicectl.tui.model import SortKey, name_order, order_by

EXPANDED, COLLAPSED, LEAF = "▾ ", "▸ ", "  "
INDENT = "  "
INHERITED = "↑"  # marks a limit that comes from an ancestor


@dataclass(frozen=True, slots=True)
class EffectiveLimit:
    """An effective limit and the cgroup it comes from (None: the slice's own)."""

    value: float | None  # None: unlimited
    source: str | None = None


@dataclass(frozen=True, slots=True)
class Effective:
    """The limits that bind a slice, given its ancestors'."""

    memory_high: EffectiveLimit
    memory_max: EffectiveLimit
    quota_cores: EffectiveLimit


# Not frozen: these are built by the hundred on every refresh, and a frozen dataclass's
# __init__ stores each field through object.__setattr__, many times the cost of a plain
# slotted one (BENCHMARKS.md, "Hand-made pieces kept in place of a library"). Treat them as
# immutable all the same.
@dataclass(slots=True, unsafe_hash=True)
class TreeLine:
    """One line of the tree: a slice, its depth and fold state, and its effective limits."""

    metrics: SliceMetrics
    depth: int
    children: int  # shown below it when expanded (after the filter)
    expanded: bool
    effective: Effective

    @property
    def name(self) -> str:
        """The slice cell: indentation, fold marker, unit name."""
        mark = LEAF if not self.children else EXPANDED if self.expanded else COLLAPSED
        return INDENT * self.depth + mark + self.metrics.unit


def parent_of(cgroup: str, known: Iterable[str] | set[str]) -> str | None:
    """The nearest ancestor of `cgroup` ("/a.slice/b.slice") among `known`; None at the top."""
    path = cgroup
    while True:
        path = path.rpartition("/")[0]
        if not path:
            return None
        if path in known:
            return path


def _tighter(own: float | None, inherited: EffectiveLimit, parent: str | None) -> EffectiveLimit:
    """The smaller of a slice's own limit and its parent's effective one."""
    if inherited.value is not None and (own is None or inherited.value < own):
        return EffectiveLimit(inherited.value, inherited.source or parent)
    return EffectiveLimit(own)


def effective_limits(metrics: Sequence[SliceMetrics]) -> dict[str, Effective]:
    """Each slice's effective memory.high, memory.max and CPU quota (cores), by cgroup."""
    by_path = {m.cgroup: m for m in metrics}
    out: dict[str, Effective] = {}
    for m in sorted(metrics, key=lambda m: m.cgroup.count("/")):  # parents first
        parent = parent_of(m.cgroup, by_path)
        above = out.get(parent) if parent is not None else None
        none = EffectiveLimit(None)
        out[m.cgroup] = Effective(
            memory_high=_tighter(_num(m.memory_high), above.memory_high if above else none,
                                 parent),
            memory_max=_tighter(_num(m.memory_max), above.memory_max if above else none, parent),
            quota_cores=_tighter(m.quota_cores, above.quota_cores if above else none, parent),
        )
    return out


def _num(n: int | None) -> float | None:
    return None if n is None else float(n)


def tree_lines(metrics: Sequence[SliceMetrics], *, collapsed: set[str] | frozenset[str],
               needle: str = "", key: SortKey = SortKey.CPU, reverse: bool = False
               ) -> list[TreeLine]:
    """The visible lines of the tree, depth first; siblings in `key` order. A slice in
    `collapsed` hides its subtree. With `needle`, only slices whose name contains it (case
    folded) and their ancestors are shown, unfolded."""
    return SliceTree().lines(metrics, collapsed=collapsed, needle=needle, key=key,
                             reverse=reverse)


class SliceTree:
    """`tree_lines` for one screen, sample after sample: the nesting (who is whose parent,
    siblings in name order) is worked out again only when the set of cgroups changed, and the
    effective limits only when a limit did (BENCHMARKS.md, tui.100.host)."""

    def __init__(self) -> None:
        self._paths: list[str] = []
        self._parents: dict[str, str | None] = {}
        self._children: dict[str | None, list[str]] = {}  # siblings in name order
        self._limits: list[tuple[int | None, int | None, float | None]] = []
        self._effective: dict[str, Effective] = {}

    def lines(self, metrics: Sequence[SliceMetrics], *, collapsed: set[str] | frozenset[str],
              needle: str = "", key: SortKey = SortKey.CPU, reverse: bool = False
              ) -> list[TreeLine]:
        """As `tree_lines`."""
        by_path = {m.cgroup: m for m in metrics}
        paths = list(by_path)
        if paths != self._paths:
            self._nest(metrics, by_path)
        limits = [(m.memory_high, m.memory_max, m.quota_cores) for m in metrics]
        if limits != self._limits or paths != self._paths:
            self._effective = effective_limits(metrics)
        self._paths, self._limits = paths, limits
        children, effective = self._children, self._effective
        keep: set[str] | None = None
        if needle:
            folded = needle.casefold()
            keep = set()
            for m in metrics:
                if folded in m.unit.casefold():
                    path: str | None = m.cgroup
                    while path is not None and path not in keep:
                        keep.add(path)
                        path = self._parents[path]
        lines: list[TreeLine] = []

        def walk(parent: str | None, depth: int) -> None:
            kids = [by_path[p] for p in children.get(parent, ()) if keep is None or p in keep]
            for m in order_by(kids, key, reverse):
                below = children.get(m.cgroup, ())
                n = len(below) if keep is None else sum(c in keep for c in below)
                open_ = keep is not None or m.cgroup not in collapsed
                lines.append(TreeLine(m, depth, n, open_, effective[m.cgroup]))
                if n and open_:
                    walk(m.cgroup, depth + 1)

        walk(None, 0)
        return lines

    def _nest(self, metrics: Sequence[SliceMetrics], by_path: dict[str, SliceMetrics]) -> None:
        self._parents = {m.cgroup: parent_of(m.cgroup, by_path) for m in metrics}
        self._children = {}
        for m in sorted(metrics, key=name_order):
            self._children.setdefault(self._parents[m.cgroup], []).append(m.cgroup)


def is_unit(cgroup: str) -> bool:
    """A service or scope inside a slice (what the tree shows as a leaf)."""
    return not cgroup.endswith(".slice") and cgroup.count("/") > 1


def unit_holders(metrics: Sequence[SliceMetrics]) -> set[str]:
    """The slices that hold services or scopes and no slices: folded when first seen, so the
    tree opens on slices and a slice unfolds to its services."""
    by_path = {m.cgroup for m in metrics}
    units: set[str] = set()
    slices: set[str] = set()
    for m in metrics:
        parent = parent_of(m.cgroup, by_path)
        if parent is not None:
            (units if is_unit(m.cgroup) else slices).add(parent)
    return units - slices


def with_children(metrics: Sequence[SliceMetrics]) -> set[str]:
    """The slices that have slices below them (what "collapse all" folds)."""
    by_path = {m.cgroup for m in metrics}
    return {p for m in metrics if (p := parent_of(m.cgroup, by_path)) is not None}


def _limit_text(limit: EffectiveLimit, size: bool) -> str:
    if limit.value is None:
        text = NO_LIMIT_CELL if size else "-"
    else:
        text = human_size(int(limit.value)) if size else f"{limit.value:.2f}"
    return text + (INHERITED if limit.source is not None else "")


def limit_cells(m: SliceMetrics, eff: Effective) -> tuple[str, str] | None:
    """The memory current/high/max and quota cells with effective limits, an inherited one
    marked `↑`; None when every limit is the slice's own (the shared cells hold)."""
    if eff.memory_high.source is None and eff.memory_max.source is None \
            and eff.quota_cores.source is None:
        return None
    mem = "-" if m.memory_current is None else (
        f"{human_size(m.memory_current)} / {_limit_text(eff.memory_high, True)} / "
        f"{_limit_text(eff.memory_max, True)}")
    return mem, _limit_text(eff.quota_cores, False)


def limits_from(eff: Effective) -> list[str]:
    """For the detail screen: each inherited limit and where it comes from."""
    out = []
    for what, limit, size in (("memory.high", eff.memory_high, True),
                              ("memory.max", eff.memory_max, True),
                              ("CPU quota (cores)", eff.quota_cores, False)):
        if limit.source is not None:
            out.append(f"{what} {_limit_text(limit, size)} set by {limit.source}")
    return out
