"""slicectl's own files (slicectl.host.files.owned): a file is replaced whole or not at all,
keeps the mode of the file it replaces, and no temporary file is left behind, whatever fails;
the undo journal puts back what was there, reporting what it cannot; and nothing else in
slicectl has its own temporary file and rename, or its own digest."""

from __future__ import annotations

import ast
import errno
import hashlib
import os
from pathlib import Path

import pytest
from paths import ROOT

from slicectl.core.errors import ApplyError
from slicectl.host.files.owned import (
    Undo,
    read_tagged,
    replace_link,
    sha256,
    write_atomically,
    write_folder,
    write_many,
    write_tree,
)


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o7777


def test_write_atomically_new_file_text_or_bytes(tmp_path: Path) -> None:
    write_atomically(tmp_path / "a.conf", "text\n")
    write_atomically(str(tmp_path / "b.conf"), b"\x00bytes\n", mode=0o600)
    assert (tmp_path / "a.conf").read_text() == "text\n" and mode(tmp_path / "a.conf") == 0o644
    assert (tmp_path / "b.conf").read_bytes() == b"\x00bytes\n"
    assert mode(tmp_path / "b.conf") == 0o600


def test_write_atomically_keeps_the_replaced_files_mode(tmp_path: Path) -> None:
    path = tmp_path / "tenants.yaml"
    path.write_text("old\n")
    path.chmod(0o640)
    write_atomically(path, "new\n")
    assert path.read_text() == "new\n" and mode(path) == 0o640
    write_atomically(path, "newer\n", mode=0o600)  # a mode asked for wins
    assert path.read_text() == "newer\n" and mode(path) == 0o600


def test_write_atomically_failing_leaves_the_target_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "unit.d"
    target.mkdir()  # a folder: the rename over it fails
    with pytest.raises(IsADirectoryError):
        write_atomically(target, "x\n")
    assert target.is_dir() and [p.name for p in tmp_path.iterdir()] == ["unit.d"]


def test_write_many_replaces_all_files_keeping_modes_and_leaves_no_temporaries(
        tmp_path: Path) -> None:
    old = tmp_path / "a.conf"
    old.write_text("old\n")
    old.chmod(0o600)
    write_many([(old, b"new a\n"), (tmp_path / "b.conf", b"new b\n")],
               new=[tmp_path / "b.conf"])
    assert old.read_text() == "new a\n" and (tmp_path / "b.conf").read_text() == "new b\n"
    assert mode(old) == 0o600 and mode(tmp_path / "b.conf") == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.conf", "b.conf"]


def test_write_many_replaces_nothing_when_a_file_cannot_be_written(tmp_path: Path) -> None:
    first = tmp_path / "a.conf"
    first.write_text("old\n")
    with pytest.raises(FileNotFoundError):
        write_many([(first, b"new\n"), (tmp_path / "missing" / "b.conf", b"x\n")])
    assert first.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["a.conf"]  # no temporary left behind


def test_write_many_across_folders(tmp_path: Path) -> None:
    (tmp_path / "x.service.d").mkdir()
    write_many([(tmp_path / "x.service.d" / "50-slicectl.conf", b"[Service]\n"),
                (tmp_path / "tenants.slice", b"[Slice]\n")])
    assert (tmp_path / "x.service.d" / "50-slicectl.conf").read_bytes() == b"[Service]\n"
    assert (tmp_path / "tenants.slice").read_bytes() == b"[Slice]\n"


def test_write_tree_makes_folders_and_leaves_no_temporary(tmp_path: Path) -> None:
    files = {"tenants.slice": b"[Slice]\n", "app.service.d/50-slicectl.conf": b"[Service]\n"}
    write_tree(str(tmp_path / "out"), files, sync=False)
    written = {str(p.relative_to(tmp_path / "out")): p.read_bytes()
               for p in (tmp_path / "out").rglob("*") if p.is_file()}
    assert written == files
    assert mode(tmp_path / "out" / "app.service.d") == 0o755


def test_write_tree_replaces_a_link_instead_of_writing_through_it(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_bytes(b"keep\n")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "a.slice").symlink_to(outside)
    (tmp_path / "out" / "b.d").symlink_to(tmp_path)  # a link where a folder belongs
    write_tree(str(tmp_path / "out"), {"a.slice": b"new\n", "b.d/c.conf": b"c\n"})
    assert outside.read_bytes() == b"keep\n"
    assert not (tmp_path / "out" / "a.slice").is_symlink()
    assert (tmp_path / "out" / "a.slice").read_bytes() == b"new\n"
    assert not (tmp_path / "out" / "b.d").is_symlink() and not (tmp_path / "c.conf").exists()


