"""Settings that cannot take effect (slicectl.core.config.contradictions) are validate's errors and
lint's, from one place: reported with every other problem of the file in one run, and refused
by generate as by validate."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT

from slicectl.core.advice.lint import Level, lint
from slicectl.core.config.config import load_yaml, parse_config
from slicectl.core.config.contradictions import contradictions
from slicectl.core.errors import ConfigError

TOPOLOGY = str(ROOT / "tests" / "fixtures" / "topologies" / "xeon-2s-smt.json")
FIVE = """\
version: 1
tenants:
  db:
    cpus: 2
    memroy_max: 4G
    cpu_quota: 250%
    memory_max: 4G
    memory_low: 6G
  web:
    cpus: 2
    memory_max: 12XB
    numa: sideways
    memory_high: 2G
"""


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "slicectl", *args], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)


def test_five_independent_mistakes_in_one_run(tmp_path: Path) -> None:
    """They needed three runs of validate to see."""
    path = tmp_path / "t.yaml"
    path.write_text(FIVE)
    proc = run("validate", str(path))
    assert proc.returncode == 1
    errors = [line.split(": ", 2)[1:] for line in proc.stderr.splitlines()
              if line.startswith("error: ")]
    where = [(e[0].rsplit(":", 1)[1], e[1].split(":")[0]) for e in errors]
    assert where == [("5", "tenants.db.memroy_max"), ("6", "tenants.db.cpu_quota"),
                     ("8", "tenants.db.memory_low"), ("11", "tenants.web.memory_max"),
                     ("12", "tenants.web.numa")], proc.stderr
    # generate refuses the same file the same way, and writes nothing
    out = tmp_path / "out"
    gen = run("generate", str(path), "--topology", TOPOLOGY, "--out", str(out))
    assert gen.returncode == 1 and gen.stderr == proc.stderr
    assert not out.exists()


@pytest.mark.parametrize(("text", "message"), [
    ("  a: {cpus: 2, cpu_quota: 250%}\n",
     "tenants.a.cpu_quota: tenant a has cpu_quota 250% but only 2 CPU(s): at most 200% is "
     "reachable"),
    ('  a: {cpus: "0-2", cpu_quota: 301%}\n', "only 3 CPU(s): at most 300% is reachable"),
    ("  a: {cpus: 2, memory_high: 4G, memory_max: 4G}\n",
     "tenants.a.memory_high: tenant a has memory_high 4G >= memory_max 4G: memory_high never "
     "takes effect"),
    ("  a: {cpus: 2, memory_high: 50%, memory_max: 40%}\n", "memory_high 50% >= memory_max 40%"),
])
def test_what_cannot_take_effect_is_an_error(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_config(load_yaml("version: 1\ntenants:\n" + text, "t.yaml"), "t.yaml")
    assert str(e.value).startswith("t.yaml:3: tenants.a.") and message in str(e.value)


def test_in_a_profile_and_in_confine() -> None:
    text = ("version: 1\nconfine:\n  system.slice: {cpus: \"0\", cpu_quota: 150%}\n"
            "tenants:\n  a: {cpus: 4, cpu_quota: 300%}\n"
            "profiles:\n  night:\n    a: {cpus: 2}\n")
    with pytest.raises(ConfigError) as e:
        parse_config(load_yaml(text, "t.yaml"), "t.yaml")
    assert [str(p) for p in e.value.problems] == [
        "t.yaml:3: confine.system.slice.cpu_quota: unit system.slice has cpu_quota 150% but "
        "only 1 CPU(s): at most 100% is reachable",
        "t.yaml:8: profiles.night.a.cpus: in profile night: tenant a has cpu_quota 300% but "
        "only 2 CPU(s): at most 200% is reachable"]


def test_lint_reports_the_same_list_at_its_error_level() -> None:
    text = ("version: 1\ntenants:\n  a: {cpus: 2, cpu_quota: 250%}\n"
            "  b: {cpus: 2, memory_high: 4G, memory_max: 4G}\n")
    config = parse_config(load_yaml(text, "t.yaml"), "t.yaml", contradictions_are_errors=False)
    errors = [(f.line, f.rule, f.message) for f in lint(config, None)
              if f.level is Level.ERROR]
    assert errors == [(x.problem.line, x.rule, x.problem.message)
                      for x in contradictions(config)]
    assert [rule for _, rule, _ in errors] == ["quota-exceeds-cpus", "high-above-max"]


def test_infinity_and_unset_contradict_nothing() -> None:
    text = ("version: 1\ntenants:\n  a: {cpus: 2, cpu_quota: 200%, memory_high: 4G, "
            "memory_max: infinity}\n")
    assert contradictions(parse_config(load_yaml(text, "t.yaml"), "t.yaml")) == []
