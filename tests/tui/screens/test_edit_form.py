"""The edit form on its own: which keys it offers for the target's systemd, and how a
field's example reads beside a value that is set."""

from __future__ import annotations

import pytest
from textual.app import App
from textual.widgets import Input, Label, Static
from tuikit import wait_for

from slicectl.tui.screens.edit import EditScreen

TENANTS = """\
version: 1
tenants:
  db: {cpus: 2, cpu_weight: 200}
  web: {cpus: 1}
"""


class FormApp(App[int]):
    def __init__(self, text: str, systemd: tuple[int | None, str]) -> None:
        super().__init__()
        self.form = EditScreen(text, "tenants.yaml", ["db", "web"], "db", None, systemd)

    def on_mount(self) -> None:
        self.push_screen(self.form)


def labels(app: FormApp) -> list[str]:
    return [str(label.content) for label in app.screen.query("#edit-grid Label").results(Label)]


async def test_form_holds_back_keys_the_target_systemd_cannot_take() -> None:
    app = FormApp(TENANTS, (252, "recorded in host.json"))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: bool(app.screen.query("#edit-held-back")))
        assert "memory_zswap_writeback" not in labels(app)
        assert not app.screen.query("#f-memory_zswap_writeback")
        note = str(app.screen.query_one("#edit-held-back", Static).content)
        assert note == ("not offered: memory_zswap_writeback (needs systemd 256, the target "
                        "runs 252: recorded in host.json)")
        assert app.screen.query_one("#f-cpus", Input).value == "2"


@pytest.mark.parametrize("systemd", [(256, "systemd on this host"), (None, "")])
async def test_form_offers_every_key_to_a_new_enough_or_unknown_systemd(
        systemd: tuple[int | None, str]) -> None:
    app = FormApp(TENANTS, systemd)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: bool(app.screen.query("#f-cpus")))
        assert "memory_zswap_writeback" in labels(app)
        assert not app.screen.query("#edit-held-back")
        field = app.screen.query_one("#f-memory_zswap_writeback", Input)
        assert field.value == "" and field.placeholder.startswith("e.g. ")


async def test_form_marks_an_unsupported_key_a_tenant_sets_so_it_can_be_cleared() -> None:
    text = TENANTS.replace("web: {cpus: 1}", "web: {cpus: 1, memory_zswap_writeback: false}")
    app = FormApp(text, (252, "recorded in host.json"))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: bool(app.screen.query("#f-cpus")))
        assert "memory_zswap_writeback (needs systemd 256)" in labels(app)
        assert not app.screen.query("#edit-held-back")
