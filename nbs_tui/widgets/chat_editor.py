"""The chat editor: register, unregister and create chats of a project, and post a message.

A modal screen over a running ControlPlane::

    app.push_screen(ChatEditor(plane, project="/path/to/project", chat=None))

Every edit goes through the plane's forward-only path: register and unregister append a command
to the project's ``.nbs/control-inbox`` (the history shows it like any agent's line), create
writes a new file in the nbs-chat format, and post uses NBS's lock protocol as the operator's
handle. Paths are checked as they are typed and again before anything is written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, Select, Static
from textual.widgets.option_list import Option

from nbs_tui.core.control.registry import normalise
from nbs_tui.files.chat_io import is_chat_file
from nbs_tui.files.control_plane import NOT_SAVED, ControlPlaneError, ControlPlanePort


def check_chat_path(plane: ControlPlanePort, project: str, path: str, channel: str = "") -> tuple[bool, str]:
    """What registering ``path`` in ``project`` would do, for the live hint under the input."""
    if not path.strip():
        return False, "type a path, e.g. .nbs/chat/team.chat"
    if path != path.strip():
        return False, "the path starts or ends with spaces"
    if any(ord(c) < 0x20 for c in path):
        return False, "the path contains a control character"
    absolute = os.path.normpath(os.path.join(project, normalise(path)))
    snapshot = plane.snapshot().project(project)
    registered = bool(
        snapshot
        and any(
            entry.kind == "chat" and entry.absolute == absolute
            for snap in snapshot.channels
            if snap.handle == channel
            for entry in snap.entries
        )
    )
    if registered:
        return True, "registered (you can unregister it, or post to it)"
    if not os.path.exists(absolute):
        if absolute.endswith(".chat"):
            return True, "no such file yet: Create makes it"
        return False, "no such file (a chat file name ends in .chat)"
    if not is_chat_file(absolute):
        return False, "exists but is not an nbs-chat file"
    return True, "an nbs-chat file, not registered yet"


class ChatEditor(ModalScreen[None]):
    """Add, remove and create registered chats; post a message to one."""

    DEFAULT_CSS = """
    ChatEditor {
        align: center middle;
    }
    ChatEditor > #editor-box {
        width: 90;
        max-width: 95%;
        height: auto;
        max-height: 95%;
        border: thick $primary 60%;
        background: $surface;
        padding: 1 2;
    }
    ChatEditor #editor-chats {
        height: auto;
        max-height: 8;
        margin-bottom: 1;
    }
    ChatEditor #editor-buttons, ChatEditor #editor-post-row {
        height: auto;
    }
    ChatEditor Button {
        margin-right: 1;
    }
    ChatEditor #editor-message {
        width: 1fr;
    }
    ChatEditor #editor-check, ChatEditor #editor-status {
        height: auto;
        margin-bottom: 1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close", id="control.editor.close")]

    @dataclass
    class Edited(Message):
        """An edit reached the files: ``action`` is register, unregister, create or post."""

        project: str
        action: str
        path: str

    def __init__(
        self, plane: ControlPlanePort, project: str | None = None, chat: str | None = None, channel: str | None = None
    ) -> None:
        """``channel``: the agent handle of a per-agent inbox/registry pair, ``""`` for the
        shared ``control-inbox``; None picks the shared one if the project has it."""
        super().__init__()
        self.plane = plane
        self.channel: str | None = channel
        projects = [p.root for p in plane.snapshot().projects if p.has_nbs]
        self.project: str | None = project if project is not None else (projects[0] if projects else None)
        self._initial_chat = chat
        self._projects = projects

    def compose(self) -> ComposeResult:
        with Vertical(id="editor-box"):
            yield Label(Text("Chats", style="bold"), id="editor-title")
            options = [(root, root) for root in self._projects]
            if self.project is not None and self.project not in self._projects:
                options.append((self.project, self.project))
            yield Select(options, value=self.project if self.project else Select.NULL, allow_blank=not options, id="editor-project")
            yield Select([], prompt="registry", allow_blank=True, id="editor-channel")
            yield OptionList(id="editor-chats")
            yield Input(placeholder=".nbs/chat/name.chat", id="editor-path")
            yield Static("", id="editor-check")
            with Horizontal(id="editor-buttons"):
                yield Button("Register", id="editor-register", variant="primary")
                yield Button("Unregister", id="editor-unregister", variant="warning")
                yield Button("Create", id="editor-create", variant="success")
            yield Label(Text("Post to the chat above, as the operator:", style="dim"))
            with Horizontal(id="editor-post-row"):
                yield Input(placeholder=f"message to post as {self.plane.operator_handle}", id="editor-message")
                yield Button("Post", id="editor-post")
            yield Static("", id="editor-status")
            yield Button("Close", id="editor-close")

    def on_mount(self) -> None:
        self._fill_channels()
        self._fill_chats()
        if self._initial_chat and self.project:
            shown = self._initial_chat
            if shown.startswith(self.project + os.sep):
                shown = os.path.relpath(shown, self.project)
            self.query_one("#editor-path", Input).value = shown
        self.query_one("#editor-path", Input).focus()
        self._check()

    # -- helpers ----------------------------------------------------------------------------

    @property
    def path_value(self) -> str:
        return self.query_one("#editor-path", Input).value

    def _fill_channels(self) -> None:
        """The registries of the project: the shared one and one per agent handle."""
        snapshot = self.plane.snapshot().project(self.project) if self.project else None
        handles = [c.handle for c in snapshot.channels] if snapshot else []
        if "" not in handles:
            handles.insert(0, "")
        if self.channel not in handles:
            self.channel = "" if "" in handles else handles[0]
        select = self.query_one("#editor-channel", Select)
        select.set_options(
            [("control-inbox / control-registry (shared)" if h == "" else f"control-inbox-{h} / control-registry-{h}", h) for h in handles]
        )
        select.value = self.channel

    def _fill_chats(self) -> None:
        chats = self.query_one("#editor-chats", OptionList)
        chats.clear_options()
        snapshot = self.plane.snapshot().project(self.project) if self.project else None
        channel = self.channel or ""
        entries = [e for c in snapshot.channels if c.handle == channel for e in c.entries if e.kind == "chat"] if snapshot else []
        if not entries:
            chats.add_option(Option(Text("(no chat registered)", style="dim"), disabled=True))
        for entry in entries:
            label = Text(entry.path)
            label.append(" ✓" if entry.exists else " ✗ missing", style="green" if entry.exists else "red")
            chats.add_option(Option(label, id=entry.path))

    def _check(self) -> None:
        check = self.query_one("#editor-check", Static)
        if self.project is None:
            check.update(Text("no project with a .nbs/ folder", style="red"))
            return
        ok, text = check_chat_path(self.plane, self.project, self.path_value, self.channel or "")
        check.update(Text(("✓ " if ok else "✗ ") + text, style="green" if ok else "red"))

    def _status(self, text: str, error: bool = False, unsaved: bool = False) -> None:
        if not self.is_attached:  # closed while its edit ran: the edit's answer has no screen
            return
        style = "bold red" if error else "bold yellow" if unsaved else "green"
        self.query_one("#editor-status", Static).update(Text(text, style=style))

    def _edit(self, action: str) -> None:
        if self.project is None:
            self._status("no project with a .nbs/ folder", error=True)
            return
        self._status(f"{action}…")
        self._run_edit(self.project, action, self.path_value, self.channel or "")

    @work(thread=True, exclusive=True, group="chat-editor-edit")
    def _run_edit(self, project: str, action: str, path: str, channel: str) -> None:
        # a thread: appending waits (up to a second) for an agent's unfinished inbox line, then
        # (up to SAVE_WAIT) for the plane to say whether the registry was saved
        inbox = "control-inbox" + (f"-{channel}" if channel else "")
        try:
            if action == "register":
                done = f"appended to {inbox}: {self.plane.register_chat(project, path, channel)}"
            elif action == "unregister":
                done = f"appended to {inbox}: {self.plane.unregister_chat(project, path, channel)}"
            else:
                done = f"created and registered in {inbox}: {self.plane.create_chat(project, path, channel=channel)}"
        except ControlPlaneError as error:
            self.app.call_from_thread(self._status, str(error), True)
            return
        self.app.call_from_thread(self._edited, project, action, path, done)

    def _edited(self, project: str, action: str, path: str, done: str) -> None:
        # in the inbox, but the registry not written yet (the plane retries): not a green "done"
        if not self.is_attached:
            return
        self._status(done, unsaved=NOT_SAVED in done)
        self.post_message(self.Edited(project, action, path))
        self.set_timer(0.3, self._refresh_lists)

    def _refresh_lists(self) -> None:
        self._fill_chats()
        self._check()

    # -- events -----------------------------------------------------------------------------

    @on(Input.Changed, "#editor-path")
    def _path_changed(self) -> None:
        self._check()

    @on(Select.Changed, "#editor-project")
    def _project_changed(self, event: Select.Changed) -> None:
        if isinstance(event.value, str) and event.value != self.project:
            self.project = event.value
            self.channel = None
            self._fill_channels()
            self._fill_chats()
            self._check()

    @on(Select.Changed, "#editor-channel")
    def _channel_changed(self, event: Select.Changed) -> None:
        if isinstance(event.value, str) and event.value != self.channel:
            self.channel = event.value
            self._fill_chats()
            self._check()

    @on(OptionList.OptionSelected, "#editor-chats")
    @on(OptionList.OptionHighlighted, "#editor-chats")
    def _chat_chosen(self, event: OptionList.OptionSelected | OptionList.OptionHighlighted) -> None:
        if event.option.id:
            self.query_one("#editor-path", Input).value = event.option.id

    @on(Button.Pressed, "#editor-register")
    def _register(self) -> None:
        self._edit("register")

    @on(Button.Pressed, "#editor-unregister")
    def _unregister(self) -> None:
        self._edit("unregister")

    @on(Button.Pressed, "#editor-create")
    def _create(self) -> None:
        self._edit("create")

    @on(Button.Pressed, "#editor-post")
    @on(Input.Submitted, "#editor-message")
    def _post_pressed(self) -> None:
        if self.project is None:
            self._status("no project with a .nbs/ folder", error=True)
            return
        text = self.query_one("#editor-message", Input).value
        if not text.strip():
            self._status("type a message first", error=True)
            return
        target = os.path.normpath(os.path.join(self.project, normalise(self.path_value)))
        self._status("posting…")
        self._post(target, text)

    @work(thread=True, exclusive=True, group="chat-editor-post")
    def _post(self, target: str, text: str) -> None:
        try:
            message = self.plane.post_message(target, text)
        except ControlPlaneError as error:
            self.app.call_from_thread(self._status, str(error), True)
            return
        self.app.call_from_thread(self._posted, target, message.handle)

    def _posted(self, target: str, handle: str) -> None:
        self.query_one("#editor-message", Input).value = ""
        self._status(f"posted to {os.path.basename(target)} as {handle}")
        if self.project is not None:
            self.post_message(self.Edited(self.project, "post", target))

    @on(Button.Pressed, "#editor-close")
    def action_close(self) -> None:
        self.dismiss(None)
