"""YAML documents whose mappings and sequences know their lines, for error messages.

ruamel's round-trip loader keeps lines too, but it is pure Python and collects every comment,
a large share of what a `slicectl apply` costs (the figures: BENCHMARKS.md, "Hand-made pieces").
plan and apply read tenants.yaml on every run and need only the data and the lines, so they
use ruamel's safe loader with libyaml's parser (ruamel.yaml.clib, the `ruamel.yaml[oldlibyaml]`
extra) and record lines while it builds mappings and sequences. Without the C extension (e.g.
PyPy) the same loader runs in pure Python, still faster than the round-trip one. The
round-trip loader stays where comments matter: `recommend --write`.

`LineMap`/`LineSeq` answer the subset of ruamel's `.lc` API that slicectl uses (0-based, like
ruamel): `lc.line`, `lc.col`, `lc.key(k)`, `lc.value(k)`, `lc.item(i)`.
"""

from __future__ import annotations

import functools
import re
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


def _loader(pure: bool) -> Any:
    """ruamel's safe loader building LineMap/LineSeq (made once per process)."""
    if pure in _LOADERS:
        return _LOADERS[pure]
    from ruamel.yaml import YAML
    from ruamel.yaml.constructor import SafeConstructor

    class LineConstructor(_located_scalars(SafeConstructor)):  # type: ignore[misc]
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
    if not pure:
        yaml.Resolver = _c_resolver()
    yaml.allow_duplicate_keys = False
    _LOADERS[pure] = yaml
    return yaml


def round_trip_yaml() -> Any:
    """ruamel's round-trip YAML (keeps comments, key order, styles, quoting), whose scalars
    that cannot be converted are located errors like `load`'s."""
    from ruamel.yaml import YAML
    from ruamel.yaml.constructor import RoundTripConstructor

    yaml = YAML(typ="rt")
    yaml.Constructor = _located_scalars(RoundTripConstructor)
    return yaml


def _c_resolver() -> type:
    """ruamel's resolver for the C parser, without its per-scalar version lookup.

    `VersionedResolver.processing_version` asks the scanner for a %YAML directive on every
    scalar; the C parser has no Python scanner, so each lookup fails through two caught
    AttributeErrors and ends at the default version, 1.2 (a fifth of the time to load a 1 MB
    file). The answer is the same every time: say it once.
    """
    from ruamel.yaml.nodes import ScalarNode
    from ruamel.yaml.resolver import VersionedResolver

    class Resolver(VersionedResolver):
        """Also remembers the tags of short scalars: keys and values repeat in every tenant."""

        processing_version = (1, 2)
        CACHED = 4096

        def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
            if kind is not ScalarNode or len(value) > 32:
                return super().resolve(kind, value, implicit)
            cache = self.__dict__.setdefault("_tags", {})
            tag = cache.get((value, implicit))
            if tag is None:
                if len(cache) >= self.CACHED:
                    cache.clear()
                tag = cache[value, implicit] = super().resolve(kind, value, implicit)
            return tag

    return Resolver


def _located_scalars(base: type) -> type:
    """`base` (a ruamel constructor class) whose numbers that cannot be converted (`!!int
    1.5`, more digits than Python converts) are located YAML errors, not a bare ValueError.
    The other scalar constructors raise located errors already."""

    class Constructor(base):  # type: ignore[misc]
        def construct_yaml_int(self, node: Any) -> Any:
            try:
                return super().construct_yaml_int(node)
            except (ValueError, OverflowError) as e:
                raise _unreadable(node, e) from None

        def construct_yaml_float(self, node: Any) -> Any:
            try:
                return super().construct_yaml_float(node)
            except (ValueError, OverflowError) as e:
                raise _unreadable(node, e) from None

    Constructor.add_constructor("tag:yaml.org,2002:int", Constructor.construct_yaml_int)
    Constructor.add_constructor("tag:yaml.org,2002:float", Constructor.construct_yaml_float)
    return Constructor


def _unreadable(node: Any, error: Exception) -> Exception:
    """A scalar a constructor could not convert (`!!int 1.5`, a 5,000-digit number), as a
    located YAML error."""

    from slicectl.core.config.values import quote

    value = node.value if isinstance(node.value, str) else ""
    tag = str(node.tag).rpartition(":")[2]
    if tag == "int" and sum(ch.isdigit() for ch in value) > 4300:
        why = f"a number of {len(value)} digits is too large"
    else:
        why = f"{quote(value)} is not a valid {tag}" + (f" ({error})" if tag not in (
            "int", "float") else "")
    return _unreadable_error()(None, None, why, node.start_mark)


@functools.cache
def _unreadable_error() -> type[Exception]:
    """The error of a scalar that cannot be converted (load_located gives it its own hint)."""
    from ruamel.yaml.constructor import ConstructorError

    class UnreadableScalar(ConstructorError):
        """A scalar of a known tag whose text the tag's constructor refused. It stays here,
        not in slicectl.core.errors: it subclasses ruamel's ConstructorError (so ruamel's
        loader treats it as its own), and ruamel is imported only when a YAML file is read,
        never when the errors are."""

    return UnreadableScalar


