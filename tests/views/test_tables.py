"""The CLI's tables (slicectl.views.tables): the topology, plan, files, edit preview and
schedule tables as people read them. Fitting a width is page.py's (test_page.py), the maps
maps.py's (test_maps.py)."""

from __future__ import annotations

import io

from rich.console import Console, RenderableType

from slicectl.core.config.config import load_yaml, parse_config
from slicectl.core.placement.placement import place
from slicectl.core.placement.topology import Cpu, Node, Topology
from slicectl.core.plan import Plan, build_plan
from slicectl.views.tables import (
    placement_line,
    placement_preview,
    plan_files_table,
    plan_table,
    schedule_table,
    topology_summary,
    topology_table,
)

# node0: two SMT cores (0,4 and 1,5) and 6.5G; node1: CPUs 2,6 (one core) and 3, no memory;
# CPU 7 offline
TOPO = Topology(
    (Node(0, frozenset({0, 1, 4, 5}), 6777044 * 1024, {0: 10, 1: 21}),
     Node(1, frozenset({2, 3, 6}), 0, {0: 21, 1: 10})),
    (*(Cpu(c, True, 0 if c in (0, 1, 4, 5) else 1, package=0, core=c % 4,
           siblings=frozenset({c % 4, c % 4 + 4}) if c % 4 != 3 else frozenset({3}))
       for c in range(7)), Cpu(7, False, None)),
    "fixture")
TENANTS = "version: 1\nhousekeeping: {cpus: 1}\ntenants:\n  db1: {cpus: %d, cpu_weight: 300}\n" \
          "  web: {memory_max: 1G}\n"


def drawn(item: RenderableType, width: int = 120) -> str:
    console = Console(width=width, color_system=None, record=True, file=io.StringIO())
    console.print(item)
    return "\n".join(line.rstrip() for line in console.export_text().splitlines())


def plan(cpus: int = 2) -> Plan:
    return build_plan(parse_config(load_yaml(TENANTS % cpus, "t.yaml"), "t.yaml"), TOPO,
                      shares=False)


def test_topology_summary_says_what_is_unusual() -> None:
    assert str(topology_summary(TOPO)) == (
        "2 node(s), 7 online CPUs, SMT on (2 threads/core), memory 6.5G, offline CPUs: 7, "
        "node(s) without memory: 1")


def test_topology_table() -> None:
    assert drawn(topology_table(TOPO)).splitlines()[4:6] == [
        "│    0 │ 0,1,4,5 │     4 │     2 │   6.5G │ 10 21     │",
        "│    1 │ 2,3,6   │     3 │     2 │      - │ 21 10     │"]


def test_plan_table_lists_the_shared_pool_once_below() -> None:
    lines = drawn(plan_table(plan())).splitlines()
    assert lines[0] == "Plan for t.yaml"
    assert lines[4:6] == [
        "│ db1    │ tenants-db1.slice │ 1,5         │ 2 │ 0     │ node 0  │ CPUWeight=300 │",
        "│ web    │ tenants-web.slice │ shared pool │ 4 │ pool  │ unbound │ MemoryMax=1G  │"]
    assert lines[-1] == "shared pool: 2-4,6 (4 CPUs)"


def test_plan_files_table_lists_the_other_files() -> None:
    rows = [line for line in drawn(plan_files_table(plan())).splitlines() if "conf" in line
            or ".slice " in line]
    assert rows == ["│ tenants.slice                   │ AllowedCPUs=1-6 │",
                    "│ init.scope.d/50-slicectl.conf   │ AllowedCPUs=0   │",
                    "│ system.slice.d/50-slicectl.conf │ AllowedCPUs=0   │",
                    "│ user.slice.d/50-slicectl.conf   │ AllowedCPUs=0   │"]


def test_plan_files_table_at_80_columns_never_cuts_a_unit_name() -> None:
    services = "  warehouse{n}: {{cpus: 1, services: [postgresql@15-warehouse{n}.service]}}\n"
    text = ("version: 1\nhousekeeping: {cpus: 1}\ntenants:\n"
            + "".join(services.format(n=n) for n in (1, 2)))
    table = drawn(plan_files_table(build_plan(parse_config(load_yaml(text, "t.yaml"), "t.yaml"),
                                              TOPO, shares=False)), width=80)
    words = set(table.replace("│", " ").split())
    for n in (1, 2):  # the drop-in's folder whole on a line, its Slice= whole
        assert f"postgresql@15-warehouse{n}.service.d/50-slicectl.conf" in words or {
            f"postgresql@15-warehouse{n}.service.d/", "50-slicectl.conf"} <= words, table
        assert f"Slice=tenants-warehouse{n}.slice" in words, table
    assert all(len(line) <= 80 for line in table.splitlines()), table


def test_placement_lines() -> None:
    layout = plan().layout
    assert placement_line(layout.of("db1")) == (
        "db1: CPUs 1,5 (2) on node 0 (exclusive), memory node 0")
    assert placement_line(layout.of("web")) == (
        "web: CPUs 2-4,6 (4) on node 0,1 (shared pool), memory unbound")


def test_placement_preview_shows_the_edited_tenant_and_every_tenant_it_moves() -> None:
    before = plan().layout
    after = place(parse_config(load_yaml(TENANTS % 3, "t.yaml"), "t.yaml"), TOPO)
    lines = drawn(placement_preview(TOPO, before, after, "db1")).splitlines()
    assert lines[:4] == ["was  db1: CPUs 1,5 (2) on node 0 (exclusive), memory node 0",
                         "now  db1: CPUs 2,3,6 (3) on node 1 (exclusive), memory node 0",
                         "was  web: CPUs 2-4,6 (4) on node 0,1 (shared pool), memory unbound",
                         "now  web: CPUs 1,4,5 (3) on node 0 (shared pool), memory unbound"]
    assert lines[-1].endswith("underlined: CPUs the change moves")


def test_schedule_table() -> None:
    text = drawn(schedule_table({
        "in_force": {"profile": None, "since": None},
        "timers": [{"profile": "night", "timer": "slicectl-profile@night.timer",
                    "calendars": ["Mon..Fri 22:00", "Sat 20:00"], "next_elapse": None}]}))
    assert text.startswith("Schedule (in force now: default (the base file) (no schedule has")
    assert "│ night   │ slicectl-profile@night.timer │ Mon..Fri 22:00; Sat 20:00 │ never" in text


def test_a_tenant_split_over_nodes_says_so_in_the_plan_table() -> None:
    """numa: any where no node has room: the nodes column says "split", not only a note."""
    text = ("version: 1\nhousekeeping: {cpus: 1}\ntenants:\n  big: {cpus: 5, numa: any}\n"
            "  web: {memory_max: 1G}\n")
    lay = build_plan(parse_config(load_yaml(text, "t.yaml"), "t.yaml"), TOPO, shares=False)
    rows = drawn(plan_table(lay, 160)).splitlines()
    big = next(line for line in rows if "big" in line)
    assert "0,1 (split)" in big and "unbound" in big
    assert not any("(split)" in line for line in drawn(plan_table(plan(), 160)).splitlines())


def test_a_tenant_on_the_whole_pool_reads_as_the_pool_in_the_narrow_table() -> None:
    narrow = drawn(plan_table(plan(), 60), 60)
    assert "the shared pool (4 CPUs), memory unbound" in narrow
    assert "on pool" not in narrow and "CPUs shared pool" not in narrow
