"""Answering a waiting agent's menu from the dashboard: what the card shows, which key a choice
is, and whether the menu on the live screen is still the one the operator read.

The operator reads a card (the prompt and its options, taken from the pane's last detection),
then presses a digit, ``y``, ``n`` or Esc. Before the key goes to tmux the pane is captured again
and `recheck` compares: the same kind of menu, the same options, the same prompt. The pane's
process is compared by the caller (`nbs_tui.operator.pane_actions.Operator.check_pane`). Pure: no tmux.
"""

from __future__ import annotations

import hashlib
import json
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
    def menu_id(self) -> str:
        """The menu's id (`menu_id`): what the fleet API shows a caller and checks again before
        it presses a key (``nbs-tui answer --menu ID``)."""
        return menu_id(self.state, self.prompt, self.options)

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


def detection_menu_id(detection: Detection) -> str:
    """The id of the menu ``detection`` read (`menu_id`), or "" when it read none to answer."""
    card = card_for("", 0, detection)
    return card.menu_id if card is not None else ""


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


def choose_answer(card: AnswerCard, text: str) -> Choice | str:
    """The key for a script's answer (``nbs-tui answer``): what `choose` takes (a digit, ``y``,
    ``n``, ``esc``), or an option's label: the whole label (case and spacing aside), else the
    one label it begins. Or why not (the choice is not on this menu)."""
    wanted = _norm(text).casefold()
    if not wanted:
        return "an empty choice: give a digit or an option's label"
    if wanted.isdigit() or wanted in ("y", "n", "esc", "escape"):
        return choose(card, wanted)
    labels = [(o, _norm(o.label).casefold()) for o in card.options]
    found = [o for o, label in labels if label == wanted] or [o for o, label in labels if label.startswith(wanted)]
    if not found:
        shown = "; ".join(f"{o.number}. {o.label}" for o in card.options)
        return f"no option {text!r} on this menu (options: {shown})"
    if len(found) > 1:
        shown = "; ".join(f"{o.number}. {o.label}" for o in found)
        return f"{text!r} begins {len(found)} options ({shown}): give more of the label, or its digit"
    return choose(card, str(found[0].number))


def menu_id(state: AgentState, prompt: str, options: tuple[MenuOption, ...]) -> str:
    """A short hash of what detection read of a menu: its kind, its question (spacing aside) and
    its numbered options, not which one is marked. The same menu read twice has the same id; a
    different question or option list on screen has another."""
    read = [state.value, _norm(prompt), [[o.number, _norm(o.label)] for o in options]]
    return hashlib.sha256(json.dumps(read, ensure_ascii=False).encode()).hexdigest()[:MENU_ID_LENGTH]


MENU_ID_LENGTH = 12
"""Hex digits of a menu id: 48 bits, so two menus of one pane never share one by chance."""


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
