"""The "needs you" panel: agents waiting on a person, oldest wait first.

Shows the queue kept by `nbs_tui.core.fleet.needs_you.NeedsYouQueue`; hidden while it is empty.
Enter (or a click) on an entry posts `NeedsYouPanel.PaneChosen`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from nbs_tui.core.fleet.model import AgentState, PaneId
from nbs_tui.core.fleet.needs_you import NeedsYouEntry

BADGES = {
    AgentState.PERMISSION: ("⚠", "bold black on yellow"),
    AgentState.QUESTION: ("?", "bold black on yellow"),
    AgentState.DIALOG: ("▣", "bold black on yellow"),
    AgentState.ERROR: ("✖", "bold white on red"),
    AgentState.PLAN: ("✎", "bold magenta"),
    AgentState.IDLE: ("…", "cyan"),
    AgentState.LIMITED: ("⏳", "bold black on dark_orange"),
}


def _waited(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"


class NeedsYouPanel(OptionList):
    """One line per waiting agent: badge, pane, why, how long."""

    DEFAULT_CSS = """
    NeedsYouPanel {
        height: auto;
        max-height: 10;
        border: round $warning;
        border-title-color: $warning;
        border-title-style: bold;
    }
    """

    @dataclass
    class PaneChosen(Message):
        pane_id: PaneId

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.entries: list[NeedsYouEntry] = []
        self.display = False
        self._shown: tuple[tuple[str | None, str, str], ...] = ()
        """What each option shows (id, text, badge style): the queue is redrawn only when it moves."""

    def show_entries(self, entries: Sequence[NeedsYouEntry], now: float, label: Callable[[PaneId], str]) -> None:
        """Redraw the queue when what it shows changed: it is asked twice a second, and each
        redraw lays the screen out again (an empty queue did that for nothing)."""
        highlighted = self.highlighted
        keep = self.entries[highlighted].pane_id if highlighted is not None and highlighted < len(self.entries) else None
        self.entries = list(entries)
        options, shown = [], []
        for entry in self.entries:
            badge, style = BADGES.get(entry.state, ("•", ""))
            text = Text.assemble(
                (f" {badge} ", style),
                " ",
                (f"{label(entry.pane_id) or entry.label or entry.pane_id:<14}", "bold"),
                f" {entry.reason:<18} ",
                (_waited(entry.waited(now)), "dim"),
            )
            options.append(Option(text, id=entry.pane_id))
            shown.append((entry.pane_id, text.plain, style))
        if tuple(shown) == self._shown:
            return
        self._shown = tuple(shown)
        self.clear_options()
        self.add_options(options)
        title = f"Needs you ({len(self.entries)}) · n: next"
        if self.border_title != title:
            self.border_title = title
        if self.display != bool(self.entries):
            self.display = bool(self.entries)
        if keep is not None:
            for index, entry in enumerate(self.entries):
                if entry.pane_id == keep:
                    self.highlighted = index

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.post_message(self.PaneChosen(event.option.id))
