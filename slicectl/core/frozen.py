"""`frozen`: a dataclass that mypy checks as frozen, built at run time without the frozen
machinery (it replaces `dataclasses.dataclass(frozen=True)` for the core's value types).

`@dataclass(frozen=True)` compiles a `__setattr__` and a `__delattr__` with `exec` for every
class, at every start: for the 50-odd value types that `slicectl generate` and the systemd
generator import, about a tenth of their start-up (BENCHMARKS.md, "start-up"), which the
generator pays at every boot and daemon-reload. A `@frozen` class is a plain dataclass with
value equality and hash at run time, and frozen to mypy --strict (tests/test_quality.py), which
refuses any assignment to a field: build a new value with `dataclasses.replace`.

Only its `__init__` is compiled when the class is made (by `dataclasses`, as ever). Its
`__eq__` and `__hash__` are compiled together the first time either is used, and its
`__repr__` is one function shared by every `@frozen` class: `dataclasses` compiles all three
for every class when it is made, and those 150-odd compilations were a fifth of importing what
`slicectl apply` imports, for methods most runs never call (BENCHMARKS.md, "apply against
systemd's floor"). They behave as `dataclass(unsafe_hash=True)` makes them: equal when of the
same class with equal compared fields, hashed on those fields, shown as `Name(field=value, ...)`
with the fields that have `repr`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from dataclasses import field
    from typing import Any, TypeVar, dataclass_transform

    T = TypeVar("T")

    @dataclass_transform(frozen_default=True, field_specifiers=(field,))
    def frozen(cls: type[T]) -> type[T]:
        """A dataclass, frozen to mypy (see the module's docstring)."""
else:
    _init_only = dataclass(eq=False, repr=False)

    def frozen(cls):
        """A dataclass whose `__eq__` and `__hash__` are compiled at their first use, with the
        shared `__repr__` below (a method the class defines itself is kept, as `dataclass`
        keeps it)."""
        cls = _init_only(cls)
        compared = tuple(f.name for f in fields(cls) if f.compare)
        cls.__frozen_shown__ = tuple(f.name for f in fields(cls) if f.repr)
        own = cls.__dict__
        if "__eq__" not in own:
            cls.__eq__ = _first_eq(cls, compared)
        if own.get("__hash__") is None:  # None: Python's, for a class that defines __eq__
            cls.__hash__ = _first_hash(cls, compared)
        if "__repr__" not in own:
            cls.__repr__ = _repr
        return cls


def _compile(cls: Any, compared: tuple[str, ...]) -> None:
    """Give `cls` the `__eq__` and `__hash__` that `dataclass(unsafe_hash=True)` writes: a
    tuple of the compared fields (names of fields: identifiers), compiled once for both."""
    def fields_of(name: str) -> str:
        return "(" + "".join(f"{name}.{field}," for field in compared) + ")"

    code = (f"def __eq__(self, other):\n"
            f"    if other.__class__ is self.__class__:\n"
            f"        return {fields_of('self')} == {fields_of('other')}\n"
            f"    return NotImplemented\n"
            f"def __hash__(self):\n"
            f"    return hash({fields_of('self')})\n")
    made: dict[str, Any] = {}
    exec(code, {}, made)  # noqa: S102 (field names only, as dataclasses does)
    for name in ("__eq__", "__hash__"):
        if getattr(cls.__dict__.get(name), "__frozen_first__", False):
            made[name].__qualname__ = f"{cls.__qualname__}.{name}"
            setattr(cls, name, made[name])


def _first_eq(cls: Any, compared: tuple[str, ...]) -> Any:
    def __eq__(self: Any, other: Any) -> Any:  # noqa: N807
        _compile(cls, compared)
        return cls.__eq__(self, other)

    __eq__.__frozen_first__ = True  # type: ignore[attr-defined]
    return __eq__


def _first_hash(cls: Any, compared: tuple[str, ...]) -> Any:
    def __hash__(self: Any) -> int:  # noqa: N807
        _compile(cls, compared)
        return int(cls.__hash__(self))

    __hash__.__frozen_first__ = True  # type: ignore[attr-defined]
    return __hash__


def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__frozen_shown__)
    return f"{self.__class__.__qualname__}({shown})"
