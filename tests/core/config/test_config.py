"""tenants.yaml parsing: each key, defaults, and every problem located by file:line: key.

Why this module runs past 400 lines: one test per tenants.yaml key and per kind of problem, each
with its own small document; the parser they check is one module.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from slicectl.core.config import yamldoc
from slicectl.core.config.config import Config, load_yaml, parse_config
from slicectl.core.config.values import INFINITY
from slicectl.core.errors import ConfigError, Problem
from slicectl.core.properties.properties import PROFILE_KEYS, Numa
from slicectl.host.planning import load_tenants

G = 1024**3
M = 1024**2


@pytest.fixture(autouse=True, params=["libyaml", "pure"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs with libyaml's parser and with ruamel's pure-Python one (the
    fallback where ruamel.yaml.clib is missing): same data, same lines, same problems."""
    if request.param == "pure":
        load = yamldoc.load
        monkeypatch.setattr(yamldoc, "load", lambda text, pure=True: load(text, pure=True))
    return str(request.param)


def parse(text: str, path: str = "t.yaml") -> Config:
    return parse_config(load_yaml(textwrap.dedent(text), path), path)


def problems(text: str, path: str = "t.yaml") -> list[Problem]:
    with pytest.raises(ConfigError) as e:
        parse(text, path)
    return e.value.problems


def line_of(text: str, needle: str, nth: int = 1) -> int:
    """1-based line of the nth line containing `needle` (how a user finds it in an editor)."""
    hits = [i for i, line in enumerate(textwrap.dedent(text).splitlines(), 1) if needle in line]
    assert len(hits) >= nth, f"{needle!r} not in the test's YAML"
    return hits[nth - 1]


def located(ps: list[Problem]) -> set[str]:
    return {str(p) for p in ps}


# --- keys and defaults ---------------------------------------------------------------------


def test_defaults() -> None:
    c = parse("""\
        version: 1
        tenants:
          a:
    """)
    assert c.slice == "tenants"
    assert c.housekeeping_cpus == 0
    assert c.confine == () and c.profiles == {} and c.profile is None
    (a,) = c.tenants
    assert a.name == "a"
    assert (a.cpus, a.numa, a.nodes, a.exclusive, a.services) == (None, Numa.LOCAL, None, True, ())
    for key in ("description", "cpu_weight", "cpu_quota", "cpu_quota_period", "memory_max",
                "memory_high", "memory_low", "memory_min", "memory_swap_max"):
        assert getattr(a, key) is None, key
    assert c.slice_unit() == "tenants.slice" and c.slice_unit("a") == "tenants-a.slice"


def test_every_key_parsed() -> None:
    text = """\
        version: 1
        slice: pods
        housekeeping:
          cpus: "0,16"
        confine:
          system.slice: {memory_high: 2G, memory_max: 3G, cpu_weight: 50}
          cron.service: {memory_max: 512M, cpu_quota: 50%, cpus: "0-1", memory_swap_max: 0}
        tenants:
          db1:
            description: OLTP 1
            cpus: "0-3,16-19"
            numa: spread
            nodes: [1, 0]
            exclusive: false
            cpu_weight: 200
            cpu_quota: 600%
            cpu_quota_period: 100ms
            memory_max: 24G
            memory_high: 22G
            memory_low: 16G
            memory_min: 0
            memory_swap_max: infinity
            services: [oracle@db1.service, db1.socket]
          web:
            cpus: 8
            numa: any
    """
    c = parse(text)
    assert c.slice == "pods"
    assert c.slice_unit("web") == "pods-web.slice"
    assert c.housekeeping_cpus == frozenset({0, 16})
    assert c.housekeeping_line == line_of(text, 'cpus: "0,16"')
    db1 = c.tenant("db1")
    assert db1.description == "OLTP 1"
    assert db1.cpus == frozenset({0, 1, 2, 3, 16, 17, 18, 19})
    assert db1.numa is Numa.SPREAD and db1.nodes == (0, 1) and db1.exclusive is False
    assert (db1.cpu_weight, db1.cpu_quota, db1.cpu_quota_period) == (200, 600, 100_000)
    assert (db1.memory_max, db1.memory_high, db1.memory_low) == (24 * G, 22 * G, 16 * G)
    assert (db1.memory_min, db1.memory_swap_max) == (0, INFINITY)
    assert db1.services == ("oracle@db1.service", "db1.socket")
    assert db1.line == line_of(text, "db1:")
    assert db1.line_of("memory_low") == line_of(text, "memory_low")
    assert db1.line_of("absent_key") == db1.line
    web = c.tenant("web")
    assert web.cpus == 8 and web.numa is Numa.ANY
    system, cron = c.confine
    assert system.unit == "system.slice"
    assert (system.memory_high, system.memory_max, system.cpu_weight) == (2 * G, 3 * G, 50)
    assert cron.unit == "cron.service" and cron.line == line_of(text, "cron.service")
    assert (cron.memory_max, cron.cpu_quota, cron.cpus, cron.memory_swap_max) == (
        512 * M, 50, frozenset({0, 1}), 0)


