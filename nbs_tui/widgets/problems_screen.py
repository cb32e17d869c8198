"""The problems screen: every backend problem seen this session, newest first, live.

The app keeps the record (`nbs_tui.core.fleet.problems.Problems`) and hands the entries over; the
screen only shows them, with how often and when each was seen, and where the log file is (the
tracebacks are there). ``c`` asks the app to clear the record (the screen is dismissed with True).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from nbs_tui.core.fleet.problems import Problem
from nbs_tui.core.screen.text import printable


def _when(wall: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(wall))


def problems_table(entries: Sequence[Problem]) -> Table:
    table = Table(box=None, show_header=True, header_style="bold", expand=True, padding=(0, 1))
    table.add_column("Last", no_wrap=True, style="dim")
    table.add_column("×", justify="right", no_wrap=True)
    table.add_column("Source", no_wrap=True, style="bold red")
    table.add_column("Problem", overflow="fold")
    for entry in entries:
        since = "" if entry.count == 1 else f" (since {_when(entry.first)})"
        # as text, not markup: a message may quote a path or a line holding "[/x]"
        table.add_row(_when(entry.last), str(entry.count), Text(printable(entry.source)), Text(printable(entry.message + since, multiline=True)))
    return table


class ProblemsScreen(ModalScreen[bool]):
    """A modal listing problems; Escape, q or E closes it, c clears the record."""

    DEFAULT_CSS = """
    ProblemsScreen {
        align: center middle;
    }
    ProblemsScreen > Vertical {
        width: 95%;
        height: 85%;
        border: thick $error;
        background: $surface;
        padding: 0 1;
    }
    ProblemsScreen VerticalScroll {
        height: 1fr;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,E", "close", "Close", id="problems.close"),
        Binding("c", "clear", "Clear", id="problems.clear"),
    ]

    def __init__(self, entries: Sequence[Problem], log_path: str | None) -> None:
        super().__init__()
        self.entries = list(entries)
        self.log_path = log_path
        self.body = Static(id="problems-table")

    def compose(self) -> ComposeResult:
        with Vertical():
            where = f"  tracebacks: {self.log_path}" if self.log_path else "  (no log file)"
            yield Static(Text.assemble(("Problems", "bold"), (where, "dim")), id="problems-title")
            with VerticalScroll():
                yield self.body
            yield Static(Text("Esc close · c clear", style="dim"))

    def on_mount(self) -> None:
        self.show(self.entries)

    def show(self, entries: Sequence[Problem]) -> None:
        """The record changed (UI thread)."""
        self.entries = list(entries)
        if not self.entries:
            self.body.update(Text("No problems seen.", style="dim"))
        else:
            self.body.update(problems_table(self.entries))

    def text(self) -> str:
        """Plain text of what is listed (tests read it)."""
        return "\n".join(f"{p.source}: {p.message} ×{p.count}" for p in self.entries)

    def action_close(self) -> None:
        self.dismiss(False)

    def action_clear(self) -> None:
        self.dismiss(True)
