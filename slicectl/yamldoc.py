"""YAML documents whose mappings and sequences know their lines, for error messages.

ruamel's round-trip loader keeps lines too, but it is pure Python and collects every comment:
0.66 s of the 5.4 s a `slicectl apply` of 100 tenants took in the testbed (39 ms on the
host). plan and apply read tenants.yaml on every run and need only the data and
the lines, so they use ruamel's safe loader with libyaml's parser (ruamel.yaml.clib, the
`ruamel.yaml[oldlibyaml]` extra: 7 ms on the host) and record lines while it builds mappings
and sequences. Without the C extension (e.g. PyPy) the same loader runs in pure Python
(30 ms). The round-trip loader stays where comments matter: `recommend --write`.

`LineMap`/`LineSeq` answer the subset of ruamel's `.lc` API that slicectl uses (0-based, like
ruamel): `lc.line`, `lc.col`, `lc.key(k)`, `lc.value(k)`, `lc.item(i)`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


class Lines:
    """Where a node starts, and where each of its keys (or items) and values start."""

    __slots__ = ("line", "col", "data")

    def __init__(self, line: int, col: int) -> None:
        self.line = line
        self.col = col
        self.data: dict[Any, tuple[int, int, int, int]] = {}

    def key(self, key: Any) -> tuple[int, int]:
        line, col, _, _ = self.data[key]
        return line, col

    def value(self, key: Any) -> tuple[int, int]:
        _, _, line, col = self.data[key]
        return line, col

    def item(self, index: int) -> tuple[int, int]:
        line, col, _, _ = self.data[index]
        return line, col


class LineMap(dict):  # type: ignore[type-arg]
    """A mapping from a YAML document, with `lc` (its lines)."""

    __slots__ = ("lc",)
    lc: Lines


class LineSeq(list):  # type: ignore[type-arg]
    """A sequence from a YAML document, with `lc` (its lines)."""

    __slots__ = ("lc",)
    lc: Lines


def _start(node: Any) -> Lines:
    return Lines(node.start_mark.line, node.start_mark.column)


_LOADERS: dict[bool, Any] = {}


def c_parser_available() -> bool:
    """Whether ruamel found libyaml's parser (ruamel.yaml.clib)."""
    import ruamel.yaml.main

    return getattr(ruamel.yaml.main, "CParser", None) is not None


def _loader(pure: bool) -> Any:
    """ruamel's safe loader building LineMap/LineSeq (made once per process)."""
    if pure in _LOADERS:
        return _LOADERS[pure]
    from ruamel.yaml import YAML
    from ruamel.yaml.constructor import SafeConstructor

    class LineConstructor(SafeConstructor):
        def construct_line_map(self, node: Any) -> Iterator[LineMap]:
            data = LineMap()
            data.lc = _start(node)
            yield data
            data.update(self.construct_mapping(node))  # merges `<<`, refuses duplicates
            lines = data.lc.data
            for key_node, value_node in node.value:
                key = self.construct_object(key_node)
                k, v = key_node.start_mark, value_node.start_mark
                try:
                    lines[key] = (k.line, k.column, v.line, v.column)
                except TypeError:  # an unhashable key: construct_mapping has refused it
                    continue

        def construct_line_seq(self, node: Any) -> Iterator[LineSeq]:
            data = LineSeq()
            data.lc = _start(node)
            yield data
            data.extend(self.construct_sequence(node))
            data.lc.data.update(
                (i, (n.start_mark.line, n.start_mark.column, n.start_mark.line,
                     n.start_mark.column)) for i, n in enumerate(node.value))

    LineConstructor.add_constructor("tag:yaml.org,2002:map",
                                    LineConstructor.construct_line_map)
    LineConstructor.add_constructor("tag:yaml.org,2002:seq",
                                    LineConstructor.construct_line_seq)
    yaml = YAML(typ="safe", pure=pure)
    yaml.Constructor = LineConstructor
    yaml.allow_duplicate_keys = False
    _LOADERS[pure] = yaml
    return yaml


def load(text: str, *, pure: bool = False) -> Any:
    """The YAML document in `text`, parsed by libyaml when available unless `pure`.

    ruamel's errors propagate (MarkedYAMLError with the line, YAMLError).
    """
    return _loader(pure).load(text)
