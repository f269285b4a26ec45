"""The unit directory slicectl owns part of: manifest, foreign files, all-or-nothing writes,
rollback.

Why this module runs past 400 lines: the manifest, foreign files, all-or-nothing writes and
rollback each need their own failure cases, and the property test at the end drives them all at
once.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from examplecounts import examples
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from paths import TESTS

from slicectl.core.errors import OutputError
from slicectl.host.files.owned import sha256
from slicectl.host.files.unitdir import MANIFEST_NAME, Manifest, UnitDir, generated_path

FILES = {
    "tenants.slice": "[Unit]\nDescription=t\n",
    "tenants-a.slice": "[Unit]\nDescription=a\n",
    "tenants-a.slice.d/50-slicectl.conf": "[Slice]\nAllowedCPUs=0-3\n",
    "app.service.d/50-slicectl.conf": "[Service]\nSlice=tenants-a.slice\n",
}


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under root: files with their bytes, folders as None."""
    if not root.exists():
        return {}
    result: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            result[os.path.relpath(os.path.join(dirpath, d), root) + "/"] = None
        for f in filenames:
            p = Path(dirpath, f)
            result[os.path.relpath(p, root)] = p.read_bytes()
    return result


def mtimes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*")}


def test_first_write_creates_files_and_manifest(tmp_path: Path) -> None:
    root = tmp_path / "out"
    changes, _ = UnitDir(root).write(FILES, Manifest(placements={"a": frozenset({0, 1, 2, 3})},
                                                     source="t.yaml"))
    assert changes.created == tuple(sorted(FILES)) and changes.changed
    assert not changes.updated and not changes.removed
    for rel, text in FILES.items():
        assert (root / rel).read_text() == text
    data = json.loads((root / MANIFEST_NAME).read_text())
    assert data["format"] == "slicectl-manifest/1"
    assert data["source"] == "t.yaml"
    assert data["files"] == {rel: sha256(text.encode()) for rel, text in sorted(FILES.items())}
    assert data["placements"] == {"a": "0-3"}
    m = UnitDir(root).manifest()
    assert m.placements == {"a": frozenset({0, 1, 2, 3})} and set(m.files) == set(FILES)
    # No temporary files are left behind.
    assert not [p for p in root.rglob("*slicectl-tmp*")]


def test_identical_rewrite_changes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "out"
    UnitDir(root).write(FILES, Manifest())
    before, times = snapshot(root), mtimes(root)
    changes, _ = UnitDir(root).write(FILES, Manifest())
    assert not changes.changed
    assert changes.unchanged == tuple(sorted(FILES))
    assert snapshot(root) == before and mtimes(root) == times


def test_update_and_remove(tmp_path: Path) -> None:
    root = tmp_path / "out"
    UnitDir(root).write(FILES, Manifest())
    new = {k: v for k, v in FILES.items() if not k.startswith("app.service")}
    new["tenants-a.slice.d/50-slicectl.conf"] = "[Slice]\nAllowedCPUs=4-7\n"
    changes, _ = UnitDir(root).write(new, Manifest())
    assert changes.updated == ("tenants-a.slice.d/50-slicectl.conf",)
    assert changes.removed == ("app.service.d/50-slicectl.conf",)
    assert not (root / "app.service.d").exists()  # its empty folder goes too
    assert (root / "tenants-a.slice.d/50-slicectl.conf").read_text().endswith("4-7\n")
    assert set(UnitDir(root).manifest().files) == set(new)


def test_foreign_files_left_alone(tmp_path: Path) -> None:
    root = tmp_path / "out"
    root.mkdir()
    (root / "local.service").write_text("[Service]\nExecStart=/bin/true\n")
    (root / "app.service.d").mkdir()
    (root / "app.service.d" / "10-admin.conf").write_text("[Service]\nNice=5\n")
    UnitDir(root).write(FILES, Manifest())
    UnitDir(root).write({"tenants.slice": FILES["tenants.slice"]}, Manifest())
    assert (root / "local.service").read_text() == "[Service]\nExecStart=/bin/true\n"
    # slicectl's drop-in is removed, the admin's drop-in (and so its folder) stays.
    assert (root / "app.service.d" / "10-admin.conf").read_text() == "[Service]\nNice=5\n"
    assert not (root / "app.service.d" / "50-slicectl.conf").exists()


