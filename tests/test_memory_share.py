"""Shares of the host's RAM in memory properties ("50%"): what systemd takes, and the bytes
it makes of them (slicectl.core.config.values.RamShare)."""

from __future__ import annotations

import pytest

G = 1024**3

GiB96 = 96 * G


@pytest.mark.parametrize(("value", "permyriad", "text", "needs"), [
    ("50%", 5000, "50%", 0), ("100%", 10_000, "100%", 0), ("0%", 0, "0%", 0),
    ("050%", 5000, "50%", 0), ("12.5%", 1250, "12.5%", 248), ("50.25%", 5025, "50.25%", 248),
    ("505‰", 5050, "505‰", 240), ("502.5‰", 5025, "502.5‰", 240), ("5050‱", 5050, "5050‱", 248),
])
def test_parse_memory_size_takes_what_systemd_takes(value: str, permyriad: int, text: str,
                                                     needs: int) -> None:
    """systemd's parse_permyriad: % with two decimals, ‰ with one, ‱ whole (all accepted by
    systemd-analyze verify on 252; tests/core/test_render.py verifies a generated file)."""
    from slicectl.core.config.values import RamShare, parse_memory_size

    share = parse_memory_size(value)
    assert share == RamShare(permyriad, text)
    assert str(share) == text and share.needs() == needs


def test_parse_memory_size_keeps_sizes() -> None:
    from slicectl.core.config.values import INFINITY, parse_memory_size

    assert parse_memory_size("24G") == 24 * G
    assert parse_memory_size("infinity") is INFINITY


@pytest.mark.parametrize(("value", "minimum", "message", "hint"), [
    ("101%", 0, "'101%' is more than all of the host's RAM",
     "a share of RAM is 0% to 100% of the host's physical memory"),
    ("50.255%", 0, "'50.255%' is not a share of RAM systemd takes: % takes two decimals "
     "(50.25%)", "round it, e.g. 50.25%"),
    ("505.55‰", 0, "'505.55‰' is not a share of RAM systemd takes: ‰ takes one decimal "
     "(502.5‰)", "round it, e.g. 50.25%"),
    ("50 %", 0, "'50 %' is not a size or a share of RAM",
     "write a share as systemd does, 50%, 12.5%, 505‰ or 5050‱ (no space, no suffix), or a "
     "size such as 48G"),
    ("50%K", 0, "'50%K' is not a size (use a number with K, M, G or T, or infinity)", None),
])
def test_parse_memory_size_refuses_what_systemd_refuses(value: str, minimum: int, message: str,
                                                        hint: str | None) -> None:
    from slicectl.core.config.values import parse_memory_size

    with pytest.raises(ValueError) as e:
        parse_memory_size(value, minimum)
    assert (str(e.value), getattr(e.value, "hint", None)) == (message, hint)


def test_zero_percent_is_no_limit_only_where_systemd_takes_zero() -> None:
    """MemoryMax=0% and MemoryHigh=0% are "out of range" to systemd; MemoryLow=0% is not."""
    from slicectl.core.config.values import parse_memory_size

    assert parse_memory_size("0%", 0).permyriad == 0  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="systemd takes more than 0% here"):
        parse_memory_size("0%", 1)


@pytest.mark.parametrize(("ram", "permyriad", "file", "bus"), [
    # systemd's physical_memory_scale: pages of RAM, scaled, rounded down to whole pages.
    (GiB96, 5000, 48 * G, 48 * G),
    (GiB96, 10_000, GiB96, GiB96),
    (4 * G + 3 * 4096, 5000, 2 * G + 4096, 2 * G + 4096),
    (1000 * 4096 + 123, 3333, 333 * 4096, 333 * 4096),
    # 33.33% of 50000 pages: the file's permyriad and the bus's UINT32 scale round a page apart
    (50_000 * 4096, 3333, 16665 * 4096, 16664 * 4096),
    (7 * 4096, 1, 0, 0),
])
def test_share_of_ram_in_bytes_as_systemd_computes_them(ram: int, permyriad: int, file: int,
                                                        bus: int) -> None:
    from slicectl.core.config.values import RamShare

    share = RamShare(permyriad, "x")
    assert (share.bytes_of(ram), share.bytes_over_dbus(ram)) == (file, bus)


def test_share_of_ram_scale_is_systemds_uint32_scale() -> None:
    """UINT32_SCALE_FROM_PERMYRIAD of systemd's percent-util.h: rounded to the nearest."""
    from slicectl.core.config.values import RamShare

    assert RamShare(5000, "50%").scale() == 2**31
    assert RamShare(10_000, "100%").scale() == 2**32 - 1
    assert RamShare(1, "1‱").scale() == 429497


def test_memory_sum_of_shares_stays_a_share() -> None:
    from slicectl.core.config.values import INFINITY, RamShare, memory_sum

    assert memory_sum([RamShare(2500, "25%"), None, RamShare(1050, "105‰")], G) == RamShare(
        3550, "35.5%")
    assert memory_sum([RamShare(5000, "50%"), 2 * G], 8 * G) == 6 * G
    assert memory_sum([RamShare(5000, "50%"), INFINITY], 8 * G) is INFINITY
