"""The answer card: a waiting agent's question or permission prompt, answered without leaving.

Opened from the needs-you queue (`A`). It shows the agent, how long it has waited, the prompt and
the options the sidecar read from its screen. A digit, ``y``, ``n`` or Esc posts
`AnswerScreen.Chosen`; the app answers through the controller (a live re-check first: the same
menu, pane and process, else nothing is sent) and then shows the next waiting agent's card or
the reason nothing was sent. Tab moves on without answering; ``q`` closes the card.

On a narrow screen (a phone through the browser view: the app's ``-narrow`` breakpoint) the
choices are buttons instead, one per option and Esc, Next and Close: a tap is a click, and a
phone's keyboard has no Tab or Esc. The keys still work there too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Container, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from nbs_tui.core.detection.answer import AnswerCard
from nbs_tui.core.detection.usage_limits import countdown
from nbs_tui.dashboard.key_table import scope_bindings
from nbs_tui.widgets.breakpoints import is_narrow
from nbs_tui.widgets.needs_you_panel import BADGES

PROMPT_ROWS = 14
"""Rows of the prompt shown; a longer one is cut at the top (the question is at its end)."""
NARROW_PROMPT_ROWS = 6
"""On a phone: fewer rows, each cut at the screen's edge, so the buttons stay in view."""


