"""`slicectl write`: a mapping into tenants.yaml, comments kept; `plan --contents`."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from paths import ROOT, TESTS

from slicectl.cli import main
from slicectl.core.config.config import load_yaml, parse_config
from slicectl.core.config.yamledit import merge_document as merge
from slicectl.core.errors import ConfigError
from slicectl.host.files.tenantsfile import write_tenants

if TYPE_CHECKING:
    from slicectl.demo.fakesystemd import FakeSystemd

ANNOTATED = """\
# Tenants of db07 (kept by hand: the CMDB writes the values)
version: 1
housekeeping: {cpus: 2}   # two CPUs for the host itself
tenants:
  # the main database
  db1:
    cpus: 8          # placed by slicectl
    memory_max: "24G"
    services: [oracle@db1.service]
  db2: {cpus: 2, cpu_weight: 50}
"""


def data(text: str) -> Any:
    """The plain data of a YAML text (what a configuration tool would hold)."""
    return json.loads(json.dumps(load_yaml(text, "t.yaml")))


def test_same_data_gives_the_same_text() -> None:
    assert merge(ANNOTATED, data(ANNOTATED)) == ANNOTATED


def test_changed_values_keep_comments_order_and_spelling() -> None:
    new = data(ANNOTATED)
    new["tenants"]["db1"]["cpus"] = 4
    new["tenants"]["db1"]["services"].append("oracle@db1b.service")
    new["tenants"]["db2"]["cpu_weight"] = 80
    assert merge(ANNOTATED, new) == ANNOTATED.replace(
        "cpus: 8          # placed", "cpus: 4          # placed").replace(
        "[oracle@db1.service]", "[oracle@db1.service, oracle@db1b.service]").replace(
        "cpu_weight: 50}", "cpu_weight: 80}")


def test_removed_keys_go_and_new_ones_follow_their_siblings_style() -> None:
    new = data(ANNOTATED)
    del new["tenants"]["db1"]["services"]
    new["tenants"]["web"] = {"cpu_weight": 200}
    new["profiles"] = {"night": {"db1": {"cpus": 4}}}
    text = merge(ANNOTATED, new)
    assert "services" not in text and "# placed by slicectl" in text
    assert text.endswith("  db2: {cpus: 2, cpu_weight: 50}\n  web: {cpu_weight: 200}\n"
                         "profiles:\n  night:\n    db1:\n      cpus: 4\n")
    assert data(text) == new


def test_flow_style_siblings_give_a_flow_style_tenant() -> None:
    text = "version: 1\ntenants:\n  a: {cpus: 2}\n"
    assert merge(text, {"version": 1, "tenants": {"a": {"cpus": 2}, "b": {"cpus": 1}}}) == \
        "version: 1\ntenants:\n  a: {cpus: 2}\n  b: {cpus: 1}\n"


def test_types_are_compared_not_just_values() -> None:
    text = "version: 1\ntenants:\n  a: {exclusive: true, cpus: 1}\n"
    # 1 == True in Python, but YAML `true` and `1` are different settings.
    new = merge(text, {"version": 1, "tenants": {"a": {"exclusive": 1, "cpus": "1"}}})
    assert new == "version: 1\ntenants:\n  a: {exclusive: 1, cpus: '1'}\n"


def test_new_file() -> None:
    assert merge(None, {"version": 1, "tenants": {"a": {"cpus": 2, "services": ["x.service"]}}}) \
        == "version: 1\ntenants:\n  a:\n    cpus: 2\n    services:\n    - x.service\n"


def test_write_validates_first_and_writes_atomically(tmp_path: Path) -> None:
    path = tmp_path / "tenants.yaml"
    path.write_text(ANNOTATED)
    bad = data(ANNOTATED)
    bad["tenants"]["db2"]["cpu_wieght"] = 1
    with pytest.raises(ConfigError) as e:
        write_tenants(str(path), bad)
    assert [str(p) for p in e.value.problems] == [
        f"{path}:10: tenants.db2.cpu_wieght: unknown key"]
    assert path.read_text() == ANNOTATED
    good = data(ANNOTATED)
    good["tenants"]["db2"]["cpu_weight"] = 60
    change = write_tenants(str(path), good, check=True)
    assert change.changed and change.before == ANNOTATED and path.read_text() == ANNOTATED
    change = write_tenants(str(path), good)
    assert path.read_text() == change.after and "cpu_weight: 60" in change.after
    parse_config(load_yaml(change.after, str(path)), str(path))
    assert not write_tenants(str(path), good).changed


def test_cli_write_from_stdin_json(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "etc" / "tenants.yaml"  # the folder is made too
    doc = {"version": 1, "tenants": {"web": {"cpu_weight": 200}}}
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(doc)))
    assert main(["write", str(path), "--from", "-", "--json", "--check"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report == {"path": str(path), "changed": True, "before": None,
                      "after": "version: 1\ntenants:\n  web:\n    cpu_weight: 200\n"}
    assert not path.exists()
    source = tmp_path / "doc.yaml"
    source.write_text("version: 1\ntenants: {web: {cpu_weight: 200}}\n")
    assert main(["write", str(path), "--from", str(source)]) == 0
    assert capsys.readouterr().out == f"{path}: wrote 4 line(s) (new file)\n"
    assert main(["write", str(path), "--from", str(source)]) == 0
    assert capsys.readouterr().out == f"{path}: up to date\n"


def test_cli_write_errors_are_located(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "tenants.yaml"
    path.write_text("version: 1\ntenants: {a: [}\n")
    source = tmp_path / "doc.json"
    source.write_text('{"version": 1, "tenants": {"a": {}}}')
    assert main(["write", str(path), "--from", str(source)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}:2: ")
    assert "hint: check indentation" in err
    source.write_text("[1, 2]")
    assert main(["write", str(path), "--from", str(source)]) == 1
    assert capsys.readouterr().err == (
        f"error: {source}: expected a mapping (version, tenants, ...)\n"
        "  hint: give the whole tenants.yaml document as one mapping\n")
    assert path.read_text() == "version: 1\ntenants: {a: [}\n"


# --- plan --json --contents, plan --templates ----------------------------------------------------

TENANTS = "version: 1\ntenants:\n  db1: {cpus: 2, cpu_weight: 300}\n"


async def test_plan_contents_and_templates(tmp_path: Path, dbus_daemon: str,
                                           fake_systemd: FakeSystemd,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    tenants = tmp_path / "tenants.yaml"
    tenants.write_text(TENANTS)
    units = tmp_path / "units"
    units.mkdir()
    topology = TESTS / "fixtures/topologies/xeon-2s-smt.json"
    host = ["--unit-dir", str(units), "--cgroup-root", str(fake_systemd.cgroup_root),
            "--bus", dbus_daemon, "--topology", str(topology)]

    def plan(*args: str) -> dict[str, Any]:
        assert main(["plan", str(tenants), "--json", *host, *args]) == 0
        result: dict[str, Any] = json.loads(capsys.readouterr().out)
        return result

    contents = (await asyncio.to_thread(plan, "--contents"))["changes"]["files"]["contents"]
    assert set(contents) == {"tenants.slice", "tenants-db1.slice",
                             "tenants-db1.slice.d/50-slicectl.conf"}
    dropin = contents["tenants-db1.slice.d/50-slicectl.conf"]
    assert dropin["before"] is None and "CPUWeight=300" in dropin["after"]
    # Files slicectl generated before: their text is the `before` side.
    assert main(["generate", str(tenants), "--topology", str(topology), "--out",
                 str(units)]) == 0
    capsys.readouterr()
    old = (units / "tenants-db1.slice.d/50-slicectl.conf").read_text()
    tenants.write_text(TENANTS.replace("300", "500"))
    contents = (await asyncio.to_thread(plan, "--contents"))["changes"]["files"]["contents"]
    assert list(contents) == ["tenants-db1.slice.d/50-slicectl.conf"]
    dropin = contents["tenants-db1.slice.d/50-slicectl.conf"]
    assert dropin["before"] == old and "CPUWeight=300" in old
    assert dropin["after"] == old.replace("CPUWeight=300", "CPUWeight=500")
    assert "contents" not in (await asyncio.to_thread(plan))["changes"]["files"]
    # --templates: plan renders with the templates apply will use.
    templates = tmp_path / "templates"
    templates.mkdir()
    source = ROOT / "templates"
    for name in ("slice.j2", "dropin.j2"):
        (templates / name).write_text("# site template\n" + (source / name).read_text())
    contents = (await asyncio.to_thread(plan, "--contents", "--templates", str(templates)))[
        "changes"]["files"]["contents"]
    assert contents["tenants-db1.slice"]["after"].startswith("# site template\n")


def test_cli_write_check_shows_the_diff_and_changes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "tenants.yaml"
    before = "version: 1\ntenants:\n  web:\n    cpu_weight: 100  # keep this comment\n"
    path.write_text(before)
    source = tmp_path / "doc.yaml"
    source.write_text("version: 1\ntenants: {web: {cpu_weight: 200}}\n")
    assert main(["write", str(path), "--from", str(source), "--check"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"{path}: would write 4 line(s) (comments kept)"
    assert f"--- {path}\n+++ {path} (new)\n" in out
    assert "-    cpu_weight: 100  # keep this comment\n" in out
    assert "+    cpu_weight: 200  # keep this comment\n" in out
    assert path.read_text() == before