def test_write_folder_appears_whole_and_clears_a_stale_staging(tmp_path: Path) -> None:
    staging = tmp_path / ".record.new"
    staging.mkdir()
    (staging / "stale").write_bytes(b"left by a run cut short\n")
    write_folder(str(tmp_path / "record"), {"a": b"a\n"}, staging=str(staging))
    assert [p.name for p in (tmp_path / "record").iterdir()] == ["a"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record"]
    write_folder(str(tmp_path / "empty"), {}, staging=str(tmp_path / ".empty.new"))
    assert list((tmp_path / "empty").iterdir()) == []


def test_replace_link_replaces_a_file_or_a_link_whole(tmp_path: Path) -> None:
    link = tmp_path / "current"
    link.write_bytes(b"a file\n")
    replace_link(link, "units-1")
    assert os.readlink(link) == "units-1"
    replace_link(str(link), "units-2")
    assert os.readlink(link) == "units-2"
    assert [p.name for p in tmp_path.iterdir()] == ["current"]


def test_sha256_is_the_standard_digest() -> None:
    assert sha256(b"[Slice]\n") == hashlib.sha256(b"[Slice]\n").hexdigest()


@pytest.mark.parametrize(("raw", "expected"), [
    (b'{"format": "x/1", "files": {}}', {"format": "x/1", "files": {}}),
    (b'{"format": "y/1"}', None),
    (b'{"files": {}}', None),
    (b"[1, 2]", None),
])
def test_read_tagged_returns_only_the_named_format(raw: bytes,
                                                    expected: dict[str, object] | None) -> None:
    assert read_tagged(raw, "x/1") == expected


@pytest.mark.parametrize("raw", [b"{not json", b"\xff\xfe"])
def test_read_tagged_raises_value_error_on_what_is_not_json(raw: bytes) -> None:
    with pytest.raises(ValueError):
        read_tagged(raw, "x/1")


# -- the undo journal


def test_undo_puts_back_bytes_and_mode_link_target_absence_and_folders(tmp_path: Path) -> None:
    kept = tmp_path / "kept.conf"
    kept.write_bytes(b"old\n")
    kept.chmod(0o600)
    link = tmp_path / "link"
    link.symlink_to("target-before")
    undo = Undo()
    undo.record(kept)
    write_atomically(kept, b"new\n", 0o644)
    undo.record(link)
    replace_link(link, "target-after")
    folder = tmp_path / "made" / "deeper"
    folder.mkdir(parents=True)
    undo.record_folders([tmp_path / "made", folder])
    new = folder / "new.conf"
    undo.record(new)
    new.write_bytes(b"made\n")
    assert undo.rollback() == []
    assert kept.read_bytes() == b"old\n" and mode(kept) == 0o600
    assert link.is_symlink() and os.readlink(link) == "target-before"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.conf", "link"]
    assert not undo and undo.rollback() == []  # forgotten once run


def test_undo_puts_back_contents_the_caller_read_in_a_folder_that_went(
        tmp_path: Path) -> None:
    dropin = tmp_path / "app.service.d" / "50-slicectl.conf"
    dropin.parent.mkdir()
    dropin.write_bytes(b"[Service]\n")
    undo = Undo()
    undo.record_contents(dropin, dropin.read_bytes())
    dropin.unlink()
    dropin.parent.rmdir()
    assert undo.rollback() == []
    assert dropin.read_bytes() == b"[Service]\n"


def test_undo_leaves_a_folder_it_made_that_holds_someone_elses_file(tmp_path: Path) -> None:
    folder = tmp_path / "made"
    folder.mkdir()
    undo = Undo()
    undo.record_folders([folder])
    (folder / "theirs").write_bytes(b"x\n")
    assert undo.rollback() == []
    assert (folder / "theirs").exists()


def test_undo_refuses_to_record_what_it_could_not_put_back(tmp_path: Path) -> None:
    with pytest.raises(OSError) as e:
        Undo().record(tmp_path)
    assert e.value.errno == errno.EINVAL


def test_undo_runs_labelled_steps_last_first_and_reports_each_failure(tmp_path: Path) -> None:
    ran: list[str] = []
    undo = Undo()

    def refused() -> None:
        ran.append("refused")
        raise ApplyError("systemd said no", "")

    def failing() -> None:
        ran.append("failing")
        raise OSError(errno.EACCES, "Permission denied")

    undo.add("first", lambda: ran.append("first"))
    undo.add("the recorded placement", refused)
    undo.add("a file", failing)
    undo.add("last", lambda: ran.append("last"))
    assert undo.rollback() == [("a file", "Permission denied"),
                               ("the recorded placement", "systemd said no")]
    assert ran == ["last", "failing", "refused", "first"]


# -- one owner: nothing else has its own temporary file and rename, or its own digest

OWNER = "slicectl/host/files/owned.py"
# module -> (call, why it is not the owner's concept); every other call is the owner's.
EXCEPTIONS = {
    ("slicectl/exporter/access.py", "hashlib.sha256"):
        "keys the cache of checked credentials by their digest, so that the header itself is "
        "not kept; a digest of a secret in memory, not of a file slicectl wrote",
}
OWNED_CALLS = {"os.replace", "tempfile.mkstemp", "hashlib.sha256"}


def owned_calls(tree: ast.AST) -> set[str]:
    """The calls of OWNED_CALLS in `tree`, as `module.name`, however imported."""
    names = {alias.asname or alias.name: f"{node.module}.{alias.name}"
             for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
             for alias in node.names}
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            name = f"{func.value.id}.{func.attr}"
        elif isinstance(func, ast.Name):
            name = names.get(func.id, func.id)
        else:
            continue
        if name in OWNED_CALLS:
            found.add(name)
    return found


def test_only_the_owner_replaces_files_makes_temporaries_or_digests() -> None:
    found = set()
    for module in sorted((ROOT / "slicectl").rglob("*.py")):
        rel = str(module.relative_to(ROOT))
        if rel != OWNER:
            found |= {(rel, call) for call in owned_calls(ast.parse(module.read_text(), rel))}
    assert found == set(EXCEPTIONS), (
        "use slicectl.host.files.owned (write_atomically, write_many, replace_link, "
        "write_tree, write_folder, sha256) instead, or declare the exception with its reason")


def test_the_guard_sees_each_way_of_calling() -> None:
    tree = ast.parse("import os\nfrom tempfile import mkstemp as m\nimport hashlib\n"
                     "os.replace('a', 'b')\nm()\nhashlib.sha256(b'')\n")
    assert owned_calls(tree) == OWNED_CALLS


# Every module that writes files atomically, and what it writes: tenants.yaml only through
# tenantsfile, whose compare-and-swap keeps one edit from losing another's.
ATOMIC_WRITERS = {
    "slicectl/host/files/tenantsfile.py": "tenants.yaml, for every edit (replace_tenants)",
    "slicectl/apply/generator_mode.py": "generator mode's own copy in /etc/slicectl (replaced "
                                        "whole from apply's source, under the unit "
                                        "directory's lock)",
    "slicectl/host/files/unitdir.py": "the units and the manifest of a unit directory",
    "slicectl/apply/transaction.py": "files an apply puts back on rollback",
    "slicectl/apply/install.py": "the files `slicectl install` places",
    "slicectl/host/files/balance_state_file.py": "the balancer's state",
    "slicectl/host/files/placement_record.py": "the generator's last good placement",
    "slicectl/generator/__init__.py": "the generator's units in /run/systemd/generator",
}
# The writers of slicectl.host.files.owned, the one owner of atomic writes.
WRITERS = {"write_atomically", "write_many", "write_tree", "write_folder", "replace_link"}


def test_only_the_declared_modules_write_files_atomically() -> None:
    """A new writer of tenants.yaml would need one of the owner's writers (its own temp +
    rename is refused above): it has to be declared here, with what it writes."""
    found = set()
    for module in sorted((ROOT / "slicectl").rglob("*.py")):
        tree = ast.parse(module.read_text(), str(module))
        if any(isinstance(node, ast.ImportFrom) and node.module == "slicectl.host.files.owned"
               and {alias.name for alias in node.names} & WRITERS
               or isinstance(node, ast.Attribute) and node.attr in WRITERS
               and isinstance(node.value, ast.Name) and node.value.id == "owned"
               for node in ast.walk(tree)):
            found.add(str(module.relative_to(ROOT)))
    assert found == set(ATOMIC_WRITERS)