def test_housekeeping_count() -> None:
    text = """\
        version: 1
        housekeeping:
          cpus: 2
        tenants: {a: {}}
    """
    c = parse(text)
    assert c.housekeeping_cpus == 2
    assert c.housekeeping_line == 3


# --- problems, all at once, with lines -------------------------------------------------------


def test_every_problem_listed_at_once_with_lines_and_hints() -> None:
    text = """\
        version: 1
        tennants: {}
        housekeeping:
          cpus: x
          count: 2
        tenants:
          db1:
            memroy_low: 1G
            cpu_weight: 0
          db2:
            memory_max: 12X
            numa: near
            services: [bad name.service]
          web:
            cpus: 0
            exclusive: "yes"
    """
    ps = problems(text)
    f = "t.yaml"
    expected = {
        f"{f}:{line_of(text, 'tennants')}: tennants: unknown key",
        f"{f}:{line_of(text, 'cpus: x')}: housekeeping.cpus: bad number 'x' in cpulist 'x'",
        f"{f}:{line_of(text, 'count: 2')}: housekeeping.count: unknown key",
        f"{f}:{line_of(text, 'memroy_low')}: tenants.db1.memroy_low: unknown key",
        f"{f}:{line_of(text, 'cpu_weight')}: tenants.db1.cpu_weight: 0 is out of range 1..10000",
        f"{f}:{line_of(text, '12X')}: tenants.db2.memory_max: '12X' is not a size (use a number "
        "with K, M, G or T, or infinity)",
        f"{f}:{line_of(text, 'near')}: tenants.db2.numa: expected one of local, spread, any; "
        "got 'near'",
        f"{f}:{line_of(text, 'bad name')}: tenants.db2.services: 'bad name.service' is not a "
        "valid systemd unit name",
        f"{f}:{line_of(text, 'cpus: 0')}: tenants.web.cpus: a CPU count must be at least 1, got 0",
        f"{f}:{line_of(text, 'exclusive')}: tenants.web.exclusive: expected true or false, "
        "got 'yes'",
    }
    assert located(ps) == expected
    assert all(p.hint for p in ps), [p for p in ps if not p.hint]
    by_key = {p.key: p for p in ps}
    assert by_key["tennants"].hint.startswith("did you mean 'tenants'?")
    assert by_key["tenants.db1.memroy_low"].hint.startswith("did you mean 'memory_low'?")
    assert "memory_max:" in by_key["tenants.db2.memory_max"].hint  # the setting's doc
    # The ConfigError's message lists them all, one per line.
    with pytest.raises(ConfigError) as e:
        parse(text)
    assert len(str(e.value).splitlines()) == len(expected)


