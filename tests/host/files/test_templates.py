"""The unit-file templates read at the edge (slicectl.host.files.templates) and handed to the
core's render: the built-in ones read once per process, a --templates DIR's over them at each
load, and render itself opening nothing. What the templates render is in test_render.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from paths import ROOT

from slicectl.core.errors import RenderError
from slicectl.core.placement.topology import Topology
from slicectl.core.plan import Plan, build_plan
from slicectl.core.render import render
from slicectl.host.files.templates import builtin_dir, load_templates
from slicectl.host.planning import load_tenants

DROPIN = "cron.service.d/50-slicectl.conf"


def web_batch() -> Plan:
    topology = Topology.from_json(json.loads(
        (ROOT / "tests" / "fixtures" / "topologies" / "xeon-2s-smt.json").read_text()), "xeon")
    return build_plan(load_tenants(str(ROOT / "examples" / "web-batch.yaml")), topology)


def own_templates(tmp_path: Path, *names: str) -> Path:
    """A --templates DIR holding copies of the built-in templates `names`."""
    folder = tmp_path / "templates"
    folder.mkdir()
    for name in names:
        shutil.copy(Path(builtin_dir()) / name, folder / name)
    return folder


def test_the_builtin_templates_are_read_once_per_process() -> None:
    assert load_templates() is load_templates()
    assert set(load_templates().sources) == {"slice.j2", "dropin.j2", "unit.j2"}
    assert load_templates().folder is None


def test_a_folder_s_templates_come_first_and_the_builtin_ones_fill_in(tmp_path: Path) -> None:
    folder = own_templates(tmp_path, "slice.j2", "dropin.j2")
    (folder / "dropin.j2").write_text((folder / "dropin.j2").read_text() + "# rack 7\n")
    (folder / "notes.txt").write_text("not a template")
    templates = load_templates(str(folder))
    assert templates.folder == str(folder)
    assert templates.sources["dropin.j2"][1] == str(folder / "dropin.j2")
    assert templates.sources["unit.j2"] == load_templates().sources["unit.j2"]
    assert "notes.txt" not in templates.sources
    files = render(web_batch(), templates)
    assert files[DROPIN] == render(web_batch(), load_templates())[DROPIN] + "# rack 7\n"


def test_a_folder_is_read_at_each_load(tmp_path: Path) -> None:
    folder = own_templates(tmp_path, "slice.j2", "dropin.j2")
    before = render(web_batch(), load_templates(str(folder)))[DROPIN]
    (folder / "dropin.j2").write_text((folder / "dropin.j2").read_text() + "# rack 7\n")
    assert render(web_batch(), load_templates(str(folder)))[DROPIN] == before + "# rack 7\n"


def test_a_folder_without_the_unit_template_is_refused_before_rendering(tmp_path: Path) -> None:
    folder = own_templates(tmp_path, "dropin.j2")
    with pytest.raises(RenderError) as e:
        load_templates(str(folder))
    assert str(e.value) == f"template slice.j2 not found in {folder}"
    assert e.value.hint == "--templates DIR must hold slice.j2 and dropin.j2"


def test_render_opens_no_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The core renders what the edge handed it: with the templates loaded, rendering (the
    compiling of the templates included) opens nothing."""
    plan = web_batch()
    templates = load_templates(str(own_templates(tmp_path, "slice.j2", "dropin.j2")))
    expected = render(plan, templates)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"render opened {args}")

    monkeypatch.setattr("builtins.open", refuse)
    assert render(plan, templates) == expected
