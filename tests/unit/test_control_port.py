"""The control plane's port: this machine's plane and the hosts' proxies are three kinds of one
port, not a plane and two constructor-less subclasses of it that had to override everything."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pytest

from nbs_tui.config import Settings
from nbs_tui.core.control.chat import ChatMessage
from nbs_tui.core.fleet.host_spec import HostSpec
from nbs_tui.files.control_events import ControlPlaneError, HistoryEntry, PlaneSnapshot
from nbs_tui.files.control_plane import ControlPlane
from nbs_tui.files.control_port import ControlPlanePort
from nbs_tui.runtime.remote_plane import HostsControl, RemoteControlPlane
from tests.helpers import write_chat


def test_the_proxies_are_ports_beside_the_plane_not_planes() -> None:
    for kind in (ControlPlane, RemoteControlPlane, HostsControl):
        assert issubclass(kind, ControlPlanePort)
    # nothing of the plane's machinery (its thread, queue, sync state) is inherited unbuilt
    assert not issubclass(RemoteControlPlane, ControlPlane)
    assert not issubclass(HostsControl, ControlPlane)


def test_a_kind_that_leaves_an_edit_out_cannot_be_built() -> None:
    """A proxy that forgot an edit used to inherit ControlPlane's, which failed only when called
    (on state the skipped constructor never made); now it cannot be made at all."""

    class Forgetful(ControlPlanePort):
        operator_handle = "operator"

        def start(self) -> None: ...
        def stop(self, timeout: float = 5.0) -> None: ...
        def flush(self, timeout: float = 10.0) -> bool:
            return True
        def set_acting(self, acting: bool) -> None: ...
        def set_pane_dirs(self, mapping: Mapping[str, str | os.PathLike[str]]) -> None: ...
        def apply_scanned_command(
            self, pane_id: str, project_dir: str | os.PathLike[str], line: str, handle: str | None = None
        ) -> None: ...
        def snapshot(self) -> PlaneSnapshot:
            return PlaneSnapshot()
        def history(self) -> tuple[HistoryEntry, ...]:
            return ()
        def is_paused(self, project: str | os.PathLike[str]) -> bool:
            return False
        def register_chat(self, project: str | os.PathLike[str], path: str, channel: str = "") -> str:
            return ""
        def unregister_chat(self, project: str | os.PathLike[str], path: str, channel: str = "") -> str:
            return ""
        def create_chat(self, project: str | os.PathLike[str], path: str, register: bool = True, channel: str = "") -> str:
            return ""
        def set_paused(self, project: str | os.PathLike[str], paused: bool) -> None: ...
        def toggle_pause(self, project: str | os.PathLike[str]) -> bool:
            return False

    with pytest.raises(TypeError, match="post_message"):
        Forgetful()  # type: ignore[abstract]

    class Complete(Forgetful):
        def post_message(self, chat: str | os.PathLike[str], text: str, handle: str | None = None) -> ChatMessage:
            raise ControlPlaneError("read-only")

    assert Complete().project_for_pane("%1") is None  # the shared queries come with the port


def test_every_kind_answers_the_port_as_before(tmp_path: Path) -> None:
    """This machine's plane and a host without nbs-tui, shown as one: the queries read the
    snapshot, chats are read where they live, edits go to the plane that owns the path."""
    project = tmp_path / "proj"
    write_chat(project / ".nbs" / "chat" / "team.chat")
    (project / ".nbs" / "control-inbox").write_text("set-poll-interval 120\n")
    local = ControlPlane(Settings(projects=(project,)), watch=False)
    remote = RemoteControlPlane(HostSpec("gpu", destination="gpu"), None, lambda _e: None, lambda _s, _m: None)
    both = HostsControl(local, [remote])
    local.start()
    try:
        local.set_pane_dirs({"%3": project})
        assert local.flush()
        root = str(project.resolve())
        for plane in (local, both):
            assert plane.project_for_dir(project) is not None
            assert plane.project_for_pane("%3") is not None and plane.project_for_pane("%9") is None
            assert plane.poll_interval(project) == plane.poll_interval_for_pane("%3") == 120.0
            assert plane.is_pane_paused("%3") is False
            assert plane.read_chat(str(project / ".nbs" / "chat" / "team.chat")) is None  # read here
        assert [p.root for p in both.snapshot().projects] == [root, "gpu:"]
        assert "not installed" in both.snapshot().projects[1].error
        assert remote.project_for_pane("%3") is None and remote.poll_interval("gpu:/x") is None
        with pytest.raises(OSError, match="not open"):
            both.read_chat("gpu:/home/a/.nbs/chat/x.chat")
        with pytest.raises(ControlPlaneError, match="not open"):
            both.register_chat("gpu:/home/a", ".nbs/chat/x.chat")
        assert both.toggle_pause(project) is True and local.is_paused(project)
    finally:
        local.stop()
