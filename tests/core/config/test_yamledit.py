"""The tenants.yaml editor (slicectl.core.config.yamledit): keys set and removed on tenants, every
other line kept byte for byte, the result validated before it is returned; and whole documents
merged into an existing file."""

from __future__ import annotations

import pytest

from slicectl.core.config.config import load_yaml
from slicectl.core.config.yamledit import (
    EDITABLE,
    current_values,
    edit_tenant,
    edit_tenants,
    merge_document,
)
from slicectl.core.errors import ConfigError

YAML = """\
# tenants of the test host
version: 1
housekeeping: {cpus: 2}   # keep two
confine:
  user.slice:   {memory_max: 2G}
tenants:
  # the database
  db1:
    cpus: 2          # placed by slicectl
    cpu_weight: 300  # more than web
    memory_max: 512M
  db2: {cpus: 2, cpu_quota: 150%}   # flow
"""


def test_current_values_as_the_user_wrote_them() -> None:
    values = current_values(YAML, "t.yaml", "db1")
    assert list(values) == list(EDITABLE)
    assert {k: v for k, v in values.items() if v} == {
        "cpus": "2", "cpu_weight": "300", "memory_max": "512M"}
    assert set(current_values(YAML, "t.yaml", "nobody").values()) == {""}


def test_edit_keeps_every_other_line_and_comment() -> None:
    text, config = edit_tenants(YAML, "t.yaml", {
        "db1": {"cpus": "0-3,8", "cpu_weight": "", "memory_high": "400M"},
        "db2": {"cpus": "3"}})
    assert text == YAML.replace(
        "    cpus: 2          # placed by slicectl\n"
        "    cpu_weight: 300  # more than web\n",
        "    cpus: \"0-3,8\"    # placed by slicectl\n"
        "    memory_high: 400M\n").replace("{cpus: 2, cpu_quota", "{cpus: 3, cpu_quota")
    db1 = config.tenant("db1")
    assert db1.cpus == frozenset({0, 1, 2, 3, 8}) and db1.cpu_weight is None
    assert config.tenant("db2").cpus == 3


def test_an_unchanged_edit_returns_the_text_unchanged() -> None:
    text, _ = edit_tenant(YAML, "t.yaml", "db1", {"cpu_weight": "300"})
    assert text == YAML


def test_booleans_are_yaml_booleans() -> None:
    text, config = edit_tenant(YAML, "t.yaml", "db1", {"exclusive": "false"})
    assert "    exclusive: false\n" in text and config.tenant("db1").exclusive is False


def test_an_invalid_result_is_refused_where_it_would_be() -> None:
    with pytest.raises(ConfigError) as e:
        edit_tenant(YAML, "t.yaml", "db1", {"cpu_weight": "0"})
    assert e.value.message == "t.yaml:10: tenants.db1.cpu_weight: 0 is out of range 1..10000"


def test_merge_into_nothing_writes_a_new_document() -> None:
    assert merge_document(None, {"version": 1, "tenants": {"db1": {"cpus": 2}}}) == (
        "version: 1\ntenants:\n  db1:\n    cpus: 2\n")
    assert merge_document("  \n", {"version": 1}) == "version: 1\n"


def test_merge_keeps_comments_and_spelling_and_drops_what_goes() -> None:
    merged = merge_document(YAML, {
        "version": 1, "housekeeping": {"cpus": 2},
        "tenants": {"db1": {"cpus": 2, "cpu_weight": 300, "memory_max": 512 << 20},
                    "web": {"cpus": 1}}})
    assert merged.startswith("# tenants of the test host\nversion: 1\n"
                             "housekeeping: {cpus: 2}   # keep two\ntenants:\n")
    assert "confine" not in merged and "db2" not in merged
    assert "    cpus: 2          # placed by slicectl\n" in merged
    assert "  web:\n    cpus: 1\n" in merged  # in the style of its block siblings


def test_merge_adds_flow_mappings_beside_flow_siblings() -> None:
    text = "tenants:\n  a: {cpus: 1}\n"
    assert merge_document(text, {"tenants": {"a": {"cpus": 1}, "b": {"cpus": 2}}}) == (
        "tenants:\n  a: {cpus: 1}\n  b: {cpus: 2}\n")


def test_merge_leaves_every_line_that_did_not_change_as_it_was() -> None:
    """ruamel respaced `user.slice:   {…}` and `db:   {…}` although neither changed."""
    import json

    text = ("version: 1\nconfine:\n  system.slice: {memory_max: 3G}   # housekeeping\n"
            "  user.slice:   {memory_max: 2G}\ntenants:\n  db:   {cpus: 4, memory_max: 8G}\n"
            "  web:  {cpus: 2}\n")
    data = json.loads(json.dumps(load_yaml(text, "t.yaml")))
    data["tenants"]["web"]["cpus"] = 3
    assert merge_document(text, data) == text.replace("  web:  {cpus: 2}", "  web: {cpus: 3}")
    data["tenants"]["new"] = {"cpus": 1}
    merged = merge_document(text, data)
    assert merged.startswith(text.split("  web:")[0]) and merged.endswith("  new: {cpus: 1}\n")
