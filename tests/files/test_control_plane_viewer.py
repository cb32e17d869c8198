"""A control plane that does not hold the sidecar lease (a viewer) applies no inbox and writes
nothing; it shows the registry on disk, and once it holds the lease it seeds and replays."""

from __future__ import annotations

from pathlib import Path

from nbs_tui.config import Settings
from nbs_tui.files.control_plane import ControlPlane
from tests.files.test_control_plane import Recorder, append, make_project, registry_lines, wait_for


def test_viewer_applies_nothing_then_replays_when_it_holds_the_lease(tmp_path: Path) -> None:
    project = make_project(tmp_path / "proj")
    inbox = project / ".nbs" / "control-inbox"
    inbox.write_text("register-hub h\n")
    registry = project / ".nbs" / "control-registry"
    registry.write_text("chat:.nbs/chat/team.chat\n")  # as the holder last wrote it
    plane = ControlPlane(Settings(projects=(project,)), Recorder(), rescan_interval=0.5)
    plane.set_acting(False)
    plane.start()
    try:
        assert plane.flush()
        append(inbox, "register-bus b\n")
        assert plane.flush()
        assert registry.read_text() == "chat:.nbs/chat/team.chat\n"  # not seeded, not applied
        assert plane.history() == ()
        [channel] = plane.snapshot().project(project).channels  # type: ignore[union-attr]
        assert [e.path for e in channel.entries] == [".nbs/chat/team.chat"]  # shown as on disk
        # the holder (another process) edits it: the viewer shows the new registry
        registry.write_text("chat:.nbs/chat/team.chat\nhub:h\n")
        wait_for(
            lambda: [e.path for e in plane.snapshot().projects[0].channels[0].entries]
            == [".nbs/chat/team.chat", "h"],
            what="the holder's registry shown",
        )

        plane.set_acting(True)
        wait_for(lambda: "bus:b" in registry_lines(project), what="replay")
        assert registry_lines(project) == ["chat:.nbs/chat/team.chat", "hub:h", "bus:.nbs/events", "bus:b"]
        assert len(plane.history()) == 2  # both inbox lines, replayed from line 1 once
    finally:
        plane.stop()