def test_planned_path_taken_by_foreign_file(tmp_path: Path) -> None:
    root = tmp_path / "out"
    UnitDir(root).write({"tenants.slice": FILES["tenants.slice"]}, Manifest())
    (root / "app.service.d").mkdir()
    (root / "app.service.d" / "50-slicectl.conf").write_text("# mine\n")
    before = snapshot(root)
    with pytest.raises(OutputError) as e:
        UnitDir(root).write(FILES, Manifest())
    assert str(e.value) == (f"{root}/app.service.d/50-slicectl.conf exists and was not "
                            "generated by slicectl")
    assert "slicectl never edits files it did not generate" in e.value.hint
    assert snapshot(root) == before


@pytest.mark.parametrize("fail_at", [1, 2, 3, 5])
def test_failure_midway_leaves_directory_as_before(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail_at: int) -> None:
    root = tmp_path / "out"
    old = {"tenants.slice": "old\n", "gone.service.d/50-slicectl.conf": "[Service]\n",
           "tenants-a.slice": "old a\n"}
    UnitDir(root).write(old, Manifest(placements={"a": frozenset({1})}))
    (root / "foreign.conf").write_text("keep\n")
    before = snapshot(root)
    calls = {"n": 0}
    real_replace = os.replace

    def failing_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        calls["n"] += 1
        if calls["n"] == fail_at:
            raise OSError(28, "No space left on device", str(dst))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OutputError) as e:
        UnitDir(root).write(FILES, Manifest())
    monkeypatch.setattr(os, "replace", real_replace)
    assert "No space left on device; nothing was changed" in str(e.value)
    assert f"check that {root} is writable" in e.value.hint
    assert snapshot(root) == before


def test_failure_on_first_write_into_new_directory_leaves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "new" / "out"
    (tmp_path / "new").mkdir()

    def failing_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        raise OSError(30, "Read-only file system", str(dst))

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OutputError, match="Read-only file system"):
        UnitDir(root).write(FILES, Manifest())
    assert not root.exists()


def test_file_where_a_folder_is_needed(tmp_path: Path) -> None:
    root = tmp_path / "out"
    root.mkdir()
    (root / "app.service.d").write_text("a file, not a folder\n")
    before = snapshot(root)
    with pytest.raises(OutputError) as e:
        UnitDir(root).write(FILES, Manifest())
    assert "app.service.d" in str(e.value)
    assert snapshot(root) == before


def test_rollback_after_success_restores_previous_state(tmp_path: Path) -> None:
    root = tmp_path / "out"
    old = {"tenants.slice": "old\n", "gone.service.d/50-slicectl.conf": "[Service]\n",
           "tenants-a.slice": "old a\n"}
    UnitDir(root).write(old, Manifest(placements={"a": frozenset({1})}))
    (root / "foreign.conf").write_text("keep\n")
    before = snapshot(root)
    changes, journal = UnitDir(root).write(FILES, Manifest())
    assert changes.removed == ("gone.service.d/50-slicectl.conf",)
    assert not (root / "gone.service.d").exists()
    assert snapshot(root) != before
    journal.rollback()
    assert snapshot(root) == before
    assert UnitDir(root).manifest().placements == {"a": frozenset({1})}


def test_rollback_removes_only_the_folders_slicectl_made(tmp_path: Path) -> None:
    root = tmp_path / "out"
    root.mkdir()
    (root / "app.service.d").mkdir()  # the admin's folder (empty, so rmdir would succeed)
    before = snapshot(root)
    files = {**FILES, "a/b/deep.conf": "x\n"}
    _, journal = UnitDir(root).write(files, Manifest())
    assert (root / "a" / "b" / "deep.conf").read_text() == "x\n"
    assert (root / "app.service.d" / "50-slicectl.conf").exists()
    journal.rollback()
    assert snapshot(root) == before
    assert (root / "app.service.d").is_dir() and not (root / "a").exists()


