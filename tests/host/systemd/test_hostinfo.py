"""Facts about this host that are not in sysfs (slicectl.host.systemd.hostinfo): the release of the
installed systemd, read from the name of its shared library, else asked of `systemctl
--version` (a fake one on PATH here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from slicectl.host.systemd.hostinfo import systemd_version


def fake_systemctl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "systemctl").write_text(f"#!/bin/sh\n{script}\n")
    (bin_dir / "systemctl").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))


def test_the_release_of_the_first_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_systemctl(tmp_path, monkeypatch, 'echo "systemd 252 (252.38-1~deb12u1)"\n'
                                          'echo "+PAM +AUDIT +SELINUX"')
    assert systemd_version(()) == 252


def test_a_failing_systemctl_is_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_systemctl(tmp_path, monkeypatch, 'echo "systemd 252"; exit 1')
    assert systemd_version(()) is None


def test_no_systemctl_is_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build host without systemd."""
    monkeypatch.setenv("PATH", str(tmp_path))
    assert systemd_version(()) is None


def test_the_release_in_the_shared_library_s_name(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """No process started (the generator asks at every boot): PATH has no systemctl."""
    monkeypatch.setenv("PATH", str(tmp_path))
    (tmp_path / "lib").mkdir()
    for name in ("libsystemd-core-257.so", "libsystemd-shared-257.so", "systemd-executor"):
        (tmp_path / "lib" / name).touch()
    assert systemd_version((str(tmp_path / "missing"), str(tmp_path / "lib"))) == 257


def test_two_shared_libraries_ask_systemctl(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """An upgrade under way leaves two: systemctl says which one runs."""
    fake_systemctl(tmp_path, monkeypatch, 'echo "systemd 256 (256.7-1)"')
    (tmp_path / "lib").mkdir()
    for name in ("libsystemd-shared-255.so", "libsystemd-shared-256.so"):
        (tmp_path / "lib" / name).touch()
    assert systemd_version((str(tmp_path / "lib"),)) == 256


def test_this_host_s_release_agrees_with_systemctl() -> None:
    """Where systemd is installed (the suite's hosts), the library's name and systemctl agree."""
    import subprocess

    first = subprocess.run(["systemctl", "--version"], capture_output=True, text=True,
                           check=True).stdout.split()[1]
    assert systemd_version() == int(first)
