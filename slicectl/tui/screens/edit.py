"""Editing dialogs: a tenant's settings, the profile, and the plan diff to confirm."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.console import RenderableType
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Button, Input, Label, OptionList, Select, Static
from textual.widgets.option_list import Option

from slicectl.core.config.config import Config
from slicectl.core.config.yamledit import EDITABLE, current_values, edit_tenant
from slicectl.core.errors import ConfigError
from slicectl.core.properties.properties import BY_KEY
from slicectl.core.properties.versions import unsupported_keys
from slicectl.tui.components.field import Field
from slicectl.tui.messages import PreviewReady

HINTS = {key: BY_KEY[key].hint for key in EDITABLE}  # the settings table's examples
BASE = "(base)"  # the profile list's entry for "no profile"
PREVIEW_DELAY = 0.3  # seconds of no typing before the placement preview is redrawn
# The placement an edited config leads to (the app plans it): config, tenant -> drawing.
# It reads the unit directory: the dialog calls it in a worker.
Preview = Callable[[Config, str], RenderableType | str]


@dataclass(frozen=True)
class EditResult:
    """A validated edit: the new tenants.yaml text and the config it parses to, and the text
    it was made from (apply refuses if the file no longer holds it)."""

    tenant: str
    text: str
    config: Config
    original: str


class EditScreen(ModalScreen[EditResult | None]):
    """Change one tenant's placement (CPUs, NUMA policy, nodes, exclusive), weight, quota or
    memory limits; empty = unset. With `preview`, the placement the values lead to is drawn
    on the NUMA map as they are typed, before Plan shows the diff."""

    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("ctrl+s", "plan", "Plan")]

    def __init__(self, text: str, path: str, tenants: list[str], tenant: str | None,
                 preview: Preview | None = None,
                 systemd: tuple[int | None, str] = (None, "")) -> None:
        """`systemd`: the target's release and where it was learnt; a key it cannot take
        is not offered unless a tenant sets it (then it is marked, to be cleared)."""
        super().__init__()
        self.text = text
        self.path = path
        self.tenants = tenants
        self.tenant = tenant if tenant in tenants else tenants[0]
        self.preview = preview
        self._timer: Timer | None = None
        self.systemd = systemd
        self.unsupported = unsupported_keys(EDITABLE, systemd[0])
        used = {key for name in tenants
                for key, value in current_values(text, path, name).items() if value}
        self.keys = [key for key in EDITABLE if key not in self.unsupported or key in used]

    def compose(self) -> ComposeResult:
        # Scrolls when the terminal is shorter than the form and the preview.
        with VerticalScroll(id="edit-box", classes="dialog"):
            yield Label(f"Edit tenant ({self.path})", classes="dialog-title", markup=False)
            # Plan and Cancel are below the fold on a short terminal: their keys up here.
            yield Label("ctrl+s: plan   esc: cancel   tab: next field   empty: unset",
                        id="edit-keys", markup=False)
            yield Select([(t, t) for t in self.tenants], value=self.tenant, allow_blank=False,
                         id="tenant", compact=True)
            with Grid(id="edit-grid"):
                for key in self.keys:
                    needs = self.unsupported.get(key)
                    yield Label(key if needs is None else f"{key} (needs systemd {needs})")
                    yield Field(placeholder=HINTS[key], id=f"f-{key}", compact=True)
            held_back = [key for key in self.unsupported if key not in self.keys]
            if held_back:
                version, source = self.systemd
                yield Static("\n".join(
                    f"not offered: {key} (needs systemd {self.unsupported[key]}, the target "
                    f"runs {version}: {source})" for key in held_back),
                    id="edit-held-back", markup=False)
            yield Static(id="edit-error")
            if self.preview is not None:
                yield Static(id="edit-preview")
            with Horizontal(classes="buttons"):
                yield Button("Plan", id="plan", variant="primary", compact=True)
                yield Button("Cancel", id="cancel", compact=True)

    def on_mount(self) -> None:
        self._fill()
        self.query_one(f"#f-{self.keys[0]}", Input).focus()

    def _fill(self) -> None:
        values = current_values(self.text, self.path, self.tenant)
        for key in self.keys:
            self.query_one(f"#f-{key}", Input).value = values[key]
        self.show_preview()

    def on_input_changed(self, event: Input.Changed) -> None:
        if self.preview is None:
            return
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(PREVIEW_DELAY, self.show_preview)

    def _edited(self) -> tuple[str, Config]:
        """The form's values applied to tenants.yaml; raises ConfigError."""
        values = {key: self.query_one(f"#f-{key}", Input).value for key in self.keys}
        return edit_tenant(self.text, self.path, self.tenant, values)

    def _show_error(self, e: ConfigError | None) -> None:
        self.query_one("#edit-error", Static).update("" if e is None else "\n".join(
            f"{p.key}: {p.message}" + (f" ({p.hint})" if p.hint else "") for p in e.problems))

    def show_preview(self) -> None:
        """Redraw the placement preview for the values in the form (or say why not)."""
        self._timer = None
        if self.preview is None:
            return
        try:
            _, config = self._edited()
        except ConfigError as e:
            self._show_error(e)
            return
        self._show_error(None)
        self._draw_preview(self.preview, config, self.tenant)

    @work(thread=True, exclusive=True, group="preview")
    def _draw_preview(self, preview: Preview, config: Config, tenant: str) -> None:
        self.post_message(PreviewReady(preview(config, tenant)))

    def on_preview_ready(self, message: PreviewReady) -> None:
        self.query_one("#edit-preview", Static).update(message.drawing)

    def on_select_changed(self, event: Select.Changed) -> None:
        if isinstance(event.value, str) and event.value != self.tenant:
            self.tenant = event.value
            self._fill()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.action_plan()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "plan":
            self.action_plan()
        else:
            self.action_cancel()

    def action_cancel(self) -> None:
        """Close without changing anything."""
        self.dismiss(None)

    def action_plan(self) -> None:
        """Validate the edit; on success hand it back for planning."""
        try:
            text, config = self._edited()
        except ConfigError as e:
            self._show_error(e)
            return
        self.dismiss(EditResult(self.tenant, text, config, self.text))


