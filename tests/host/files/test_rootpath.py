"""`slicectl install --root DIR` stays inside DIR: a link in DIR is read as that system reads
it, one that leads out of DIR is refused before anything is written, an uninstall refuses a
manifest path outside the prefix before it removes anything; and what install makes has the
modes it means whatever the umask."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from apply.test_install import PREFIX, install, tree

from slicectl.cli import main


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    return root


def test_an_absolute_link_in_the_root_is_taken_inside_the_root(
        root: Path, tmp_path: Path) -> None:
    """A link to /SOMEWHERE in an image means the image's /SOMEWHERE (as `systemctl --root`
    reads it): install writes there, never on this host."""
    host = tmp_path / "host-share"
    host.mkdir()
    (root / PREFIX).mkdir(parents=True)
    (root / PREFIX / "share").symlink_to(host)
    inside = root / str(host).lstrip("/")
    inside.mkdir(parents=True)
    assert install(root) == 0
    assert list(host.iterdir()) == []
    assert (inside / "man/man5/slicectl-tenants.5").is_file()
    assert (inside / "bash-completion/completions/slicectl").is_file()
    assert main(["uninstall", "--root", str(root)]) == 0
    assert list(host.iterdir()) == [] and list(inside.iterdir()) == []
    assert (root / PREFIX / "share").is_symlink()


def test_a_link_that_leads_out_of_the_root_is_refused_before_anything_is_written(
        root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    host = tmp_path / "host-share"
    host.mkdir()
    (root / PREFIX).mkdir(parents=True)
    (root / PREFIX / "share").symlink_to("../../../host-share")  # root/.. is tmp_path
    before = tree(root)
    assert install(root) == 1
    assert tree(root) == before and list(host.iterdir()) == []
    err = capsys.readouterr().err
    assert (f"error: refusing /usr/local/share/bash-completion/completions/slicectl: the "
            f"symbolic link {root}/usr/local/share -> ../../../host-share leads out of {root}, "
            "and slicectl never follows a link there") in err
    assert "hint: replace that link with a folder" in err


def test_a_link_loop_in_the_root_is_refused(root: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """`usr/local -> /usr/local` in an image is that very link again, not this host's."""
    (root / "usr").mkdir()
    (root / PREFIX).symlink_to("/usr/local")
    assert install(root) == 1
    assert "too many symbolic links under" in capsys.readouterr().err
    assert tree(root) == {"/usr": "dir", "/usr/local": "-> /usr/local"}


def test_uninstall_refuses_a_link_that_now_leads_out_of_the_root(
        root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert install(root) == 0
    outside = tmp_path / "outside"
    shutil.copytree(root / PREFIX / "share", outside)
    shutil.rmtree(root / PREFIX / "share")
    (root / PREFIX / "share").symlink_to("../../../outside")
    before, kept = tree(root), tree(outside)
    assert main(["uninstall", "--root", str(root)]) == 1
    assert tree(root) == before and tree(outside) == kept
    assert "leads out of" in capsys.readouterr().err


@pytest.mark.parametrize(("listed", "kind"), [
    ("/usr/local/../../victim", "file"), ("/usr/local/lib/../../../victim", "file"),
    ("/victim", "file"), ("/usr/local/./lib/victim", "file"), ("/usr/local//victim", "file"),
    ("/usr/local/../..", "dir"), ("/etc", "dir"),
])
def test_uninstall_refuses_a_manifest_path_outside_the_prefix_and_removes_nothing(
        root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], listed: str,
        kind: str) -> None:
    assert install(root) == 0
    victim = tmp_path / "victim"
    victim.write_text("not slicectl's\n")
    (root / "victim").write_text("not slicectl's\n")
    (root / "etc").mkdir()
    manifest_path = root / PREFIX / "lib/slicectl/install-manifest.json"
    manifest = json.loads(manifest_path.read_text())
    if kind == "file":
        manifest["files"][listed] = {"sha256": hashlib.sha256(b"not slicectl's\n").hexdigest()}
    else:
        manifest["dirs"].append(listed)
    manifest_path.write_text(json.dumps(manifest))
    before = tree(root)
    capsys.readouterr()
    assert main(["uninstall", "--root", str(root)]) == 1
    assert tree(root) == before and victim.read_text() == "not slicectl's\n"
    err = capsys.readouterr().err
    assert f"error: {manifest_path} lists {listed!r}, a " in err, err
    assert "refusing to install or uninstall anything" in err
    assert "hint: the manifest was edited or damaged" in err
    assert install(root) == 1  # a reinstall, which removes what is no longer shipped, too
    assert tree(root) == before


def test_folders_are_0755_and_files_0644_whatever_the_umask(root: Path) -> None:
    old = os.umask(0o077)
    try:
        assert install(root) == 0
    finally:
        os.umask(old)
    modes = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            if not path.is_symlink():
                modes["/" + str(path.relative_to(root))] = path.stat().st_mode & 0o7777
    assert {m for p, m in modes.items() if tree(root)[p] == "dir"} == {0o755}
    assert {m for p, m in modes.items() if tree(root)[p] != "dir"} == {0o644}



def test_a_copy_in_the_roots_etc_is_noted_and_a_link_out_of_it_is_not_followed(
        root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    etc = root / "etc/systemd/system"
    etc.mkdir(parents=True)
    (etc / "slicectl-record.service").write_text("[Service]\nExecStart=/bin/true\n")
    assert install(root) == 0
    assert ("note: /etc/systemd/system/slicectl-record.service overrides the installed "
            "/usr/local/lib/systemd/system/slicectl-record.service") in capsys.readouterr().err
    assert main(["uninstall", "--root", str(root)]) == 0
    shutil.rmtree(root / "etc")
    outside = tmp_path / "outside"
    (outside / "system").mkdir(parents=True)
    (outside / "system/slicectl-record.service").write_text("[Service]\nExecStart=/bin/true\n")
    (root / "etc").mkdir()
    (root / "etc/systemd").symlink_to("../../outside")
    assert install(root) == 0
    assert "overrides" not in capsys.readouterr().err
