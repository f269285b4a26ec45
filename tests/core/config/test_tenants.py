"""The tenants model (slicectl.core.config.tenants): profiles, slice names, lines of keys and the
elastic tenants' size range."""

from __future__ import annotations

import pytest

from slicectl.core.config.config import load_yaml, parse_config
from slicectl.core.config.tenants import BASE_PROFILE, Config, Tenant, slice_tenant
from slicectl.core.errors import ConfigError

YAML = """\
version: 1
slice: pool
tenants:
  db1:
    cpus: 4
    cpu_weight: 200
    memory_max: 1G
  web:
    cpus: 2
    cpus_max: 6
profiles:
  night:
    db1: {cpus: 2, cpu_weight: 50}
"""


@pytest.fixture
def config() -> Config:
    return parse_config(load_yaml(YAML, "t.yaml"), "t.yaml")


def test_slice_units(config: Config) -> None:
    assert config.slice_unit() == "pool.slice"
    assert config.slice_unit("db1") == "pool-db1.slice"


@pytest.mark.parametrize(("cgroup", "expected"), [
    ("pool-db1.slice", "db1"), ("/pool.slice/pool-db1.slice", "db1"),
    ("pool.slice/pool-db1.slice", "db1"),  # a sample's path, relative to the root
    ("pool-ghost.slice", "ghost"),  # no tenants.yaml to ask: any such slice
    ("pool.slice", None), ("pool-.slice", None), ("pool-db1.service", None),
    ("other-db1.slice", None), ("/system.slice/pool-db1.slice", None),
    ("/pool.slice/pool-db1.slice/app.service", None),
    ("pool-db1-x.slice", None),  # systemd nests it in pool-db1.slice: no tenant's own
])
def test_the_tenant_of_a_slice(config: Config, cgroup: str, expected: str | None) -> None:
    """One answer to "whose slice is this" for the balancer, the NUMA map and the exporter;
    with a tenants.yaml, only its tenants."""
    assert slice_tenant(cgroup, "pool") == expected
    assert config.tenant_of(cgroup) == (None if expected == "ghost" else expected)


def test_tenant_lookup(config: Config) -> None:
    assert config.tenant("web").name == "web"
    with pytest.raises(KeyError):
        config.tenant("nope")


def test_with_profile_overrides_fields_and_resources(config: Config) -> None:
    night = config.with_profile("night")
    db1 = night.tenant("db1")
    assert (db1.cpus, db1.cpu_weight, db1.memory_max) == (2, 50, 1 << 30)
    assert night.profile == "night" and night.tenant("web") == config.tenant("web")
    assert config.tenant("db1").cpus == 4  # the base is unchanged


def test_base_profile_means_the_base_configuration(config: Config) -> None:
    assert config.with_profile(None) is config
    assert config.with_profile(BASE_PROFILE) is config


def test_unknown_profile_names_those_defined(config: Config) -> None:
    with pytest.raises(ConfigError) as e:
        config.with_profile("weekend")
    assert e.value.message == "t.yaml: profiles: no profile 'weekend'"
    assert e.value.hint == "profiles in this file: night"
    with pytest.raises(ConfigError) as e:
        Config(path="t.yaml").with_profile("night")
    assert e.value.hint == "profiles in this file: none defined"


def test_lines_of_keys(config: Config) -> None:
    db1 = config.tenant("db1")
    assert (db1.line, db1.line_of("cpu_weight"), db1.line_of("memory_low")) == (4, 6, 4)


def test_elastic_size_range() -> None:
    assert not Tenant("a", cpus=4).elastic
    assert Tenant("a", cpus=4, cpus_max=6).size_range() == (4, 6)
    assert Tenant("a", cpus=4, cpus_min=2).size_range() == (2, 4)
    assert Tenant("a", cpus=4, cpus_min=2, cpus_max=8).elastic
    assert Tenant("a", cpus=frozenset({0, 1}), cpus_max=4).size_range() == (0, 4)
