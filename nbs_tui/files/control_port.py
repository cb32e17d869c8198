"""What the dashboard asks of a control plane, whoever answers it.

Three kinds answer: `nbs_tui.files.control_plane.ControlPlane` runs a plane over this machine's
``.nbs/`` files; `nbs_tui.runtime.remote_plane.RemoteControlPlane` relays one other host's plane over
ssh; `nbs_tui.runtime.remote_plane.HostsControl` shows this machine's and the hosts' as one. The
runtime, the app, the Control view and the chat editor hold a `ControlPlanePort` and never ask
which kind it is. Each kind has its own constructor and state; the queries that only read the
snapshot are written once, here.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Mapping

from nbs_tui.core.control.chat import ChatFile, ChatMessage
from nbs_tui.files.control_events import HistoryEntry, PlaneSnapshot, ProjectSnapshot


class ControlPlanePort(ABC):
    """The control plane as the rest of nbs-tui sees it (module docstring).

    Queries may be called from any thread; edits block (they write files or wait for a host):
    call them from a thread worker. Edits raise `nbs_tui.files.control_events.ControlPlaneError`.
    """

    operator_handle: str
    """Who the operator posts as in chats."""

    # -- lifecycle --------------------------------------------------------------------------

    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def stop(self, timeout: float = 5.0) -> None: ...

    @abstractmethod
    def flush(self, timeout: float = 10.0) -> bool:
        """Everything asked so far is processed (False: not within ``timeout``)."""

    @abstractmethod
    def set_acting(self, acting: bool) -> None:
        """Whether this process applies the inboxes (it holds the sidecar lease)."""

    @abstractmethod
    def set_pane_dirs(self, mapping: Mapping[str, str | os.PathLike[str]]) -> None:
        """Where every pane works (pane id -> current directory)."""

    @abstractmethod
    def apply_scanned_command(
        self, pane_id: str, project_dir: str | os.PathLike[str], line: str, handle: str | None = None
    ) -> None:
        """A ``\\nbs-`` line the sidecar saw on a pane's screen."""

    # -- queries ----------------------------------------------------------------------------

    @abstractmethod
    def snapshot(self) -> PlaneSnapshot: ...

    @abstractmethod
    def history(self) -> tuple[HistoryEntry, ...]: ...

    @abstractmethod
    def is_paused(self, project: str | os.PathLike[str]) -> bool: ...

    def project_for_dir(self, path: str | os.PathLike[str]) -> ProjectSnapshot | None:
        return self.snapshot().project(path)

    def project_for_pane(self, pane_id: str) -> ProjectSnapshot | None:
        return next((p for p in self.snapshot().projects if pane_id in p.panes), None)

    def poll_interval(self, project: str | os.PathLike[str]) -> float | None:
        """The project's ``set-poll-interval`` (None: none given; use settings.poll_interval)."""
        found = self.snapshot().project(project)
        return found.poll_interval if found else None

    def poll_interval_for_pane(self, pane_id: str) -> float | None:
        found = self.project_for_pane(pane_id)
        return found.poll_interval if found else None

    def is_pane_paused(self, pane_id: str) -> bool:
        found = self.project_for_pane(pane_id)
        return bool(found and self.is_paused(found.root))

    def read_chat(self, path: str) -> tuple[ChatFile, dict[str, int]] | None:
        """A chat read where it lives, with its cursors; None: a file of this machine, which the
        chat view reads itself. Raises OSError."""
        return None

    # -- edits ------------------------------------------------------------------------------

    @abstractmethod
    def register_chat(self, project: str | os.PathLike[str], path: str, channel: str = "") -> str: ...

    @abstractmethod
    def unregister_chat(self, project: str | os.PathLike[str], path: str, channel: str = "") -> str: ...

    @abstractmethod
    def create_chat(
        self, project: str | os.PathLike[str], path: str, register: bool = True, channel: str = ""
    ) -> str: ...

    @abstractmethod
    def post_message(self, chat: str | os.PathLike[str], text: str, handle: str | None = None) -> ChatMessage: ...

    @abstractmethod
    def set_paused(self, project: str | os.PathLike[str], paused: bool) -> None: ...

    @abstractmethod
    def toggle_pause(self, project: str | os.PathLike[str]) -> bool: ...