def test_rollback_of_first_write_removes_everything(tmp_path: Path) -> None:
    root = tmp_path / "out"
    _, journal = UnitDir(root).write(FILES, Manifest())
    journal.rollback()
    assert not root.exists()


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "cannot read slicectl's manifest"),
    ('{"format": "something-else"}', "not a slicectl manifest"),
    ("[1, 2]", "not a slicectl manifest"),
    ('{"format": "slicectl-manifest/1", "placements": {"a": "x-y"}}',
     "malformed slicectl manifest"),
])
def test_malformed_manifest(tmp_path: Path, content: str, message: str) -> None:
    root = tmp_path / "out"
    root.mkdir()
    (root / MANIFEST_NAME).write_text(content)
    before = snapshot(root)
    with pytest.raises(OutputError) as e:
        UnitDir(root).write(FILES, Manifest())
    assert str(e.value).startswith(f"{root / MANIFEST_NAME}: {message}")
    assert e.value.hint
    assert snapshot(root) == before


def test_manifest_path_outside_root_refused(tmp_path: Path) -> None:
    root = tmp_path / "out"
    root.mkdir()
    (tmp_path / "victim").write_text("precious\n")
    (root / MANIFEST_NAME).write_text(json.dumps(
        {"format": "slicectl-manifest/1",
         "files": {"../victim": sha256(b"precious\n"), "/etc/passwd": "0" * 64}}))
    with pytest.raises(OutputError) as e:
        UnitDir(root).write(FILES, Manifest())
    assert str(e.value) == f"{root / MANIFEST_NAME} lists '../victim', which is outside {root}"
    assert "run with --force to drop that entry" in e.value.hint
    # --force forgets the entries and never touches what they name.
    changes, _ = UnitDir(root).write(FILES, Manifest(), force=True)
    assert changes.forgotten == ("../victim", "/etc/passwd") and not changes.removed
    assert (tmp_path / "victim").read_text() == "precious\n"
    assert set(UnitDir(root).manifest().files) == set(FILES)


@pytest.mark.parametrize(("rel", "ok"), [
    ("tenants.slice", True), ("tenants-a.slice.d/50-slicectl.conf", True),
    ("slicectl-profile@.service", True), ("slicectl-profile@night.timer", True),
    ("cron.service.d/50-slicectl.conf", True),
    ("../victim.slice", False), ("/etc/x.slice", False), ("a/b.slice", False),
    ("x.service.d/10-admin.conf", False), ("x.service.d/50-slicectl.conf/", False),
    ("timers.target.d/50-slicectl.conf", True), ("x.target", True),
    ("local.conf", False), ("x.unit", False), ("x.slice\n", False), ("x.slice.d", False),
    (".slicectl-manifest.json", False), ("", False),
])
def test_generated_path_is_the_shape_of_slicectls_files(rel: str, ok: bool) -> None:
    assert generated_path(rel) is ok


def test_hand_edited_file_refused_unless_forced(tmp_path: Path) -> None:
    root = tmp_path / "out"
    UnitDir(root).write(FILES, Manifest())
    edited = root / "tenants-a.slice.d/50-slicectl.conf"
    edited.write_text("[Slice]\nAllowedCPUs=0-3\nCPUWeight=1\n")
    before = snapshot(root)
    for files in (FILES, {**FILES, "tenants-a.slice.d/50-slicectl.conf": "[Slice]\n"},
                  {k: v for k, v in FILES.items() if not k.startswith("tenants-a.slice.d")}):
        with pytest.raises(OutputError) as e:
            UnitDir(root).write(files, Manifest())
        assert str(e.value).startswith(f"{edited} was changed since slicectl generated it")
        assert "--force" in e.value.hint
        assert snapshot(root) == before
    changes, _ = UnitDir(root).write(FILES, Manifest(), force=True)
    assert changes.updated == ("tenants-a.slice.d/50-slicectl.conf",)
    assert edited.read_text() == FILES["tenants-a.slice.d/50-slicectl.conf"]
    # An edit that happens to match the new contents loses nothing: simply unchanged.
    edited.write_text("[Slice]\nAllowedCPUs=4-7\n")
    changes, _ = UnitDir(root).write(
        {**FILES, "tenants-a.slice.d/50-slicectl.conf": "[Slice]\nAllowedCPUs=4-7\n"},
        Manifest())
    assert "tenants-a.slice.d/50-slicectl.conf" in changes.unchanged


