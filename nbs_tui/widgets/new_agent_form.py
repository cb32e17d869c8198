"""The "new agent" form: what ``nbs-tui new`` asks for, as a dialog (issue 29, item 1).

It collects a `nbs_tui.core.fleet.agent_spec.NewAgent` (folder, name, prompt, model, permission mode,
session, and the host when the dashboard watches several), checks what needs no files (`problems`) and shows every problem under the fields
instead of closing; the folder completes from the fleet's folders and the watched projects. It
starts nothing: the app hands the spec to the operator controller's lifecycle
(`nbs_tui.lifecycle.threaded`), which starts the agent as ``nbs-tui new`` does
(`nbs_tui.lifecycle.agent_start`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Input, Label, Select, Static, TextArea

from nbs_tui.core.fleet.agent_spec import PERMISSION_MODES, NewAgent, problems


class NewAgentScreen(ModalScreen[NewAgent | None]):
    """Returns the checked spec on Ctrl+S (or Enter in a one-line field), None on Escape."""

    DEFAULT_CSS = """
    NewAgentScreen {
        align: center middle;
    }
    NewAgentScreen > Vertical {
        width: 90;
        height: auto;
        max-height: 95%;
        border: thick $accent;
        background: $surface;
        padding: 0 2;
    }
    NewAgentScreen Label {
        margin-top: 1;
    }
    NewAgentScreen #new-prompt {
        height: 6;
    }
    NewAgentScreen Horizontal {
        height: auto;
    }
    NewAgentScreen Horizontal > Vertical {
        width: 1fr;
        height: auto;
    }
    NewAgentScreen #new-problems {
        color: $error;
        height: auto;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "start", "Start", id="new.start", priority=True),
        Binding("escape", "cancel", "Cancel", id="new.cancel"),
    ]

    def __init__(
        self, folders: Sequence[str], server: str, hosts: Sequence[str] = (), host: str | None = None,
        accounts: Sequence[str] = (),
    ) -> None:  # fmt: skip
        """``server``: where the agent starts, for the title. ``hosts``: the watched hosts to
        choose from (none or one: no choice), ``host`` the one chosen at first. ``accounts``: the
        config's ``[accounts.NAME]`` (none: no choice; else also ``auto``, docs/usage.md)."""
        super().__init__()
        self.accounts = list(dict.fromkeys(accounts))
        self.folders = list(dict.fromkeys(f for f in folders if f))
        self.server = server
        self.hosts = list(dict.fromkeys(hosts))
        self.host = host if host in self.hosts else (self.hosts[0] if self.hosts else None)

    def compose(self) -> ComposeResult:
        with Vertical():
            if len(self.hosts) > 1:
                yield Static(Text("Start a Claude Code agent", style="bold"), id="new-title")
                yield Label("Host")
                yield Select([(h, h) for h in self.hosts], value=self.host, allow_blank=False, id="new-host")
            else:
                yield Static(Text(f"Start a Claude Code agent on {self.server}", style="bold"), id="new-title")
            yield Label("Folder (Tab completes from the fleet's folders)")
            yield Input(
                value=self.folders[0] if self.folders else "",
                placeholder="/path/to/project",
                suggester=SuggestFromList(self.folders, case_sensitive=True),
                id="new-folder",
            )
            with Horizontal():
                with Vertical():
                    yield Label("Name (window and -n)")
                    yield Input(placeholder="the folder's name", id="new-name")
                with Vertical():
                    yield Label("Session")
                    yield Input(placeholder="agents", id="new-session")
            yield Label("Prompt (typed once the agent is ready; empty: none)")
            yield TextArea(id="new-prompt", soft_wrap=True, show_line_numbers=False)
            with Horizontal():
                with Vertical():
                    yield Label("Model")
                    yield Input(placeholder="default", id="new-model")
                with Vertical():
                    yield Label("Permission mode")
                    yield Select([(mode, mode) for mode in PERMISSION_MODES], prompt="default", id="new-mode")
                if self.accounts:
                    with Vertical():
                        yield Label("Account")
                        choices = [("auto (most headroom)", "auto"), *((name, name) for name in self.accounts)]
                        yield Select(choices, prompt="default", id="new-account")
            yield Static("", id="new-problems")
            yield Static(Text("Ctrl+S start    Esc cancel", style="dim"))

    def _value(self, widget_id: str) -> str | None:
        value = self.query_one(f"#{widget_id}", Input).value.strip()
        return value or None

    def spec(self) -> NewAgent:
        prompt = self.query_one("#new-prompt", TextArea).text
        mode = self.query_one("#new-mode", Select).value
        host = self.query_one("#new-host", Select).value if len(self.hosts) > 1 else None
        account = self.query_one("#new-account", Select).value if self.accounts else None
        return NewAgent(
            directory=self._value("new-folder") or "",
            name=self._value("new-name") or "",
            prompt=prompt if prompt.strip() else None,
            model=self._value("new-model"),
            permission_mode=mode if isinstance(mode, str) else None,
            session=self._value("new-session"),
            host=host if isinstance(host, str) else None,
            account=account if isinstance(account, str) else None,
        )

    def action_start(self) -> None:
        spec = self.spec()
        found = problems(spec)
        if found:
            self.query_one("#new-problems", Static).update(Text("\n".join(found)))
            return
        self.dismiss(spec)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_start()
