"""Version gating, derived from the property table: every key slicectl writes as a systemd
property is refused by `generate --systemd-version N` just below the release the table gives
it (located, with a hint) and written at that release; and the table's releases agree with
what real systemds took in the release matrix (tests/testbed/results/*.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from slicectl.cli import main
from slicectl.core.properties.properties import BY_KEY, SETTINGS, Prop
from slicectl.core.properties.unitfile import assigned

ROOT = Path(__file__).resolve().parent.parent
TOPOLOGY = ROOT / "tests" / "fixtures" / "topologies" / "xeon-2s-smt.json"
RESULTS = ROOT / "tests" / "testbed" / "results"
UNITS_CHECK = ROOT / "tests" / "testbed" / "units-check"
# The oldest release slicectl supports (README: systemd 247-262), the units-only suite's.
OLDEST = 247

# A value for each key that becomes a property, as tenants.yaml writes it; a key added to the
# table with a property needs one here (test_every_written_key_has_a_value says so).
VALUES: dict[str, str] = {
    "cpus": "2", "numa": "local", "nodes": "[1]", "cpu_weight": "300",
    "startup_cpu_weight": "50", "cpu_quota": "150%", "cpu_quota_period": "50ms",
    "memory_min": "64M", "memory_low": "64M", "memory_high": "200M", "memory_max": "256M",
    "memory_swap_max": "0", "memory_zswap_max": "0", "memory_zswap_writeback": "false",
    "tasks_max": "512", "io_weight": "200", "io_device_weight": "{/dev/sda: 200}",
    "io_read_bandwidth_max": "{/dev/sda: 50M}", "io_write_bandwidth_max": "{/dev/sda: 20M}",
    "io_read_iops_max": "{/dev/sda: 1000}", "io_write_iops_max": "{/dev/sda: 500}",
    "managed_oom_memory_pressure": "kill", "managed_oom_memory_pressure_limit": "60%",
    "startup_allowed_cpus": "1-2", "cpuset_partition": "isolated",
}
# Values that need a later release than their property (the table's since_value).
LATER_VALUES: list[tuple[str, str]] = [
    ("cpu_weight", "idle"), ("startup_cpu_weight", "idle"), ("memory_swap_max", "10%"),
    ("tasks_max", "10%"),
]
# What else a key needs in the same tenant to be valid (not part of what is gated).
WITH: dict[str, str] = {"numa": "cpus: 2", "nodes": "cpus: 2", "cpuset_partition": "cpus: 2",
                        "cpu_quota_period": "cpu_quota: 150%"}


def written() -> dict[str, Prop]:
    """Every tenants.yaml key that becomes a systemd property, with that property."""
    return {s.key: s.prop for s in SETTINGS if s.prop is not None}


def gate(key: str, value: str) -> int:
    """The release the table says systemd must be for `key: value` (its value parsed as
    tenants.yaml's parser reads it)."""
    from slicectl.core.config.config import load_yaml

    prop = BY_KEY[key].prop
    assert prop is not None
    parsed = BY_KEY[key].parse(load_yaml(f"v: {value}\n", "value")["v"])
    return prop.needs(parsed)


def tenants_file(tmp: Path, key: str, value: str) -> Path:
    """One tenant setting `key: value` (and after it what the key needs beside it)."""
    extra = f"    {WITH[key]}\n" if key in WITH else ""
    path = tmp / "tenants.yaml"
    path.write_text(f"version: 1\ntenants:\n  t:\n    {key}: {value}\n{extra}")
    return path


def generate(capsys: pytest.CaptureFixture[str], tenants: Path, version: int, out: Path
             ) -> tuple[int, str, dict[str, str]]:
    code = main(["generate", str(tenants), "--topology", str(TOPOLOGY), "--systemd-version",
                 str(version), "--out", str(out)])
    err = capsys.readouterr().err
    files = {str(p.relative_to(out)): p.read_text() for p in sorted(out.rglob("*"))
             if p.is_file() and not p.name.startswith(".")} if out.exists() else {}
    return code, err, files


CASES = [(key, value) for key, value in VALUES.items()] + LATER_VALUES


def test_every_written_key_has_a_value() -> None:
    assert sorted(VALUES) == sorted(written())
    assert all(gate(key, value) > written()[key].since for key, value in LATER_VALUES)


@pytest.mark.parametrize(("key", "value"), CASES, ids=[f"{k}={v}" for k, v in CASES])
def test_refused_below_its_gate_and_written_at_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, value: str) -> None:
    prop = written()[key]
    needs = gate(key, value)
    tenants = tenants_file(tmp_path, key, value)
    code, err, files = generate(capsys, tenants, needs - 1, tmp_path / "below")
    line = tenants.read_text().splitlines().index(f"    {key}: {value}") + 1
    assert code == 1 and files == {}
    assert err.startswith(
        f"error: {tenants}:{line}: tenants.t.{key}: needs systemd {needs} or later")
    assert f"but the target runs systemd {needs - 1} (--systemd-version)\n" in err
    assert ("  hint: remove the key, or upgrade systemd on the target; --systemd-version N "
            "plans for another target\n") in err
    code, err, files = generate(capsys, tenants, needs, tmp_path / "at")
    assert code == 0, err
    mine = [text for rel, text in files.items() if rel.startswith("tenants-t.slice")]
    assert [assigned(text, prop.name) for text in mine if assigned(text, prop.name)], (
        f"{prop.name}= is in none of {sorted(files)}")


