"""`slicectl generator` and generator mode in the CLI (slicectl.cli.generator): where it finds
the installed generator, and the warning verbs print on a host whose generator fell back.
Enabling and disabling against the fake systemd are in test_generator_mode.py."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

from slicectl.cli.generator import generator_executable, generator_note, paths_of
from slicectl.core.errors import SlicectlError


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_the_generator_beside_slicectl_first(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    beside = executable(tmp_path / "venv/bin/slicectl-generator")
    executable(tmp_path / "usr/bin/slicectl-generator")
    monkeypatch.setattr(sys, "argv", [str(executable(tmp_path / "venv/bin/slicectl"))])
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python/bin/python3"))
    monkeypatch.setenv("PATH", str(tmp_path / "usr/bin"))
    assert generator_executable() == str(beside)


def test_else_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    on_path = executable(tmp_path / "usr/bin/slicectl-generator")
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "elsewhere/slicectl")])
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python/bin/python3"))
    monkeypatch.setenv("PATH", str(tmp_path / "usr/bin"))
    assert generator_executable() == str(on_path)


def test_not_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "slicectl")])
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python3"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SlicectlError) as e:
        generator_executable()
    assert (e.value.message, e.value.hint) == (
        "slicectl-generator is not installed beside slicectl",
        "install the package (pip install .): it brings both commands")


def test_paths_under_a_root(tmp_path: Path) -> None:
    paths = paths_of(argparse.Namespace(root=str(tmp_path)))
    assert paths.tenants == tmp_path / "etc/slicectl/tenants.yaml"
    assert paths_of(argparse.Namespace()).link == Path(
        "/etc/systemd/system-generators/slicectl-generator")


def test_a_fallen_back_generator_is_reported(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    args = argparse.Namespace(root=str(tmp_path))
    paths = paths_of(args)
    error = paths.output / ".slicectl-generator-error"
    error.parent.mkdir(parents=True)
    error.write_text("/etc/slicectl/tenants.yaml:3: tenants.db1.cpus: must be at least 1\n")
    generator_note(args)  # files mode: the generator's notes are not ours to show
    assert capsys.readouterr().err == ""
    paths.link.parent.mkdir(parents=True)
    paths.link.symlink_to("/usr/local/bin/slicectl-generator")
    generator_note(args)
    assert capsys.readouterr().err == (
        "warning: the generator's last run failed: /etc/slicectl/tenants.yaml:3: "
        "tenants.db1.cpus: must be at least 1\n")
    error.unlink()
    generator_note(args)
    assert capsys.readouterr().err == ""