def test_failed_write_into_new_parents_removes_them_all(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "a" / "b" / "out"

    def failing_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        raise OSError(28, "No space left on device", str(dst))

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OutputError, match="No space left on device; nothing was changed"):
        UnitDir(root).write(FILES, Manifest())
    assert list(tmp_path.iterdir()) == []


def test_failure_that_is_not_an_os_error_is_rolled_back_too(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import slicectl.host.files.owned as owned

    root = tmp_path / "out"

    def broken(writes: object, new: object = ()) -> None:
        raise UnicodeEncodeError("utf-8", "x", 0, 1, "surrogates not allowed")

    monkeypatch.setattr(owned, "write_many", broken)
    with pytest.raises(UnicodeEncodeError):
        UnitDir(root).write(FILES, Manifest())
    assert list(tmp_path.iterdir()) == []  # no empty UNIT.d folder, no root


@pytest.mark.parametrize("kind", ["fifo", "folder", "symlink-to-folder"])
def test_something_other_than_a_file_at_a_planned_path_is_refused(
        tmp_path: Path, kind: str) -> None:
    root = tmp_path / "out"
    UnitDir(root).write(FILES, Manifest())
    path = root / "tenants-a.slice"
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)  # reading it would block forever: it is never opened for reading
    elif kind == "folder":
        path.mkdir()
    else:
        path.symlink_to(tmp_path)
    before = {p: p.lstat().st_mode for p in root.rglob("*")}
    with pytest.raises(OutputError) as e:
        UnitDir(root).write(FILES, Manifest())
    assert str(e.value).startswith(f"{path} is ")
    assert e.value.hint
    assert {p: p.lstat().st_mode for p in root.rglob("*")} == before


def test_symlinked_manifest_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "out"
    UnitDir(root).write(FILES, Manifest())
    real = tmp_path / "elsewhere.json"
    (root / MANIFEST_NAME).rename(real)
    (root / MANIFEST_NAME).symlink_to(real)
    with pytest.raises(OutputError, match="is a symbolic link"):
        UnitDir(root).manifest()


@pytest.mark.parametrize("files", ['{"a.slice": 5}', '["a.slice"]', '{"a.slice": null}'])
def test_manifest_files_must_map_paths_to_hashes(tmp_path: Path, files: str) -> None:
    root = tmp_path / "out"
    root.mkdir()
    (root / MANIFEST_NAME).write_text(f'{{"format": "slicectl-manifest/1", "files": {files}}}')
    with pytest.raises(OutputError, match="malformed slicectl manifest: expected an object"):
        UnitDir(root).manifest()


# --- the contract, on random states of the output directory -------------------------

CONFIGS = {
    "a": "version: 1\ntenants:\n  a: {cpus: 2, services: [a.service]}\n  b: {cpus: 2}\n",
    "b": "version: 1\ntenants:\n  a: {cpus: 2, cpu_weight: 300}\n"
         "  c: {cpus: 1, services: [c.service]}\n",
}
XEON = str(TESTS / "fixtures" / "topologies" / "xeon-2s-smt.json")
MANIFEST_ENTRIES = ["../outside.txt", "/etc/hostname", "local.conf", "x.service.d/10-admin.conf",
                    "zz.service.d/50-slicectl.conf", "tenants-b.slice"]


def generate_into(out: Path, config: Path, *more: str) -> tuple[int, str]:
    import contextlib
    import io

    from slicectl.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["generate", str(config), "--topology", XEON, "--out", str(out), *more])
    return code, err.getvalue()


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, bytes]]:
    """What each config generates into an empty folder (manifest aside)."""
    result = {}
    for name, text in CONFIGS.items():
        root = tmp_path_factory.mktemp(f"baseline-{name}")
        (root / f"{name}.yaml").write_text(text)  # the header names the file
        assert generate_into(root / "out", root / f"{name}.yaml")[0] == 0
        result[name] = {str(p.relative_to(root / "out")): p.read_bytes()
                        for p in (root / "out").rglob("*") if p.is_file()}
    return result


