"""The systemd generator (`slicectl-generator`), run as systemd runs it: a process with three
output folders and a minimal environment, against fixture sysfs trees and tenants files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from unitcheck import systemd_verify

from slicectl.host.files import placement_record

ROOT = Path(__file__).resolve().parent.parent
SYSFS = ROOT / "tests" / "fixtures" / "sysfs"
GENERATOR = [sys.executable, "-c", "import sys; from slicectl.generator import main; "
             "sys.exit(main())"]


def run_generator(tmp: Path, tenants: Path, sysfs: Path, *,
                  env: dict[str, str] | None = None) -> tuple[Path, str]:
    """Run the generator into fresh output folders under `tmp`, with only the variables a
    generator gets (PATH, and the two inputs); returns NORMAL_DIR and what it logged."""
    out = tmp / "normal"
    shutil.rmtree(out, ignore_errors=True)
    for d in ("normal", "early", "late"):
        (tmp / d).mkdir(parents=True, exist_ok=True)
    kmsg = tmp / "kmsg"
    kmsg.unlink(missing_ok=True)
    base = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "SLICECTL_TENANTS": str(tenants),
            "SLICECTL_SYSFS": str(sysfs), "SLICECTL_KMSG": str(kmsg)}
    proc = subprocess.run([*GENERATOR, str(out), str(tmp / "early"), str(tmp / "late")],
                          env={**base, **(env or {})}, capture_output=True, text=True,
                          timeout=120)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    return out, kmsg.read_text() if kmsg.exists() else ""


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def generate(tmp: Path, tenants: Path, sysfs: Path) -> dict[str, bytes]:
    out = tmp / "generated"
    proc = subprocess.run([sys.executable, "-m", "slicectl", "generate", str(tenants), "--sysfs",
                           str(sysfs), "--out", str(out)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return files_of(out)


def tenants_file(tmp: Path, example: str = "web-batch") -> Path:
    path = tmp / "etc" / "slicectl" / "tenants.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "examples" / f"{example}.yaml", path)
    return path


def record(tenants: Path, out: Path, sysfs: Path) -> None:
    """Record `out` (a generator's output) as the last good placement, as enable does."""
    fingerprint = placement_record.fingerprint(str(tenants), str(sysfs))
    assert fingerprint is not None
    placement_record.save(str(tenants), files_of(out), fingerprint)


@pytest.mark.parametrize(("example", "sysfs"), [("web-batch", "xeon-2s-smt"),
                                                ("oracle-4node", "nehalem-ex-4node"),
                                                ("day-night", "epyc-nps4"),
                                                ("consolidation", "xeon-2s-smt")])
def test_writes_what_generate_writes(tmp_path: Path, example: str, sysfs: str) -> None:
    if not (ROOT / "examples" / f"{example}.yaml").exists():
        pytest.fail(f"example {example} is gone: pick another")
    tenants = tenants_file(tmp_path, example)
    out, logged = run_generator(tmp_path, tenants, SYSFS / sysfs)
    assert logged == ""
    assert files_of(out) == generate(tmp_path, tenants, SYSFS / sysfs)
    assert (out / ".slicectl-manifest.json").exists()
    systemd_verify(out, tmp_path)


def test_a_broken_tenants_file_writes_the_last_good_placement(tmp_path: Path) -> None:
    tenants = tenants_file(tmp_path)
    sysfs = SYSFS / "xeon-2s-smt"
    good, _ = run_generator(tmp_path / "first", tenants, sysfs)
    record(tenants, good, sysfs)
    expected = files_of(good)
    tenants.write_text(tenants.read_text().replace("cpu_weight: 400", "cpu_weight: lots"))
    out, logged = run_generator(tmp_path / "second", tenants, sysfs)
    written = files_of(out)
    error = written.pop(".slicectl-generator-error").decode()
    assert written == expected  # the whole set, byte for byte
    line = next(n for n, text in enumerate(tenants.read_text().splitlines(), 1)
                if "cpu_weight: lots" in text)
    assert f"{tenants}:{line}: tenants.web.cpu_weight:" in logged
    assert logged.startswith("<3>slicectl-generator[")
    assert logged.rstrip().endswith("wrote the last good placement instead")
    assert error.rstrip() == logged.split("]: ", 1)[1].rstrip()


def test_a_placement_that_no_longer_fits_falls_back_whole(tmp_path: Path) -> None:
    tenants = tenants_file(tmp_path)
    good, _ = run_generator(tmp_path / "first", tenants, SYSFS / "xeon-2s-smt")
    record(tenants, good, SYSFS / "xeon-2s-smt")
    # The same file on a machine too small for it (a board swapped, CPUs offlined).
    out, logged = run_generator(tmp_path / "second", tenants, SYSFS / "single-node")
    assert "wrote the last good placement instead" in logged
    written = files_of(out)
    written.pop(".slicectl-generator-error")
    assert written == files_of(good)


def test_first_boot_with_a_broken_file_writes_no_units(tmp_path: Path) -> None:
    tenants = tenants_file(tmp_path)
    tenants.write_text("version: 1\ntenants:\n  Bad-Name: {cpus: 2}\n")
    out, logged = run_generator(tmp_path, tenants, SYSFS / "nehalem-ex-4node")
    assert sorted(files_of(out)) == [".slicectl-generator-error"]
    assert f"{tenants}:3: tenants.Bad-Name:" in logged
    assert "no placement recorded: no tenant units written" in logged


def test_not_in_generator_mode_it_does_nothing(tmp_path: Path) -> None:
    out, logged = run_generator(tmp_path, tmp_path / "missing.yaml", SYSFS / "nehalem-ex-4node")
    assert files_of(out) == {} and logged == ""


def test_unchanged_inputs_copy_the_record_without_planning(tmp_path: Path) -> None:
    """The common case at every daemon-reload: nothing changed since the record, so the
    planner (and ruamel.yaml, jinja2) is not even imported."""
    tenants = tenants_file(tmp_path)
    sysfs = SYSFS / "xeon-2s-smt"
    good, _ = run_generator(tmp_path / "first", tenants, sysfs)
    record(tenants, good, sysfs)
    probe = ("import sys; from slicectl.generator import main; main(sys.argv[1:]); "
             "print(' '.join(sorted(sys.modules)))")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "SLICECTL_TENANTS": str(tenants),
           "SLICECTL_SYSFS": str(sysfs), "SLICECTL_KMSG": str(tmp_path / "kmsg")}
    out = tmp_path / "warm"
    proc = subprocess.run([sys.executable, "-c", probe, str(out)], env=env, text=True,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    loaded = set(proc.stdout.split())
    assert not loaded & {"jinja2", "ruamel", "hashlib", "slicectl.core.placement.placement",
                          "slicectl.core.plan"}
    assert files_of(out) == files_of(good)
    # Any change of the inputs plans again (in a child process: the generator itself still
    # loads no planner): tenants.yaml here.
    tenants.write_text(tenants.read_text().replace("cpu_weight: 400", "cpu_weight: 300"))
    proc = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "changed")], env=env,
                          text=True, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "jinja2" not in proc.stdout.split()
    assert b"CPUWeight=300" in (tmp_path / "changed" / "tenants-web.slice.d" /
                                "50-slicectl.conf").read_bytes()


