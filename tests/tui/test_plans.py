"""The plans the TUI shows beside the live view (slicectl.tui.plans): the plan of tenants.yaml
for this host or why there is none, `set-property` overrides of the tenants' CPUs, and the
placement preview's messages when an edit does not place."""

from __future__ import annotations

from pathlib import Path

import pytest
from tuikit import make_topology

from slicectl.apply.applier import ApplyOptions
from slicectl.core.config.config import load_yaml, parse_config
from slicectl.core.config.tenants import Config
from slicectl.tui.plans import cpu_overrides, placement_preview, plan_for, plan_view
from slicectl.tui.settings import TuiSettings

YAML = """\
version: 1
tenants:
  db1: {cpus: 2}
  db2: {cpus: 2}
profiles:
  huge:
    db1: {cpus: 64}
"""


@pytest.fixture
def config() -> Config:
    return parse_config(load_yaml(YAML, "t.yaml"), "t.yaml")


@pytest.fixture
def settings(tmp_path: Path) -> TuiSettings:
    (tmp_path / "units").mkdir()
    return TuiSettings(cgroup_root=tmp_path / "cgroup", topology=make_topology(),
                       options=ApplyOptions(unit_dir=tmp_path / "units",
                                            control_dir=tmp_path / "control"))


def test_no_plan_without_tenants_or_topology(settings: TuiSettings, config: Config) -> None:
    assert plan_for(settings, None, None) == (None, "")
    assert plan_for(TuiSettings(cgroup_root=Path("/x")), config, None) == (None, "")


def test_the_plan_and_why_a_profile_does_not_place(settings: TuiSettings,
                                                   config: Config) -> None:
    plan, problem = plan_for(settings, config, None, shares=False)
    assert problem == "" and plan is not None
    assert sorted(plan.placements()) == ["db1", "db2"]
    plan, problem = plan_for(settings, config, "huge")
    assert plan is None
    assert problem == (
        "t.yaml:3: tenants.db1.cpus: exclusive tenants ask for 66 CPUs in all (db1: 64, db2: 2), "
        "but only 8 are free (hint: free CPUs per node: node0: 2 free (0,4); node1: 2 free "
        "(1,5); node2: 2 free (2,6); node3: 2 free (3,7); lower a count, or reduce "
        "housekeeping.cpus)")


def test_set_property_overrides_of_the_tenants_cpus(settings: TuiSettings, config: Config,
                                                    tmp_path: Path) -> None:
    override = tmp_path / "control" / "tenants-db2.slice.d" / "50-AllowedCPUs.conf"
    override.parent.mkdir(parents=True)
    override.write_text("[Slice]\nAllowedCPUs=0-7\n")
    assert cpu_overrides(settings, config) == {"db2": str(override)}
    assert cpu_overrides(settings, None) == {}
    view = plan_view(settings, config, None)
    assert view.plan is not None and view.overrides == {"db2": str(override)}
    assert plan_view(settings, config, "huge").overrides == {}  # no plan: nothing to compare


def test_placement_preview_when_nothing_places(settings: TuiSettings, config: Config) -> None:
    before, _ = plan_for(settings, config, None)
    huge = config.with_profile("huge")
    assert str(placement_preview(settings, None, before, huge, "db1")).startswith(
        "cannot place this: ")
    assert placement_preview(settings, None, None, config, "db1") == (
        "no placement preview: the current tenants.yaml does not place")
    assert placement_preview(TuiSettings(cgroup_root=Path("/x")), None, before, config,
                             "db1") == "no placement preview"
