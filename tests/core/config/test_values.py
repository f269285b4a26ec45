"""Parsers and formatters for the value types of tenants.yaml: cpulists, bitmasks, sizes,
percents, durations, and the per-key parsers of the settings table."""

from __future__ import annotations

from typing import Any

import pytest
from examplecounts import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from slicectl.core.config import parsers as S
from slicectl.core.config.values import (
    INFINITY,
    format_duration_us,
    format_size,
    parse_duration_us,
    parse_percent,
    parse_size,
)
from slicectl.core.cpulist import format_cpulist, from_bitmask, parse_cpulist, to_bitmask
from slicectl.core.errors import ValueHint

K, M, G, T = 1024, 1024**2, 1024**3, 1024**4

# --- cpulists -----------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "cpus"), [
    ("0-3,8,10-11", {0, 1, 2, 3, 8, 10, 11}),
    ("5", {5}),
    ("0,4,8,12", {0, 4, 8, 12}),
    ("2-2", {2}),
    ("0-3\n", {0, 1, 2, 3}),  # sysfs files end in a newline
    (" 0 , 2 ", {0, 2}),
    ("", set()),
    ("\n", set()),
])
def test_parse_cpulist(text: str, cpus: set[int]) -> None:
    assert parse_cpulist(text) == frozenset(cpus)


@pytest.mark.parametrize(("text", "message"), [
    ("1,,2", "empty element in cpulist '1,,2'"),
    ("3-1", "range '3-1' runs backwards in cpulist '3-1'"),
    ("a", "bad number 'a' in cpulist 'a'"),
    ("1-", "bad range '1-' in cpulist '1-'"),
    ("-1", "bad range '-1' in cpulist '-1'"),
    ("0-x", "bad range '0-x'"),
    ("1,", "empty element"),
])
def test_parse_cpulist_malformed_names_the_text(text: str, message: str) -> None:
    with pytest.raises(ValueError) as e:
        parse_cpulist(text)
    assert message in str(e.value)


@pytest.mark.parametrize(("cpus", "text"), [
    ({0, 1, 2, 3, 8}, "0-3,8"),
    ({0, 1}, "0,1"),  # a pair is written as a pair, like the kernel does
    ({0, 1, 2}, "0-2"),
    ({0, 1, 4, 5, 6, 9}, "0,1,4-6,9"),
    ({0, 4, 8, 12}, "0,4,8,12"),
    (set(), ""),
    ({7}, "7"),
])
def test_format_cpulist(cpus: set[int], text: str) -> None:
    assert format_cpulist(cpus) == text


def test_format_cpulist_accepts_unsorted_duplicates() -> None:
    assert format_cpulist([3, 1, 2, 3, 1]) == "1-3"


@given(st.frozensets(st.integers(0, 300), max_size=60))
@settings(max_examples=examples(200), deadline=None)
def test_cpulist_round_trip(cpus: frozenset[int]) -> None:
    text = format_cpulist(cpus)
    assert parse_cpulist(text) == cpus
    assert " " not in text


# --- bitmasks (systemd `ay`) -----------------------------------------------------------------


def test_bitmask_layout_bit_c_mod_8_of_byte_c_div_8() -> None:
    assert to_bitmask({0}) == b"\x01"
    assert to_bitmask({7}) == b"\x80"
    assert to_bitmask({8}) == b"\x00\x01"
    assert to_bitmask({0, 9}) == b"\x01\x02"
    assert to_bitmask({0, 1, 2, 3}) == b"\x0f"
    assert to_bitmask(set()) == b""


def test_from_bitmask_accepts_padded_masks_and_int_lists() -> None:
    assert from_bitmask(b"\x01\x02\x00\x00\x00\x00\x00\x00") == {0, 9}
    assert from_bitmask([1, 2]) == {0, 9}
    assert from_bitmask(b"") == frozenset()
    assert from_bitmask(b"\x00\x00") == frozenset()


