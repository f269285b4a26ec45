"""Values of tenants.yaml take the ASCII digits 0-9 only: Python's int(), float(),
str.isdigit() and \\d take every script's digits (٥, ５), systemd only 0-9 (it ignores the
line, and the tenant runs without the limit). Each parser refuses a look-alike with the
value spelled in ASCII; whatever a value holds, what reaches a unit file is ASCII."""

from __future__ import annotations

from typing import Any

import pytest
from examplecounts import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from slicectl.core.config import parsers as S
from slicectl.core.config.values import parse_percent
from slicectl.core.cpulist import parse_cpulist
from slicectl.core.errors import ValueHint

LOOKALIKES = ["٥", "５", "²", "₅", "৫", "५", "๕", "߅", "𝟓", "\u00a0", "\u2009", "％", "Ｍ"]


@pytest.mark.parametrize(("parse", "value", "message", "hint"), [
    (S.memory_parser(0), "50.٥%", "'50.٥%' holds '٥' (U+0665 ARABIC-INDIC DIGIT FIVE), a digit "
     "other than 0-9: systemd reads only the ASCII digits 0-9 and would ignore the setting",
     "write 50.5%"),
    (S.memory_parser(0), "５０%", "'５０%' holds '５' (U+FF15 FULLWIDTH DIGIT FIVE)", "write 50%"),
    (S.memory_parser(0), "1²G", "'1²G' holds '²' (U+00B2 SUPERSCRIPT TWO), a digit other",
     "retype it with the digits 0-9"),
    (S.memory_parser(0), "50%\u00a0", "(U+00A0 NO-BREAK SPACE), not ASCII", "write 50%"),
    (S.memory_parser(0), "1０G", "holds '０'", "write 10G"),
    (S.parse_tasks_max, "５05‰", "holds '５'", "write 505‰"),
    (parse_percent, "１50%", "holds '１'", "write 150%"),
    (S.parse_quota_period, "１00ms", "holds '１'", "write 100ms"),
    (S.parse_cpus, "٠-٣", "holds '٠'", "write 0-3"),
    (S.parse_nodes, "０", "holds '０'", "write 0"),
    (S.parse_permyriad, "6０%", "holds '０'", "write 60%"),
    (S.parse_rate, "5０M", "holds '０'", "write 50M"),
    (S.parse_rate, "50Ｍ", "holds 'Ｍ' (U+FF2D FULLWIDTH LATIN CAPITAL LETTER M), not ASCII",
     "write 50M"),
    (S.parse_balance_time(0), "1０s", "holds '０'", "write 10s"),
])
def test_a_digit_other_than_0_to_9_is_refused_with_the_ascii_spelling(
        parse: Any, value: str, message: str, hint: str) -> None:
    with pytest.raises(ValueHint) as e:
        parse(value)
    assert message in str(e.value) and e.value.hint.startswith(hint), (str(e.value), e.value.hint)


@pytest.mark.parametrize("text", ["٠-٣", "１", "0,２", "٣-5"])
def test_parse_cpulist_takes_ascii_digits_only(text: str) -> None:
    with pytest.raises(ValueHint, match="a digit other than 0-9"):
        parse_cpulist(text)


def test_a_share_of_the_balance_policy_takes_ascii_digits_only() -> None:
    with pytest.raises(ValueError, match="is not a percent"):
        S.parse_share(0, 100)("9０%")


def test_the_share_signs_systemd_takes_stay() -> None:
    assert str(S.memory_parser(0)("505‰")) == "505‰"
    assert str(S.parse_tasks_max("5050‱")) == "5050‱"


NUMERIC_VALUES: dict[str, Any] = {
    "cpus": "0-1", "cpu_quota": "150%", "cpu_quota_period": "100ms", "memory_min": "1G",
    "memory_low": "25%", "memory_high": "12.5%", "memory_max": "505‰", "memory_swap_max": "0",
    "tasks_max": "5050‱", "io_read_bandwidth_max": {"/dev/sda": "50M"},
    "io_write_iops_max": {"/dev/sda": "1K"}, "startup_allowed_cpus": "0-1",
}


def _flow(value: Any) -> str:
    """`value` in YAML's flow style, every character beyond printable ASCII escaped as \\U
    (YAML takes any code point so, none raw: it refuses some, as C1 controls)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_flow(k)}: {_flow(v)}" for k, v in value.items()) + "}"
    return '"' + "".join(ch if " " <= ch <= "~" and ch not in '"\\' else f"\\U{ord(ch):08x}"
                         for ch in value) + '"'


def _rendered(values: dict[str, Any]) -> dict[str, str]:
    """tenants.yaml with tenant t's `values`, through the normal pipeline to unit files."""
    import json
    from pathlib import Path

    from slicectl.core.config.config import load_yaml, parse_config
    from slicectl.core.placement.topology import Topology
    from slicectl.core.plan import build_plan
    from slicectl.core.render import render
    from slicectl.host.files.templates import load_templates

    text = "version: 1\ntenants:\n  t: " + _flow(values) + "\n"
    topology = Topology.from_json(json.loads((Path(__file__).parent / "fixtures" / "topologies"
                                              / "xeon-2s-smt.json").read_text()))
    return render(build_plan(parse_config(load_yaml(text, "t.yaml"), "t.yaml"), topology,
                             shares=False), load_templates())


def test_the_values_of_the_property_below_render() -> None:
    files = _rendered(NUMERIC_VALUES)
    assert "MemoryMax=505‰\n" in files["tenants-t.slice.d/50-slicectl.conf"]


@given(st.sampled_from(sorted(NUMERIC_VALUES)), st.data())
@settings(max_examples=examples(200), deadline=None)
def test_a_value_with_a_character_beyond_ascii_is_refused_or_written_in_ascii(
        key: str, data: st.DataObject) -> None:
    """Whatever character beyond ASCII a value holds (a look-alike digit, a space, anything),
    the file is refused with the key named, or every unit written is ASCII but for the
    share signs systemd takes (‰, ‱)."""
    from slicectl.core.errors import ConfigError, PlacementError

    char = data.draw(st.one_of(st.sampled_from(LOOKALIKES),
                               st.characters(min_codepoint=0x80, exclude_categories=["Cs"])))
    values = dict(NUMERIC_VALUES)
    value = values[key]
    text = value if isinstance(value, str) else next(iter(value.values()))
    at = data.draw(st.integers(0, len(text)))
    digit_at = [i for i, ch in enumerate(text) if ch.isdigit()]
    replace: bool = data.draw(st.booleans())
    if digit_at and replace:  # a digit replaced by its look-alike
        i = data.draw(st.sampled_from(digit_at))
        look = data.draw(st.sampled_from([chr(0xFF10 + int(text[i])), chr(0x660 + int(text[i])),
                                          chr(0x966 + int(text[i]))]))
        changed = text[:i] + look + text[i + 1:]
    else:
        changed = text[:at] + char + text[at:]
    values[key] = changed if isinstance(value, str) else {"/dev/sda": changed}
    try:
        files = _rendered(values)
    except (ConfigError, PlacementError) as e:
        assert f"t.yaml:3: tenants.t.{key}: " in e.message, e.message
        return
    beyond = {ch for body in files.values() for ch in body if not ch.isascii()}
    assert beyond <= {"‰", "‱"}, (changed, beyond)
