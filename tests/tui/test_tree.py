"""The overview's slice tree, headless (slicectl/tui/tree.py): nesting, folding, the name
filter, sorting among siblings, and limits a parent imposes."""

from __future__ import annotations

from dataclasses import replace

from tuikit import FIXTURE

from slicectl.core.monitor.metrics import SliceMetrics, compute
from slicectl.host.cgroup.sampler import Sampler
from slicectl.tui.model import SortKey
from slicectl.tui.tree import (
    SliceTree,
    effective_limits,
    limit_cells,
    limits_from,
    parent_of,
    tree_lines,
    unit_holders,
    with_children,
)

G = 1 << 30


def fixture_metrics() -> list[SliceMetrics]:
    with Sampler(FIXTURE) as sampler:
        return compute(None, sampler.sample())


def names(metrics: list[SliceMetrics], collapsed: set[str], needle: str = "",
          key: SortKey = SortKey.CPU) -> list[str]:
    return [line.name for line in tree_lines(metrics, collapsed=collapsed, needle=needle,
                                             key=key)]


def test_slices_nest_like_the_cgroup_hierarchy() -> None:
    assert names(fixture_metrics(), collapsed=set(), key=SortKey.NAME) == [
        "  init.scope", "  system.slice", "▾ tenants.slice", "    tenants-db1.slice",
        "    tenants-web.slice", "▾ user.slice", "    user-1000.slice"]


def test_fold_one_or_all() -> None:
    ms = fixture_metrics()
    assert with_children(ms) == {"/tenants.slice", "/user.slice"}
    assert names(ms, collapsed={"/tenants.slice"}, key=SortKey.NAME) == [
        "  init.scope", "  system.slice", "▸ tenants.slice", "▾ user.slice",
        "    user-1000.slice"]
    assert names(ms, collapsed=with_children(ms), key=SortKey.NAME) == [
        "  init.scope", "  system.slice", "▸ tenants.slice", "▸ user.slice"]


def test_filter_keeps_the_ancestors_of_matches_unfolded() -> None:
    ms = fixture_metrics()
    assert names(ms, collapsed=with_children(ms), needle="WEB") == [
        "▾ tenants.slice", "    tenants-web.slice"]
    assert names(ms, collapsed=set(), needle="user") == ["▾ user.slice", "    user-1000.slice"]
    assert names(ms, collapsed=set(), needle="nothing-like-it") == []


def test_sorting_applies_among_siblings() -> None:
    ms = fixture_metrics()
    # make web the bigger child and system.slice the biggest at the top level
    ms = [replace(m, memory_current=30 * G) if m.unit == "tenants-web.slice" else
          replace(m, memory_current=90 * G) if m.unit == "system.slice" else m for m in ms]
    lines = names(ms, collapsed=set(), key=SortKey.MEMORY)
    assert lines[:4] == ["  system.slice", "▾ tenants.slice", "    tenants-web.slice",
                         "    tenants-db1.slice"]


def test_effective_limits_name_the_parent_that_caps() -> None:
    ms = fixture_metrics()
    eff = effective_limits(ms)
    user = eff["/user.slice/user-1000.slice"]  # own memory.max is "max"; user.slice has 2G
    assert (user.memory_max.value, user.memory_max.source) == (2 * G, "/user.slice")
    assert user.memory_high.value is None  # nobody above sets memory.high
    db1 = eff["/tenants.slice/tenants-db1.slice"]  # its own 24G: tenants.slice has no limit
    assert (db1.memory_max.value, db1.memory_max.source) == (24 * G, None)
    by_unit = {m.unit: m for m in ms}
    cells = limit_cells(by_unit["user-1000.slice"], user)
    assert cells == ("64M / none / 2G↑", "-")
    assert limit_cells(by_unit["tenants-db1.slice"], db1) is None  # the shared cells hold
    assert limits_from(user) == ["memory.max 2G↑ set by /user.slice"]


def test_a_quota_inherited_from_two_levels_up() -> None:
    ms = fixture_metrics()
    tenants = next(m for m in ms if m.unit == "tenants.slice")
    ms = [replace(tenants, quota_cores=2.0) if m is tenants else m for m in ms]
    db1 = effective_limits(ms)["/tenants.slice/tenants-db1.slice"]
    assert (db1.quota_cores.value, db1.quota_cores.source) == (2.0, "/tenants.slice")
    assert parent_of("/a.slice/b.slice/c.slice", {"/a.slice"}) == "/a.slice"
    assert parent_of("/a.slice", {"/a.slice"}) is None


def test_services_and_scopes_are_leaves_of_their_slice() -> None:
    with Sampler(FIXTURE, units=True) as sampler:
        ms = compute(None, sampler.sample())
    assert "/system.slice/cron.service" in {m.cgroup for m in ms}
    assert unit_holders(ms) == {"/system.slice"}  # folded at first sight
    assert names(ms, collapsed=set(), key=SortKey.NAME)[:3] == [
        "  init.scope", "▾ system.slice", "    cron.service"]
    assert names(ms, collapsed=unit_holders(ms), key=SortKey.NAME)[:3] == [
        "  init.scope", "▸ system.slice", "▾ tenants.slice"]
    # cron.service's own memory.max (512M) is below system.slice's 3G: its own
    cron = effective_limits(ms)["/system.slice/cron.service"]
    assert (cron.memory_max.value, cron.memory_max.source) == (512 << 20, None)
    assert (cron.memory_high.value, cron.memory_high.source) == (2 * G, "/system.slice")


def test_a_kept_tree_follows_new_slices_limits_and_values() -> None:
    """The overview keeps one SliceTree (nesting and limits reused while unchanged): after
    each change it shows what a fresh tree_lines shows."""
    tree = SliceTree()
    ms = fixture_metrics()

    def shown(metrics: list[SliceMetrics], key: SortKey = SortKey.MEMORY
              ) -> list[tuple[str, float | None, str | None]]:
        kept = tree.lines(metrics, collapsed=set(), key=key)
        fresh = tree_lines(metrics, collapsed=set(), key=key)
        assert kept == fresh
        return [(line.name, line.effective.memory_max.value, line.effective.memory_max.source)
                for line in kept]

    before = shown(ms)
    tenants = next(m for m in ms if m.unit == "tenants.slice")
    db1 = next(m for m in ms if m.unit == "tenants-db1.slice")
    # a value moves: the order among siblings follows
    web = next(m for m in ms if m.unit == "tenants-web.slice")
    busier = [replace(m, memory_current=99 * G) if m is web else m for m in ms]
    assert before[2:4] == [("    tenants-db1.slice", 24 * G, None),
                           ("    tenants-web.slice", 4 * G, None)]
    assert [name for name, *_ in shown(busier)][2:4] == [
        "    tenants-web.slice", "    tenants-db1.slice"]
    # a parent's limit changes: its children's effective limit follows
    capped = [replace(m, memory_max=G) if m is tenants else m for m in busier]
    assert shown(capped)[2:4] == [("    tenants-web.slice", G, "/tenants.slice"),
                                  ("    tenants-db1.slice", G, "/tenants.slice")]
    # a slice appears, then goes
    new = replace(db1, unit="tenants-new.slice", cgroup="/tenants.slice/tenants-new.slice")
    assert "    tenants-new.slice" in [name for name, *_ in shown([*capped, new])]
    assert shown(ms) == before
    assert [line.metrics for line in tree.lines(ms, collapsed=set(), needle="db1")] == [
        tenants, db1]
