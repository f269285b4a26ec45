"""The overview's rows (slicectl.tui.components.overview_rows): the columns in the groups the
overview scrolls by, one row per line of the slice tree with its sparklines and an elastic
tenant's size beside its name, and a row reused while its slice did not change."""

from __future__ import annotations

from paths import TESTS

from slicectl.core.monitor.metrics import compute
from slicectl.host.cgroup.sampler import Sampler
from slicectl.tui.components.overview_rows import (
    OverviewRows,
    overview_groups,
    overview_headers,
)
from slicectl.tui.model import History, SortKey
from slicectl.tui.tree import SliceTree, TreeLine
from slicectl.views.monitor import NUMA_COLUMN

CGROUP = TESTS / "fixtures" / "cgroup"


def lines() -> list[TreeLine]:
    with Sampler(CGROUP) as sampler:
        metrics = compute(None, sampler.sample())
    return SliceTree().lines(metrics, collapsed=set(), needle="", key=SortKey.NAME,
                             reverse=False)


def test_columns_and_their_groups() -> None:
    plain = overview_headers(False)
    assert plain[0] == "slice" and NUMA_COLUMN not in plain
    assert plain.index("psi io") < plain.index("cpu history")  # pressure shows at 100 columns
    assert overview_headers(True).index(NUMA_COLUMN) == plain.index("psi io") + 1
    # the headline first: CPU, memory and memory pressure, what 80 columns show
    assert plain[1:4] == ("cpu cores/allowed", "mem current/high/max", "psi mem")
    assert overview_groups(False) == ("cpu cores/allowed", "quota", "cpu history", "events")
    assert overview_groups(True)[2] == NUMA_COLUMN


def test_a_row_per_line_in_its_order_with_every_column() -> None:
    tree = lines()
    rows = OverviewRows().rows(tree, History(), 8 << 30)
    assert [r.key for r in rows] == [line.metrics.cgroup for line in tree]
    assert all(len(r.cells) == len(overview_headers(False)) for r in rows)
    assert [r.cells[0] for r in rows] == [line.name for line in tree]


def test_an_elastic_tenant_shows_its_size_beside_its_name() -> None:
    tree = lines()
    unit = tree[-1].metrics.unit
    rows = OverviewRows().rows(tree, History(), 8 << 30, balance={unit: "[6/4 cpus]"})
    assert rows[-1].cells[0] == f"{tree[-1].name} [6/4 cpus]"
    assert all("cpus]" not in r.cells[0] for r in rows[:-1])


def test_a_row_is_reused_while_its_slice_did_not_change() -> None:
    tree, memo = lines(), OverviewRows()
    history = History()
    first = memo.rows(tree, history, 8 << 30)
    again = memo.rows(tree, history, 8 << 30)
    assert all(a is b for a, b in zip(first, again, strict=True))
    renamed = memo.rows(tree, history, 8 << 30, balance={tree[0].metrics.unit: "[2/4 cpus]"})
    assert renamed[0] is not first[0] and renamed[1] is first[1]
