"""`@record`: an immutable dataclass that costs what a plain one costs to build at import.

`@dataclass(frozen=True)` makes a class's instances refuse assignment at run time with a
`__setattr__` and a `__delattr__` of its own, which `dataclasses` writes out as source and
compiles with `exec` for every class, at every start of slicectl: for the value classes that
`slicectl generate` imports, a good part of its start-up (BENCHMARKS.md, "start-up: where the
time goes"). A `@record` class is immutable by contract instead, and
mypy --strict (tests/test_quality.py, over slicectl and the tests) holds every caller to it:
it treats `@record` exactly as `@dataclass(frozen=True)` (PEP 681's `frozen_default`), so
assigning to a field is a type error. At run time the class is a dataclass with the same
`__init__`, `__repr__`, `__eq__` and `__hash__` as the frozen one (`unsafe_hash=True` is
what frozen implies for the hash), and `dataclasses.replace`, `fields` and `asdict` work as
before. Use it for the core's value types; never assign to one (build a new one with
`dataclasses.replace`), and never inherit one with `@dataclass(frozen=True)`.
"""

from __future__ import annotations

from dataclasses import dataclass

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from dataclasses import field
    from typing import TypeVar, dataclass_transform

    T = TypeVar("T")

    @dataclass_transform(frozen_default=True, field_specifiers=(field,))
    def record(cls: type[T]) -> type[T]:
        """An immutable dataclass (see the module's docstring)."""

    @dataclass_transform(frozen_default=True, field_specifiers=(field,))
    def slotted_record(cls: type[T]) -> type[T]:
        """A `record` with `__slots__`, for the values built by the hundred every refresh
        (samples, metrics, the TUI's tree lines): frozen's `__init__` stores each field
        through `object.__setattr__`, many times a plain slots `__init__` for their 40
        fields (BENCHMARKS.md, tui.100.host)."""
else:
    record = dataclass(unsafe_hash=True)
    slotted_record = dataclass(slots=True, unsafe_hash=True)
