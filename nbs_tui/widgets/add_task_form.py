"""The "add task" form of the queue view (``a``): what ``nbs-tui queue add`` takes, as a dialog.

It collects a `nbs_tui.core.queue.edits.NewTask` and shows its problems
(`nbs_tui.core.queue.edits.new_task_problems`) under the fields instead of closing. It adds
nothing itself: the dashboard's queue part appends the record (`nbs_tui.dashboard.queue_shown`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Button, Checkbox, Input, Label, Static, TextArea

from nbs_tui.core.queue.edits import NewTask, new_task_problems


class AddTaskScreen(ModalScreen[NewTask | None]):
    """Returns the checked task on Ctrl+S (or Enter in a one-line field, or its Add button: a
    phone has no Ctrl), None on Escape (or Cancel)."""

    DEFAULT_CSS = """
    AddTaskScreen {
        align: center middle;
    }
    AddTaskScreen > VerticalScroll {
        width: 90;
        max-width: 100%;
        height: auto;
        max-height: 100%;
        border: thick $accent;
        background: $surface;
        padding: 0 2;
    }
    AddTaskScreen Label {
        margin-top: 1;
        width: 100%;
    }
    AddTaskScreen #task-buttons {
        height: auto;
        margin-top: 1;
    }
    AddTaskScreen #task-buttons Button {
        margin-right: 2;
    }
    AddTaskScreen #task-text {
        height: 6;
    }
    AddTaskScreen Horizontal {
        height: auto;
    }
    AddTaskScreen Horizontal > Vertical {
        width: 1fr;
        height: auto;
    }
    AddTaskScreen #task-problems {
        color: $error;
        height: auto;
    }
    /* a phone: tighter, and no Ctrl+S to tell of (the buttons) */
    AddTaskScreen.-narrow Label {
        margin-top: 0;
    }
    AddTaskScreen.-narrow #task-text {
        height: 4;
    }
    AddTaskScreen.-narrow #task-keys {
        display: none;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "add", "Add", id="task.add", priority=True),
        Binding("escape", "cancel", "Cancel", id="task.cancel"),
    ]

    def __init__(self, folders: Sequence[str], where: str) -> None:
        """``folders``: the fleet's folders, offered as completions; ``where``: whose queue."""
        super().__init__()
        self.folders = list(dict.fromkeys(f for f in folders if f))
        self.where = where

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Text(f"Add a task to the queue of {self.where}", style="bold"), id="task-title")
            yield Label("Task (the prompt typed into the agent that takes it)")
            yield TextArea(id="task-text", soft_wrap=True, show_line_numbers=False)
            yield Label("Folder: agents in it or below it may take the task (empty: any agent)")
            yield Input(placeholder="/path/to/project", suggester=SuggestFromList(self.folders, case_sensitive=True), id="task-folder")
            with Horizontal():
                with Vertical():
                    yield Label("Agents (window or worker name glob)")
                    yield Input(placeholder="any", id="task-agents")
                with Vertical():
                    yield Label("Priority (higher first)")
                    yield Input(value="0", type="integer", id="task-priority")
            yield Checkbox("Start an agent if none is free", id="task-start")
            yield Static("", id="task-problems")
            with Horizontal(id="task-buttons"):  # a phone's keyboard has no Ctrl+S
                yield Button("Add", variant="primary", id="task-add-button")
                yield Button("Cancel", id="task-cancel-button")
            yield Static(Text("Ctrl+S add    Esc cancel", style="dim"), id="task-keys")

    def _value(self, widget_id: str) -> str:
        return self.query_one(f"#{widget_id}", Input).value.strip()

    def new_task(self) -> NewTask:
        priority = self._value("task-priority")
        return NewTask(
            text=self.query_one("#task-text", TextArea).text.strip(),
            folder=os.path.expanduser(self._value("task-folder")),
            agents=self._value("task-agents"),
            priority=int(priority) if priority.lstrip("-").isdecimal() else 0,
            start=self.query_one("#task-start", Checkbox).value,
        )

    def action_add(self) -> None:
        task = self.new_task()
        found = new_task_problems(task)
        if found:
            self.query_one("#task-problems", Static).update(Text("\n".join(found)))
            return
        self.dismiss(task)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "task-add-button":
            self.action_add()
        else:
            self.action_cancel()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_add()
