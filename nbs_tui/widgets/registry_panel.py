"""The registry panel: per project, what is registered (by type, with whether it exists), the
chats with unread counts per reader and their newest message, pause and poll interval.

Mount it anywhere and feed it snapshots::

    panel = RegistryPanel(id="registry")
    ...
    panel.update_from(plane.snapshot())      # on every ControlPlane SnapshotChanged

It posts :class:`RegistryPanel.ChatHighlighted` when the cursor lands on a chat and
:class:`RegistryPanel.PauseRequested` for its ``p`` key; whoever owns the ControlPlane acts
on them (see ``ControlView``).
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option, OptionDoesNotExist

from nbs_tui.core.control.chat import ChatSummary
from nbs_tui.core.screen.text import printable
from nbs_tui.files.control_plane import PlaneSnapshot, ProjectSnapshot

KIND_ORDER = ("chat", "bus", "hub")


def format_age(seconds: float | None) -> str:
    if seconds is None:
        return "undated"
    if seconds < 60:
        return f"{int(seconds)}s ago"
    if seconds < 3600:
        return f"{int(seconds // 60)}m ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)}h ago"
    return f"{int(seconds // 86400)}d ago"


def chat_line(summary: ChatSummary, now: float) -> Text:
    """One chat's counts, unread per reader and newest message, for a one-line display."""
    text = Text()
    if summary.archive:
        text.append("ARCHIVE ", style="bold yellow")
    if summary.error:
        text.append(summary.error, style="red")
        return text
    text.append(f"{summary.total} msgs", style="bold")
    for reader in summary.readers:
        style = "red" if reader.unread > 50 else "yellow" if reader.unread > 10 else "green" if reader.unread == 0 else ""
        text.append(f"  {printable(reader.handle)} ")
        text.append(f"{reader.unread} unread", style=style)
    if summary.newest is not None:
        body = printable(summary.newest.text.replace("\n", " "))
        if len(body) > 60:
            body = body[:59] + "…"
        text.append(f"  {format_age(summary.age(now))} ", style="dim")
        text.append(f"{printable(summary.newest.handle)}: ", style="bold")
        text.append(body)
    if summary.archives:
        text.append(f"  +{len(summary.archives)} archive{'s' if len(summary.archives) > 1 else ''}", style="dim")
    return text


