"""The property table (slicectl.core.properties.properties) and the value kinds
(slicectl.core.properties.kinds) it names."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT

from slicectl.core.config.values import INFINITY, UINT64_MAX
from slicectl.core.properties.kinds import Bytes, CpuSet, Quota
from slicectl.core.properties.properties import (
    BY_KEY,
    CONFINE_SETTINGS,
    EDITABLE_KEYS,
    PROFILE_KEYS,
    PROPERTIES,
    RESOURCE_KEYS,
    SETTINGS,
    Role,
    Scope,
)


def test_keys_and_properties_are_unique() -> None:
    assert len(BY_KEY) == len(SETTINGS)
    assert len({p.name for p in PROPERTIES}) == len({p.dbus for p in PROPERTIES}) == \
        len(PROPERTIES)


def test_every_property_says_how_it_looks_everywhere() -> None:
    for p in PROPERTIES:
        assert re.fullmatch(r"[A-Z][A-Za-z]+", p.name) and re.fullmatch(r"[A-Z][A-Za-z]+",
                                                                         p.dbus)
        assert p.signature in ("ay", "t", "u", "s", "b", "a(st)")
        assert 200 <= p.since <= 262, f"{p.name}: first systemd version {p.since}?"
        # The unset live value survives the trip over the wire.
        assert p.kind.from_wire(p.kind.to_wire(p.kind.unset)) == p.kind.unset


def test_resource_keys_become_their_property_as_they_are() -> None:
    for key in RESOURCE_KEYS:
        s = BY_KEY[key]
        assert s.prop is not None and s.role is Role.RESOURCE, key


def test_scopes() -> None:
    assert "services" not in PROFILE_KEYS and "description" not in PROFILE_KEYS
    confine = [s.key for s in CONFINE_SETTINGS]
    assert confine[:2] == ["cpus", "cpu_weight"] and "memory_max" in confine
    assert not {"memory_low", "memory_min", "numa", "nodes", "services"} & set(confine)
    assert all(Scope.TENANT in BY_KEY[k].scopes for k in EDITABLE_KEYS)
    assert all(BY_KEY[k].hint for k in EDITABLE_KEYS)  # the form shows an example


def test_confine_cpus_take_a_cpulist_only() -> None:
    cpus = next(s for s in CONFINE_SETTINGS if s.key == "cpus")
    assert cpus.parse("0,1") == frozenset({0, 1})
    with pytest.raises(ValueError, match="not a count"):
        cpus.parse(2)


@pytest.mark.parametrize(("key", "value", "message"), [
    ("memory_max", 0, "systemd takes 1 byte or more"),
    ("memory_high", "0", "systemd takes 1 byte or more"),
    ("memory_max", 2**64 - 1, "sizes below 2^64-1"),
    ("memory_max", "8796093022208T", "sizes below 2^64-1"),
    ("cpu_quota", "99999999999999999999%", "at most 21474836%"),
    ("cpu_quota", "21474837%", "at most 21474836%"),
    ("cpu_quota_period", "18446744073709551616us", "the kernel takes 1ms to 1s"),
    ("cpu_quota_period", "500us", "the kernel takes 1ms to 1s"),
    ("cpus", "0-2147483648", "CPU '2147483648' is out of range: at most 8191"),
    ("cpus", 9000, "at most 8192"),
    ("nodes", "", "the node list is empty"),
    ("nodes", "0-1024", "at most 1023"),
    ("description", "ends in \\", "line continuation"),
])
def test_systemd_ranges(key: str, value: object, message: str) -> None:
    with pytest.raises(ValueError) as e:
        BY_KEY[key].parse(value)
    assert message in str(e.value)


@pytest.mark.parametrize(("key", "value", "parsed"), [
    ("memory_low", 0, 0), ("memory_swap_max", "0", 0), ("memory_max", 1, 1),
    ("memory_max", 2**64 - 2, 2**64 - 2), ("memory_max", "infinity", INFINITY),
    ("cpu_quota", "21474836%", 21474836), ("cpu_quota_period", "1ms", 1000),
    ("cpu_quota_period", "1s", 1_000_000), ("cpus", "8191", frozenset({8191})),
])
def test_systemd_range_edges_pass(key: str, value: object, parsed: object) -> None:
    assert BY_KEY[key].parse(value) == parsed


def test_kinds() -> None:
    limit, protection = Bytes(), Bytes(protection=True)
    assert limit.live(INFINITY) is None and protection.live(INFINITY) == UINT64_MAX
    assert limit.to_wire(None) == UINT64_MAX and protection.to_wire(None) == 0
    assert limit.json(INFINITY) == "infinity" and limit.from_json("infinity") is INFINITY
    assert limit.file(24 * 1024**3) == "24G" and limit.file(INFINITY) == "infinity"
    assert Quota().file(150) == "150%" and Quota().live(150) == 1_500_000
    assert CpuSet().to_wire(frozenset({1, 5})) == b"\x22"
    assert CpuSet().from_wire(b"\x22" + bytes(7)) == frozenset({1, 5})
    with pytest.raises(ValueError):
        limit.to_wire(-1)


def test_zswap_writeback_is_planned_and_generated(tmp_path: Path) -> None:
    """The worked example of docs/design-notes.md ("Adding a property"): one row, and plan,
    generate and the version gate follow it."""
    tenants = tmp_path / "tenants.yaml"
    tenants.write_text("version: 1\ntenants:\n  db:\n    cpus: 2\n"
                       "    memory_zswap_writeback: false\n")
    topology = str(ROOT / "tests" / "fixtures" / "topologies" / "xeon-2s-smt.json")

    def slicectl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "slicectl", *args], capture_output=True,
                              text=True, timeout=120, cwd=ROOT)

    plan = slicectl("plan", str(tenants), "--topology", topology, "--json",
                    "--systemd-version", "256")
    assert plan.returncode == 0, plan.stderr
    units = {u["unit"]: u for u in json.loads(plan.stdout)["units"]}
    assert units["tenants-db.slice"]["properties"]["MemoryZSwapWriteback"] is False
    out = tmp_path / "out"
    gen = slicectl("generate", str(tenants), "--topology", topology, "--out", str(out),
                   "--systemd-version", "256")
    assert gen.returncode == 0, gen.stderr
    assert "MemoryZSwapWriteback=no\n" in (out / "tenants-db.slice.d/50-slicectl.conf"
                                            ).read_text()
    old = slicectl("generate", str(tenants), "--topology", topology, "--out",
                   str(tmp_path / "old"), "--systemd-version", "255")
    assert old.returncode == 1 and not (tmp_path / "old").exists()
    assert f"{tenants}:5: tenants.db.memory_zswap_writeback: needs systemd 256 or later and " \
           "Linux 6.8 or later, but the target runs systemd 255 (--systemd-version)" in old.stderr