def entries(root: Path) -> dict[str, tuple[int, bytes | str | None]]:
    """Every entry under root, links not followed: st_mode and contents or link target."""
    result: dict[str, tuple[int, bytes | str | None]] = {}
    for dirpath, dirs, names in os.walk(root):
        for name in dirs + names:
            p = Path(dirpath, name)
            st = p.lstat()
            data = (os.readlink(p) if p.is_symlink() else
                    p.read_bytes() if p.is_file() else None)
            result[str(p.relative_to(root))] = (st.st_mode, data)
    return result


def mutate(out: Path, step: tuple[str, str]) -> None:
    """One change someone else made to the output directory."""
    kind, rel = step
    path = out / rel
    if kind in ("symlink", "dangling", "fifo", "foreign"):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
        path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "edit" and path.is_file() and not path.is_symlink():
        path.write_bytes(path.read_bytes() + b"CPUWeight=1\n")
    elif kind == "delete" and path.is_file():
        path.unlink()
    elif kind == "symlink":
        path.symlink_to(out.parent / ("elsewhere" if rel.endswith(".d") else "outside.txt"))
    elif kind == "dangling":
        path.symlink_to("/nonexistent")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "foreign":
        path.write_text("[Unit]\n")
    elif kind in ("listed", "listed-wrong-hash"):
        manifest = out / MANIFEST_NAME
        data = json.loads(manifest.read_text())
        target = out / rel
        right = kind == "listed" and target.is_file() and not target.is_symlink()
        data["files"][rel] = sha256(target.read_bytes()) if right else "0" * 64
        manifest.write_text(json.dumps(data))


def blocked(out: Path, planned: dict[str, bytes], force: bool) -> bool:
    """Whether slicectl must refuse this directory (the contract, restated from outside)."""
    listed = json.loads((out / MANIFEST_NAME).read_text())["files"]
    if not force and any(not generated_path(rel) for rel in listed):
        return True
    wanted = {rel: data for rel, data in planned.items() if rel != MANIFEST_NAME}
    paths = set(wanted) | {rel for rel in listed if generated_path(rel)}
    for rel in paths:
        if "/" in rel and (out / rel).parent.is_symlink():
            return True
        if not os.path.lexists(out / rel):
            continue
        path = out / rel
        if path.is_symlink() or not path.is_file():
            return True
        data = path.read_bytes()
        if rel not in listed and rel in wanted:
            return True  # someone else's file where slicectl writes
        if data != wanted.get(rel) and sha256(data) != listed.get(rel) and not force:
            return True  # edited by hand since slicectl wrote it
    return False


STEPS = st.lists(st.one_of(
    st.tuples(st.sampled_from(["edit", "delete", "symlink", "dangling", "fifo", "foreign"]),
              st.sampled_from(sorted(FILES_OF := [
                  "tenants.slice", "tenants-a.slice", "tenants-a.slice.d/50-slicectl.conf",
                  "tenants-b.slice", "tenants-c.slice", "a.service.d/50-slicectl.conf",
                  "c.service.d/50-slicectl.conf", "local.conf"]))),
    st.tuples(st.just("symlink"), st.sampled_from(["tenants-a.slice.d", "a.service.d"])),
    st.tuples(st.sampled_from(["listed", "listed-wrong-hash"]),
              st.sampled_from(MANIFEST_ENTRIES)),
), max_size=3)


