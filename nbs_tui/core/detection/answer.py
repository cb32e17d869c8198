"""Answering a waiting agent's menu from the dashboard: what the card shows, which key a choice
is, and whether the menu on the live screen is still the one the operator read.

The operator reads a card (the prompt and its options, taken from the pane's last detection),
then presses a digit, ``y``, ``n`` or Esc. Before the key goes to tmux the pane is captured again
and `recheck` compares: the same kind of menu, the same options, the same prompt. The pane's
process is compared by the caller (`nbs_tui.operator.pane_actions.Operator.check_pane`). Pure: no tmux.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nbs_tui.core.detection.detect import FLAG_UNNUMBERED
from nbs_tui.core.fleet.model import AgentState, Detection, MenuOption, PaneId

ANSWERABLE = frozenset(
    {AgentState.PERMISSION, AgentState.QUESTION, AgentState.PLAN, AgentState.DIALOG, AgentState.LIMITED}
)
_YES = re.compile(r"^\s*Yes\b", re.IGNORECASE)
_NO = re.compile(r"^\s*No\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class AnswerCard:
    """One waiting agent's menu, as the operator read it."""

    pane_id: PaneId
    pid: int
    """The pane's process when the card was made: a replaced agent gets no answer."""
    state: AgentState
    prompt: str
    options: tuple[MenuOption, ...]
    numbered: bool = True
    """False for Claude Code's unnumbered dialogs: only Esc answers from the card."""
    reason: str = ""

    @property
    def title(self) -> str:
        return {
            AgentState.PERMISSION: "permission prompt",
            AgentState.QUESTION: "question",
            AgentState.PLAN: "plan approval",
            AgentState.DIALOG: "dialog",
            AgentState.LIMITED: "usage limit",
        }.get(self.state, self.state.value)


def card_for(pane_id: PaneId, pid: int, detection: Detection) -> AnswerCard | None:
    """The card for a pane whose screen shows a menu (None: nothing to answer there)."""
    if detection.state not in ANSWERABLE or not detection.options:
        return None
    return AnswerCard(
        pane_id,
        pid,
        detection.state,
        detection.prompt,
        detection.options,
        numbered=FLAG_UNNUMBERED not in detection.flags,
        reason=detection.reason,
    )


@dataclass(frozen=True, slots=True)
class Choice:
    """A key to press for an answer, and the words for the log and the operator."""

    key: str
    """A tmux key name: ``1``..``9`` or ``Escape``."""
    said: str


def choose(card: AnswerCard, key: str) -> Choice | str:
    """The tmux key for the operator's ``key`` (a digit, ``y``, ``n``, ``escape``), or why not."""
    if key in ("escape", "esc", "Escape"):
        return Choice("Escape", "Esc (cancel the prompt)")
    option: MenuOption | None = None
    if key.isdigit():
        option = next((o for o in card.options if o.number == int(key)), None)
        if option is None:
            numbers = ", ".join(str(o.number) for o in card.options)
            return f"no option {key} on this menu (options: {numbers})"
    elif key.lower() == "y":
        option = next((o for o in card.options if _YES.match(o.label)), None)
        if option is None:
            return "no 'Yes' option on this menu: press its digit"
    elif key.lower() == "n":
        option = next((o for o in card.options if _NO.match(o.label)), None)
        if option is None:
            return "no 'No' option on this menu: press its digit, or Esc to cancel"
    else:
        return f"{key!r} does not answer a menu: a digit, y, n or Esc"
    if not card.numbered:
        return "this dialog's options have no digits: jump into the pane (g) to choose"
    return Choice(str(option.number), f"{option.number}. {option.label}")


def _norm(text: str) -> str:
    return " ".join(text.split())


def recheck(card: AnswerCard, live: Detection) -> str | None:
    """Why the live screen no longer shows the card's menu (None: it does, answer it)."""
    if live.state is not card.state:
        return f"the {card.title} is gone: the agent is {live.state.value} now ({live.reason})"
    if tuple(o.label for o in live.options) != tuple(o.label for o in card.options):
        return f"the {card.title} changed: its options are not the ones shown"
    if _norm(live.prompt) != _norm(card.prompt):
        return f"a different {card.title} is open now"
    return None
