"""Answering from the needs-you queue: the answer card (``A``) and what happens on a choice.

The card (`nbs_tui.widgets.answer_card.AnswerScreen`) shows an agent's menu read off its
screen; the operator's choice is carried out by the controller, and the card moves on to the
next agent waiting on a prompt. Claude Code's own signals can queue an agent a moment before
the sidecar has read its menu: then ``A`` opens the card as soon as the menu is read, for up
to `ANSWER_WAIT_SECONDS`, rather than telling the operator to press again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import App

from nbs_tui.actions import ActionResult
from nbs_tui.controller import OperatorController
from nbs_tui.core.answer import AnswerCard
from nbs_tui.core.model import AgentState, PaneId

if TYPE_CHECKING:  # opened on demand: not imported for the first frame
    from nbs_tui.widgets.answer_card import AnswerScreen

ANSWER_WAIT_SECONDS = 3.0
"""How long A waits for a queued agent's menu to be read off its screen."""

MENUS = (AgentState.PERMISSION, AgentState.QUESTION, AgentState.PLAN, AgentState.DIALOG)


class AnswerFlow:
    """Opens the answer card and carries the operator's choices through (UI thread)."""

    def __init__(self, app: App[Any], operator: OperatorController, selected: Callable[[], PaneId | None]) -> None:
        self._app = app
        self._operator = operator
        self._selected = selected
        self._wanted_until: float | None = None
        """A asked for a card before any menu was read: open it when one is, until then."""

    def answer(self) -> None:
        """Open the card: the selected agent's menu if it waits on one, else the oldest."""
        card = self._card_now()
        if card is not None:
            self._open(card)
            return
        if any(entry.state in MENUS for entry in self._operator.needs_you.entries()):
            self._wanted_until = time.monotonic() + ANSWER_WAIT_SECONDS
            self._app.notify("Reading the waiting agent's prompt…", title="Answer", timeout=ANSWER_WAIT_SECONDS)
            return
        self._app.notify("No waiting agent shows a prompt to answer.", title="Answer", severity="information")

    def when_read(self) -> None:
        """Open the card A asked for once a menu is read (called as statuses change and on the
        needs-you tick); give up when the wait is over, or when the operator has moved on to
        another screen meanwhile."""
        if self._wanted_until is None:
            return
        if len(self._app.screen_stack) > 1:
            self._wanted_until = None
            return
        card = self._card_now()
        if card is not None:
            self._wanted_until = None
            self._open(card)
        elif time.monotonic() > self._wanted_until:
            self._wanted_until = None
            self._app.notify("No waiting agent shows a prompt to answer.", title="Answer", severity="information")

    def chosen(self, message: AnswerScreen.Chosen) -> None:
        """The operator chose an option: send it, then show the next card (or say why not)."""
        from nbs_tui.widgets.answer_card import AnswerScreen

        if not isinstance(self._app.screen, AnswerScreen):
            return
        screen: AnswerScreen = self._app.screen
        operator = self._operator

        def done(result: ActionResult) -> None:
            if self._app.screen is not screen:
                return  # the card was closed meanwhile; the notification says what happened
            if not result.ok:
                fresh = operator.answer_card(message.card.pane_id)
                said = Text(f"not sent: {result.reason}", style="bold red")
                if fresh is not None and fresh != message.card:
                    screen.show(fresh, *self._facts(fresh), said=said)
                else:
                    screen.tell(said)
                return
            said = Text(f"{result.target}: sent {result.reason or result.sent}", style="green")
            after = operator.next_answer_card(message.card.pane_id, skip=frozenset({message.card.pane_id}))
            if after is None:
                screen.dismiss(None)
                self._app.notify(f"{said.plain}. Nobody else is waiting on a prompt.", title="Answer")
                return
            screen.show(after, *self._facts(after), said=said)

        operator.answer(message.card, message.key, done)

    def skipped(self, message: AnswerScreen.Skipped) -> None:
        """The operator skipped this agent: show the next one waiting on a prompt."""
        from nbs_tui.widgets.answer_card import AnswerScreen

        screen = self._app.screen
        if not isinstance(screen, AnswerScreen):
            return
        after = self._operator.next_answer_card(message.card.pane_id)
        if after is None or after == message.card:
            screen.tell(Text("nobody else is waiting on a prompt", style="dim"))
            return
        screen.show(after, *self._facts(after))

    def _card_now(self) -> AnswerCard | None:
        operator, selected = self._operator, self._selected()
        card = operator.answer_card(selected) if selected is not None and selected in operator.needs_you else None
        return card or operator.next_answer_card()

    def _open(self, card: AnswerCard) -> None:
        from nbs_tui.widgets.answer_card import AnswerScreen

        self._app.push_screen(AnswerScreen(card, *self._facts(card)))

    def _facts(self, card: AnswerCard) -> tuple[str, float, int]:
        """(label, seconds waited, agents waiting) for a card."""
        entries = self._operator.needs_you.entries()
        entry = next((e for e in entries if e.pane_id == card.pane_id), None)
        waited = entry.waited(self._operator.clock()) if entry is not None else 0.0
        return self._operator.label(card.pane_id), waited, len(entries)