class AnswerScreen(ModalScreen[None]):
    """One card at a time; `show` replaces it (the next waiting agent), `tell` says what happened."""

    BINDINGS: ClassVar[list[BindingType]] = list(scope_bindings("answer"))

    DEFAULT_CSS = """
    AnswerScreen {
        align: center middle;
    }
    AnswerScreen > #card {
        width: 96;
        max-width: 96%;
        height: auto;
        max-height: 90%;
        border: round $warning;
        border-title-color: $warning;
        border-title-style: bold;
        background: $surface;
        padding: 0 1;
    }
    AnswerScreen #card-prompt {
        margin: 1 0 0 0;
    }
    AnswerScreen #card-options {
        margin: 1 0;
    }
    AnswerScreen #card-said {
        height: auto;
    }
    AnswerScreen #card-keys {
        color: $text-muted;
    }
    AnswerScreen #card-buttons {
        display: none;
        height: auto;
        margin: 1 0 0 0;
    }
    AnswerScreen #card-choices {
        height: auto;
    }
    AnswerScreen #card-choices Button {
        width: 100%;
        margin: 0 0 1 0;
        text-align: left;
        content-align: left middle;
    }
    AnswerScreen #card-controls {
        layout: grid;
        grid-size: 3 1;
        grid-gutter: 0 1;
        height: 1;
    }
    AnswerScreen #card-controls Button {
        width: 100%;
    }
    AnswerScreen #card-buttons Button.-textual-compact {
        background: $panel;
    }
    AnswerScreen.-narrow #card-buttons {
        display: block;
    }
    AnswerScreen.-narrow #card-options, AnswerScreen.-narrow #card-keys {
        display: none;
    }
    AnswerScreen.-narrow #card-prompt {
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    AnswerScreen.-narrow > #card {
        width: 100%;
        max-width: 100%;
        max-height: 100%;
    }
    """

    CONTROLS: ClassVar[tuple[tuple[str, str], ...]] = (("Esc", "escape"), ("Next", "skip"), ("Close", "close"))
    """The buttons under the choices: (label, what it does: a key for the agent, or skip/close)."""

    @dataclass
    class Chosen(Message):
        """The operator pressed ``key`` (a digit, ``y``, ``n``, ``escape``) on ``card``."""

        card: AnswerCard
        key: str

    @dataclass
    class Skipped(Message):
        """Tab: show the next waiting agent's card without answering this one."""

        card: AnswerCard

    def __init__(self, card: AnswerCard, label: str, waited: float, waiting: int) -> None:
        super().__init__()
        self.card = card
        self._label = label
        self._waited = waited
        self._waiting = waiting
        self.busy = False
        """A key was sent and its answer is not back yet: further keys wait for it."""

    def compose(self) -> ComposeResult:
        # The card's text goes in as the widgets are made: the screen's Mount can come before
        # its grandchildren are in the DOM, and a query for them there failed (seen once in CI).
        title, head, prompt, options = self._card_texts()
        with Vertical(id="card") as box:
            box.border_title = title
            yield Static(head, id="card-head")
            yield Static(prompt, id="card-prompt")
            yield Static(options, id="card-options")
            with Vertical(id="card-buttons"):
                with Vertical(id="card-choices"):
                    yield from self._choice_buttons()
                with Container(id="card-controls"):
                    for label, does in self.CONTROLS:
                        yield Button(label, name=does, compact=True)
            yield Static(id="card-said")
            yield Static(
                "1-9 choose · y yes · n no · Esc cancel the prompt · Tab next · q close", id="card-keys"
            )

    def show(self, card: AnswerCard, label: str, waited: float, waiting: int, said: Text | str = "") -> None:
        """Show another card (or the same one, read again)."""
        self.card, self._label, self._waited, self._waiting = card, label, waited, waiting
        self.busy = False
        self._render_card()
        self.tell(said)

    def tell(self, said: Text | str, style: str = "") -> None:
        """A line under the options: what was sent, or why nothing was."""
        self.busy = False
        self.query_one("#card-said", Static).update(Text(said, style=style) if isinstance(said, str) else said)

    def _render_card(self) -> None:
        title, head, prompt, options = self._card_texts()
        self.query_one("#card", Vertical).border_title = title
        self.query_one("#card-head", Static).update(head)
        self.query_one("#card-prompt", Static).update(prompt)
        self.query_one("#card-options", Static).update(options)
        choices = self.query_one("#card-choices", Vertical)
        choices.remove_children()
        choices.mount_all(self._choice_buttons())

    def _choice_buttons(self) -> list[Button]:
        """One button per option of the card shown (its digit is the key it presses)."""
        if not self.card.numbered:
            return []
        return [
            Button(f"{o.number}  {o.label}", name=str(o.number), compact=True, variant="primary" if o.selected else "default")
            for o in self.card.options
        ]

    def on_resize(self) -> None:
        """Turned or resized (a phone): the prompt's rows depend on the width."""
        self.query_one("#card-prompt", Static).update(self._card_texts()[2])

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """A tap (a click) on a choice or control: what its key would do."""
        event.stop()
        does = event.button.name or ""
        if does == "skip":
            self.action_skip()
        elif does == "close":
            self.action_close()
        elif does:
            self._choose(does)

    def _card_texts(self) -> tuple[str, Text, Text, Text]:
        """(the box's title, the head line, the prompt, the options) of the card shown."""
        card = self.card
        badge, style = BADGES.get(card.state, ("•", ""))
        head = Text()
        head.append(f" {badge} ", style)
        head.append(f" {self._label}", "bold")
        head.append(f" · {card.title} · ")
        head.append(f"waiting {countdown(self._waited)}", "dim")
        rows = [row.rstrip() for row in card.prompt.split("\n") if row.strip() and set(row.strip()) != {"╌"}]
        limit = NARROW_PROMPT_ROWS if is_narrow(self.app.size.width) else PROMPT_ROWS
        if len(rows) > limit:
            rows = ["…", *rows[-limit + 1 :]]
        prompt = Text("\n".join(rows) or "(no prompt text on screen)")
        options = Text()
        for i, option in enumerate(card.options):
            if i:
                options.append("\n")
            digit = f" {option.number} " if card.numbered else " · "
            options.append(digit, style="bold reverse" if option.selected else "bold")
            options.append(f" {option.label}")
        if not card.numbered:
            options.append("\n(no digits on this dialog: Esc cancels it; g in the list jumps in)", style="dim")
        return f"Answer · {self._waiting} waiting", head, prompt, options

    def _choose(self, key: str) -> None:
        if self.busy:
            return
        self.busy = True
        self.tell(Text(f"checking the live pane, then sending {key}…", style="dim"))
        self.busy = True
        self.post_message(self.Chosen(self.card, key))

    def action_choose(self, key: str) -> None:
        self._choose(key)

    def action_skip(self) -> None:
        if not self.busy:
            self.post_message(self.Skipped(self.card))

    def action_close(self) -> None:
        self.dismiss(None)
