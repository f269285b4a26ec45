"""slicectl.core.frozen: value types are dataclasses, frozen to mypy, equal and hashed by value."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from mypy import api

from slicectl.core.placement.topology import Cpu


def test_values_compare_and_hash_by_value() -> None:
    a = Cpu(4, True, 0, package=0, core=0, siblings=frozenset({0, 4}))
    b = Cpu(4, True, 0, package=0, core=0, siblings=frozenset({0, 4}))
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert replace(a, node=1) != a and a.node == 0


def test_mypy_refuses_an_assignment_to_a_field(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from slicectl.core.placement.topology import Cpu\n"
                     "def f(c: Cpu) -> None:\n"
                     "    c.id = 1\n")
    out, _, status = api.run(["--strict", "--no-incremental", "--follow-imports=silent",
                              str(probe)])
    assert status == 1
    assert 'Property "id" defined in "Cpu" is read-only' in out, out
