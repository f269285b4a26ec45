"""Live apply's steps (slicectl.apply.applier): the phases it reports, a cancelled confirmation,
the report of what it did, and the helpers it runs systemd's calls with. Whole apply scenarios
(rollback, overrides, profiles, locks) are in test_apply.py."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from slicectl.apply.applier import ApplyOptions, apply_plan, gather_all, load_plan, start_slices
from slicectl.core.config.config import load_yaml, parse_config
from slicectl.core.config.tenants import Config
from slicectl.core.errors import ApplyError
from slicectl.core.placement.topology import Cpu, Node, Topology
from slicectl.core.render import render
from slicectl.demo.fakesystemd import FakeSystemd
from slicectl.host.files.templates import load_templates
from slicectl.host.files.unitdir import Manifest
from slicectl.host.systemd.systemd import Systemd

YAML = """\
version: 1
tenants:
  db1: {cpus: 2, cpu_weight: 300}
  db2: {cpus: 2}
"""
TOPO = Topology(
    tuple(Node(n, frozenset({n, n + 4}), 1 << 30, {m: 10 if m == n else 20 for m in range(4)})
          for n in range(4)),
    tuple(Cpu(c, True, c % 4, package=c, core=0, siblings=frozenset({c})) for c in range(8)),
    "testbed")


@pytest.fixture
def config() -> Config:
    return parse_config(load_yaml(YAML, "t.yaml"), "t.yaml")


@pytest.fixture
def options(tmp_path: Path, dbus_daemon: str, fake_systemd: FakeSystemd) -> ApplyOptions:
    (tmp_path / "units").mkdir()
    return ApplyOptions(unit_dir=tmp_path / "units", cgroup_root=tmp_path / "cgroup",
                        bus_address=dbus_daemon, control_dir=tmp_path / "control",
                        kernel="6.1.0")


async def test_gather_all_waits_for_every_call_then_raises_the_first_failure() -> None:
    finished: list[str] = []
    release = asyncio.Event()

    async def fail(name: str) -> None:
        finished.append(name)
        raise ValueError(name)

    async def slow() -> None:
        await release.wait()
        finished.append("slow")

    async def open_gate() -> None:
        await asyncio.sleep(0)
        release.set()

    with pytest.raises(ValueError, match="^first$"):
        await gather_all([fail("first"), slow(), fail("second"), open_gate()])
    assert sorted(finished) == ["first", "second", "slow"]


async def test_a_managed_unit_without_a_cgroup_is_named_not_verified(
        options: ApplyOptions) -> None:
    """A confined service that is not running has no cgroup to read back: the report names
    it rather than counting fewer units in silence."""
    text = YAML + "confine:\n  cron.service: {memory_max: 512M}\n"
    report = await apply_plan(parse_config(load_yaml(text, "t.yaml"), "t.yaml"), TOPO, options)
    assert report.not_running == ["cron.service"]
    assert "cron.service" not in report.verified
    assert report.notes == ["not verified, not running (no cgroup): cron.service; their "
                            "files apply when they start"]


def test_load_plan_renders_the_plan_kept_where_the_manifest_says(
        config: Config, tmp_path: Path) -> None:
    options = ApplyOptions(unit_dir=tmp_path)
    plan, files = load_plan(config, TOPO, options,
                            Manifest(placements={"db1": frozenset({3, 7})}))
    assert plan.placements()["db1"] == frozenset({3, 7})
    assert files == render(plan, load_templates())
    assert "AllowedCPUs=3,7\n" in files["tenants-db1.slice.d/50-slicectl.conf"]


async def test_apply_says_each_phase_and_reports_what_it_did(
        config: Config, options: ApplyOptions) -> None:
    said: list[str] = []
    report = await apply_plan(config, TOPO, options, progress=said.append)
    # The fake systemd starts units without reading their files: what the read-back finds
    # unset is set at runtime, then read back again.
    assert said == ["writing 5 file(s), removing 0",
                    "starting 3 unit(s)",
                    "reading 3 unit(s) back from systemd and their cgroups",
                    "setting 5 live properties on 2 unit(s), then verifying them"]
    assert report.started == ["tenants.slice", "tenants-db1.slice", "tenants-db2.slice"]
    assert report.verified == ["tenants-db1.slice", "tenants-db2.slice", "tenants.slice"]
    assert [c.describe() for c in report.set_live] == [
        "tenants-db1.slice: AllowedCPUs (unset) -> 0,4",
        "tenants-db1.slice: AllowedMemoryNodes (unset) -> 0",
        "tenants-db1.slice: CPUWeight (unset) -> 300",
        "tenants-db2.slice: AllowedCPUs (unset) -> 1,5",
        "tenants-db2.slice: AllowedMemoryNodes (unset) -> 1"]
    assert not report.reloaded and report.stopped == []


async def test_a_refused_confirmation_changes_nothing(
        config: Config, options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    shown: list[object] = []

    def refuse(diff: object) -> bool:
        shown.append(diff)
        return False

    with pytest.raises(ApplyError) as e:
        await apply_plan(config, TOPO, options, confirm=refuse)
    assert e.value.message == "cancelled; nothing was changed"
    assert len(shown) == 1 and list(options.unit_dir.iterdir()) == []
    assert not {"SetUnitProperties", "StartUnit", "Reload"} & set(fake_systemd.members())


async def test_a_dry_run_reports_the_diff_and_changes_nothing(
        config: Config, options: ApplyOptions, fake_systemd: FakeSystemd) -> None:
    report = await apply_plan(config, TOPO, options, dry_run=True)
    assert report.diff.changed and report.started == []
    assert list(options.unit_dir.iterdir()) == []


async def test_start_slices_starts_what_the_parent_did_not_bring_up(
        systemd_client: Systemd, fake_systemd: FakeSystemd) -> None:
    """The parent's StartUnit brings up the slices it wants; one it did not is started on its
    own."""
    fake_systemd.add_unit("tenants-db1.slice")
    await start_slices(systemd_client, "tenants.slice", ["tenants-db1.slice"])
    starts = [args[0] for member, args in fake_systemd.calls if member == "StartUnit"]
    assert starts == ["tenants.slice", "tenants-db1.slice"]
    assert fake_systemd.units["tenants-db1.slice"].active_state == "active"