def test_numa_local_with_several_nodes() -> None:
    text = """\
        version: 1
        tenants:
          a:
            cpus: 2
            nodes: [0, 1]
    """
    (p,) = problems(text)
    assert str(p) == ("t.yaml:5: tenants.a.nodes: numa: local means one node, but several "
                      "nodes are listed")
    assert p.hint == "list one node, or set numa: spread"
    spread = "version: 1\ntenants:\n  a: {cpus: 2, nodes: [0, 1], numa: spread}\n"
    assert parse(spread).tenants[0].nodes == (0, 1)


def test_unknown_key_without_close_match_lists_known_keys() -> None:
    (p,) = problems("""\
        version: 1
        tenants:
          a: {zzzzzz: 1}
    """)
    assert p.key == "tenants.a.zzzzzz" and p.line == 3
    assert "did you mean" not in p.hint
    assert p.hint.startswith("known keys: description, cpus, numa")


@pytest.mark.parametrize("name", ["DB", "Web1", "a-b", "_x", "-a", "a.b", "ä"])
def test_invalid_tenant_names(name: str) -> None:
    text = f"""\
        version: 1
        tenants:
          ok: {{}}
          "{name}": {{cpus: 1}}
    """
    (p,) = problems(text)
    assert str(p) == f"t.yaml:4: tenants.{name}: invalid tenant name"
    assert "a '-' would nest slices" in p.hint


def test_integer_tenant_name_is_invalid() -> None:
    (p,) = problems("version: 1\ntenants:\n  1: {}\n")
    assert str(p) == "t.yaml:3: tenants.1: invalid tenant name"


@pytest.mark.parametrize("name", ["a", "0db", "db_1", "x9"])
def test_valid_tenant_names(name: str) -> None:
    assert parse(f"version: 1\ntenants:\n  {name}: {{}}\n").tenants[0].name == name


def test_invalid_slice_name() -> None:
    (p,) = problems("version: 1\nslice: My-Tenants\ntenants: {a: {}}\n")
    assert str(p) == "t.yaml:2: slice: invalid slice name 'My-Tenants'"


@pytest.mark.parametrize(("text", "expected"), [
    ("version: 1\nhousekeeping: 3\ntenants: {a: {}}\n",
     "t.yaml:2: housekeeping: expected a mapping, got int 3"),
    ("version: 1\ntenants: [a, b]\n",
     "t.yaml:2: tenants: expected a mapping of tenant names, got a list"),
    ("version: 1\ntenants:\n  a: 4\n",
     "t.yaml:3: tenants.a: expected a mapping of settings, got int 4"),
    ("version: 1\ntenants: {a: {}}\nconfine: [system.slice]\n",
     "t.yaml:3: confine: expected a mapping of unit names, got a list"),
    ("version: 1\ntenants: {a: {}}\nprofiles: night\n",
     "t.yaml:3: profiles: expected a mapping of profile names, got str 'night'"),
    ("version: 1\ntenants: {a: {}}\nprofiles:\n  night: 4\n",
     "t.yaml:4: profiles.night: expected tenant overrides, got int 4"),
    ("version: 1\ntenants: {a: {}}\nprofiles:\n  Night: {}\n",
     "t.yaml:4: profiles.Night: invalid profile name"),
])
def test_wrong_shapes(text: str, expected: str) -> None:
    ps = problems(text)
    assert [str(p) for p in ps] == [expected]
    assert ps[0].hint


# --- version, top level, files ---------------------------------------------------------------


def test_version_missing() -> None:
    (p,) = problems("tenants: {a: {}}\n")
    assert str(p) == "t.yaml:1: version: missing"
    assert p.hint == "add `version: 1` at the top"


@pytest.mark.parametrize("version", ["2", "'1'", "1.5", "0"])
def test_version_unsupported(version: str) -> None:
    (p,) = problems(f"tenants: {{a: {{}}}}\nversion: {version}\n")
    assert p.line == 2 and p.key == "version"
    assert p.message.startswith("unsupported version")
    assert p.hint == "this slicectl reads version: 1"


