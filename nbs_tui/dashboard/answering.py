"""Answering from the needs-you queue: the answer card (``A``) and what happens on a choice.

The card (`nbs_tui.widgets.answer_card.AnswerScreen`) shows an agent's menu read off its
screen; the operator's choice is carried out by the controller, and the card moves on to the
next agent waiting on a prompt. Claude Code's own signals can queue an agent a moment before
the sidecar has read its menu: then ``A`` opens the card as soon as the menu is read, for up
to `ANSWER_WAIT_SECONDS`, rather than telling the operator to press again.

``--open-card TARGET`` (the browser view's one-time links, `nbs_tui.core.fleet.card_target`) opens one
agent's card at start: once the fleet is first seen the agent is selected, and its card opens
as soon as its menu is read (within `OPEN_CARD_WAIT_SECONDS`: the sidecar starts after the
first seed). A target that names no pane here is one problem line, and nothing else happens.

``--card-only`` (what a browser view's one-time link starts) narrows that to the one card:
`CardOnlyFlow` covers the dashboard (`nbs_tui.widgets.card_cover.CardCover`), opens no other
agent's card (no next card after an answer, no Tab to the next agent), and quits the dashboard
when the card closes, so the link's grant ends with it (`nbs_tui.web.server`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import App

from nbs_tui.core.detection.answer import AnswerCard
from nbs_tui.core.fleet.card_target import CardTargetError, parse_card_target
from nbs_tui.core.fleet.host_spec import HostSpec
from nbs_tui.core.fleet.model import AgentState, PaneId
from nbs_tui.operator.operator_controller import OperatorController
from nbs_tui.operator.pane_actions import ActionResult

if TYPE_CHECKING:  # opened on demand: not imported for the first frame
    from nbs_tui.widgets.answer_card import AnswerScreen

ANSWER_WAIT_SECONDS = 10.0
"""How long A waits for a queued agent's menu to be read off its screen. Claude Code's signals
can queue an agent a moment before its menu is drawn, and a loaded machine (many agents, or a
host over ssh) reads the screen seconds later: 3 s ran out under load ~20 and the operator had
to press A again; waiting longer costs nothing (the card opens as soon as the menu is read)."""
OPEN_CARD_WAIT_SECONDS = 20.0
"""How long ``--open-card`` waits for the agent's menu to be read after the fleet is seen."""
OPEN_CARD_SOURCE = "open card"

CARD_ONLY_CLOSE_SECONDS = 3.0
"""How long a card-only dashboard shows what was sent (or why no card opened) before it quits."""

MENUS = (AgentState.PERMISSION, AgentState.QUESTION, AgentState.PLAN, AgentState.DIALOG)


class AnswerFlow:
    """Opens the answer card and carries the operator's choices through (UI thread)."""

    BASE_SCREENS = 1
    """Screens under the card: more means the operator opened another screen meanwhile."""

    def __init__(
        self, app: App[Any], operator: OperatorController, selected: Callable[[], PaneId | None],
        select: Callable[[PaneId], None],
    ) -> None:  # fmt: skip
        self._app = app
        self._operator = operator
        self._selected = selected
        self._select = select
        self._wanted_until: float | None = None
        """A asked for a card before any menu was read: open it when one is, until then."""
        self._wanted_pane: PaneId | None = None
        """``--open-card``: the one agent whose card is wanted (None: the selected or oldest)."""
        self._start_target: str = ""
        """``--open-card``'s target, until the fleet is first seen."""

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

    def open_at_start(self, target: str) -> None:
        """``--open-card TARGET``: open that agent's card once the fleet is first seen."""
        self._start_target = target

    def mounted(self) -> None:
        """The app is up (its screens may be pushed)."""

    def fleet_seen(self, hosts: Sequence[HostSpec], pane_ids: Collection[PaneId], problem: Callable[[str, str], None]) -> None:
        """The fleet was listed: the first time, find ``--open-card``'s agent and wait for its
        menu; a target naming no pane of this dashboard is one problem line."""
        if not self._start_target or not pane_ids:  # a tmux server has a pane: none is "not listed yet"
            return
        text, self._start_target = self._start_target, ""
        try:
            pane_id = parse_card_target(text).dashboard_pane_id(hosts)
        except CardTargetError as error:
            problem(OPEN_CARD_SOURCE, f"--open-card: {error}")
            return
        if pane_id is None or pane_id not in pane_ids:
            where = ", ".join(f"{h.name} ({h.server.describe()})" for h in hosts)
            problem(OPEN_CARD_SOURCE, f"--open-card {text}: no such pane on {where}")
            self._no_card(f"{text} is not an agent here (any more).")
            return
        self._select(pane_id)
        self._want(pane_id)
        self.when_read()

    def _want(self, pane_id: PaneId) -> None:
        """Open ``pane_id``'s card as soon as its menu is read (for `OPEN_CARD_WAIT_SECONDS`)."""
        self._wanted_pane = pane_id
        self._wanted_until = time.monotonic() + OPEN_CARD_WAIT_SECONDS

    def when_read(self) -> None:
        """Open the card A asked for once a menu is read (called as statuses change and on the
        needs-you tick); give up when the wait is over, or when the operator has moved on to
        another screen meanwhile."""
        if self._wanted_until is None:
            return
        if len(self._app.screen_stack) > self.BASE_SCREENS:
            self._wanted_until = self._wanted_pane = None
            return
        card = self._card_now()
        if card is not None:
            self._wanted_until = self._wanted_pane = None
            self._open(card)
        elif time.monotonic() > self._wanted_until:
            wanted, self._wanted_until, self._wanted_pane = self._wanted_pane, None, None
            said = f"{self._operator.label(wanted)} shows no prompt to answer." if wanted else "No waiting agent shows a prompt to answer."
            self._no_card(said)

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
            self._sent(screen, message.card, said)

        operator.answer(message.card, message.key, done)

    def _sent(self, screen: AnswerScreen, card: AnswerCard, said: Text) -> None:
        """An answer went through: show the next waiting agent's card, or close."""
        after = self._operator.next_answer_card(card.pane_id, skip=frozenset({card.pane_id}))
        if after is None:
            screen.dismiss(None)
            self._app.notify(f"{said.plain}. Nobody else is waiting on a prompt.", title="Answer")
            return
        screen.show(after, *self._facts(after), said=said)

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

    def _no_card(self, said: str) -> None:
        """The card asked for will not open: say why."""
        self._app.notify(said, title="Answer", severity="information")

    def _card_now(self) -> AnswerCard | None:
        operator, selected = self._operator, self._selected()
        if self._wanted_pane is not None:
            return operator.answer_card(self._wanted_pane)
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


