"""`slicectl recommend`: the documented answer on a synthetic series, from SQLite and CSV."""

from __future__ import annotations

import difflib
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from paths import ROOT

from slicectl.cli import main
from slicectl.core.advice.recommend import Sample, recommend, sustained_max
from slicectl.host.cgroup.recorder import RecorderRow, open_db, write_rows
from slicectl.host.planning import load_tenants

G = 1 << 30
M = 1 << 20
T0 = 1_717_200_000  # 2024-06-01T00:00:00Z
DAYS = 8


def footprint_at(minute: int) -> int:
    """Start-up 20G for an hour, then steady 4G with a 5-minute 12G spike (an anomaly) and a
    30-minute 6G plateau (a real level): the documented example."""
    if minute < 60:
        return 20 * G
    if 2000 <= minute < 2005:
        return 12 * G
    if 5000 <= minute < 5030:
        return 6 * G
    return 4 * G


def series(days: float = DAYS, scale: int = 1) -> list[Sample]:
    """One sample a minute; active_file is a quarter of the footprint."""
    out = []
    for m in range(int(days * 1440)):
        f = footprint_at(m) // scale
        out.append(Sample(T0 + m * 60, f - f // 4, f // 4))
    return out


def test_documented_answer() -> None:
    [r] = recommend({"tenants-web.slice": series()})
    assert (r.footprint, r.memory_low, r.memory_high, r.memory_max) == (6 * G, 6 * G,
                                                                        6 * G + 512 * M, 7 * G)
    assert r.peak == 12 * G and r.warnings == ()
    assert "anomaly" in r.reasons["footprint"]


def test_short_data_warns() -> None:
    [r] = recommend({"x.slice": series(days=2)})
    assert r.memory_max == 5 * G  # the plateau at minute 5000 is not in two days
    assert any("at least a week" in w for w in r.warnings)


def test_only_startup_data() -> None:
    [r] = recommend({"x.slice": series(days=0.02)})
    assert r.memory_max is None and "start-up" in r.warnings[0]


def test_parameters_change_the_answer() -> None:
    [r] = recommend({"x.slice": series()}, startup_s=0, hold_s=60, headroom=2 * G)
    assert r.footprint == 20 * G and r.memory_max == 22 * G


@given(st.lists(st.integers(0, 100), min_size=1, max_size=60), st.integers(1, 10))
def test_sustained_max_matches_brute_force(values: list[int], hold: int) -> None:
    points = [(float(i), v) for i, v in enumerate(values)]
    windows = [min(values[i:i + hold]) for i in range(len(values)) if i + hold < len(values)]
    assert sustained_max(points, hold) == (max(windows) if windows else None)


def _recommend_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert main(["recommend", "--json", *args]) == 0
    data = json.loads(capsys.readouterr().out)
    assert isinstance(data, dict)
    return data


def _sizes(data: dict[str, object], unit: str) -> tuple[object, ...]:
    units = data["units"]
    assert isinstance(units, list)
    [u] = [u for u in units if u["unit"] == unit]
    return u["footprint"], u["memory_low"], u["memory_high"], u["memory_max"]


DOCUMENTED = (6 * G, 6 * G, 6 * G + 512 * M, 7 * G)


def test_from_sqlite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "record.db"
    conn = open_db(db)
    # One commit per round, as the recorder does, but without waiting for the disk: 11,520
    # synced commits took 15 s.
    conn.execute("PRAGMA synchronous=OFF")
    for s in series():
        write_rows(conn, s.time, [RecorderRow("tenants-web.slice",
                                              "tenants.slice/tenants-web.slice", s.anon, 0,
                                              s.active_file, s.footprint, 0.0, 0, 0)])
    conn.close()
    assert _sizes(_recommend_json(capsys, "--db", str(db)), "tenants-web.slice") == DOCUMENTED


def _write_csv(path: Path, iso: bool) -> None:
    lines = ["time,unit,anon,active_file"]
    for s in series():
        when = (datetime.fromtimestamp(s.time, UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if iso
                else str(int(s.time)))
        lines.append(f"{when},tenants-web.slice,{s.anon},{s.active_file}")
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("iso", [False, True], ids=["epoch", "iso8601"])
def test_from_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str], iso: bool) -> None:
    path = tmp_path / "samples.csv"
    _write_csv(path, iso)
    data = _recommend_json(capsys, "--samples", str(path))
    assert _sizes(data, "tenants-web.slice") == DOCUMENTED
    assert data["written"] == []


def test_text_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "samples.csv"
    _write_csv(path, False)
    assert main(["recommend", "--samples", str(path)]) == 0
    out = capsys.readouterr().out
    assert "tenants-web.slice: 11520 sample(s) over 7d 23h" in out
    assert "memory_max         7G" in out and "memory_high      6.5G" in out  # not 6656M


def test_write_keeps_comments_and_layout(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    tenants = tmp_path / "tenants.yaml"
    shutil.copy(ROOT / "examples" / "web-batch.yaml", tenants)
    before = tenants.read_text()
    samples = tmp_path / "samples.csv"
    lines = ["time,unit,anon,active_file"]
    for s in series():
        lines.append(f"{int(s.time)},tenants-web.slice,{s.anon},{s.active_file}")
        lines.append(f"{int(s.time)},tenants-batch.slice,{s.anon // 2},{s.active_file // 2}")
        lines.append(f"{int(s.time)},system.slice,{s.anon // 8},{s.active_file // 8}")
    samples.write_text("\n".join(lines) + "\n")
    assert main(["recommend", "--samples", str(samples), "--write", str(tenants)]) == 0
    assert "wrote memory_max/memory_high/memory_low for web, batch" in capsys.readouterr().out
    after = tenants.read_text()
    diff = [d for d in difflib.ndiff(before.splitlines(), after.splitlines())
            if d[:1] in "+-"]
    removed = [d[2:] for d in diff if d[0] == "-"]
    added = [d[2:] for d in diff if d[0] == "+"]
    # Only memory values change (comments after them kept); batch gains a memory_high line.
    assert all(line.strip().startswith(("memory_max:", "memory_high:", "memory_low:"))
               for line in removed + added)
    assert len(removed) == 5 and len(added) == 6
    assert "    memory_low: 6G          # sized as anon + active_file + 1G (001 rec. 2)" in added
    assert "    memory_high: 3584M" in added
    t = load_tenants(str(tenants)).tenant("batch")
    assert (t.memory_low, t.memory_high, t.memory_max) == (3 * G, 3 * G + 512 * M, 4 * G)


def test_write_nothing_matches(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tenants = tmp_path / "tenants.yaml"
    shutil.copy(ROOT / "examples" / "web-batch.yaml", tenants)
    before = tenants.read_text()
    samples = tmp_path / "samples.csv"
    samples.write_text("time,unit,anon,active_file\n" + "".join(
        f"{T0 + i * 60},other.slice,{G},0\n" for i in range(200)))
    assert main(["recommend", "--samples", str(samples), "--write", str(tenants)]) == 0
    assert "no tenant" in capsys.readouterr().out
    assert tenants.read_text() == before


@pytest.mark.parametrize(("flags", "message"), [
    (["--headroom", "lots"], "error: --headroom: "),
    (["--startup", "nan"], "error: --headroom, --startup and --hold must not be negative"),
    (["--hold", "inf"], "error: --headroom, --startup and --hold must not be negative"),
    (["--startup", "-1"], "error: --headroom, --startup and --hold must not be negative"),
])
def test_bad_parameters(tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str],
                        message: str) -> None:
    """recommend's own error (exit 1, with a hint), before any sample is read."""
    samples = tmp_path / "samples.csv"
    _write_csv(samples, False)
    assert main(["recommend", "--samples", str(samples), *flags]) == 1
    err = capsys.readouterr().err
    assert err.startswith(message) and "\n  hint: e.g. " in err and "internal" not in err


def test_write_inserts_keys_and_handles_flow_style(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    tenants = tmp_path / "tenants.yaml"
    tenants.write_text(
        "# top comment\nversion: 1\ntenants:\n"
        "  db:\n    cpus: 4      # pinned\n    memory_high: 1G\n"
        "  web: {cpus: 2}   # flow style\n")
    samples = tmp_path / "samples.csv"
    samples.write_text("time,unit,anon,active_file\n" + "".join(
        f"{T0 + i * 60},tenants-{name}.slice,{G},0\n" for i in range(200)
        for name in ("db", "web")))
    assert main(["recommend", "--samples", str(samples), "--startup", "0", "--write",
                 str(tenants)]) == 0
    capsys.readouterr()
    text = tenants.read_text()
    assert text.startswith("# top comment\n") and "cpus: 4      # pinned" in text
    assert "web: {cpus: 2, memory_max: 2G, memory_high: 1536M, memory_low: 1G}" in text
    config = load_tenants(str(tenants))
    assert config.tenant("db").memory_max == 2 * G and config.tenant("db").memory_low == G