TWO = """\
version: 1
housekeeping: {cpus: 1}
tenants:
  a: {cpus: 4}
  b: {cpus: 4}
"""


def test_tenants_keep_their_recorded_cpus(tmp_path: Path) -> None:
    """Placed from the record, as apply places from the manifest's placements: tenants the
    record put elsewhere than a fresh placement would stay there."""
    tenants = tenants_file(tmp_path)
    tenants.write_text(TWO)
    sysfs = SYSFS / "nehalem-ex-4node"  # 4 nodes of 8 CPUs, interleaved (node2 = 2,6,...)
    good, _ = run_generator(tmp_path / "first", tenants, sysfs)
    manifest = json.loads((good / ".slicectl-manifest.json").read_text())
    assert manifest["placements"] == {"a": "4,8,12,16", "b": "1,5,9,13"}  # a fresh placement
    moved = {"a": "2,6,10,14", "b": "3,7,11,15"}  # as an earlier boot placed them
    manifest["placements"] = moved
    (good / ".slicectl-manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    record(tenants, good, sysfs)
    tenants.write_text(TWO + "# edited: the generator must plan, not copy\n")
    out, logged = run_generator(tmp_path / "second", tenants, sysfs)
    assert logged == ""
    assert json.loads((out / ".slicectl-manifest.json").read_text())["placements"] == moved
    assert "AllowedCPUs=2,6,10,14" in (out / "tenants-a.slice.d/50-slicectl.conf").read_text()


def test_writes_nothing_outside_its_output_folders(tmp_path: Path) -> None:
    """No HOME, and /etc/slicectl read-only (as early in boot): the same output, and nothing
    written anywhere else."""
    tenants = tenants_file(tmp_path)
    sysfs = SYSFS / "nehalem-ex-4node"
    expected, _ = run_generator(tmp_path / "ref", tenants, sysfs)
    etc_before = files_of(tenants.parent)
    out = tmp_path / "ro" / "normal"
    for d in ("normal", "early", "late"):
        (tmp_path / "ro" / d).mkdir(parents=True)
    script = (f"mount --bind {tenants.parent} {tenants.parent} && "
              f"mount -o remount,bind,ro {tenants.parent} && exec \"$@\"")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "SLICECTL_TENANTS": str(tenants),
           "SLICECTL_SYSFS": str(sysfs), "SLICECTL_KMSG": str(tmp_path / "kmsg")}
    proc = subprocess.run(["unshare", "--mount", "sh", "-c", script, "sh", *GENERATOR,
                           str(out), str(tmp_path / "ro" / "early"),
                           str(tmp_path / "ro" / "late")],
                          env=env, capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    assert files_of(out) == files_of(expected)
    assert files_of(tenants.parent) == etc_before
    assert [*(tmp_path / "ro" / "early").iterdir(), *(tmp_path / "ro" / "late").iterdir()] == []


def test_usage_without_output_folders() -> None:
    proc = subprocess.run([*GENERATOR], capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: slicectl-generator NORMAL_DIR [EARLY_DIR LATE_DIR]")


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "slicectl-generator"
    assert script.exists(), "pip install the package: pyproject.toml's [project.scripts]"
    assert os.access(script, os.X_OK)


def test_runs_without_cyclic_collection_and_restores_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run pauses the cyclic garbage collector (start-up: BENCHMARKS.md, generator.run) and
    gives it back as it found it, also when the run fails."""
    import gc

    import slicectl.generator as generator

    seen: list[bool] = []

    def failing(out: str, tenants: str, sysfs: str) -> str:
        seen.append(gc.isenabled())
        raise RuntimeError("boom")

    monkeypatch.setattr(generator, "generate_into", failing)
    monkeypatch.setenv("SLICECTL_KMSG", str(tmp_path / "kmsg"))
    assert gc.isenabled()
    assert generator.main([str(tmp_path)]) == 0
    assert seen == [False] and gc.isenabled()
    assert "internal error: RuntimeError: boom" in (tmp_path / "kmsg").read_text()


def test_at_boot_a_grown_tenant_re_packs_and_logs_the_moves(tmp_path: Path) -> None:
    """Nothing runs at boot: where keeping the record would split a local tenant, the
    generator moves the fewest others (what apply refuses without --repack) and logs it."""
    tenants = tmp_path / "tenants.yaml"
    tenants.write_text("version: 1\nhousekeeping: {cpus: 2}\ntenants:\n  main: {cpus: 8}\n"
                       "  pg2: {cpus: 4}\n  pg3: {cpus: 2}\n  pg4: {cpus: 8}\n")
    sysfs = SYSFS / "xeon-2s-smt"
    good, _ = run_generator(tmp_path / "first", tenants, sysfs)
    record(tenants, good, sysfs)
    assert "AllowedCPUs=7,23\n" in (good / "tenants-pg3.slice.d/50-slicectl.conf").read_text()
    tenants.write_text(tenants.read_text().replace("main: {cpus: 8}", "main: {cpus: 10}"))
    out, logged = run_generator(tmp_path / "second", tenants, sysfs)
    assert "re-pack moves pg3: node 0 -> 1 (2 CPUs, 7,23 -> 12,28;" in logged
    settings = out / "tenants-{}.slice.d/50-slicectl.conf"
    assert "AllowedCPUs=1-4,7,17-20,23\n" in Path(str(settings).format("main")).read_text()
    assert "AllowedCPUs=12,28\n" in Path(str(settings).format("pg3")).read_text()
    assert not (out / ".slicectl-generator-error").exists()


def test_at_boot_a_tenant_no_node_can_hold_spans_nodes_and_is_logged(tmp_path: Path) -> None:
    """CPUs gone (or a tenant grown past every node): plan and apply refuse it, but a boot
    must not fail, so the generator places it over nodes and logs why."""
    tenants = tmp_path / "tenants.yaml"
    tenants.write_text("version: 1\ntenants:\n  big: {cpus: 10}\n  small: {cpus: 2}\n")
    out, logged = run_generator(tmp_path, tenants, SYSFS / "nehalem-ex-4node")  # 8 a node
    assert "tenant big (numa: local) spans nodes 0, 1: no node had 10 CPUs free" in logged
    assert not (out / ".slicectl-generator-error").exists()
    dropin = (out / "tenants-big.slice.d/50-slicectl.conf").read_text()
    assert "AllowedMemoryNodes=0,1\n" in dropin