class CardOnlyFlow(AnswerFlow):
    """``--card-only``: the one agent's card, over a cover, and the dashboard quits when it closes.

    Every card opens through `_open`, which refuses any other agent's; the app lets no key but
    the card's own (and quit) act (`NbsApp.check_action`)."""

    BASE_SCREENS = 2  # the dashboard, and the cover over it

    def __init__(
        self, app: App[Any], operator: OperatorController, selected: Callable[[], PaneId | None],
        select: Callable[[PaneId], None],
    ) -> None:  # fmt: skip
        super().__init__(app, operator, selected, select)
        self._only: PaneId | None = None
        """The one pane whose card may open (known once the fleet is seen)."""
        self._last_said = ""
        from nbs_tui.widgets.card_cover import CardCover

        self.cover = CardCover("Opening the answer card…")

    def open_at_start(self, target: str) -> None:
        super().open_at_start(target)
        if not target:
            self._no_card("No agent named (--card-only goes with --open-card).")
        else:
            self.cover.say(f"Opening the answer card of {target}…")

    def mounted(self) -> None:
        self._app.push_screen(self.cover)

    def _want(self, pane_id: PaneId) -> None:
        super()._want(pane_id)
        if self._only is None:
            self._only = pane_id  # the first (the link's) agent: its card is the only one

    def answer(self) -> None:
        """Not here: only the one card opens (the A key is off too)."""

    def skipped(self, message: AnswerScreen.Skipped) -> None:
        from nbs_tui.widgets.answer_card import AnswerScreen

        if isinstance(self._app.screen, AnswerScreen):
            self._app.screen.tell(Text("only this agent's card opens here", style="dim"))

    def _sent(self, screen: AnswerScreen, card: AnswerCard, said: Text) -> None:
        self._last_said = f"{said.plain}."
        screen.dismiss(None)

    def _no_card(self, said: str) -> None:
        self.cover.say(f"{said}\nNo card to answer here: you may close this page.")

    def _open(self, card: AnswerCard) -> None:
        from nbs_tui.widgets.answer_card import AnswerScreen

        if self._only is None or card.pane_id != self._only:
            return  # never another agent's card
        self._app.push_screen(AnswerScreen(card, *self._facts(card)), self._closed)

    def _closed(self, _: None) -> None:
        """The card closed (answered, or q): say so, then quit, ending the link's grant."""
        self.cover.say(f"{self._last_said}\nThe card is closed.".strip())
        self._app.set_timer(CARD_ONLY_CLOSE_SECONDS, self._app.exit)

    def _facts(self, card: AnswerCard) -> tuple[str, float, int]:
        label, waited, _ = super()._facts(card)
        return label, waited, 1  # how many others wait is not this link's business
