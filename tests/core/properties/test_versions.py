"""Version gating (slicectl.core.properties.versions): a key the target's systemd or kernel cannot
take is refused before anything is written, located where tenants.yaml sets it."""

from __future__ import annotations

import pytest

from slicectl.core.config.config import load_yaml, parse_config
from slicectl.core.config.tenants import Config
from slicectl.core.errors import ConfigError
from slicectl.core.properties.versions import (
    check_version,
    kernel_problems,
    parse_kernel,
    parse_version,
    unsupported_keys,
    version_problems,
)

YAML = """\
version: 1
housekeeping: {cpus: 2}
tenants:
  db1:
    cpus: 4
    cpu_weight: idle
    memory_zswap_writeback: false
  web: {cpus: 2}
profiles:
  night:
    web: {memory_zswap_writeback: true}
"""
UPGRADE = "remove the key, or upgrade systemd on the target; --systemd-version N plans for " \
          "another target"


@pytest.fixture
def config() -> Config:
    return parse_config(load_yaml(YAML, "t.yaml"), "t.yaml")


@pytest.mark.parametrize(("text", "release"), [
    ("252.38-1~deb12u1", 252), ("systemd 252 (252.38-1~deb12u1)", 252), ("256", 256),
    (" 255.4-1ubuntu8", 255), ("unknown", None), ("", None),
])
def test_parse_version(text: str, release: int | None) -> None:
    assert parse_version(text) == release


@pytest.mark.parametrize(("text", "kernel"), [
    ("6.1.0-28-amd64", (6, 1)), ("6.8.12", (6, 8)), ("5.15", (5, 15)), ("linux", None),
])
def test_parse_kernel(text: str, kernel: tuple[int, int] | None) -> None:
    assert parse_kernel(text) == kernel


def test_every_key_too_new_is_located_where_it_is_set(config: Config) -> None:
    """Tenants and profiles alike, whether or not the profile is applied now; in line order."""
    problems = version_problems(config, 250, "the host")
    assert [str(p) for p in problems] == [
        "t.yaml:6: tenants.db1.cpu_weight: needs systemd 252 or later, but the target runs "
        "systemd 250 (the host)",
        "t.yaml:7: tenants.db1.memory_zswap_writeback: needs systemd 256 or later and Linux "
        "6.8 or later, but the target runs systemd 250 (the host)",
        "t.yaml:11: profiles.night.web.memory_zswap_writeback: needs systemd 256 or later and "
        "Linux 6.8 or later, but the target runs systemd 250 (the host)",
    ]
    assert {p.hint for p in problems} == {UPGRADE}


def test_a_value_may_need_a_later_release_than_its_property(config: Config) -> None:
    """CPUWeight= is old; `idle` needs 252."""
    assert [p.key for p in version_problems(config, 252, "x")] == [
        "tenants.db1.memory_zswap_writeback", "profiles.night.web.memory_zswap_writeback"]


def test_an_applied_profile_is_reported_once_where_the_profile_sets_it(config: Config) -> None:
    night = config.with_profile("night")
    assert [(p.line, p.key) for p in version_problems(night, 255, "x")] == [
        (7, "tenants.db1.memory_zswap_writeback"),
        (11, "profiles.night.web.memory_zswap_writeback")]


def test_kernel_too_old(config: Config) -> None:
    problems = kernel_problems(config, "6.1.0-28-amd64", "the host")
    assert [str(p) for p in problems] == [
        "t.yaml:7: tenants.db1.memory_zswap_writeback: needs Linux 6.8 or later, but the "
        "target runs Linux 6.1.0-28-amd64",
        "t.yaml:11: profiles.night.web.memory_zswap_writeback: needs Linux 6.8 or later, but "
        "the target runs Linux 6.1.0-28-amd64"]
    assert problems[0].hint == "remove the key, or upgrade the kernel on the target"
    assert kernel_problems(config, "6.8.0", "x") == []
    assert kernel_problems(config, "unparsable", "x") == []


def test_check_version(config: Config) -> None:
    check_version(config, None, "unknown")  # nothing known: nothing refused
    check_version(config, 256, "x", "6.8.0")
    with pytest.raises(ConfigError) as e:
        check_version(config, 255, "--systemd-version")
    assert "target runs systemd 255 (--systemd-version)" in e.value.message
    with pytest.raises(ConfigError) as e:
        check_version(config, 256, "x", "6.1.0")
    assert e.value.message.splitlines()[0] == (
        "t.yaml:7: tenants.db1.memory_zswap_writeback: needs Linux 6.8 or later, but the "
        "target runs Linux 6.1.0")


def test_unsupported_keys_are_the_ones_the_release_cannot_take() -> None:
    keys = ["cpus", "cpu_weight", "memory_high", "memory_zswap_writeback"]
    assert unsupported_keys(keys, 252) == {"memory_zswap_writeback": 256}
    assert unsupported_keys(keys, 256) == {}
    assert unsupported_keys(keys, None) == {}  # unknown: nothing held back on a guess
