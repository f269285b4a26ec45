"""The README's "Install on a host" for real: a virtual environment made with the Python
this one was made from, `pip install` of the package (built from this checkout, no test
tools), then `slicectl install` and `uninstall` into a folder standing for the host's root.
It fetches the dependencies (or takes them from pip's cache), so it is in the external tier
(tests/run)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# What the package is built from (pyproject.toml's packages and package data).
SOURCES = ("pyproject.toml", "README.md", "slicectl", "templates", "units", "man")


def run(*argv: str | Path) -> str:
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    assert proc.returncode == 0, f"{argv}: {proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.mark.external
@pytest.mark.long
def test_venv_under_opt_then_slicectl_install(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for name in SOURCES:
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy
        copy(ROOT / name, source / name)
    host = tmp_path / "host"
    venv = host / "opt/slicectl"
    run(os.path.realpath(sys.executable), "-m", "venv", venv)
    run(venv / "bin/pip", "install", "-q", source)
    assert not (venv / "bin/pytest").exists()  # the package alone
    before = sorted(p.relative_to(host) for p in host.rglob("*"))

    out = run(venv / "bin/slicectl", "install", "--root", host)
    unit = (host / "usr/local/lib/systemd/system/slicectl-exporter.service").read_text()
    # The venv is in the image at /opt/slicectl: the units name it so.
    assert "\nExecStart=/opt/slicectl/bin/slicectl exporter --listen :19116\n" in unit
    assert os.readlink(host / "usr/local/bin/slicectl") == "/opt/slicectl/bin/slicectl"
    pages = host / "usr/local/share/man"
    assert (pages / "man5/slicectl-tenants.5").read_bytes() == (
        ROOT / "man/slicectl-tenants.5").read_bytes()
    assert len(list((pages / "man1").glob("slicectl*.1"))) == len(list(
        (ROOT / "man").glob("slicectl*.1")))
    assert "wrote /usr/local/share/bash-completion/completions/slicectl" in out

    run(venv / "bin/slicectl", "uninstall", "--root", host)
    assert sorted(p.relative_to(host) for p in host.rglob("*")) == before
