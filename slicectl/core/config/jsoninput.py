"""Reading JSON that users hand us (a topology export) as untrusted input (pure).

Every check names the file and the JSON path of what is wrong (`topo.json: nodes[2].id: -1 is
out of range`), as tenants.yaml problems name file, line and key; nothing reaches the model
unchecked, and no malformed value ends in a traceback.
"""

from __future__ import annotations

import re
from typing import Any

from slicectl.core.cpulist import KERNEL_MAX_CPUS, parse_cpulist
from slicectl.core.errors import SlicectlError, TopologyError


class JsonReader:
    """Typed accessors over decoded JSON; each raises `error` (TopologyError unless told)
    naming file and path."""

    def __init__(self, where: str, hint: str,
                 error: type[SlicectlError] = TopologyError) -> None:
        self.where = where
        self.hint = hint
        self.error = error

    def fail(self, path: str, message: str) -> SlicectlError:
        return self.error(f"{self.where}: {path}: {message}", self.hint)

    def field(self, obj: dict[str, Any], key: str, path: str) -> Any:
        if key not in obj:
            raise self.fail(f"{path}.{key}" if path else key, "missing")
        return obj[key]

    def items(self, obj: dict[str, Any], key: str) -> list[Any]:
        value = self.field(obj, key, "")
        if not isinstance(value, list):
            raise self.fail(key, f"must be a list, not {kind(value)}")
        return value

    def document(self, data: Any, fmt: str) -> dict[str, Any]:
        """A whole file's object, whose `format` must be `fmt` (slicectl's state files)."""
        doc = self.mapping(data, "(document)")
        if doc.get("format") != fmt:
            raise self.fail("format", f"is {doc.get('format')!r}, not {fmt!r}")
        return doc

    def mapping(self, value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(path, f"must be an object, not {kind(value)}")
        return value

    def integer(self, value: Any, path: str, lo: int, hi: int) -> int:
        """An integer in [lo, hi); booleans and numbers with a fraction are refused."""
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(path, f"must be an integer, not {kind(value)}")
        if not lo <= value < hi:
            raise self.fail(path, f"{value} is out of range (must be {lo} to {hi - 1})")
        return value

    def optional(self, value: Any, path: str, lo: int, hi: int) -> int | None:
        return None if value is None else self.integer(value, path, lo, hi)

    def text(self, value: Any, path: str) -> str:
        if not isinstance(value, str):
            raise self.fail(path, f"must be a string, not {kind(value)}")
        return value

    def cpulist(self, value: Any, path: str) -> frozenset[int]:
        """A kernel cpulist string whose numbers are bounded before any range is expanded."""
        text = self.text(value, path)
        if any(len(n) > 6 or int(n) >= KERNEL_MAX_CPUS for n in re.findall(r"[0-9]+", text)):
            raise self.fail(path, f"CPU numbers must be below {KERNEL_MAX_CPUS}")
        try:
            return parse_cpulist(text)
        except ValueError as e:
            raise self.fail(path, f"not a cpulist such as \"0-3,8\" ({e})") from e

    def id_map(self, value: Any, path: str, ids_below: int, values_below: int
               ) -> dict[int, int]:
        """An object {"<id>": integer}, such as a node's distances."""
        result: dict[int, int] = {}
        for k, v in self.mapping(value, path).items():
            if not (k.isascii() and k.isdigit() and len(k) <= 6) or int(k) >= ids_below:
                raise self.fail(f"{path}.{k}", f"keys must be ids below {ids_below}")
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < values_below:
                self.integer(v, f"{path}.{k}", 0, values_below)  # raises, naming the value
            result[int(k)] = v
        return result


def kind(value: Any) -> str:
    """What a JSON value is, for a message: 'a string', 'an integer (-1)', 'null'."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
             int: "an integer", float: "a number", type(None): "null"}
    name = names.get(type(value), type(value).__name__)
    if isinstance(value, bool):
        return f"{name} ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"{name} ({value!r})"
    return name
