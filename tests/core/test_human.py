"""The one formatter for people (slicectl/core/human.py): sizes, limits, rates, times."""

from __future__ import annotations

from typing import Any

import pytest

from slicectl.core.config.values import INFINITY, parse_size
from slicectl.core.human import exact_size, human_limit, human_rate, human_size, human_time

K, M, G = 1024, 1024**2, 1024**3


@pytest.mark.parametrize(("size", "text"), [
    (0, "0"), (512, "512B"), (1536, "1.5K"), (25088 * M, "24.5G"), (96 * G, "96G"),
    (6777044 * K, "6.5G"), (1023 * M, "1023M"), (INFINITY, "no limit"),
])
def test_human_size(size: Any, text: str) -> None:
    assert human_size(size) == text


def test_human_size_exact_never_rounds() -> None:
    assert exact_size(25088 * M) == "24.5G"  # exact at one decimal: as people write it
    assert exact_size(G + 1) == "1073741825"  # a change of a byte stays visible
    assert exact_size(1025 * K) == "1025K" and human_size(1025 * K) == "1M"
    assert exact_size(INFINITY) == "infinity"  # as tenants.yaml spells it
    for size in (3 * G, 1536 * M, 6656 * M, 100 * K + 3):
        assert parse_size(exact_size(size)) == size  # what it prints, systemd reads back


def test_no_limit_and_rates_say_what_they_are() -> None:
    assert human_limit(None) == human_limit(INFINITY) == "no limit"
    assert human_limit(None, "none") == "none" and human_limit(2 * G) == "2G"
    assert human_rate(1.5 * M) == "1.5M/s" and human_rate(0) == "0/s"
    assert human_rate(None) == "-"


@pytest.mark.parametrize(("zone", "text"), [
    ("UTC", "Sun 2026-11-22 01:00:00 UTC"),
    ("Europe/Berlin", "Sun 2026-11-22 02:00:00 CET (01:00 UTC)"),
    ("America/New_York", "Sat 2026-11-21 20:00:00 EST (Sun 2026-11-22 01:00 UTC)"),
])
def test_human_time_is_local_and_names_the_zone(zone: str, text: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setenv("TZ", zone)
    time.tzset()
    try:
        assert human_time(1795309200) == text  # 2026-11-22 01:00:00 UTC
    finally:
        monkeypatch.undo()
        time.tzset()