@given(st.frozensets(st.integers(0, 1023), max_size=80), st.integers(0, 8))
@settings(max_examples=examples(200), deadline=None)
def test_bitmask_round_trip(cpus: frozenset[int], padding: int) -> None:
    mask = to_bitmask(cpus)
    assert from_bitmask(mask) == cpus
    assert from_bitmask(mask + b"\x00" * padding) == cpus
    assert not mask or mask[-1] != 0  # shortest mask


# --- sizes ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "size"), [
    ("24G", 24 * G), ("512M", 512 * M), ("1K", K), ("2T", 2 * T),
    ("1.5G", 3 * G // 2), ("0.5K", 512), ("1048576", M), ("0", 0), (0, 0), (4096, 4096),
    (" 24G ", 24 * G), ("24 G", 24 * G), ("1E", 1024**6),
    ("infinity", INFINITY), ("Infinity", INFINITY),
])
def test_parse_size(value: object, size: int) -> None:
    assert parse_size(value) == size


@pytest.mark.parametrize(("value", "message"), [
    (True, "not a boolean"),
    (False, "not a boolean"),
    (-1, "size -1 is negative"),
    ("-1G", "'-1G' is not a size"),
    ("12X", "'12X' is not a size (use a number with K, M, G or T, or infinity)"),
    ("1.1G", "'1.1G' is not a whole number of bytes"),
    ("1e3", "is not a size"),
    ("", "is not a size"),
    (1.5, "expected a size such as 512M, 24G or infinity, got 1.5"),
    ([1], "expected a size"),
])
def test_parse_size_refuses(value: object, message: str) -> None:
    with pytest.raises(ValueError) as e:
        parse_size(value)
    assert message in str(e.value)


@pytest.mark.parametrize(("value", "message", "hint"), [
    ("12GB", "'12GB' is not a size (systemd sizes take no B or iB)",
     "write 12G (systemd sizes are base 1024 and take no B)"),
    ("12Gb", "'12Gb' is not a size (systemd sizes take no B or iB)",
     "write 12G (systemd sizes are base 1024 and take no B)"),
    ("10KiB", "'10KiB' is not a size (systemd sizes take no B or iB)",
     "write 10K (systemd sizes are base 1024 and take no B)"),
    ("512B", "'512B' is not a size (systemd sizes take no B)",
     "write 512 (a plain number is bytes)"),
    ("24g", "'24g' is not a size (systemd's suffixes are upper case)",
     "write 24G (K, M, G, T, P, E: base 1024)"),
    ("max", "'max' is not a size (max is the cgroup file's word for no limit)",
     "write infinity"),
    ("50%", "'50%' is not a size: a share of RAM is not taken here",
     "write the size, e.g. 48G (`slicectl topology` shows the memory)"),
])
def test_parse_size_refuses_what_systemd_refuses_with_a_hint(value: str, message: str,
                                                             hint: str) -> None:
    """systemd refuses these for memory properties; the hint says what to write."""
    with pytest.raises(ValueHint) as e:
        parse_size(value)
    assert (str(e.value), e.value.hint) == (message, hint)


def test_parse_size_large_exact_byte_count() -> None:
    assert parse_size("9007199254740993") == 9007199254740993


