"""docs/evidence/ is complete: every experiment has its script, committed data, a plot, an e2e
assertion and a section of the README; the share cases say what they run.

The experiments themselves run in the testbed (tests/e2e/test_evidence.py, docs/evidence/run).
"""

from __future__ import annotations

import ast
import csv
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from slicectl.host.planning import load_tenants

ROOT = Path(__file__).resolve().parent.parent
EVIDENCE = ROOT / "docs" / "evidence"


def _module(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__file__ = str(path)
    sys.modules[name] = module  # dataclasses look their module up while being made
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
    return module


RUN = _module("evidence_run", EVIDENCE / "run")
NAMES = list(RUN.EXPERIMENTS.values())


@pytest.mark.parametrize("name", NAMES)
def test_each_experiment_has_a_script_and_an_e2e_assertion(name: str) -> None:
    assert (EVIDENCE / f"{name}.py").is_file()
    e2e = ast.parse((ROOT / "tests" / "e2e" / "test_evidence.py").read_text())
    calls = {f"{n.func.value.id}.{n.func.attr}" for n in ast.walk(e2e)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and isinstance(n.func.value, ast.Name)}
    assert f"{name}.main" in calls, f"no e2e test runs {name}"
    readme = (EVIDENCE / "README.md").read_text()
    assert f"`docs/evidence/{name}.py`" in readme, f"docs/evidence/README.md: no section for {name}"


@pytest.mark.parametrize("name", NAMES)
def test_each_experiment_has_data_and_a_plot(name: str) -> None:
    data = EVIDENCE / "data" / f"{name}.csv"
    with data.open() as f:
        assert len(list(csv.DictReader(f))) > 0, f"{data} has no rows"
    assert (EVIDENCE / f"{name}.png").stat().st_size > 10_000
    readme = (EVIDENCE / "README.md").read_text()
    assert f"({name}.png)" in readme and f"data/{name}.csv" in readme


def test_the_main_readme_links_the_evidence() -> None:
    assert "docs/evidence/README.md" in (ROOT / "README.md").read_text()


def test_the_main_readme_shows_one_plot_inline() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "![" in readme and "docs/evidence/" in readme.split("![", 1)[1].split(")", 1)[0]


def test_guest_script_runs_each_experiment_quick() -> None:
    script = RUN.guest_script(["a_shares", "f_numa"], quick=True)
    assert "python3 docs/evidence/a_shares.py --quick || status=1" in script
    assert "python3 docs/evidence/f_numa.py --quick || status=1" in script
    assert RUN.names(["a", "e_quota"]) == ["a_shares", "e_quota"]
    with pytest.raises(SystemExit):
        RUN.names(["z"])


def test_share_cases_are_valid_and_name_their_loops() -> None:
    sys.path.insert(0, str(EVIDENCE))
    try:
        a_shares = _module("a_shares_cases", EVIDENCE / "a_shares.py")
    finally:
        sys.path.remove(str(EVIDENCE))
    cases = sorted((EVIDENCE / "shares").glob("case*.yaml"))
    assert [c.stem for c in cases] == [f"case{i}" for i in range(1, 8)]
    for case in cases:
        config = load_tenants(str(case))
        loops, seed = a_shares.directives(case)
        labels = {f"{w}{i}" for w, n in loops.items() for i in range(1, n + 1)}
        assert labels == set(seed), case.name  # seed 004's number for every loop
        tenants = {w for w in loops if w not in ("root", "parent")}
        assert tenants == {t.name for t in config.tenants}, case.name
        assert all(t.cpu_weight == 100 for t in config.tenants)  # cpu.shares 1024


CYCLICTEST = """\
# /dev/cpu_dma_latency set to 0us
# Histogram
000000 000000 000000
000003 000010 000020
000004 000085 000070
000120 000004 000009
000900 000001 000000
# Total: 000000100 000000099
# Min Latencies: 00003 00003
# Avg Latencies: 00009 00008
# Max Latencies: 25000 00900
# Histogram Overflows: 00000 00001
# Histogram Overflow at cycle number:
# Thread 0:
# Thread 1: 00077
"""


def test_h_reads_cyclictests_histogram_merged_over_its_threads() -> None:
    sys.path.insert(0, str(EVIDENCE))
    try:
        h = _module("h_isolated_parse", EVIDENCE / "h_isolated.py")
    finally:
        sys.path.remove(str(EVIDENCE))
    counts, overflows, longest = h.histogram(CYCLICTEST)
    assert counts == {3: 30, 4: 155, 120: 13, 900: 1} and overflows == 1 and longest == 25000
    assert h.percentile(counts, overflows, longest, 0.5) == 4
    assert h.percentile(counts, overflows, longest, 0.99) == 120
    assert h.percentile(counts, overflows, longest, 0.999) == 25000  # in the overflow
    assert h.mask_cpus("00000000,000000f3") == [0, 1, 4, 5, 6, 7]
