"""One line over the fleet list while the work queue has work: how many tasks are out, waiting on
you and queued, and that ``4`` (or a tap: a phone has no ``4`` key to spare) opens the queue view.

On a phone the footer has room for a few keys only; this line is how the queue shows in the
phone layout without a key. Hidden while every task has ended and the queue is not paused.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import events
from textual.message import Message
from textual.widgets import Static

from nbs_tui.core.queue.task_states import TaskState
from nbs_tui.files.queue_watch import QueueSnapshot

SHOWN = (TaskState.NEEDS, TaskState.RUNNING, TaskState.HANDING, TaskState.QUEUED)
"""The states the line counts, in its order (the ended ones are the view's)."""


def strip_text(snapshot: QueueSnapshot) -> Text | None:
    """The line, or None when there is nothing to say."""
    counts = {state: sum(1 for task in snapshot.tasks if task.state is state) for state in SHOWN}
    if not any(counts.values()) and not snapshot.paused:
        return None
    text = Text.assemble(("queue ", "bold"))
    if snapshot.paused:
        text.append(" PAUSED ", style="bold black on yellow")
        text.append(" ")
    parts = [(f"{counts[state]} {state}", "bold black on yellow" if state is TaskState.NEEDS else "") for state in SHOWN if counts[state]]
    for index, (part, style) in enumerate(parts):
        if index:
            text.append(" · ", style="dim")
        text.append(part, style=style)
    text.append("  (key 4)", style="dim")
    return text


class QueueStrip(Static):
    """The queue in one line (module docstring); a click posts `Opened`."""

    DEFAULT_CSS = """
    QueueStrip {
        height: 1;
        padding: 0 1;
        background: $boost;
    }
    """

    @dataclass
    class Opened(Message):
        """The operator tapped the line: show the queue view."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.display = False

    def show(self, snapshot: QueueSnapshot) -> None:
        text = strip_text(snapshot)
        self.display = text is not None
        if text is not None:
            self.update(text)

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.post_message(self.Opened())
