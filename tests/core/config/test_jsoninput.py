"""Untrusted JSON (slicectl.core.config.jsoninput): every refusal names the file and the JSON path
of what is wrong, and says what was found."""

from __future__ import annotations

from typing import Any

import pytest

from slicectl.core.config.jsoninput import JsonReader, kind
from slicectl.core.errors import TopologyError

READER = JsonReader("topo.json", "re-export it with `slicectl topology --json`")


def refusal(call: Any, *args: Any) -> TopologyError:
    with pytest.raises(TopologyError) as e:
        call(*args)
    assert e.value.hint == "re-export it with `slicectl topology --json`"
    return e.value


def test_accepted_values() -> None:
    assert READER.field({"id": 3}, "id", "nodes[0]") == 3
    assert READER.items({"nodes": [1]}, "nodes") == [1]
    assert READER.integer(7, "nodes[0].id", 0, 8) == 7
    assert READER.optional(None, "cpus[0].core", 0, 8) is None
    assert READER.cpulist("0-2,5", "nodes[0].cpus") == {0, 1, 2, 5}
    assert READER.id_map({"0": 10, "1": 20}, "nodes[0].distances", 4, 256) == {0: 10, 1: 20}


@pytest.mark.parametrize(("call", "args", "message"), [
    (READER.field, ({}, "id", "nodes[2]"), "topo.json: nodes[2].id: missing"),
    (READER.field, ({}, "nodes", ""), "topo.json: nodes: missing"),
    (READER.items, ({"nodes": {}}, "nodes"), "topo.json: nodes: must be a list, not an object"),
    (READER.mapping, ([], "nodes[0]"), "topo.json: nodes[0]: must be an object, not a list"),
    (READER.integer, (-1, "nodes[2].id", 0, 1024),
     "topo.json: nodes[2].id: -1 is out of range (must be 0 to 1023)"),
    (READER.integer, (True, "nodes[0].id", 0, 8),
     "topo.json: nodes[0].id: must be an integer, not a boolean (true)"),
    (READER.integer, (1.5, "nodes[0].id", 0, 8),
     "topo.json: nodes[0].id: must be an integer, not a number (1.5)"),
    (READER.text, (None, "source"), "topo.json: source: must be a string, not null"),
    (READER.cpulist, ("0-99999999", "nodes[0].cpus"),
     "topo.json: nodes[0].cpus: CPU numbers must be below 8192"),
    (READER.cpulist, ("3-1", "nodes[0].cpus"),
     "topo.json: nodes[0].cpus: not a cpulist such as \"0-3,8\" (range '3-1' runs backwards "
     "in cpulist '3-1')"),
    (READER.id_map, ({"9": 10}, "nodes[0].distances", 4, 256),
     "topo.json: nodes[0].distances.9: keys must be ids below 4"),
    (READER.id_map, ({"x": 10}, "nodes[0].distances", 4, 256),
     "topo.json: nodes[0].distances.x: keys must be ids below 4"),
    (READER.id_map, ({"1": 300}, "nodes[0].distances", 4, 256),
     "topo.json: nodes[0].distances.1: 300 is out of range (must be 0 to 255)"),
])
def test_refusals_name_file_and_path(call: Any, args: tuple[Any, ...], message: str) -> None:
    assert refusal(call, *args).message == message


@pytest.mark.parametrize(("value", "text"), [
    ({}, "an object"), ([], "a list"), ("x", "a string"), (False, "a boolean (false)"),
    (-1, "an integer (-1)"), (0.5, "a number (0.5)"), (None, "null"),
])
def test_kind(value: Any, text: str) -> None:
    assert kind(value) == text
