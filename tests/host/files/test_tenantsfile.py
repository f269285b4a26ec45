"""tenants.yaml on disk: the one reader (every verb refuses the same files alike) and the one
writer (a compare-and-swap under the file's lock); `slicectl write`: a mapping into
tenants.yaml, comments kept; `plan --contents`."""

from __future__ import annotations

import asyncio
import io
import json
import os
import stat
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from badtenants import UNREADABLE
from paths import ROOT, TESTS

from slicectl.cli import main
from slicectl.core.config.config import load_yaml, parse_config
from slicectl.core.config.yamledit import merge_document as merge
from slicectl.core.errors import ConfigError, OutputError
from slicectl.host.files import tenantsfile
from slicectl.host.files.lock import escaped_path, lock_file, lock_folder
from slicectl.host.files.tenantsfile import locked_tenants, replace_tenants, write_tenants

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



# --- the one reader and the one writer of tenants.yaml --------------------------------------

BASE = "version: 1\ntenants:\n  web: {cpu_weight: 100}\n"


def _cli_write(tmp_path: Path, tenants: Path) -> list[str]:
    source = tmp_path / "doc.json"
    source.write_text('{"version": 1, "tenants": {"web": {"cpu_weight": 200}}}')
    return ["write", str(tenants), "--from", str(source)]


def _cli_recommend(tmp_path: Path, tenants: Path) -> list[str]:
    samples = tmp_path / "samples.csv"
    samples.write_text("time,unit,anon,active_file\n" + "".join(
        f"{1_717_200_000 + i * 60},tenants-web.slice,{1 << 30},0\n" for i in range(200)))
    return ["recommend", "--samples", str(samples), "--startup", "0", "--write", str(tenants)]


def _cli_validate(tmp_path: Path, tenants: Path) -> list[str]:
    return ["validate", str(tenants)]


ENTRY_POINTS = {"write": _cli_write, "recommend --write": _cli_recommend,
                "validate": _cli_validate}


@pytest.mark.parametrize("verb", ENTRY_POINTS)
@pytest.mark.parametrize("case", UNREADABLE)
def test_every_verb_refuses_an_unreadable_file_alike(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], verb: str, case: str) -> None:
    """`write`, `recommend --write` and `validate` read tenants.yaml with one reader: the same
    located error for a file that is not UTF-8, holds a NUL, is too large or is not a regular
    file (the TUI's edit dialog: tests/tui/screens/test_edit.py), and nothing written."""
    tenants = tmp_path / "tenants.yaml"
    make, message, hint = UNREADABLE[case]
    argv = ENTRY_POINTS[verb](tmp_path, tenants)
    make(tenants)
    before = os.lstat(tenants)
    assert main(argv) == 1
    assert capsys.readouterr().err == f"error: {tenants}{message}\n  hint: {hint}\n"
    after = os.lstat(tenants)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_a_write_from_a_stale_text_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "tenants.yaml"
    path.write_text(BASE)
    newer = BASE.replace("100", "150")
    for expected in (BASE.replace("100", "50"), None):  # edited from another text; from none
        with pytest.raises(OutputError) as e:
            replace_tenants(str(path), newer, expected)
        assert (e.value.message, e.value.hint) == (
            f"{path} changed since it was read (another edit?); nothing was written",
            "read it again and redo the change")
        assert path.read_text() == BASE
    with pytest.raises(OutputError):  # edited from a file that is gone since
        replace_tenants(str(tmp_path / "gone.yaml"), newer, BASE)
    assert sorted(os.listdir(tmp_path)) == ["tenants.yaml"]
    assert replace_tenants(str(path), newer, BASE) and path.read_text() == newer
    assert not replace_tenants(str(path), newer, newer)  # the same text: nothing to write


def test_cli_write_refuses_when_another_edit_lands_meanwhile(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`slicectl write` merged into the text it read; another edit saved after that read is
    kept, not overwritten, and the user is told to redo the change."""
    path = tmp_path / "tenants.yaml"
    path.write_text(BASE)
    theirs = BASE + "  db: {cpus: 2}\n"
    planned = tenantsfile.plan_write

    def then_another_edit(path_: str, data_: Any) -> Any:
        change = planned(path_, data_)
        path.write_text(theirs)  # e.g. an operator's editor, saving now
        return change

    monkeypatch.setattr(tenantsfile, "plan_write", then_another_edit)
    assert main(_cli_write(tmp_path, path)) == 1
    assert capsys.readouterr().err == (
        f"error: {path} changed since it was read (another edit?); nothing was written\n"
        "  hint: read it again and redo the change\n")
    assert path.read_text() == theirs


def test_an_edit_waits_for_the_one_holding_the_file_and_then_finds_it_changed(
        tmp_path: Path) -> None:
    """Two edits of the same text: the second waits on the first's lock, and then, the file
    no longer holding the text it was made from, is refused: exactly one wins, none lost."""
    path = tmp_path / "tenants.yaml"
    path.write_text(BASE)
    ours, theirs = BASE.replace("100", "200"), BASE.replace("100", "300")
    waiting = threading.Event()
    outcome: list[bool | OutputError] = []

    def other_edit() -> None:
        try:
            outcome.append(replace_tenants(str(path), theirs, BASE,
                                           on_wait=lambda _holder: waiting.set()))
        except OutputError as e:
            outcome.append(e)

    with locked_tenants(str(path)) as held:
        thread = threading.Thread(target=other_edit)
        thread.start()
        assert waiting.wait(60), "the other edit did not wait for the lock"
        assert held.holds(BASE) and path.read_text() == BASE
        assert held.replace(ours, BASE)
    thread.join(60)
    assert len(outcome) == 1 and isinstance(outcome[0], OutputError)
    assert "changed since it was read" in outcome[0].message
    assert path.read_text() == ours


def test_edits_of_one_text_at_once_one_wins(tmp_path: Path) -> None:
    path = tmp_path / "tenants.yaml"
    path.write_text(BASE)
    texts = [BASE.replace("100", str(200 + i)) for i in range(4)]
    start = threading.Barrier(len(texts))
    won: list[str] = []
    refused: list[str] = []

    def edit(text: str) -> None:
        start.wait()
        try:
            replace_tenants(str(path), text, BASE)
            won.append(text)
        except OutputError as e:
            refused.append(e.message)

    threads = [threading.Thread(target=edit, args=(t,)) for t in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(won) == 1 and len(refused) == len(texts) - 1
    assert path.read_text() == won[0]


def test_the_mode_and_a_link_are_kept_and_the_lock_is_private(tmp_path: Path) -> None:
    """The file keeps its mode; a link to it stays a link (the file it names is rewritten);
    the lock lives in slicectl's private lock folder, nothing beside tenants.yaml."""
    repo = tmp_path / "repo"
    repo.mkdir()
    real = repo / "tenants.yaml"
    real.write_text(BASE)
    real.chmod(0o640)
    link = tmp_path / "tenants.yaml"
    link.symlink_to(real)
    assert replace_tenants(str(link), BASE.replace("100", "200"), BASE)
    assert link.is_symlink() and real.read_text() == BASE.replace("100", "200")
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["repo", "tenants.yaml",
                                                           "tenants.yaml"]
    lock = lock_file(real)
    assert lock.parent == lock_folder() and lock.name == \
        f"{escaped_path(str(real.resolve()))}.lock"
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600

