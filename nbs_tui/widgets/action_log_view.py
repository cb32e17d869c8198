"""The action log viewer: the last few hundred actions, newest at the bottom, live."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import RichLog, Static

from nbs_tui.core.screen.text import printable
from nbs_tui.operator.action_log import ActionRecord, Outcome

OUTCOME_STYLES = {Outcome.SENT: "green", Outcome.SKIPPED: "yellow", Outcome.FAILED: "bold red"}


def record_line(item: ActionRecord | str) -> Text:
    if isinstance(item, str):
        return Text(printable(f"(unreadable line) {item}"), style="dim red")
    return Text(printable(item.describe()), style=OUTCOME_STYLES.get(item.outcome, ""))


class ActionLogScreen(ModalScreen[None]):
    """Shows the tail of the action log; `add` appends records as they are written."""

    DEFAULT_CSS = """
    ActionLogScreen {
        align: center middle;
    }
    ActionLogScreen > Vertical {
        width: 95%;
        height: 85%;
        border: thick $primary;
        background: $surface;
        padding: 0 1;
    }
    ActionLogScreen RichLog {
        height: 1fr;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,L", "close", "Close", id="log.close"),
    ]

    def __init__(self, path: str, items: Sequence[ActionRecord | str]) -> None:
        super().__init__()
        self.path = path
        self.items = list(items)
        self.view = RichLog(id="action-log", wrap=False, highlight=False, markup=False, max_lines=5000)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text.assemble(("Action log ", "bold"), (self.path, "dim")))
            yield self.view

    def on_mount(self) -> None:
        if not self.items:
            self.view.write(Text("No actions yet.", style="dim"))
        for item in self.items:
            self.view.write(record_line(item))
        self.view.focus()

    def add(self, record: ActionRecord) -> None:
        self.view.write(record_line(record))

    def action_close(self) -> None:
        self.dismiss(None)
