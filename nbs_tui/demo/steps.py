"""What a turn is made of: a turn script is a generator of steps (``Work``: keep the spinner
going; ``Menu``: show a menu and wait for the answer it is sent back), and the agent is in
one ``Mode`` at a time.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from enum import Enum
from typing import Any

from nbs_tui.demo.demo_terminal import Row
from nbs_tui.demo.palette import RULE


class Mode(Enum):
    IDLE = "idle"
    WORKING = "working"
    MENU = "menu"


@dataclass(slots=True)
class Work:
    """A turn step: keep the spinner going for ``seconds``."""

    seconds: float
    verb: str | None = None


@dataclass(slots=True)
class Menu:
    """A turn step: show a menu and wait; the turn receives the chosen number or None (Esc)."""

    kind: str  # "permission" | "plan" | "question"
    head: list[Row]
    options: list[tuple[str, str]]  # (label, description)
    foot: list[Row]
    rule: str = RULE
    indent: str = " "
    gap: bool = True
    """A blank row between the transcript and the menu's rule."""
    muted: frozenset[int] = frozenset()
    """Options (0-based) whose label is grey, like "Type something."."""
    separator_before: int | None = None
    selected: int = 0
    shown_at: float = 0.0
    auto_answer_after: float | None = None
    hook: tuple[str, dict[str, Any]] | None = None
    """(tool_name, tool_input) for the PermissionRequest hook this menu stands for."""
    notified: bool = False


Step = Work | Menu
Turn = Generator[Step, int | None, None]
