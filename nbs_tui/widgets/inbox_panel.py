"""The inbox history panel: every inbox line and scanned ``\\nbs-`` command, when it was seen,
where it came from and what became of it (applied, duplicate, comment, error and why).

Feed it from the ControlPlane::

    panel = InboxPanel(id="inbox")
    panel.update_from(plane.history())      # once, when mounted
    panel.add_entries(event.entries)        # on every HistoryAppended

Only the newest ``max_rows`` entries are kept on screen (the plane keeps its own history);
``e`` shows errors only.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import DataTable

from nbs_tui.core.control.control_commands import Outcome
from nbs_tui.core.screen.text import printable
from nbs_tui.files.control_events import HISTORY_KEEP
from nbs_tui.files.control_plane import HistoryEntry

OUTCOME_STYLE = {
    Outcome.APPLIED: "green",
    Outcome.DUPLICATE: "yellow",
    Outcome.COMMENT: "dim",
    Outcome.ERROR: "bold red",
}


class InboxPanel(DataTable[Text | str]):
    """A table of control-inbox history, newest at the bottom."""

    DEFAULT_CSS = """
    InboxPanel {
        height: 1fr;
        border: round $primary 40%;
        border-title-color: $text-muted;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("e", "toggle_errors", "Errors only", id="control.inbox.errors"),
    ]

    def __init__(self, *, max_rows: int = HISTORY_KEEP, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=True)
        self.border_title = "control inbox history"
        self.max_rows = max_rows
        self.errors_only = False
        self._entries: list[HistoryEntry] = []
        self._next_key = 0
        self._last_seq = 0
        self._shown: list[str] = []

    def on_mount(self) -> None:
        self.add_column("seen", key="seen", width=8)
        self.add_column("project", key="project", width=12)
        self.add_column("from", key="from", width=24)
        self.add_column("outcome", key="outcome", width=9)
        self.add_column("line", key="line", width=40)
        self.add_column("why", key="why")
        self._refill()

    @property
    def entries(self) -> tuple[HistoryEntry, ...]:
        return tuple(self._entries)

    def update_from(self, history: Sequence[HistoryEntry]) -> None:
        """Replace everything shown with this history."""
        self._entries = list(history[-self.max_rows :])
        self._last_seq = self._entries[-1].seq if self._entries else 0
        self._refill()

    def add_entries(self, entries: Iterable[HistoryEntry]) -> None:
        """Append new entries (keeps the view at the bottom if it was there)."""
        new = [entry for entry in entries if entry.seq == 0 or entry.seq > self._last_seq]
        if not new:
            return
        self._last_seq = max(self._last_seq, new[-1].seq)
        self._entries.extend(new)
        overflow = len(self._entries) - self.max_rows
        if overflow > 0:
            del self._entries[:overflow]
        if not self.is_mounted or not self.columns:
            return
        at_end = self.cursor_row >= self.row_count - 1
        shown = [e for e in new[-self.max_rows :] if self._visible(e)]
        for entry in shown:
            self._add_row(entry)
        excess = len(self._shown) - self.max_rows
        if excess > 0:
            for key in self._shown[:excess]:
                self.remove_row(key)
            del self._shown[:excess]
        if at_end and self.row_count:
            self.move_cursor(row=self.row_count - 1)

    def _visible(self, entry: HistoryEntry) -> bool:
        return not self.errors_only or entry.outcome is Outcome.ERROR

    def _refill(self) -> None:
        if not self.is_mounted or not self.columns:
            return
        self.clear()
        self._shown = []
        for entry in self._entries:
            if self._visible(entry):
                self._add_row(entry)
        if self.row_count:
            self.move_cursor(row=self.row_count - 1)

    def _add_row(self, entry: HistoryEntry) -> None:
        key = str(self._next_key)
        self._next_key += 1
        line = printable(entry.line)
        self.add_row(
            time.strftime("%H:%M:%S", time.localtime(entry.seen)),
            os.path.basename(entry.project.rstrip("/")) or entry.project,
            entry.source,
            Text(entry.outcome.value, style=OUTCOME_STYLE.get(entry.outcome, "")),
            Text(line if len(line) <= 80 else line[:79] + "…"),
            Text(printable(entry.why)),
            key=key,
        )
        self._shown.append(key)

    def action_toggle_errors(self) -> None:
        self.errors_only = not self.errors_only
        self.border_title = "control inbox history" + (" (errors only)" if self.errors_only else "")
        self._refill()
