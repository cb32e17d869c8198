"""The help screen: every key the dashboard answers to, read from the live bindings.

Built from the app's active bindings rather than a hand-kept list, so a rebinding (keymap) or a
new action shows up here without anyone remembering to edit it.
"""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


class HelpScreen(ModalScreen[None]):
    """A modal listing keys; Escape, q or ? closes it."""

    DEFAULT_CSS = """
    HelpScreen {
        align: center middle;
    }
    HelpScreen > VerticalScroll {
        width: 84;
        max-height: 90%;
        height: auto;
        border: thick $primary;
        background: $surface;
        padding: 1 2;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark,f1", "dismiss_help", "Close help", id="help.close"),
    ]

    def __init__(self, rows: list[tuple[str, str, str]], intro: str = "", log_path: str | None = None) -> None:
        super().__init__()
        self.rows = rows
        self.intro = intro
        self.log_path = log_path
        """The log file, when one is open (errors and their tracebacks are there)."""

    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=True, header_style="bold", expand=True, padding=(0, 2))
        table.add_column("Key", style="bold cyan", no_wrap=True)
        table.add_column("Action")
        table.add_column("Id", style="dim", no_wrap=True)
        for keys, description, binding_id in self.rows:
            table.add_row(keys, description, binding_id)
        with VerticalScroll(id="help-body"):
            yield Static(Text("nbs-tui — keys", style="bold"), id="help-title")
            if self.intro:
                yield Static(Text(self.intro, style="dim"))
            yield Static(table, id="help-table")
            yield Static(
                Text("Ctrl+P opens the command palette: every action is there by name.", style="italic"),
            )
            if self.log_path:
                yield Static(Text.assemble(("Log file: ", "bold"), (self.log_path, "")), id="help-log")

    def action_dismiss_help(self) -> None:
        self.dismiss(None)