@pytest.mark.parametrize(("size", "text"), [
    (0, "0"), (K, "1K"), (512 * M, "512M"), (24 * G, "24G"), (3 * T, "3T"),
    (1536, "1536"), (3 * G // 2, "1536M"), (1000, "1000"), (G + K, "1048577K"),
    (INFINITY, "infinity"),
])
def test_format_size_shortest_exact(size: int, text: str) -> None:
    assert format_size(size) == text


@given(st.integers(0, 2**50))
@settings(max_examples=examples(200), deadline=None)
def test_size_round_trip(size: int) -> None:
    assert parse_size(format_size(size)) == size


# --- percents and durations --------------------------------------------------------------------


@pytest.mark.parametrize(("value", "pct"), [("600%", 600), ("50%", 50), (" 50 % ", 50),
                                            ("1%", 1)])
def test_parse_percent(value: object, pct: int) -> None:
    assert parse_percent(value) == pct


@pytest.mark.parametrize(("value", "message"), [
    ("0%", "'0%' must be more than 0%"),
    ("-5%", "is not a percent"),
    ("1.5%", "'1.5%' is not a percent (write it like 150%)"),
    (True, "not a boolean"),
    (None, "is not a percent"),
])
def test_parse_percent_refuses(value: object, message: str) -> None:
    with pytest.raises(ValueError) as e:
        parse_percent(value)
    assert message in str(e.value)


@pytest.mark.parametrize(("value", "message", "hint"), [
    (4, "4 has no %: systemd refuses CPUQuota=4, and it is not clear whether 4 CPUs or 4% of "
        "one CPU is meant", "write the percent of one CPU: 400% for 4 CPUs, or 4% for 4% of "
                            "one CPU"),
    ("4", "'4' has no %", "400% for 4 CPUs"),
    (1, "whether 1 CPU or 1% of one CPU", "100% for 1 CPU, or 1%"),
    (1.5, "whether 1.5 CPUs or 1.5% of one CPU", "150% for 1.5 CPUs"),
    ("0.25", "whether 0.25 CPUs", "25% for 0.25 CPUs"),
    (0, "whether 0 CPUs", "0% for 0 CPUs"),
])
def test_a_bare_number_is_refused_saying_what_it_could_mean(value: object, message: str,
                                                           hint: str) -> None:
    """`cpu_quota: 4` was applied as CPUQuota=4%: a tenant meant to have 4 CPUs got 1/25 of
    one. systemd itself refuses CPUQuota=4."""
    with pytest.raises(ValueHint) as e:
        parse_percent(value)
    assert message in str(e.value) and hint in e.value.hint


@pytest.mark.parametrize(("value", "us"), [
    ("100ms", 100_000), ("1s", 1_000_000), ("500us", 500), ("30", 30_000_000),
    (2, 2_000_000), (" 20ms ", 20_000),
])
def test_parse_duration(value: object, us: int) -> None:
    assert parse_duration_us(value) == us


@pytest.mark.parametrize("value", ["1.5s", "-1ms", "1min", "ms", "", "100 m"])
def test_parse_duration_refuses(value: str) -> None:
    with pytest.raises(ValueError) as e:
        parse_duration_us(value)
    assert f"{value!r} is not a duration (write it like 100ms, 1s or 500us)" in str(e.value)


def test_parse_duration_refuses_bool() -> None:
    with pytest.raises(ValueError, match="not a boolean"):
        parse_duration_us(True)


@pytest.mark.parametrize(("us", "text"), [(100_000, "100ms"), (1_000_000, "1s"),
                                          (1500, "1500us"), (2_500_000, "2500ms"),
                                          (0, "0s")])
def test_format_duration(us: int, text: str) -> None:
    assert format_duration_us(us) == text


@given(st.integers(0, 10**12))
@settings(max_examples=examples(200), deadline=None)
def test_duration_round_trip(us: int) -> None:
    assert parse_duration_us(format_duration_us(us)) == us


# --- the settings table's parsers --------------------------------------------------------------


@pytest.mark.parametrize(("value", "parsed"), [
    (8, 8), ("0-3,16-19", frozenset({0, 1, 2, 3, 16, 17, 18, 19})), ([0, 2], frozenset({0, 2})),
])
def test_parse_cpus(value: Any, parsed: object) -> None:
    assert S.parse_cpus(value) == parsed


@pytest.mark.parametrize(("value", "message"), [
    (0, "a CPU count must be at least 1, got 0"),
    (-2, "at least 1"),
    (True, "expected a CPU count or a cpulist"),
    ([], "a CPU list must hold CPU numbers"),
    ([1, -1], "a CPU list must hold CPU numbers"),
    ([True], "a CPU list must hold CPU numbers"),
    ("", "the cpulist is empty"),
    ("3-1", "runs backwards"),
    (1.5, "expected a CPU count or a cpulist"),
])
def test_parse_cpus_refuses(value: Any, message: str) -> None:
    with pytest.raises(ValueError) as e:
        S.parse_cpus(value)
    assert message in str(e.value)


def test_housekeeping_cpus_allows_zero_and_cpulist_only_refuses_counts() -> None:
    assert S.parse_housekeeping_cpus(0) == 0
    assert S.parse_housekeeping_cpus("0,16") == frozenset({0, 16})
    with pytest.raises(ValueError, match="at least 1"):
        S.parse_housekeeping_cpus(-1)
    with pytest.raises(ValueError, match=r"expected a cpulist such as \"0-1\" here, not a count"):
        S.parse_cpulist_only(4)
    assert S.parse_cpulist_only("0-1") == frozenset({0, 1})


def test_parse_int_range() -> None:
    parse = S.parse_int_range(1, 10000)
    assert parse(1) == 1 and parse(10000) == 10000
    with pytest.raises(ValueError, match=r"0 is out of range 1\.\.10000"):
        parse(0)
    with pytest.raises(ValueError, match="expected a whole number from 1 to 10000"):
        parse(True)
    with pytest.raises(ValueError, match="expected a whole number"):
        parse("100")


def test_parse_bool_numa_nodes() -> None:
    assert S.parse_bool(False) is False
    with pytest.raises(ValueError, match="expected true or false, got 'yes'"):
        S.parse_bool("yes")
    assert S.parse_numa("spread") is S.Numa.SPREAD
    with pytest.raises(ValueError, match="expected one of local, spread, any; got 'near'"):
        S.parse_numa("near")
    assert S.parse_nodes(1) == (1,)
    assert S.parse_nodes([2, 0]) == (0, 2)
    assert S.parse_nodes("0-2") == (0, 1, 2)
    with pytest.raises(ValueError, match="a node is listed twice"):
        S.parse_nodes([0, 0])
    with pytest.raises(ValueError, match="expected a list of node numbers"):
        S.parse_nodes([])
    with pytest.raises(ValueError, match="expected a list of node numbers"):
        S.parse_nodes(True)


@pytest.mark.parametrize("name", ["app.service", "oracle@db1.service", "a-b_c:d.socket",
                                  "x\\x2dy.mount"])
def test_check_unit_name_accepts(name: str) -> None:
    assert S.check_unit_name(name) == name


@pytest.mark.parametrize(("name", "message"), [
    ("app", "is not a valid systemd unit name"),
    ("/etc/app.service", "is not a valid systemd unit name"),
    ("a b.service", "is not a valid systemd unit name"),
    ("x.service\n[Service]", "is not a valid systemd unit name"),
    ("app.target", "must end in .service"),
    ("app@.service", "is a template; name an instance such as app@1.service"),
    ("a" * 250 + ".service", "is 258 bytes long; at most 255 fit"),
    ("x.service\n", "is not a valid systemd unit name"),
])
def test_check_unit_name_refuses(name: str, message: str) -> None:
    with pytest.raises(ValueError) as e:
        S.check_unit_name(name)
    assert message in str(e.value)


def test_unit_list_refuses_duplicates_and_non_member_types() -> None:
    parse = S.parse_unit_list(S.SLICE_MEMBER_TYPES)
    assert parse("a.service") == ("a.service",)
    with pytest.raises(ValueError, match="a unit is listed twice"):
        parse(["a.service", "a.service"])
    with pytest.raises(ValueError, match="must end in .service, .socket, .mount, .swap"):
        parse(["a.timer"])
    with pytest.raises(ValueError, match=r"expected a list of unit names such as \[app.service\]"):
        parse([1])


def test_parse_description() -> None:
    assert S.parse_description("  OLTP 100%  ") == "OLTP 100%"
    with pytest.raises(ValueError, match="must be a single line without control characters"):
        S.parse_description("a\tb")
    with pytest.raises(ValueError, match="is longer than 200 characters"):
        S.parse_description("x" * 201)
    with pytest.raises(ValueError, match="expected text, got 5"):
        S.parse_description(5)

