"""The card-only dashboard's backdrop (``--card-only``): one line where the fleet would be.

A browser view's one-time link opens one agent's answer card and nothing else (`nbs_tui.web`):
this plain screen covers the dashboard behind the card, so no other agent shows, and says what
happens meanwhile (the card is on its way, what was sent, why no card opens).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Static


class CardCover(Screen[None]):
    DEFAULT_CSS = """
    CardCover {
        align: center middle;
    }
    CardCover > #cover-text {
        width: auto;
        max-width: 90%;
    }
    """

    def __init__(self, text: str) -> None:
        super().__init__()
        self._text = text

    def compose(self) -> ComposeResult:
        yield Static(self._text, id="cover-text")

    def say(self, text: str) -> None:
        self._text = text
        if self.is_mounted:
            self.query_one("#cover-text", Static).update(text)
