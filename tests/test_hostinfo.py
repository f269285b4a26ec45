"""Facts about this host that are not in sysfs (slicectl.host.hostinfo): the release of the
installed systemd, asked of `systemctl --version` (a fake one on PATH here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from slicectl.host.hostinfo import systemd_version


def fake_systemctl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "systemctl").write_text(f"#!/bin/sh\n{script}\n")
    (bin_dir / "systemctl").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))


def test_the_release_of_the_first_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_systemctl(tmp_path, monkeypatch, 'echo "systemd 252 (252.38-1~deb12u1)"\n'
                                          'echo "+PAM +AUDIT +SELINUX"')
    assert systemd_version() == 252


def test_a_failing_systemctl_is_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_systemctl(tmp_path, monkeypatch, 'echo "systemd 252"; exit 1')
    assert systemd_version() is None


def test_no_systemctl_is_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build host without systemd."""
    monkeypatch.setenv("PATH", str(tmp_path))
    assert systemd_version() is None
