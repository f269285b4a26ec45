"""slicectl.core.config.yamldoc: the same data and the same lines as ruamel's round-trip loader,
with libyaml's parser and with the pure-Python fallback."""

from __future__ import annotations

from typing import Any

import pytest
from paths import ROOT
from ruamel.yaml import YAML
from ruamel.yaml.constructor import DuplicateKeyError
from ruamel.yaml.error import MarkedYAMLError

from slicectl.core.config import yamldoc

EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))

TRICKY = """\
# a comment before everything
version: 1
housekeeping: {cpus: "0,4"}   # flow mapping, quoted cpulist
tenants:
  a:
    cpus: 2
    services:
      - pg.service            # block sequence
      - "pgbouncer.service"
  b: {cpu_weight: 50, services: [x.service, y.service]}
  c:
    description: >
      folded text
      over two lines
    memory_max: 1G
defaults: &d {cpu_weight: 10, memory_max: 2G}
merged:
  <<: *d
  cpu_weight: 20
list_of_maps:
  - {x: 1}
  -
    y: 2
empty:
nested: [[1, 2], {k: v}]
"""


def walk(fast: Any, rt: Any, where: str = "") -> None:
    """Same data, and the same start lines/columns for every key, value and item."""
    assert fast == rt, where
    rt_lc: Any = getattr(rt, "lc", None)
    if isinstance(rt, dict):
        assert isinstance(fast, yamldoc.LineMap), where
        assert (fast.lc.line, fast.lc.col) == (rt_lc.line, rt_lc.col), where
        for key in rt:
            if key in rt_lc.data:  # ruamel keeps no lines for keys merged in by `<<`
                assert fast.lc.key(key) == rt_lc.key(key), f"{where}.{key}"
                if rt[key] is not None:  # an empty value: libyaml marks the end of the key
                    assert fast.lc.value(key) == rt_lc.value(key), f"{where}.{key}"
            walk(fast[key], rt[key], f"{where}.{key}")
    elif isinstance(rt, list):
        assert isinstance(fast, yamldoc.LineSeq), where
        assert (fast.lc.line, fast.lc.col) == (rt_lc.line, rt_lc.col), where
        for i, item in enumerate(rt):
            assert fast.lc.item(i) == rt_lc.item(i), f"{where}[{i}]"
            walk(fast[i], item, f"{where}[{i}]")


@pytest.mark.parametrize("pure", [False, True], ids=["libyaml", "pure"])
@pytest.mark.parametrize("text", [p.read_text() for p in EXAMPLES] + [TRICKY],
                         ids=[p.name for p in EXAMPLES] + ["tricky"])
def test_same_data_and_lines_as_round_trip(text: str, pure: bool) -> None:
    walk(yamldoc.load(text, pure=pure), YAML(typ="rt").load(text))


@pytest.mark.parametrize("pure", [False, True], ids=["libyaml", "pure"])
def test_merged_keys_point_at_the_anchor(pure: bool) -> None:
    data = yamldoc.load(TRICKY, pure=pure)
    assert data["merged"] == {"cpu_weight": 20, "memory_max": "2G"}
    anchor_line = TRICKY.splitlines().index("defaults: &d {cpu_weight: 10, memory_max: 2G}")
    assert data["merged"].lc.key("memory_max")[0] == anchor_line
    assert data["merged"].lc.key("cpu_weight")[0] == anchor_line + 3  # the override


@pytest.mark.parametrize("pure", [False, True], ids=["libyaml", "pure"])
def test_duplicate_keys_are_refused(pure: bool) -> None:
    with pytest.raises(DuplicateKeyError) as e:
        yamldoc.load("version: 1\ntenants:\n  a: {}\n  a: {}\n", pure=pure)
    assert e.value.problem_mark is not None and e.value.problem_mark.line == 3


@pytest.mark.parametrize("pure", [False, True], ids=["libyaml", "pure"])
def test_syntax_error_names_the_line(pure: bool) -> None:
    with pytest.raises(MarkedYAMLError) as e:
        yamldoc.load("version: 1\ntenants:\n  a: {cpus: 1\n  b: 2\n", pure=pure)
    assert e.value.problem_mark is not None and e.value.problem_mark.line == 3


def test_libyaml_parser_is_installed() -> None:
    """pyproject asks for ruamel.yaml[oldlibyaml]: a plain `pip install .` gets the C parser
    (a test so that an install silently falling back to pure Python is noticed)."""
    import ruamel.yaml.main

    assert getattr(ruamel.yaml.main, "CParser", None) is not None
    assert "CParser" in type(yamldoc._loader(False).parser).__name__
