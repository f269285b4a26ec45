"""CPU and node lists (slicectl.core.cpulist): the kernel's cpumask syntax, and the shortest
cpulist slicectl writes. Parsing cpulists and the `ay` bitmasks are tested in test_values.py."""

from __future__ import annotations

import pytest

from slicectl.core.cpulist import KERNEL_MAX_CPUS, format_cpulist, parse_cpulist, parse_cpumask


@pytest.mark.parametrize(("text", "cpus"), [
    ("00000000,0000ff0f", {0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15}),
    ("1,00000001", {0, 32}),  # most significant word first
    ("00000000\n", set()),
    ("80000000", {31}),
])
def test_parse_cpumask(text: str, cpus: set[int]) -> None:
    assert parse_cpumask(text) == cpus


@pytest.mark.parametrize("text", ["00000000,zz", "123456789", "", "0x1"])
def test_parse_cpumask_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="is not a word of 1 to 8 hex digits"):
        parse_cpumask(text)


@pytest.mark.parametrize(("cpus", "text"), [
    ({0, 1, 2, 3, 8}, "0-3,8"),
    ({0, 1, 3, 4, 5, 9}, "0,1,3-5,9"),  # two in a row stay a pair: as short as "0-1"
    (set(), ""),
    ([7, 7, 6], "6,7"),
])
def test_format_cpulist_is_the_shortest(cpus: set[int] | list[int], text: str) -> None:
    assert format_cpulist(cpus) == text


def test_format_then_parse_keeps_every_cpu_up_to_the_kernels_limit() -> None:
    every_third = set(range(0, KERNEL_MAX_CPUS, 3)) | {KERNEL_MAX_CPUS - 1}
    assert parse_cpulist(format_cpulist(every_third)) == every_third
