"""`slicectl install` as a command (slicectl.cli.install): what it places under a prefix, the
ExecStart= of the units it places, and the options it refuses before placing anything.
Installing into a root, reinstalling and uninstalling are in test_install.py."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from slicectl.cli.install import _prefix, _root, command, entries, unit_text
from slicectl.core.errors import UsageError

UNIT = """\
[Service]
ExecStart=/usr/local/bin/slicectl exporter --listen :19116
ExecStartPre=/usr/local/bin/slicectl validate /etc/slicectl/tenants.yaml
"""


def args(**values: object) -> argparse.Namespace:
    return argparse.Namespace(**{"root": None, "prefix": None, "slicectl": None, **values})


def test_exec_start_runs_the_given_slicectl_and_nothing_else_changes() -> None:
    assert unit_text(UNIT, ("/opt/venv/bin/python", "-m", "slicectl")) == UNIT.replace(
        "ExecStart=/usr/local/bin/slicectl exporter",
        "ExecStart=/opt/venv/bin/python -m slicectl exporter")
    assert unit_text(UNIT, ("/usr/local/bin/slicectl",)) == UNIT


def test_a_path_with_a_space_is_quoted_for_systemd() -> None:
    line = unit_text(UNIT, ("/opt/my tools/slicectl",)).splitlines()[1]
    assert line == 'ExecStart="/opt/my tools/slicectl" exporter --listen :19116'


def test_the_units_run_the_slicectl_given_or_this_one_as_the_target_sees_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert command(args(slicectl="/opt/bin/slicectl"), Path("/")) == ("/opt/bin/slicectl",)
    script = tmp_path / "image" / "opt" / "venv" / "bin" / "slicectl"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    monkeypatch.setattr("sys.argv", [str(script)])
    # installing into an image: the venv's path inside the image
    assert command(args(), tmp_path / "image") == ("/opt/venv/bin/slicectl",)
    assert command(args(), Path("/")) == (str(script),)


def test_a_relative_slicectl_or_prefix_is_refused() -> None:
    with pytest.raises(UsageError) as e:
        command(args(slicectl="bin/slicectl"), Path("/"))
    assert (e.value.message, e.value.hint, e.value.exit_code) == (
        "--slicectl bin/slicectl: not an absolute path",
        "systemd runs ExecStart= by absolute path: give e.g. /opt/slicectl/bin/slicectl", 2)
    with pytest.raises(UsageError) as e:
        _prefix(args(prefix="usr/local"))
    assert (e.value.message, e.value.hint) == (
        "--prefix usr/local: not an absolute path",
        "give the path on the target system, e.g. --prefix /usr/local")


def test_a_root_that_is_not_a_folder(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as e:
        _root(args(root=str(tmp_path / "missing")))
    assert e.value.message == f"--root {tmp_path / 'missing'}: not a folder"
    assert _prefix(args(prefix="/usr/local/")) == "/usr/local"


def test_what_is_placed_under_the_prefix() -> None:
    placed = {e.path: e for e in entries("/usr/local", ("/opt/venv/bin/slicectl",))}
    assert "/usr/local/lib/systemd/system/slicectl-exporter.service" in placed
    assert "/usr/local/lib/sysusers.d/slicectl-exporter.conf" in placed
    assert {"/usr/local/share/bash-completion/completions/slicectl",
            "/usr/local/share/zsh/site-functions/_slicectl",
            "/usr/local/share/fish/vendor_completions.d/slicectl.fish"} <= set(placed)
    assert "/usr/local/share/man/man5/slicectl-tenants.5" in placed
    exporter = placed["/usr/local/lib/systemd/system/slicectl-exporter.service"].data
    assert exporter is not None and b"ExecStart=/opt/venv/bin/slicectl exporter" in exporter
    links = {p: e.link for p, e in placed.items() if e.link is not None}
    assert links == {"/usr/local/bin/slicectl": "/opt/venv/bin/slicectl",
                     "/usr/local/bin/slicectl-generator": "/opt/venv/bin/slicectl-generator"}
    assert all(placed[p].optional for p in links)


def test_no_command_links_for_python_m_or_a_script_on_the_prefix_already() -> None:
    as_module = entries("/usr/local", ("/usr/bin/python3", "-m", "slicectl"))
    assert not [e for e in as_module if e.link is not None]
    on_prefix = entries("/usr/local", ("/usr/local/bin/slicectl",))
    assert not [e for e in on_prefix if e.link is not None]


def test_units_running_a_slicectl_with_spaces_percent_and_dollar_pass_verify(
        tmp_path: Path) -> None:
    """What systemd reads back is the path as it is: quoted for the space, %% for the
    specifier sign, `$` kept (the executable's path is not expanded)."""
    from unitcheck import systemd_verify

    executable = tmp_path / "my tools" / "100%" / "$HOME" / "slicectl"
    executable.parent.mkdir(parents=True)
    executable.write_text("#!/bin/sh\n")
    executable.chmod(0o755)
    units = tmp_path / "units"
    units.mkdir()
    for entry in entries("/usr/local", (str(executable),)):
        if entry.path.endswith(".service") and entry.data is not None:
            (units / entry.path.rsplit("/", 1)[1]).write_bytes(entry.data)
            quoted = str(executable).replace("%", "%%")
            assert f'ExecStart="{quoted}" ' in entry.data.decode()
    systemd_verify(units, tmp_path)