@given(steps=STEPS, config=st.sampled_from(sorted(CONFIGS)), force=st.booleans())
@settings(max_examples=examples(60), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_generate_is_all_or_nothing_and_never_writes_someone_elses_file(
        baseline: dict[str, dict[str, bytes]], steps: list[tuple[str, str]], config: str,
        force: bool) -> None:
    """Generate into a directory slicectl wrote with config "a", then changed by others:
    either it succeeds (the directory then holds exactly the planned files, listed with their
    hashes, and everything else untouched) or it exits 1 with a clean error and leaves the
    whole folder (outside files included) byte for byte as it was."""
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        out = ws / "out"
        (ws / "outside.txt").write_text("precious\n")
        (ws / "elsewhere").mkdir()
        (ws / "elsewhere" / "50-slicectl.conf").write_text("# someone else's\n")
        for name, text in CONFIGS.items():
            (ws / f"{name}.yaml").write_text(text)
        assert generate_into(out, ws / "a.yaml")[0] == 0
        for step in steps:
            mutate(out, step)
        before = entries(ws)
        refuse = blocked(out, baseline[config], force)
        event("refused" if refuse else "written")
        code, err = generate_into(out, ws / f"{config}.yaml", *(["--force"] if force else []))
        assert "internal error" not in err and "Traceback" not in err, err
        if code != 0:
            assert code == 1 and err.startswith("error: ") and "\n  hint: " in err, err
            assert entries(ws) == before, "a failed generate changed the directory"
            assert refuse, f"refused a directory it may write:\n{err}"
            return
        assert not refuse, "wrote although the directory holds someone else's file"
        after = entries(ws)
        planned = {k: v for k, v in baseline[config].items() if k != MANIFEST_NAME}
        for rel, data in planned.items():
            assert after[f"out/{rel}"][1] == data, rel
        listed = json.loads((out / MANIFEST_NAME).read_text())["files"]
        assert listed == {rel: sha256(data) for rel, data in planned.items()}
        for key, value in before.items():
            rel = key.removeprefix("out/")
            ours = (rel in planned or rel == MANIFEST_NAME or key == "out"
                    or generated_path(rel) or generated_path(rel + "/50-slicectl.conf"))
            if not ours:
                assert after.get(key) == value, f"{key} was changed"


CHANGED = {
    "tenants.slice": FILES["tenants.slice"],
    "tenants-a.slice": "[Unit]\nDescription=a, changed\n",
    "tenants-a.slice.d/50-slicectl.conf": "[Slice]\nAllowedCPUs=4-7\n",
    "tenants-b.slice": "[Unit]\nDescription=b\n",
    "tenants-b.slice.d/50-slicectl.conf": "[Slice]\nAllowedCPUs=0-3\n",
}


def _write_then_die_after(root: Path, files: dict[str, str], renames: int) -> None:
    """Run UnitDir.write in a child process that dies (os._exit: no rollback, no cleanup, as
    under SIGKILL or a power cut) right after its `renames`-th os.replace."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        done = 0
        real_replace = os.replace

        def replace(src: str, dst: str) -> None:
            nonlocal done
            if done == renames:
                os._exit(0)
            real_replace(src, dst)
            done += 1

        os.replace = replace  # type: ignore[assignment]
        try:
            UnitDir(root).write(files, Manifest(source="t.yaml"))
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


@pytest.mark.parametrize("renames", range(8))
def test_a_write_cut_short_anywhere_leaves_files_the_next_write_owns(
        tmp_path: Path, renames: int) -> None:
    """Killed after any number of its renames (the intent manifest, the files, the final
    manifest), a write leaves each file in its old or new version, all of them named
    slicectl's by the manifest: the next write, back to the old files or on to the new ones,
    proceeds without --force and leaves no temporary file or pending entry behind."""
    root = tmp_path / "out"
    UnitDir(root).write(FILES, Manifest(source="t.yaml"))
    (root / "foreign.service").write_text("[Service]\nExecStart=/bin/true\n")
    _write_then_die_after(root, CHANGED, renames)
    for rel in set(FILES) | set(CHANGED):
        current = (root / rel).read_text() if (root / rel).exists() else None
        assert current in (FILES.get(rel), CHANGED.get(rel)), rel
    for target in (FILES, CHANGED):
        UnitDir(root).diff(target)  # raises if a file were not slicectl's to replace
    UnitDir(root).write(FILES, Manifest(source="t.yaml"))
    assert {rel: p.read_text() for rel in FILES if (p := root / rel).exists()} == FILES
    assert not (root / "tenants-b.slice").exists()
    assert "pending" not in json.loads((root / MANIFEST_NAME).read_text())
    assert list(root.rglob("*.slicectl-tmp")) == []
    assert (root / "foreign.service").read_text() == "[Service]\nExecStart=/bin/true\n"


def test_pending_manifest_entries_do_not_make_a_hand_edit_ours(tmp_path: Path) -> None:
    root = tmp_path / "out"
    UnitDir(root).write(FILES, Manifest(source="t.yaml"))
    _write_then_die_after(root, CHANGED, 1)  # only the intent manifest written
    (root / "tenants-a.slice").write_text("[Unit]\nDescription=edited by hand\n")
    with pytest.raises(OutputError, match="tenants-a.slice"):
        UnitDir(root).write(FILES, Manifest(source="t.yaml"))
