"""`slicectl exporter` as a command (slicectl.cli.exporter): options refused before anything is
read, the textfile written once, and a host whose topology cannot be read served without the
locality ratio. The HTTP server under load and Prometheus scraping it are in test_exporter.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from paths import TESTS

from slicectl.cli import main

CGROUP = str(TESTS / "fixtures" / "cgroup")


def test_web_config_is_for_the_http_server_only(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["exporter", "--textfile", str(tmp_path / "m.prom"), "--web-config",
                 str(tmp_path / "web.yml")]) == 2
    assert capsys.readouterr().err == (
        "error: --web-config is for the HTTP server, not --textfile\n"
        "  hint: node_exporter serves the textfile: give it the web config\n")
    assert not (tmp_path / "m.prom").exists()


def test_a_bad_listen_address_fails_before_anything_is_read(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["exporter", "--listen", "localhost", "--cgroup-root", "/nonexistent"]) == 1
    assert capsys.readouterr().err == (
        "error: --listen 'localhost': not ADDR:PORT with a port 0-65535\n"
        "  hint: give ADDR:PORT, e.g. 127.0.0.1:19116, :19116 or [::1]:19116\n")


def test_textfile_once_without_a_topology(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "slicectl.prom"
    assert main(["exporter", "--textfile", str(out), "--cgroup-root", CGROUP, "--sysfs",
                 str(tmp_path / "no-sysfs")]) == 0
    err = capsys.readouterr().err
    assert err.startswith("warning: ") and err.endswith(
        "; slicectl_memory_local_ratio is left out\n")
    samples = [line for line in out.read_text().splitlines() if not line.startswith("#")]
    assert any(line.startswith("slicectl_cpu_usage_seconds_total{") for line in samples)
    assert not any(line.startswith("slicectl_memory_local_ratio") for line in samples)
    assert main(["exporter", "--textfile", str(out), "--cgroup-root", CGROUP, "--sysfs",
                 str(TESTS / "fixtures" / "sysfs" / "xeon-2s-smt")]) == 0
    assert "\nslicectl_memory_local_ratio{" in out.read_text()  # with one, it is there


def test_drift_needs_a_readable_topology(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """With --tenants the exporter places them, so it cannot go on without the topology."""
    tenants = tmp_path / "t.yaml"
    tenants.write_text("version: 1\ntenants:\n  db1: {cpus: 1}\n")
    assert main(["exporter", "--textfile", str(tmp_path / "m.prom"), "--cgroup-root", CGROUP,
                 "--sysfs", str(tmp_path / "no-sysfs"), "--tenants", str(tenants)]) == 1
    assert capsys.readouterr().err.startswith("error: ")
    assert not (tmp_path / "m.prom").exists()