# --- the table against real systemds (the release matrix's results) ----------------------


def units_results() -> list[dict[str, Any]]:
    return [r for r in (json.loads(p.read_text()) for p in sorted(RESULTS.glob("*.json")))
            if r.get("mode") == "units" and "generated_for_systemd" in r]


BY_NAME = {prop.name: prop for prop in written().values()}


def took(check: dict[str, Any]) -> bool:
    """Whether the real systemd took a key: as recorded since the check reads systemd's
    complaints (`accepted`), else (older results) its value read back as written."""
    if "accepted" in check:
        return bool(check["accepted"])
    return bool(check["outcome"] == "passed")


def test_the_matrix_has_a_units_result_to_compare_with() -> None:
    assert [r["suite"] for r in units_results()] == ["bullseye"]


@pytest.mark.parametrize("result", units_results(), ids=lambda r: r["suite"])
def test_every_key_the_table_lets_through_was_taken_by_that_systemd(
        result: dict[str, Any]) -> None:
    """A property the table lets through at release V, where the suite with systemd V
    loaded it, was taken there; the suite's systemd is the release the units were made for."""
    version = int(result["generated_for_systemd"])
    release = re.match(r"\d+", result["systemd"])
    assert release is not None and int(release[0]) == version
    checked = [c for c in result["checks"] if c["key"] in BY_NAME]
    assert checked, "the result records no key of the table"
    let_through = [c for c in checked if BY_NAME[c["key"]].since <= version]
    assert let_through == checked  # units generated for V hold nothing the table holds back
    refused = [f"{c['unit']} {c['key']}={c['value']}" for c in let_through if not took(c)]
    assert refused == [], f"the table lets these through at {version}, systemd refused them"


# Results of the units check from this date on record what systemd took (`accepted`).
RECORDS_ACCEPTANCE_FROM = "2026-11-29"


def test_units_results_record_what_systemd_took_and_cover_the_table() -> None:
    """A result that records whether systemd took each key covers every key the table lets
    through at its release (the units check sets them all); only results from before the
    check recorded it may lack it (bullseye's of 2026-11-28: values read back, 10 keys)."""
    for result in units_results():
        version = int(result["generated_for_systemd"])
        names = {c["key"] for c in result["checks"]}
        if not all("accepted" in c for c in result["checks"]):
            assert result["date"] < RECORDS_ACCEPTANCE_FROM, result["suite"]
            continue
        assert {p.name for p in written().values() if p.since <= version} <= names


def test_the_units_check_sets_every_key_the_oldest_release_takes() -> None:
    """tests/testbed/units-check/tenants.yaml, which the matrix generates for systemd 247 and
    loads into Debian 11's, sets every key the table lets through at 247: a run records
    every such property, taken or refused."""
    from slicectl.host.planning import load_tenants

    config = load_tenants(str(UNITS_CHECK / "tenants.yaml"), check_schedule=False)
    set_keys = {key for t in config.tenants for key in t.lines} | {
        key for c in config.confine for key in c.lines}
    wanted = {key for key, prop in written().items() if prop.since <= OLDEST}
    assert sorted(wanted - set_keys) == []


def test_the_units_check_reads_systemds_refusals() -> None:
    """check-in-guest (run by the guest's own Python) calls a key refused when systemd says
    it is unknown or cannot parse its value, in verify's output or PID 1's journal."""
    import runpy

    guest = runpy.run_path(str(UNITS_CHECK / "check-in-guest"), run_name="guest")
    said = ("/etc/systemd/system/tenants-db1.slice.d/50-slicectl.conf:9: Unknown key name "
            "'StartupCPUWeight' in section 'Slice', ignoring.\n"
            "/etc/systemd/system/tenants-db2.slice.d/50-slicectl.conf:7: Failed to parse "
            "CPUQuotaPeriodSec= value 'x', ignoring: Invalid argument\n"
            "tenants-db1.slice: MemoryMax=256M is fine\n")
    assert guest["complaints"](said, "StartupCPUWeight") == [said.splitlines()[0]]
    assert guest["complaints"](said, "CPUQuotaPeriodSec") == [said.splitlines()[1]]
    assert guest["complaints"](said, "CPUQuota") == []
    assert guest["complaints"](said, "MemoryMax") == []
    refused = guest["check"]("tenants-db1.slice", "StartupCPUWeight", "100", said)
    assert (refused["accepted"], refused["outcome"]) == (False, "failed")
