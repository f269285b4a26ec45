"""Bounds on what any input may cost: 1 MB of tenants.yaml, whatever its shape."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def megabyte_files(folder: Path, only: list[str] | None = None) -> list[Path]:
    """1 MB tenants.yaml files of the shapes that cost most: thousands of tenants, thousands
    of errors, thousands of bad values, a cpulist of 180,000 entries, deep flow nesting, an
    alias bomb (bench/run uses them too)."""
    mb = 1 << 20
    shapes = {
        "tenants": ("version: 1\ntenants:\n", "  t{i}: {{cpu_weight: {w}, memory_max: 1G, "
                    "memory_low: 512M, cpu_quota: 50%, description: \"tenant {i}\"}}\n"),
        "errors": ("version: 1\ntenants:\n  a:\n", "    bad_key_{i}: {i}\n"),
        "values": ("version: 1\ntenants:\n", "  t{i}: {{cpus: \"0-99999999999\", "
                   "memory_max: 99999999999999999999999T}}\n"),
    }
    files = []
    for name, (head, line) in shapes.items():
        parts = [head]
        size, i = len(head), 0
        while size < mb:
            parts.append(line.format(i=i, w=i % 10000 + 1))
            size += len(parts[-1])
            i += 1
        files.append(folder / f"{name}.yaml")
        files[-1].write_text("".join(parts))
    files.append(folder / "cpulist.yaml")
    files[-1].write_text("version: 1\ntenants: {a: {cpus: \"" + ",".join(
        str(i % 8192) for i in range(180_000)) + "\"}}\n")
    files.append(folder / "deep.yaml")
    files[-1].write_text("version: 1\ntenants: {a: {services: " + "[" * 500_000 + "]" * 500_000
                         + "}}\n")
    bomb = ["version: 1", "bomb:", '  - &a0 ["lol", "lol", "lol", "lol", "lol", "lol"]']
    for k in range(1, 40):
        bomb.append(f"  - &a{k} [" + ", ".join([f"*a{k - 1}"] * 9) + "]")
    bomb.append("tenants: {a: {description: *a39, nodes: *a39, cpus: *a39}}")
    files.append(folder / "bomb.yaml")
    files[-1].write_text("\n".join(bomb) + "\n")
    return [f for f in files if only is None or f.stem in only]


@pytest.mark.parametrize("shape", ["cpulist", "deep", "bomb"])
def test_megabyte_inputs_are_bounded_in_memory(tmp_path: Path, shape: str) -> None:
    # Any tenants.yaml up to 1 MB validates (or fails) within 200 MB and 2 s. The
    # shapes that could blow up (a huge range, nesting that crashed libyaml, an alias bomb)
    # are checked here, in a child process of their own; the time of every shape, and the
    # costlier thousands-of-tenants shapes, are a benchmark (bench/run --only validate.1mb).

    script = ("import resource, subprocess, sys\n"
              "p = subprocess.run([sys.executable, '-m', 'slicectl', 'validate', sys.argv[1]],"
              " capture_output=True, text=True)\n"
              "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
              "sys.stderr.write(p.stderr[-2000:])\n")
    for path in megabyte_files(tmp_path, [shape]):
        assert path.stat().st_size <= 1.05 * (1 << 20)
        proc = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True,
                              text=True, timeout=300)
        code, peak_kib = map(int, proc.stdout.split())
        assert code in (0, 1), f"{path.name}: exit {code}\n{proc.stderr}"
        assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
        assert peak_kib < 200 * 1024, f"{path.name}: {peak_kib} KiB"


