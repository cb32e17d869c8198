"""A yes/no question that names what will happen, for actions on several panes at once, and for
the review's merge and discard. On a narrow screen (a phone through the browser view) it has
Yes and No buttons too: a tap is a click."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class ConfirmScreen(ModalScreen[bool]):
    """Returns True for y / Enter, False for n / Escape."""

    DEFAULT_CSS = """
    ConfirmScreen {
        align: center middle;
    }
    ConfirmScreen > Vertical {
        width: 80;
        max-width: 100%;
        height: auto;
        max-height: 90%;
        border: thick $warning;
        background: $surface;
        padding: 1 2;
    }
    ConfirmScreen #confirm-items {
        height: auto;
        max-height: 16;
    }
    ConfirmScreen #confirm-buttons {
        display: none;
        height: auto;
        margin: 1 0 0 0;
    }
    ConfirmScreen.-narrow #confirm-buttons {
        display: block;
    }
    ConfirmScreen #confirm-buttons Button {
        width: 1fr;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y,enter", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]

    def __init__(self, title: str, items: Sequence[str], detail: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.items = list(items)
        self.detail = detail

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.title_text, style="bold"), id="confirm-title")
            if self.detail:
                yield Static(Text(self.detail), id="confirm-detail")
            with VerticalScroll(id="confirm-items"):
                yield Static(Text("\n".join(f"  • {item}" for item in self.items)), id="confirm-list")
            yield Static(Text("y / Enter: yes    n / Esc: no", style="dim"))
            with Horizontal(id="confirm-buttons"):
                yield Button("Yes", id="confirm-yes", variant="warning")
                yield Button("No", id="confirm-no")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "confirm-yes")