def test_tenants_missing() -> None:
    (p,) = problems("version: 1\n")
    assert str(p) == "t.yaml:1: tenants: missing"


@pytest.mark.parametrize(("text", "kind"), [("", "nothing"), ("- a\n- b\n", "a list"),
                                            ("just text\n", "str 'just text'"),
                                            ("# only a comment\n", "nothing")])
def test_top_level_not_a_mapping(text: str, kind: str) -> None:
    (p,) = problems(text)
    assert str(p) == f"t.yaml:1: expected a mapping at the top level, got {kind}"
    assert "version: 1" in p.hint


def test_load_config_file(tmp_path: Path) -> None:
    path = tmp_path / "tenants.yaml"
    path.write_text("version: 1\ntenants:\n  a: {cpus: 2}\n")
    c = load_tenants(str(path))
    assert c.path == str(path) and c.tenant("a").cpus == 2


def test_load_config_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "tenants.yaml"
    path.write_text("version: 1\ntenants:\n  a: {cpus: -1}\n")
    with pytest.raises(ConfigError) as e:
        load_tenants(str(path))
    assert str(e.value) == f"{path}:3: tenants.a.cpus: a CPU count must be at least 1, got -1"


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError) as e:
        load_tenants(str(path))
    (p,) = e.value.problems
    assert str(p) == f"{path}: cannot read: No such file or directory"
    assert p.hint == "check the path to tenants.yaml"


def test_directory_instead_of_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        load_tenants(str(tmp_path))
    assert str(e.value).startswith(f"{tmp_path}: cannot read: ")


def test_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("version: 1\ntenants: {a: {description: \"caf\xe9\"}}\n".encode("latin-1"))
    with pytest.raises(ConfigError) as e:
        load_tenants(str(path))
    (p,) = e.value.problems
    # The line and column of the first byte that is not UTF-8.
    assert str(p) == f"{path}:2: is not UTF-8 text (byte 0xe9 in column 32)"
    assert p.hint == "save the file as UTF-8"


def test_nul_character_is_located(tmp_path: Path) -> None:
    path = tmp_path / "nul.yaml"
    path.write_bytes(b"version: 1\ntenants:\n  a: {description: \"x\x00y\"}\n")
    with pytest.raises(ConfigError) as e:
        load_tenants(str(path))
    (p,) = e.value.problems
    assert str(p) == f"{path}:3: contains a NUL character"


