"""slicectl.core.frozen: value types are dataclasses, frozen to mypy, equal and hashed by value."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from mypy import api

from slicectl.core.frozen import frozen
from slicectl.core.placement.topology import Cpu


@frozen
class _Point:
    """Two compared fields, one that is neither compared nor shown."""

    x: int
    y: str = "a"
    line: int = field(default=0, compare=False, repr=False)


@dataclass(unsafe_hash=True)
class _Reference:
    """_Point as `dataclasses` alone makes it."""

    x: int
    y: str = "a"
    line: int = field(default=0, compare=False, repr=False)


@frozen
class _One:
    """One field."""

    x: int


@frozen
class _Shown:
    """A repr of its own."""

    x: int

    def __repr__(self) -> str:
        return "shown"


def test_values_compare_and_hash_by_value() -> None:
    a = Cpu(4, True, 0, package=0, core=0, siblings=frozenset({0, 4}))
    b = Cpu(4, True, 0, package=0, core=0, siblings=frozenset({0, 4}))
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert replace(a, node=1) != a and a.node == 0


def test_equality_hash_and_repr_are_those_of_a_dataclass_with_unsafe_hash() -> None:
    pairs = [(_Point(1), _Reference(1)), (_Point(1, "b", line=7), _Reference(1, "b", line=7))]
    for mine, theirs in pairs:
        assert repr(mine) == repr(theirs).replace("_Reference", "_Point")
    assert _Point(1, line=3) == _Point(1, line=9) and _Point(1) != _Point(2)
    assert hash(_Point(1, line=3)) == hash(_Point(1, line=9))
    assert {_Point(1): "one"}[_Point(1, line=5)] == "one"
    others: list[object] = [_Reference(1), (1, "a"), _One(1)]
    assert all(_Point(1) != other for other in others)  # another class: never equal
    assert _One(3) == _One(3) and _One(3) != _One(4) and len({_One(3), _One(3)}) == 1
    assert repr(_One(3)) == "_One(x=3)"
    assert repr(_Shown(1)) == "shown" and _Shown(1) == _Shown(1)
    assert replace(_Point(1, line=2), y="c") == _Point(1, "c")


def test_mypy_refuses_an_assignment_to_a_field(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from slicectl.core.placement.topology import Cpu\n"
                     "def f(c: Cpu) -> None:\n"
                     "    c.id = 1\n")
    out, _, status = api.run(["--strict", "--no-incremental", "--follow-imports=silent",
                              str(probe)])
    assert status == 1
    assert 'Property "id" defined in "Cpu" is read-only' in out, out
