"""`frozen`: a dataclass that mypy checks as frozen, built at run time without the frozen
machinery (it replaces `dataclasses.dataclass(frozen=True)` for the core's value types).

`@dataclass(frozen=True)` compiles a `__setattr__` and a `__delattr__` with `exec` for every
class, at every start: for the 50-odd value types that `slicectl generate` and the systemd
generator import, about a tenth of their start-up (BENCHMARKS.md, "start-up"), which the
generator pays at every boot and daemon-reload. A `@frozen` class is a plain dataclass with
value equality and hash at run time, and frozen to mypy --strict (tests/test_quality.py), which
refuses any assignment to a field: build a new value with `dataclasses.replace`.
"""

from __future__ import annotations

from dataclasses import dataclass

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from dataclasses import field
    from typing import TypeVar, dataclass_transform

    T = TypeVar("T")

    @dataclass_transform(frozen_default=True, field_specifiers=(field,))
    def frozen(cls: type[T]) -> type[T]:
        """A dataclass, frozen to mypy (see the module's docstring)."""
else:
    frozen = dataclass(unsafe_hash=True)
