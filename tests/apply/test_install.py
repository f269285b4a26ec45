"""`slicectl install` / `uninstall` into a temporary root: every file where systemd, man and
the shells look, ExecStart= running the given slicectl, the real `systemd-analyze verify` and
`man` on what was placed, and an uninstall that removes exactly that: a file changed since is
kept, nothing foreign is touched."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT
from unitcheck import parse_unit, systemd_verify

from slicectl.cli import main
from slicectl.cli.install import command, unit_text

PAGES = sorted(p.name for p in (ROOT / "man").glob("slicectl*.[15]"))
UNITS = sorted(p.name for p in (ROOT / "units").glob("*.service"))
PREFIX = "usr/local"


def slicectl_here() -> str:
    """A slicectl console script that exists (systemd-analyze verify checks ExecStart's)."""
    beside = Path(sys.executable).with_name("slicectl")
    found = str(beside) if beside.exists() else shutil.which("slicectl")
    if found is None:
        pytest.fail("no slicectl console script: pip install .")
    return found


def expected_files() -> set[str]:
    local = "/usr/local"
    return ({f"{local}/lib/systemd/system/{u}" for u in UNITS}
            | {f"{local}/lib/sysusers.d/slicectl-exporter.conf",
               f"{local}/share/bash-completion/completions/slicectl",
               f"{local}/share/zsh/site-functions/_slicectl",
               f"{local}/share/fish/vendor_completions.d/slicectl.fish",
               f"{local}/bin/slicectl", f"{local}/bin/slicectl-generator",
               f"{local}/lib/slicectl/install-manifest.json"}
            | {f"{local}/share/man/man{p[-1]}/{p}" for p in PAGES})


def tree(root: Path) -> dict[str, str]:
    """Every path under root → what it is (a file's SHA-256, a link's target, a folder)."""
    found = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            rel = "/" + str(path.relative_to(root))
            if path.is_symlink():
                found[rel] = "-> " + os.readlink(path)
            elif path.is_dir():
                found[rel] = "dir"
            else:
                found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def install(root: Path, *extra: str) -> int:
    return main(["install", "--root", str(root), "--slicectl", slicectl_here(), *extra])


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    return root


def test_every_file_is_placed_where_systemd_man_and_the_shells_look(root: Path) -> None:
    assert install(root) == 0
    placed = {p for p, kind in tree(root).items() if kind != "dir"}
    assert placed == expected_files()
    assert len(PAGES) > 10 and "slicectl-tenants.5" in PAGES
    manifest = json.loads((root / PREFIX / "lib/slicectl/install-manifest.json").read_text())
    assert set(manifest["files"]) == expected_files() - {
        "/usr/local/lib/slicectl/install-manifest.json"}
    unit = "/usr/local/lib/systemd/system/slicectl-record.service"
    assert manifest["files"][unit] == {
        "sha256": hashlib.sha256((root / unit.lstrip("/")).read_bytes()).hexdigest()}
    here = Path(slicectl_here())
    assert os.readlink(root / PREFIX / "bin/slicectl") == str(here)
    assert os.readlink(root / PREFIX / "bin/slicectl-generator") == str(
        here.with_name("slicectl-generator"))


def test_exec_start_runs_the_given_slicectl(root: Path) -> None:
    assert install(root) == 0
    for name in UNITS:
        shipped = parse_unit((ROOT / "units" / name).read_text())["Service"]["ExecStart"]
        placed = parse_unit((root / PREFIX / "lib/systemd/system" / name).read_text())
        exec_start = placed["Service"]["ExecStart"]
        assert exec_start == shipped.replace("/usr/local/bin/slicectl", slicectl_here(), 1)
        assert exec_start.startswith(slicectl_here() + " ")


def test_exec_start_quotes_a_path_with_spaces_and_percent() -> None:
    text = ("[Service]\nExecStart=/usr/local/bin/slicectl record --once\n"
            "# ExecStart=/usr/local/bin/slicectl x\n")
    assert unit_text(text, ("/opt/my tools/slicectl",)) == (
        '[Service]\nExecStart="/opt/my tools/slicectl" record --once\n'
        "# ExecStart=/usr/local/bin/slicectl x\n")
    assert "ExecStart=/opt/100%%/slicectl record" in unit_text(text, ("/opt/100%/slicectl",))


def test_installed_units_pass_systemd_analyze_verify(root: Path, tmp_path: Path) -> None:
    assert install(root) == 0
    systemd_verify(root / PREFIX / "lib/systemd/system", tmp_path)


def test_man_finds_the_installed_pages(root: Path) -> None:
    assert install(root) == 0
    man = shutil.which("man")
    if man is None:
        pytest.fail("man is not installed (tests/run installs man-db)")
    for page, heading in (("slicectl", "SLICECTL(1)"), ("slicectl-apply", "SLICECTL-APPLY(1)"),
                          ("slicectl-tenants", "SLICECTL-TENANTS(5)")):
        proc = subprocess.run([man, "-M", str(root / PREFIX / "share/man"), page],
                              capture_output=True, text=True, timeout=60,
                              env={**os.environ, "MANPAGER": "cat", "MANWIDTH": "100"})
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(heading), proc.stdout[:200]


def test_bash_loads_the_installed_completion(root: Path) -> None:
    assert install(root) == 0
    script = root / PREFIX / "share/bash-completion/completions/slicectl"
    proc = subprocess.run(["bash", "-c", f"source '{script}' && complete -p slicectl"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "slicectl" in proc.stdout, proc.stderr
    assert (root / PREFIX / "share/zsh/site-functions/_slicectl").read_text().startswith(
        "#compdef slicectl")


def test_uninstall_removes_exactly_what_install_placed(root: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    """Folders that were there stay, with the files someone else put in them."""
    (root / PREFIX / "share/man/man1").mkdir(parents=True)
    (root / PREFIX / "share/man/man1/other.1").write_text(".TH OTHER 1\n")
    (root / PREFIX / "bin").mkdir()
    (root / PREFIX / "bin/tool").write_text("#!/bin/sh\n")
    before = tree(root)
    assert install(root) == 0
    assert set(tree(root)) > set(before)
    capsys.readouterr()
    assert main(["uninstall", "--root", str(root)]) == 0
    assert tree(root) == before
    out = capsys.readouterr().out
    assert f"removed /usr/local/lib/systemd/system/{UNITS[0]}" in out
    assert "removed folder /usr/local/lib/systemd" in out


def test_uninstall_keeps_a_file_changed_since_and_says_so(root: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    assert install(root) == 0
    unit = root / PREFIX / "lib/systemd/system/slicectl-exporter.service"
    unit.write_text(unit.read_text().replace(":19116", ":9999"))
    edited = unit.read_text()
    capsys.readouterr()
    assert main(["uninstall", "--root", str(root)]) == 0
    assert unit.read_text() == edited
    assert {p for p, kind in tree(root).items() if kind != "dir"} == {
        "/usr/local/lib/systemd/system/slicectl-exporter.service"}
    out, err = capsys.readouterr()
    assert ("keep /usr/local/lib/systemd/system/slicectl-exporter.service (changed since "
            "slicectl installed it: not removed)") in out
    assert "1 file(s) changed since slicectl installed them were kept" in err


def test_reinstall_changes_nothing(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert install(root) == 0
    first = tree(root)
    capsys.readouterr()
    assert install(root) == 0
    assert tree(root) == first
    out = capsys.readouterr().out
    assert "wrote" not in out and "replaced" not in out and "linked" not in out
    assert f"({len(expected_files()) - 1} file(s) already up to date)" in out


def test_reinstall_keeps_a_changed_file_and_replaces_the_others(
        root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert install(root) == 0
    page = root / PREFIX / "share/man/man1/slicectl.1"
    page.write_text("local notes\n")
    assert main(["install", "--root", str(root), "--slicectl", "/opt/slicectl/bin/slicectl"]
                ) == 0
    assert page.read_text() == "local notes\n"
    out = capsys.readouterr().out
    assert "keep /usr/local/share/man/man1/slicectl.1 (changed since" in out
    assert "replaced /usr/local/lib/systemd/system/slicectl-record.service" in out
    unit = (root / PREFIX / "lib/systemd/system/slicectl-record.service").read_text()
    assert "ExecStart=/opt/slicectl/bin/slicectl record " in unit
    assert os.readlink(root / PREFIX / "bin/slicectl") == "/opt/slicectl/bin/slicectl"
    assert main(["uninstall", "--root", str(root)]) == 0
    assert page.read_text() == "local notes\n"  # still the operator's


def test_install_never_overwrites_a_file_it_did_not_place(
        root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    units = root / PREFIX / "lib/systemd/system"
    units.mkdir(parents=True)
    (units / "slicectl-record.service").write_text("[Service]\nExecStart=/bin/true\n")
    before = tree(root)
    assert install(root) == 1
    assert tree(root) == before
    err = capsys.readouterr().err
    assert ("error: not installed: slicectl did not place "
            "/usr/local/lib/systemd/system/slicectl-record.service") in err
    assert "hint: move it away" in err


def test_a_command_already_on_path_is_left_alone(root: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """pip or pipx may have put slicectl in /usr/local/bin: install links nothing over it."""
    (root / PREFIX / "bin").mkdir(parents=True)
    (root / PREFIX / "bin/slicectl").write_text("#!/bin/sh\n")
    assert install(root) == 0
    assert (root / PREFIX / "bin/slicectl").read_text() == "#!/bin/sh\n"
    assert "skip /usr/local/bin/slicectl (not slicectl's: left alone)" in capsys.readouterr().out
    assert main(["uninstall", "--root", str(root)]) == 0
    assert (root / PREFIX / "bin/slicectl").read_text() == "#!/bin/sh\n"


def test_dry_run_lists_and_changes_nothing(root: Path, capsys: pytest.CaptureFixture[str]
                                           ) -> None:
    assert install(root, "--dry-run") == 0
    assert tree(root) == {}
    out = capsys.readouterr().out
    assert "would write /usr/local/lib/systemd/system/slicectl-record.service" in out
    assert f"would link /usr/local/bin/slicectl -> {slicectl_here()}" in out
    assert install(root) == 0
    placed = tree(root)
    capsys.readouterr()
    assert main(["uninstall", "--root", str(root), "--dry-run"]) == 0
    assert tree(root) == placed
    out = capsys.readouterr().out
    assert "would remove /usr/local/share/man/man5/slicectl-tenants.5" in out
    assert "would remove folder /usr/local/share/man" in out


def test_a_file_no_longer_shipped_is_removed_at_reinstall(root: Path) -> None:
    assert install(root) == 0
    old = root / PREFIX / "share/man/man1/slicectl-gone.1"
    old.write_text("old page\n")
    manifest_path = root / PREFIX / "lib/slicectl/install-manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["files"]["/usr/local/share/man/man1/slicectl-gone.1"] = {
        "sha256": hashlib.sha256(b"old page\n").hexdigest()}
    manifest_path.write_text(json.dumps(manifest))
    assert install(root) == 0
    assert not old.exists()
    assert "/usr/local/share/man/man1/slicectl-gone.1" not in manifest_path.read_text()


def test_a_failure_midway_puts_everything_back(root: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A file where install needs a folder: the files written before it are taken back."""
    (root / PREFIX / "share/man").mkdir(parents=True)
    (root / PREFIX / "share/man/man5").write_text("not a folder\n")
    before = tree(root)
    assert install(root) == 1
    assert tree(root) == before
    err = capsys.readouterr().err
    assert "error: install failed:" in err and "nothing was changed" in err


def test_the_default_slicectl_is_the_running_console_script(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under --root (a venv in an image being built) it is named as the target sees it."""
    import argparse

    venv = root / "opt/slicectl/bin"
    venv.mkdir(parents=True)
    (venv / "slicectl").write_text("#!/bin/sh\n")
    monkeypatch.setattr(sys, "argv", [str(venv / "slicectl"), "install"])
    args = argparse.Namespace(slicectl=None)
    assert command(args, root) == ("/opt/slicectl/bin/slicectl",)
    assert command(args, Path("/")) == (str(venv / "slicectl"),)
    monkeypatch.setattr(sys, "argv", ["/x/slicectl/__main__.py", "install"])
    assert command(args, Path("/")) == (sys.executable, "-m", "slicectl")


@pytest.mark.parametrize(("argv", "code", "message", "hint"), [
    (["install", "--prefix", "usr/local"], 2, "--prefix usr/local: not an absolute path",
     "give the path on the target system"),
    (["install", "--slicectl", "bin/slicectl"], 2, "--slicectl bin/slicectl: not an absolute",
     "systemd runs ExecStart= by absolute path"),
    (["uninstall"], 1, "nothing to uninstall: no install manifest at",
     "give the --prefix and --root that install was given"),
])
def test_bad_input_is_a_located_error_with_a_hint(
        root: Path, capsys: pytest.CaptureFixture[str], argv: list[str], code: int,
        message: str, hint: str) -> None:
    assert main([*argv, "--root", str(root)]) == code
    err = capsys.readouterr().err
    assert f"error: {message}" in err and f"hint: {hint}" in err and "Traceback" not in err


def test_a_missing_root_or_a_damaged_manifest_is_reported(
        root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["install", "--root", str(root / "missing")]) == 2
    assert "--root" in capsys.readouterr().err
    manifest = root / PREFIX / "lib/slicectl/install-manifest.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text('{"format": "other"}')
    assert main(["uninstall", "--root", str(root)]) == 1
    err = capsys.readouterr().err
    assert f"error: {manifest}: not a slicectl install manifest" in err
    assert manifest.exists()


def test_uninstall_leaves_generator_mode_alone(root: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`generator enable` linked the generator of the virtual environment: uninstall neither
    removes that link nor pretends generator mode is off."""
    assert install(root) == 0
    link = root / "etc/systemd/system-generators/slicectl-generator"
    link.parent.mkdir(parents=True)
    link.symlink_to(Path(slicectl_here()).with_name("slicectl-generator"))
    assert main(["uninstall", "--root", str(root)]) == 0
    assert link.is_symlink()
    assert "note: generator mode stays on" in capsys.readouterr().err


def test_uninstall_that_cannot_remove_a_file_says_so(root: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert install(root) == 0

    def refused(self: Path, missing_ok: bool = False) -> None:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "unlink", refused)
    assert main(["uninstall", "--root", str(root)]) == 1
    err = capsys.readouterr().err
    assert "error: uninstall stopped: " in err and "Permission denied" in err
    assert "hint: run as root, then run uninstall again" in err
    assert (root / PREFIX / "lib/slicectl/install-manifest.json").exists()


@pytest.mark.parametrize("bad", ["\n", "\r", "\t", "\x00", "\x1b", "\x9b"])
def test_a_slicectl_path_with_a_control_character_is_refused_before_anything_is_written(
        root: Path, capsys: pytest.CaptureFixture[str], bad: str) -> None:
    """A newline in ExecStart='s path would inject a directive into every installed unit."""
    value = f"/opt/x{bad}ExecStartPre=/bin/sh"
    assert main(["install", "--root", str(root), "--slicectl", value]) == 1
    assert tree(root) == {}
    err = capsys.readouterr().err
    assert f"error: --slicectl /opt/x{ascii(bad)[1:-1]}ExecStartPre=/bin/sh: contains a " \
        f"control character (U+{ord(bad):04X})" in err, err


def test_the_running_slicectls_path_with_a_newline_is_refused(
        root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    venv = root / "opt/a\nExecStartPre=/bin/sh/bin"
    venv.mkdir(parents=True)
    (venv / "slicectl").write_text("#!/bin/sh\n")
    before = tree(root)
    monkeypatch.setattr(sys, "argv", [str(venv / "slicectl"), "install"])
    assert main(["install", "--root", str(root)]) == 1
    assert tree(root) == before
    err = capsys.readouterr().err
    assert "error: this slicectl's path (give --slicectl PATH) /opt/a\\nExecStartPre=" in err


@pytest.mark.parametrize("executable", ["-/opt/slicectl", "@/opt/slicectl", "+/x", "|/x"])
def test_an_executable_systemd_would_read_a_prefix_off_is_refused(executable: str) -> None:
    from slicectl.core.errors import RenderError

    with pytest.raises(RenderError) as e:
        unit_text("[Service]\nExecStart=/usr/local/bin/slicectl x\n", (executable,))
    assert "as a prefix of ExecStart=" in e.value.message


def test_a_dollar_is_a_variable_in_an_argument_only() -> None:
    """systemd expands $VAR in ExecStart='s arguments, not in the executable's path."""
    text = "[Service]\nExecStart=/usr/local/bin/slicectl record --once\n"
    assert "ExecStart=/opt/$HOME/slicectl record" in unit_text(text, ("/opt/$HOME/slicectl",))
    assert 'ExecStart=/usr/bin/python3 -m "/opt/$$x y" record' in unit_text(
        text, ("/usr/bin/python3", "-m", "/opt/$x y"))


@pytest.mark.parametrize("executable", ['/opt/"x"/slicectl', "/opt/x\\y/slicectl"])
def test_an_executable_with_a_quote_or_backslash_is_refused(executable: str) -> None:
    from slicectl.core.errors import RenderError

    with pytest.raises(RenderError) as e:
        unit_text("[Service]\nExecStart=/usr/local/bin/slicectl x\n", (executable,))
    assert "systemd refuses an executable whose name holds" in e.value.message