def test_yaml_syntax_error_has_line(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("version: 1\ntenants:\n  a: {cpus: 1\n  b: 2\n")
    with pytest.raises(ConfigError) as e:
        load_tenants(str(path))
    (p,) = e.value.problems
    assert p.file == str(p.file) and p.line >= 3
    assert p.hint == "check indentation and quoting around this line"


def test_duplicate_tenant_reported_with_file_line_and_hint(tmp_path: Path) -> None:
    path = tmp_path / "tenants.yaml"
    path.write_text("version: 1\ntenants:\n  web: {cpus: 2}\n  db: {cpus: 2}\n  web: {cpus: 4}\n")
    with pytest.raises(ConfigError) as e:
        load_tenants(str(path))
    (p,) = e.value.problems
    assert (p.file, p.line) == (str(path), 5)
    assert p.message == 'duplicate key "web"'  # not `with value "{}"`: no such value is there
    assert p.hint == "each key may appear once; merge the two entries"
    path.write_text("version: 1\ntenants:\n  web: {cpus: 2, cpus: 4}\n")
    with pytest.raises(ConfigError) as e:
        load_tenants(str(path))
    assert e.value.problems[0].message == \
        'duplicate key "cpus" with value "4" (original value: "2")'


# --- profiles ---------------------------------------------------------------------------------

PROFILES = """\
    version: 1
    tenants:
      oltp: {cpus: 16, cpu_weight: 400, services: [pg.service]}
      reports: {cpus: 4}
    profiles:
      night:
        oltp: {cpus: 4, cpu_weight: 100}
        reports: {cpus: 16, memory_max: 8G}
      backup:
        reports: {exclusive: false}
"""


def test_with_profile_applies_overrides() -> None:
    c = parse(PROFILES)
    assert set(c.profiles) == {"night", "backup"}
    assert c.profile_lines["night"] == line_of(PROFILES, "night:")
    night = c.with_profile("night")
    assert night.profile == "night"
    assert night.tenant("oltp").cpus == 4 and night.tenant("oltp").cpu_weight == 100
    assert night.tenant("oltp").services == ("pg.service",)
    assert night.tenant("reports").cpus == 16 and night.tenant("reports").memory_max == 8 * G
    backup = c.with_profile("backup")
    assert backup.tenant("oltp") == c.tenant("oltp")
    assert backup.tenant("reports").exclusive is False
    # The base config is unchanged and None is the identity.
    assert c.tenant("oltp").cpus == 16 and c.profile is None
    assert c.with_profile(None) is c


def test_unknown_profile_names_known_ones() -> None:
    c = parse(PROFILES)
    with pytest.raises(ConfigError) as e:
        c.with_profile("weekend")
    (p,) = e.value.problems
    assert str(p) == "t.yaml: profiles: no profile 'weekend'"
    assert p.hint == "profiles in this file: backup, night"
    with pytest.raises(ConfigError) as e:
        parse("version: 1\ntenants: {a: {}}\n").with_profile("night")
    assert e.value.problems[0].hint == "profiles in this file: none defined"


def test_profile_problems() -> None:
    text = """\
        version: 1
        tenants:
          db1: {services: [x.service]}
        profiles:
          night:
            db2: {cpus: 1}
            db1:
              services: [y.service]
              description: night
              cpu_wieght: 3
              cpus: 0
    """
    ps = problems(text)
    assert located(ps) == {
        f"t.yaml:{line_of(text, 'db2:')}: profiles.night.db2: no such tenant",
        f"t.yaml:{line_of(text, 'y.service')}: profiles.night.db1.services: "
        "cannot be changed here",
        f"t.yaml:{line_of(text, 'description')}: profiles.night.db1.description: "
        "cannot be changed here",
        f"t.yaml:{line_of(text, 'cpu_wieght')}: profiles.night.db1.cpu_wieght: unknown key",
        f"t.yaml:{line_of(text, 'cpus: 0')}: profiles.night.db1.cpus: a CPU count must be at "
        "least 1, got 0",
    }
    by_key = {p.key: p for p in ps}
    assert by_key["profiles.night.db2"].hint == "did you mean 'db1'? tenants: db1"
    assert by_key["profiles.night.db1.services"].hint.startswith("allowed here: cpus, numa")
    assert "services" not in by_key["profiles.night.db1.services"].hint
    assert by_key["profiles.night.db1.cpu_wieght"].hint.startswith("did you mean 'cpu_weight'?")


# --- confine and membership ---------------------------------------------------------------------


def test_confine_problems() -> None:
    text = """\
        version: 1
        slice: pods
        tenants:
          a: {services: [app.service]}
        confine:
          system.slice: {memory_max: 3G}
          pods.slice: {memory_max: 1G}
          pods-a.slice: {cpu_weight: 10}
          app.service: {memory_max: 1G}
          bad name.service: {}
          backup.timer: {}
          /etc/x.service: {}
          cron.service: {cpus: 2, memory_low: 1G}
    """
    ps = problems(text)
    assert located(ps) == {
        f"t.yaml:{line_of(text, 'pods.slice')}: confine.pods.slice: is a slice slicectl "
        "generates",
        f"t.yaml:{line_of(text, 'pods-a.slice')}: confine.pods-a.slice: is a slice slicectl "
        "generates",
        f"t.yaml:{line_of(text, 'app.service: {')}: confine.app.service: is a member of "
        "tenant 'a'",
        f"t.yaml:{line_of(text, 'bad name')}: confine.bad name.service: 'bad name.service' is "
        "not a valid systemd unit name",
        f"t.yaml:{line_of(text, 'backup.timer')}: confine.backup.timer: 'backup.timer' must "
        "end in .slice, .service, .scope, .socket, .mount, .swap",
        f"t.yaml:{line_of(text, '/etc/x')}: confine./etc/x.service: '/etc/x.service' is not a "
        "valid systemd unit name",
        f"t.yaml:{line_of(text, 'cron.service')}: confine.cron.service.cpus: expected a "
        "cpulist such as \"0-1\" here, not a count (2)",
        f"t.yaml:{line_of(text, 'cron.service')}: confine.cron.service.memory_low: unknown key",
    }
    hints = {p.key: p.hint for p in ps}
    assert hints["confine.pods.slice"] == ("set a tenant's limits under tenants:, not under "
                                           "confine:")
    assert "remove it from confine:" in hints["confine.app.service"]


def test_service_in_two_tenants() -> None:
    text = """\
        version: 1
        tenants:
          a:
            services: [shared.service, a.service]
          b:
            cpus: 1
            services: [b.service, shared.service]
    """
    (p,) = problems(text)
    assert str(p) == (f"t.yaml:{line_of(text, 'b.service')}: tenants.b.services: shared.service "
                      "is already a member of tenant 'a'")
    assert p.hint == "a unit can be in one slice only; remove it from one tenant"


@pytest.mark.parametrize(("services", "message"), [
    ("[app.timer]", "'app.timer' must end in .service, .socket, .mount, .swap"),
    ("[app@.service]", "is a template; name an instance such as app@1.service"),
    ("[a.service, a.service]", "a unit is listed twice"),
    ("[3]", "expected a list of unit names"),
])
def test_bad_services(services: str, message: str) -> None:
    (p,) = problems(f"version: 1\ntenants:\n  a:\n    services: {services}\n")
    assert p.line == 4 and p.key == "tenants.a.services"
    assert message in p.message


def test_services_single_string_is_a_list() -> None:
    c = parse("version: 1\ntenants:\n  a: {services: app.service}\n")
    assert c.tenant("a").services == ("app.service",)


# --- systemd versions (slicectl.core.properties.versions) ---------------------------------------

# A value each key takes, as tenants.yaml writes it (every key of the settings table that
# becomes a property).
VERSION_SAMPLES = {
    "cpus": "\"0-3\"", "numa": "spread", "nodes": "[0]", "cpu_weight": "200",
    "startup_cpu_weight": "200", "cpu_quota": "50%", "cpu_quota_period": "100ms",
    "memory_min": "1G", "memory_low": "1G", "memory_high": "1G", "memory_max": "2G",
    "memory_swap_max": "0", "memory_zswap_max": "0", "tasks_max": "100", "io_weight": "100",
    "io_device_weight": "{/dev/sda: 200}", "io_read_bandwidth_max": "{/dev/sda: 50M}",
    "io_write_bandwidth_max": "{/dev/sda: 20M}", "io_read_iops_max": "{/dev/sda: 1000}",
    "io_write_iops_max": "{/dev/sda: 500}", "managed_oom_memory_pressure": "kill",
    "managed_oom_memory_pressure_limit": "60%", "startup_allowed_cpus": "\"0-1\"",
    "memory_zswap_writeback": "false", "cpuset_partition": "member",
}


def _gated() -> list[tuple[str, str]]:
    from slicectl.core.properties.properties import SETTINGS, Scope

    cases = []
    for s in SETTINGS:
        if s.prop is None:
            continue
        for scope, name in ((Scope.TENANT, "tenant"), (Scope.PROFILE, "profile"),
                            (Scope.CONFINE, "confine")):
            if scope in s.scopes:
                cases.append((s.key, name))
    return cases


def test_every_property_key_has_a_version_sample() -> None:
    assert {key for key, _ in _gated()} == set(VERSION_SAMPLES)


@pytest.mark.parametrize(("key", "where"), _gated())
def test_every_key_is_gated_wherever_it_is_set(key: str, where: str) -> None:
    """Each key is refused, located, by a systemd one release older than its property, in
    each place it may be set; the release that introduced it takes it."""
    from slicectl.core.properties.properties import BY_KEY
    from slicectl.core.properties.versions import version_problems

    value = VERSION_SAMPLES[key]
    if where == "tenant":
        text = f"version: 1\ntenants:\n  db:\n    {key}: {value}\n"
        path, line = f"tenants.db.{key}", 4
    elif where == "profile":
        text = (f"version: 1\ntenants:\n  db: {{}}\nprofiles:\n  night:\n    db:\n"
                f"      {key}: {value}\n")
        path, line = f"profiles.night.db.{key}", 7
    else:
        text = f"version: 1\ntenants: {{db: {{}}}}\nconfine:\n  system.slice:\n    {key}: {value}\n"
        path, line = f"confine.system.slice.{key}", 5
    config = parse(text)
    prop = BY_KEY[key].prop
    assert prop is not None
    since = prop.since
    got = version_problems(config, since - 1, "--systemd-version")
    needs = prop.needs_kernel(value)  # the samples' words are the values (member: any kernel)
    kernel = "" if needs is None else " and Linux {}.{} or later".format(*needs)
    assert [str(p) for p in got] == [
        f"t.yaml:{line}: {path}: needs systemd {since} or later{kernel}, but the target runs "
        f"systemd {since - 1} (--systemd-version)"]
    assert got[0].hint.startswith("remove the key, or upgrade systemd on the target")
    assert version_problems(config, since, "--systemd-version") == []


def test_housekeeping_cpus_is_gated() -> None:
    from slicectl.core.properties.versions import version_problems

    config = parse("version: 1\nhousekeeping:\n  cpus: 2\ntenants: {db: {}}\n")
    assert [str(p) for p in version_problems(config, 243, "--systemd-version")] == [
        "t.yaml:3: housekeeping.cpus: needs systemd 244 or later, but the target runs "
        "systemd 243 (--systemd-version)"]
    assert version_problems(config, 244, "--systemd-version") == []
    assert version_problems(parse("version: 1\nhousekeeping: {cpus: 0}\ntenants: {db: {}}\n"),
                            200, "x") == []


# --- elastic tenants and the balancer's policy ---------------------------------------------


def test_elastic_tenant_and_balance_defaults() -> None:
    c = parse("""\
        version: 1
        tenants:
          db: {cpus: 4, cpus_min: 2, cpus_max: 8}
          web: {cpus: 2}
    """)
    db, web = c.tenants
    assert db.elastic and (db.cpus_min, db.cpus_max, db.size_range()) == (2, 8, (2, 8))
    assert not web.elastic
    b = c.balance
    assert (b.interval, b.cooldown, b.window) == (10_000_000, 60_000_000, 30_000_000)
    assert (b.grow_above, b.shrink_below, b.pressure_above) == (90, 40, 20)


def test_balance_section_parsed() -> None:
    c = parse("""\
        version: 1
        balance:
          interval: 500ms
          cooldown: 120s
          window: 5s
          grow_above: 80%
          shrink_below: 30
          pressure_above: 10%
        tenants:
          db: {cpus: 4, cpus_max: 6}
    """)
    b = c.balance
    assert (b.interval, b.cooldown, b.window) == (500_000, 120_000_000, 5_000_000)
    assert (b.grow_above, b.shrink_below, b.pressure_above) == (80, 30, 10)
    assert c.tenant("db").size_range() == (4, 6)


def test_elastic_problems_are_located() -> None:
    text = """\
        version: 1
        tenants:
          db:
            cpus: 4
            cpus_min: 6
          big:
            cpus: 8
            cpus_max: 6
          listed:
            cpus: "0-3"
            cpus_max: 8
          pool:
            cpus_min: 1
          shared:
            cpus: 4
            exclusive: false
            cpus_max: 6
          ok: {cpus: 4, cpus_min: 2, cpus_max: 6}
        profiles:
          night:
            ok: {cpus: 1}
            db: {cpus_min: 1}
    """
    in_range = "cpus_min <= cpus <= cpus_max: cpus is the size the tenant starts with"
    a_count = ("write cpus as a count, e.g. cpus: 8: the balancer starts from that many CPUs "
               "and picks the whole cores it moves; or remove cpus_min and cpus_max")
    found = {(str(p), p.hint) for p in problems(text)}
    assert found == {
        ("t.yaml:5: tenants.db.cpus_min: cpus_min 6 is above cpus 4", in_range),
        ("t.yaml:8: tenants.big.cpus_max: cpus_max 6 is below cpus 8", in_range),
        ("t.yaml:11: tenants.listed.cpus_max: tenant listed is elastic (cpus_min/cpus_max) "
         "but has an explicit cpulist", a_count),
        ("t.yaml:13: tenants.pool.cpus_min: tenant pool is elastic (cpus_min/cpus_max) but "
         "has no cpus (the shared pool)", a_count),
        ("t.yaml:17: tenants.shared.cpus_max: tenant shared is elastic (cpus_min/cpus_max) "
         "but not exclusive", "a non-exclusive tenant's CPUs overlap the shared pool, so it "
         "holds no core the balancer could move: remove exclusive: false, or cpus_min and "
         "cpus_max"),
        ("t.yaml:21: profiles.night.ok.cpus: cpus_min 2 is above cpus 1", in_range),
        ("t.yaml:22: profiles.night.db.cpus_min: cannot be changed here",
         "allowed here: " + ", ".join(PROFILE_KEYS)),
    }


THRESHOLDS = ("keep a gap between them (defaults: 90% and 40%): a load between the two moves "
              "nothing, so a tenant near one threshold does not flap")


@pytest.mark.parametrize(("body", "message", "hint"), [
    ("  grow_above: 40%\n",
     "t.yaml:3: balance.grow_above: grow_above 40% is not above shrink_below 40%", THRESHOLDS),
    ("  shrink_below: 95%\n",
     "t.yaml:3: balance.shrink_below: grow_above 90% is not above shrink_below 95%",
     THRESHOLDS),
    ("  interval: 60s\n",
     "t.yaml:3: balance.interval: window 30s is shorter than interval 60s",
     "a condition counts once every sample over the window shows it: make window at least "
     "interval (defaults: 30s and 10s)"),
    ("  window: 20ms\n",
     "t.yaml:3: balance.window: '20ms' is shorter than 30ms: CPU use measured over less is "
     "noise (Togashi et al.)",
     "window: how long a condition must hold before a core moves (at least interval and "
     "30ms, Togashi et al.)"),
    ("  interval: 1m\n",
     "t.yaml:3: balance.interval: '1m' is not a duration (write it like 100ms, 1s or 500us)",
     "interval: how often the balancer decides (at most one move per tenant each time)"),
    ("  grow_above: 120%\n",
     "t.yaml:3: balance.grow_above: '120%' is out of range 1%..100%",
     "grow_above: a tenant is starved while its CPU use of its CPUs is at least this"),
    ("  windows: 30s\n",
     "t.yaml:3: balance.windows: unknown key",
     "did you mean 'window'? known keys: interval, cooldown, window, grow_above, "
     "pressure_above, shrink_below"),
])
def test_balance_problems_are_located(body: str, message: str, hint: str) -> None:
    text = "version: 1\nbalance:\n" + body + "tenants:\n  db: {cpus: 4, cpus_max: 8}\n"
    with pytest.raises(ConfigError) as e:
        parse_config(load_yaml(text, "t.yaml"), "t.yaml")
    assert [(str(p), p.hint) for p in e.value.problems] == [(message, hint)]