class ProfileScreen(ModalScreen[str | None]):
    """Pick a profile (or the base configuration) to apply."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, profiles: list[str], current: str | None) -> None:
        super().__init__()
        self.profiles = profiles
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="profile-box", classes="dialog"):
            yield Label("Switch profile", classes="dialog-title")
            active = self.current or BASE
            yield OptionList(*(Option(name + (" (active)" if name == active else ""), id=name)
                               for name in [BASE, *self.profiles]), id="profiles")

    def on_mount(self) -> None:
        # The list opens on the profile in force (the next one is a key away).
        options = self.query_one(OptionList)
        options.highlighted = options.get_option_index(self.current or BASE)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        """Close without choosing."""
        self.dismiss(None)


class DiffScreen(ModalScreen[bool]):
    """The plan diff of a pending change; `y` applies it, `n` or escape cancels."""

    BINDINGS = [Binding("y", "answer(True)", "Apply"),
                Binding("n,escape", "answer(False)", "Cancel")]

    def __init__(self, title: str, lines: list[str], notes: list[str], changed: bool,
                 rewrites_file: bool, warning: str = "") -> None:
        """`warning`: shown above the diff (why it is shown again)."""
        super().__init__()
        self.title_text = title
        self.warning = warning
        self.lines = lines
        self.notes = notes
        self.changed = changed
        self.rewrites_file = rewrites_file

    def compose(self) -> ComposeResult:
        with Vertical(id="diff-box", classes="dialog"):
            yield Label(self.title_text, classes="dialog-title")
            if self.warning:
                yield Label(self.warning, id="diff-warning", markup=False)
            body = list(self.lines) or ["The host already matches: no live change."]
            if self.rewrites_file:
                body.append("tenants.yaml will be rewritten (comments kept).")
            body += [f"note: {n}" for n in self.notes]
            with VerticalScroll(id="diff-lines"):
                yield Static("\n".join(body), id="diff-text")
            yield Label("Apply these changes? y: yes, apply live   n/esc: no", id="diff-question",
                        markup=False)

    def action_answer(self, yes: bool) -> None:
        """Close with the answer."""
        self.dismiss(yes)
