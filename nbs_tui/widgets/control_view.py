"""The Control view: registry panel, chat view and inbox history wired to one ControlPlane.

How the app mounts it (the plane is shared with the sidecar, so the app owns it)::

    view = ControlView(id="control-view")               # in compose()
    plane = ControlPlane(settings, view.plane_listener)  # plane_listener is thread-safe
    view.attach(plane)
    plane.start()                                        # on_mount; plane.stop() on unmount
    plane.set_pane_dirs({pane_id: cwd, ...})             # whenever the fleet changes

Keys: ``c`` opens the chat editor for the highlighted project/chat, ``p`` pauses or resumes the
highlighted project, ``e`` (in the history) shows errors only. The panels can also be used
one by one: see their modules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message

from nbs_tui.files.control_plane import (
    ControlEvent,
    ControlPlaneError,
    ControlPlanePort,
    HistoryAppended,
    SnapshotChanged,
)
from nbs_tui.widgets.chat_view import ChatView
from nbs_tui.widgets.inbox_panel import InboxPanel
from nbs_tui.widgets.registry_panel import RegistryPanel


class ControlView(Horizontal):
    """Everything the control plane shows, side by side."""

    DEFAULT_CSS = """
    ControlView {
        height: 1fr;
    }
    ControlView > RegistryPanel {
        width: 45%;
    }
    ControlView > #control-right {
        width: 1fr;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "edit_chats", "Edit chats", id="control.edit"),
    ]

    @dataclass
    class PlaneEvent(Message):
        """One ControlPlane event, carried to the UI thread."""

        event: ControlEvent

        def can_replace(self, message: Message) -> bool:
            # only the newest snapshot matters; history is never dropped
            return (
                isinstance(message, ControlView.PlaneEvent)
                and isinstance(message.event, SnapshotChanged)
                and isinstance(self.event, SnapshotChanged)
            )

    def __init__(self, plane: ControlPlanePort | None = None, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.plane = plane
        self.registry_panel = RegistryPanel(id="control-registry")
        self.chat_view = ChatView(id="control-chat")
        self.inbox_panel = InboxPanel(id="control-inbox")

    def compose(self) -> ComposeResult:
        yield self.registry_panel
        with Vertical(id="control-right"):
            yield self.chat_view
            yield self.inbox_panel

    def attach(self, plane: ControlPlanePort) -> None:
        self.plane = plane
        self.chat_view.reader = plane.read_chat  # other hosts' chats are read on their host
        if self.is_mounted:
            self._catch_up()

    def on_mount(self) -> None:
        self._catch_up()

    def _catch_up(self) -> None:
        if self.plane is None:
            return
        self.registry_panel.update_from(self.plane.snapshot())
        self.inbox_panel.update_from(self.plane.history())

    def plane_listener(self, event: ControlEvent) -> None:
        """Give this to ControlPlane as its listener: safe to call from the plane's thread."""
        self.post_message(self.PlaneEvent(event))

    def on_control_view_plane_event(self, message: ControlView.PlaneEvent) -> None:
        message.stop()
        event = message.event
        if isinstance(event, SnapshotChanged):
            self.registry_panel.update_from(event.snapshot)
            if self.chat_view.path is None:
                # until a chat is chosen, show the one NBS tools use: the first chat: line
                first = next(
                    (e.absolute for p in event.snapshot.projects for c in p.channels for e in c.entries
                     if e.kind == "chat" and e.exists),
                    None,
                )
                if first is not None:
                    self.chat_view.show_chat(first)
            if self.chat_view.path is not None:
                for project in event.snapshot.projects:
                    for summary in project.chats:
                        if summary.path == self.chat_view.path:
                            self.chat_view.update_from(summary)
        elif isinstance(event, HistoryAppended):
            self.inbox_panel.add_entries(event.entries)

    def on_registry_panel_chat_highlighted(self, message: RegistryPanel.ChatHighlighted) -> None:
        self.chat_view.show_chat(message.path)

    def on_registry_panel_pause_requested(self, message: RegistryPanel.PauseRequested) -> None:
        if self.plane is None:
            return
        try:
            paused = self.plane.toggle_pause(message.project)
        except ControlPlaneError as error:
            self.notify(str(error), severity="error")
            return
        self.notify(f"{message.project}: {'paused' if paused else 'resumed'}")

    def action_edit_chats(self) -> None:
        if self.plane is None:
            self.notify("The control plane is not running.", severity="warning")
            return
        # a modal screen, imported when first opened: the first frame does not need it
        from nbs_tui.widgets.chat_editor import ChatEditor

        self.app.push_screen(
            ChatEditor(
                self.plane,
                project=self.registry_panel.current_project,
                chat=self.registry_panel.current_chat,
                channel=self.registry_panel.current_channel,
            )
        )