def load_located(text: str, path: str, *, round_trip: bool = False) -> Any:
    """The YAML document in `text`; any YAML problem is a ConfigError located in `path`.

    With `round_trip`, ruamel's round-trip loader (comments kept, pure Python), else `load`.
    """
    from ruamel.yaml.error import MarkedYAMLError, YAMLError
    from ruamel.yaml.reader import ReaderError

    from slicectl.core.errors import ConfigError, Problem

    def problem(line: int, message: str, hint: str) -> ConfigError:
        return ConfigError([Problem(path, line, "", message, hint)])

    too_big = size_problem(text)
    if too_big is not None:
        raise problem(0, too_big, "a tenants.yaml of thousands of tenants is a few MiB; "
                      "check that this is the file you meant")
    deep = depth_problem(text, MAX_DEPTH)
    if deep is not None:
        raise problem(*deep, "a tenants.yaml needs a few levels of nesting, not hundreds")
    try:
        return round_trip_yaml().load(text) if round_trip else load(text)
    except MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        message = (e.problem or e.context or "invalid YAML").strip()
        hint = "check indentation and quoting around this line"
        if isinstance(e, _unreadable_error()):
            hint = "write a plain value of that type, or quote it to make it text"
        if "duplicate" in message.lower() or "found duplicate" in str(e).lower():
            message = "duplicate key " + message.split("found duplicate key", 1)[-1].strip()
            # A mapping or sequence is not built yet when ruamel sees the key twice: it
            # would quote it as "{}" or "[]", which is not what the file says.
            message = _UNBUILT_VALUES.sub("", message)
            hint = "each key may appear once; merge the two entries"
        raise problem(mark.line + 1 if mark is not None else 0, message, hint) from None
    except ReaderError as e:
        line = text.count("\n", 0, max(0, int(e.position))) + 1
        char = f"#x{e.character:04x}" if isinstance(e.character, int) else repr(e.character)
        raise problem(line, f"unacceptable character {char} ({e.reason})",
                      "tenants.yaml must be printable UTF-8 text") from None
    except RecursionError:
        raise problem((depth_problem(text, MAX_C_DEPTH) or (0, ""))[0],
                      "nested too deeply to read",
                      "a tenants.yaml needs a few levels of nesting, not hundreds") from None
    except YAMLError as e:
        raise problem(0, f"invalid YAML: {str(e)[:200]}", "check the file's syntax") from None


# libyaml's parser is iterative, but ruamel's C composer builds nested nodes recursively: a
# document nested tens of thousands deep crashes the process (SIGSEGV), whether the nesting is
# flow (`[[[[`) or block (`- - - -` on one line, or indentation). A document that may nest more
# than MAX_C_DEPTH deep is composed by the pure Python parser, which stops at Python's
# recursion limit with a RecursionError instead; one that may nest more than MAX_DEPTH is
# refused before parsing. "May nest": the bounds are counted on the text, not parsed, so they
# are upper bounds (a bracket in a quoted string counts too) and cheap enough for every run.
MAX_C_DEPTH = 64
_UNBUILT_VALUES = re.compile(r' with value "(?:\{\}|\[\])" \(original value: "(?:\{\}|\[\])"\)')
MAX_DEPTH = 200
# What any document slicectl reads may hold: a tenants.yaml of 32,000 tenants is about 2 MiB.
MAX_TEXT = 16 << 20
_BRACKETS = re.compile(r"[][{}]")
# A line's leading run of indentation and block indicators (`- `, `? `, `: `): every block
# collection nested inside another starts further right than its parent, on a later line or
# after an indicator on the same one, so the run's width bounds the line's block nesting: at
# most one level a column (a sequence that is a mapping's value may share its key's column, and
# the mapping in its item is two columns further).
_BLOCK_LEAD = re.compile(r"^(?:[ ]|[-?:](?=[ \t]|$)|\t)+", re.M)


def size_problem(text: str) -> str | None:
    """Why `text` is too large to read as a document of slicectl's, or None."""
    if len(text) <= MAX_TEXT:
        return None
    return f"is {len(text.encode('utf-8', 'surrogatepass')) >> 20} MiB; at most " \
           f"{MAX_TEXT >> 20} MiB are read"


def depth_problem(text: str, limit: int) -> tuple[int, str] | None:
    """(line, message) where the nesting of `text` may first exceed `limit` levels, or None.

    Flow collections: `[`/`{` counted across the text. Block collections: each line's leading
    indentation and indicators (see _BLOCK_LEAD). Either bound alone, or the two together on
    one line, past `limit` is reported."""
    flow = flow_depth_line(text, limit)
    if flow is not None:
        return flow, f"nested more than {limit} levels deep"
    widest = 0
    where = 0
    for m in _BLOCK_LEAD.finditer(text):
        width = m.end() - m.start()
        if width > widest:
            widest, where = width, m.start()
    if widest + 1 + _flow_depth_max(text) > limit:
        return text.count("\n", 0, where) + 1, (
            f"nested more than {limit} levels deep (indented or nested {widest} columns on "
            "one line)")
    return None


def _flow_depth_max(text: str) -> int:
    """The deepest `[`/`{` nesting of `text` (a bound, like flow_depth_line)."""
    if "[" not in text and "{" not in text:
        return 0
    depth = deepest = 0
    for m in _BRACKETS.finditer(text):
        if m.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(0, depth - 1)
    return deepest


def flow_depth_line(text: str, limit: int) -> int | None:
    """The line where `[`/`{` first nest more than `limit` deep, or None (brackets in quoted
    strings count too: this is a bound, not a parser)."""
    if text.count("[") + text.count("{") <= limit:
        return None
    depth = 0
    for m in _BRACKETS.finditer(text):
        if m.group() in "[{":
            depth += 1
            if depth > limit:
                return text.count("\n", 0, m.start()) + 1
        else:
            depth -= 1
    return None


def load(text: str, *, pure: bool = False) -> Any:
    """The YAML document in `text`, parsed by libyaml when available unless `pure` (or the
    text may nest deeply, MAX_C_DEPTH).

    ruamel's errors propagate (MarkedYAMLError with the line, YAMLError, RecursionError).
    """
    if not pure and depth_problem(text, MAX_C_DEPTH) is not None:
        pure = True
    return _loader(pure).load(text)