class RegistryPanel(OptionList):
    """Registered resources of every project; one row per resource, chats with their state."""

    DEFAULT_CSS = """
    RegistryPanel {
        height: 1fr;
        border: round $primary 40%;
        border-title-color: $text-muted;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "toggle_pause", "Pause project", id="control.pause"),
    ]

    @dataclass
    class ChatHighlighted(Message):
        """The cursor is on a registered chat (``path`` is absolute)."""

        project: str
        path: str

    @dataclass
    class ProjectHighlighted(Message):
        project: str

    @dataclass
    class PauseRequested(Message):
        """The person asked to pause or resume this project."""

        project: str

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.border_title = "registry"
        self.snapshot = PlaneSnapshot()
        self._key: object = None

    def on_mount(self) -> None:
        self.set_interval(10.0, self._tick, name="registry ages")
        self._render_snapshot(force=True)

    def _tick(self) -> None:
        self._render_snapshot(force=True)

    def update_from(self, snapshot: PlaneSnapshot) -> None:
        """Show this snapshot (cheap when nothing shown changed)."""
        self.snapshot = snapshot
        self._render_snapshot()

    @property
    def current_project(self) -> str | None:
        """The project of the highlighted row (or the only project)."""
        option = self.highlighted_option
        if option is not None and option.id:
            return option.id.split("\t")[1]
        if len(self.snapshot.projects) == 1:
            return self.snapshot.projects[0].root
        return None

    @property
    def current_chat(self) -> str | None:
        """The highlighted chat: a registered one (absolute path) or an unregistered one."""
        option = self.highlighted_option
        if option is not None and option.id and option.id.startswith(("chat\t", "unregistered\t")):
            return option.id.split("\t")[2]
        return None

    @property
    def current_channel(self) -> str | None:
        """The agent handle of the highlighted registry row (``""`` for the shared one)."""
        option = self.highlighted_option
        if option is not None and option.id:
            parts = option.id.split("\t")
            if parts[0] == "channel" and len(parts) > 2:
                return parts[2]
            if len(parts) > 3 and parts[0] != "unregistered":
                return parts[3]
        return None

    def _render_snapshot(self, force: bool = False) -> None:
        key = self.snapshot
        if not force and key == self._key:
            return
        self._key = key
        now = time.time()
        previous = self.highlighted_option.id if self.highlighted_option is not None else None
        options: list[Option | None] = []
        if not self.snapshot.projects:
            options.append(Option(Text("No project with a .nbs/ folder yet.", style="dim"), disabled=True))
        for project in self.snapshot.projects:
            options.extend(self._project_options(project, now))
        with self.app.batch_update():
            self.clear_options()
            self.add_options([o for o in options if o is not None])
            if previous is not None:
                with contextlib.suppress(OptionDoesNotExist):  # the row is gone: keep the list's choice
                    self.highlighted = self.get_option_index(previous)

    def _project_options(self, project: ProjectSnapshot, now: float) -> list[Option | None]:
        header = Text()
        header.append(project.name, style="bold")
        header.append(f"  {project.root}", style="dim")
        if project.paused:
            header.append("  PAUSED", style="bold yellow")
        if project.poll_interval is not None:
            header.append(f"  poll {project.poll_interval:g}s", style="magenta")
        if project.panes:
            header.append(f"  panes {' '.join(project.panes)}", style="dim")
        options: list[Option | None] = [Option(header, id=f"project\t{project.root}")]
        if project.error:
            options.append(Option(Text(f"  ⚠ {project.error}", style="red"), id=f"error\t{project.root}"))
        chats = {summary.path: summary for summary in project.chats}
        for channel in project.channels:
            title = Text(f"  {os.path.basename(channel.registry)}", style="underline")
            title.append(f"  {channel.lines_read} inbox lines", style="dim")
            if channel.poll_interval is not None:
                title.append(f"  poll {channel.poll_interval:g}s", style="magenta")
            options.append(Option(title, id=f"channel\t{project.root}\t{channel.handle}"))
            if not channel.entries:
                options.append(Option(Text("    (nothing registered)", style="dim"), disabled=True))
            ordered = sorted(
                enumerate(channel.entries),
                key=lambda pair: (KIND_ORDER.index(pair[1].kind) if pair[1].kind in KIND_ORDER else 9, pair[0]),
            )
            for number, (_, entry) in enumerate(ordered):
                line = Text(f"    {entry.kind:<5}", style="bold cyan")
                line.append(entry.path)
                line.append(" ✓" if entry.exists else " ✗ missing", style="green" if entry.exists else "red")
                if entry.kind == "chat":
                    summary = chats.get(entry.absolute)
                    if summary is not None and entry.exists:
                        line.append("\n          ")
                        line.append_text(chat_line(summary, now))
                    option_id = f"chat\t{project.root}\t{entry.absolute}\t{channel.handle}\t{number}"
                else:
                    option_id = f"{entry.kind}\t{project.root}\t{entry.absolute}\t{channel.handle}\t{number}"
                options.append(Option(line, id=option_id))
            for odd in channel.unparsed:
                options.append(Option(Text(f"    ? {odd}", style="dim italic"), disabled=True))
        for path in project.unregistered_chats:
            hint = Text("  not registered: ", style="dim")
            hint.append(path, style="dim italic")
            hint.append("  (c to register)", style="dim")
            options.append(Option(hint, id=f"unregistered\t{project.root}\t{path}"))
        return options

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        option_id = event.option.id or ""
        parts = option_id.split("\t")
        if parts[0] == "chat":
            self.post_message(self.ChatHighlighted(parts[1], parts[2]))
        elif len(parts) > 1:
            self.post_message(self.ProjectHighlighted(parts[1]))

    def action_toggle_pause(self) -> None:
        project = self.current_project
        if project is None:
            self.notify("Highlight a project first.", severity="warning")
            return
        self.post_message(self.PauseRequested(project))
