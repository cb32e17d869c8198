"""The control plane service over real files and real watchfiles."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nbs_tui.config import Settings
from nbs_tui.core.control.control_commands import Outcome
from nbs_tui.files import control_plane as control_plane_module
from nbs_tui.files import control_sync as sync_module
from nbs_tui.files.chat_io import read_chat
from nbs_tui.files.control_plane import (
    ControlEvent,
    ControlPlane,
    ControlPlaneError,
    HistoryAppended,
    PauseChanged,
    PollIntervalChanged,
    RegistryChanged,
    SnapshotChanged,
    event_as_json,
)
from tests.helpers import b64, write_chat
from tests.unprivileged import give_away, reachable_dir, run_unprivileged


def wait_for(condition: Callable[[], object], timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


class Recorder:
    """The plane's listener and its problem sink: every event and every problem it reported."""

    def __init__(self) -> None:
        self.events: list[ControlEvent] = []
        self.problems: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def __call__(self, event: ControlEvent) -> None:
        with self.lock:
            self.events.append(event)

    def problem(self, source: str, message: str) -> None:
        with self.lock:
            self.problems.append((source, message))

    def errors(self) -> list[str]:
        """The messages of the problems reported (every one from the control plane)."""
        with self.lock:
            assert all(source == "control plane" for source, _ in self.problems), self.problems
            return [message for _, message in self.problems]

    def of(self, kind: type) -> list:
        with self.lock:
            return [e for e in self.events if isinstance(e, kind)]


def make_project(root: Path) -> Path:
    write_chat(root / ".nbs" / "chat" / "team.chat", [b64("alice|1700000000: hi"), b64("bob|1700000100: yo")])
    write_chat(root / ".nbs" / "chat" / "team-20260101-000000-archive.chat")
    (root / ".nbs" / "events").mkdir()
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")


@pytest.fixture
def started() -> Iterator[Callable[..., tuple[ControlPlane, Recorder]]]:
    planes: list[ControlPlane] = []

    def start(*projects: Path, flush_timeout: float = 10.0, **kwargs: object) -> tuple[ControlPlane, Recorder]:
        recorder = Recorder()
        kwargs.setdefault("rescan_interval", 0.5)
        kwargs.setdefault("problem", recorder.problem)
        plane = ControlPlane(Settings(projects=tuple(projects)), recorder, **kwargs)  # type: ignore[arg-type]
        plane.start()
        planes.append(plane)
        assert plane.flush(flush_timeout)
        return plane, recorder

    yield start
    for plane in planes:
        plane.stop()


def registry_lines(root: Path, handle: str = "") -> list[str]:
    name = "control-registry" + (f"-{handle}" if handle else "")
    return (root / ".nbs" / name).read_text().splitlines()


def append(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)


def test_seeds_registry_and_summarises_chats(started, project: Path) -> None:  # type: ignore[no-untyped-def]
    plane, recorder = started(project)
    assert registry_lines(project) == ["chat:.nbs/chat/team.chat", "bus:.nbs/events"]
    snap = plane.snapshot().project(project)
    assert snap is not None and snap.has_nbs and not snap.paused
    [channel] = snap.channels
    assert [(e.kind, e.path, e.exists) for e in channel.entries] == [
        ("chat", ".nbs/chat/team.chat", True),
        ("bus", ".nbs/events", True),
    ]
    [chat] = snap.chats
    assert chat.total == 2 and chat.newest is not None and chat.newest.text == "yo"
    assert chat.archives and chat.archives[0].endswith("-archive.chat")
    assert recorder.of(SnapshotChanged) and recorder.of(RegistryChanged)


def test_line_appended_by_another_process_is_applied_live(started, project: Path) -> None:  # type: ignore[no-untyped-def]
    plane, _recorder = started(project, rescan_interval=60.0)  # only the watcher can see it
    write_chat(project / ".nbs" / "chat" / "debug.chat")
    inbox = project / ".nbs" / "control-inbox"
    subprocess.run(["sh", "-c", f"printf 'register-chat .nbs/chat/debug.chat\\n' >> '{inbox}'"], check=True)
    wait_for(lambda: "chat:.nbs/chat/debug.chat" in registry_lines(project), what="registry update")
    wait_for(lambda: any(e.line == "register-chat .nbs/chat/debug.chat" for e in plane.history()), what="history")
    entry = plane.history()[-1]
    assert entry.outcome is Outcome.APPLIED and entry.source == "control-inbox:1"
    wait_for(lambda: len(plane.snapshot().projects[0].chats) == 2, what="chat summary")


def test_every_verb_and_outcome_through_the_inbox(started, project: Path) -> None:  # type: ignore[no-untyped-def]
    inbox = project / ".nbs" / "control-inbox"
    inbox.write_text(
        "# agents write here\n"
        "register-chat ./.nbs/chat/team.chat\n"
        "\\nbs-register-hub .nbs/hub.conf\n"
        "register-bus /elsewhere/events\n"
        "unregister-bus /elsewhere/events\n"
        "unregister-hub .nbs/hub.conf\n"
        "unregister-chat .nbs/chat/team.chat\n"
        "register-chat .nbs/chat/my team.chat\n"
        "set-poll-interval 45\n"
        "set-poll-interval soon\n"
        "launch-missiles now\n"
        "register-chat\n"
    )
    plane, recorder = started(project)
    outcomes = [(e.line.split(" ")[0], e.outcome) for e in plane.history()]
    assert outcomes == [
        ("#", Outcome.COMMENT),
        ("register-chat", Outcome.DUPLICATE),
        ("\\nbs-register-hub", Outcome.APPLIED),
        ("register-bus", Outcome.APPLIED),
        ("unregister-bus", Outcome.APPLIED),
        ("unregister-hub", Outcome.APPLIED),
        ("unregister-chat", Outcome.APPLIED),
        ("register-chat", Outcome.APPLIED),
        ("set-poll-interval", Outcome.APPLIED),
        ("set-poll-interval", Outcome.ERROR),
        ("launch-missiles", Outcome.ERROR),
        ("register-chat", Outcome.ERROR),
    ]
    assert registry_lines(project) == ["bus:.nbs/events", "chat:.nbs/chat/my team.chat"]
    assert plane.poll_interval(project) == 45.0
    assert recorder.of(PollIntervalChanged)[-1].seconds == 45.0
    assert inbox.read_text().count("\n") == 12  # never rewritten


def test_per_agent_files(started, project: Path) -> None:  # type: ignore[no-untyped-def]
    (project / ".nbs" / "control-inbox-alice").write_text("register-hub .nbs/hub-a\n")
    plane, _ = started(project)
    assert registry_lines(project, "alice") == ["chat:.nbs/chat/team.chat", "bus:.nbs/events", "hub:.nbs/hub-a"]
    # no shared inbox or registry existed, so none is created
    assert not (project / ".nbs" / "control-registry").exists()
    append(project / ".nbs" / "control-inbox-bob", "register-bus .nbs/bob-events\n")
    wait_for(lambda: (project / ".nbs" / "control-registry-bob").exists(), what="bob's registry")
    wait_for(lambda: "bus:.nbs/bob-events" in registry_lines(project, "bob"), what="bob's line")
    def handles() -> list[str]:
        snap = plane.snapshot().project(project)
        return [c.handle for c in snap.channels] if snap else []

    wait_for(lambda: handles() == ["alice", "bob"], what="both channels in the snapshot")


def test_replay_at_restart_gives_the_same_registry(started, project: Path) -> None:  # type: ignore[no-untyped-def]
    inbox = project / ".nbs" / "control-inbox"
    inbox.write_text("unregister-chat .nbs/chat/team.chat\nregister-chat .nbs/chat/team.chat\nregister-hub h\n")
    first, _ = started(project)
    after_first = registry_lines(project)
    assert after_first == ["chat:.nbs/chat/team.chat", "bus:.nbs/events", "hub:h"]
    append(inbox, "unregister-hub h\nregister-bus b\n")
    wait_for(lambda: "bus:b" in registry_lines(project), what="live lines")
    before_restart = registry_lines(project)
    first.stop()
    second, _ = started(project)
    assert registry_lines(project) == before_restart
    assert len(second.history()) == 5  # replayed from line 1


def test_bad_input_never_stops_the_plane(started, project: Path) -> None:  # type: ignore[no-untyped-def]
    inbox = project / ".nbs" / "control-inbox"
    with open(inbox, "wb") as handle:
        handle.write(b"\x00\x01\x02\xff\xfe\n")
        handle.write(b"register-chat caf\xe9.chat\n")
        handle.write(b"z" * (10 * 1024 * 1024) + b"\n")
        handle.write(b"register-hub ok\n")
        handle.write(b"register-bus partial")
    plane, _ = started(project)
    history = plane.history()
    assert [e.outcome for e in history] == [Outcome.ERROR, Outcome.ERROR, Outcome.ERROR, Outcome.APPLIED]
    assert "longer than" in history[2].why and len(history[2].line) < 400
    assert registry_lines(project)[-1] == "hub:ok"
    append(inbox, "/x\n")
    wait_for(lambda: "bus:partial/x" in registry_lines(project), what="completed partial line")


def test_inbox_deleted_and_replaced_while_watched(started, project: Path) -> None:  # type: ignore[no-untyped-def]
    inbox = project / ".nbs" / "control-inbox"
    inbox.write_text("register-hub one\n")
    plane, _ = started(project)
    inbox.unlink()
    wait_for(lambda: any("deleted" in e.why for e in plane.history()), what="deletion notice")
    fresh = project / ".nbs" / "new-inbox"
    fresh.write_text("register-hub two\n")
    os.replace(fresh, inbox)
    wait_for(lambda: "hub:two" in registry_lines(project), what="replacement read")
    assert "hub:one" in registry_lines(project)


def test_registry_edited_by_hand_at_the_same_time(started, project: Path) -> None:  # type: ignore[no-untyped-def]
    plane, _recorder = started(project)
    registry = project / ".nbs" / "control-registry"
    append(registry, "chat:/hand/added.chat\nnot a registry line\n")
    wait_for(
        lambda: any(e.path == "/hand/added.chat" for e in plane.snapshot().projects[0].channels[0].entries),
        what="hand edit shown",
    )
    append(project / ".nbs" / "control-inbox", "register-hub after\n")
    wait_for(lambda: "hub:after" in registry_lines(project), what="inbox line")
    assert registry_lines(project) == [
        "chat:.nbs/chat/team.chat",
        "bus:.nbs/events",
        "chat:/hand/added.chat",
        "not a registry line",
        "hub:after",
    ]


def test_read_only_nbs_is_reported_not_fatal(started, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    def read_only(path: object, text: str, **kwargs: object) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(sync_module, "write_atomic", read_only)
    (project / ".nbs" / "control-inbox").write_text("register-hub h\n")
    plane, recorder = started(project)
    errors = recorder.errors()
    assert errors and "Read-only file system" in errors[0]
    replayed, failed = plane.history()
    assert replayed.outcome is Outcome.APPLIED
    assert failed.outcome is Outcome.ERROR and "not saved" in failed.why
    append(project / ".nbs" / "control-inbox", "register-hub live\n")
    wait_for(lambda: len(plane.history()) == 3, what="live line")
    live = plane.history()[-1]
    assert live.outcome is Outcome.ERROR and "not saved" in live.why
    snap = plane.snapshot().project(project)
    assert snap is not None and "Read-only" in snap.error
    with pytest.raises(ControlPlaneError):
        plane.create_chat(project / "missing-dir", "x.chat")


def test_pane_dirs_and_late_nbs(started, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    late = tmp_path / "late"
    late.mkdir()
    plane, _ = started(rescan_interval=0.2)
    plane.set_pane_dirs({"%1": late, "%2": tmp_path / "nowhere"})
    assert plane.flush()
    assert plane.snapshot().projects == ()
    write_chat(late / ".nbs" / "chat" / "c.chat")
    wait_for(lambda: plane.project_for_pane("%1") is not None, what="late .nbs picked up")
    assert registry_lines(late) == ["chat:.nbs/chat/c.chat"]
    append(late / ".nbs" / "control-inbox", "set-poll-interval 7\n")
    wait_for(lambda: plane.poll_interval_for_pane("%1") == 7.0, what="poll interval")
    plane.set_pane_dirs({})
    assert plane.flush()
    assert plane.snapshot().projects == ()


def test_pause_toggle(started, project: Path) -> None:  # type: ignore[no-untyped-def]
    plane, recorder = started(project)
    plane.set_pane_dirs({"%3": project})
    assert plane.flush()
    assert plane.toggle_pause(project) is True
    assert (project / ".nbs" / "control-pause").exists() and plane.is_pane_paused("%3")
    wait_for(lambda: plane.snapshot().projects[0].paused, what="paused shown")
    assert plane.toggle_pause(project) is False
    wait_for(lambda: not plane.snapshot().projects[0].paused, what="unpaused shown")
    assert [e.paused for e in recorder.of(PauseChanged)] == [True, False]


def test_editor_edits_go_through_the_inbox(started, project: Path) -> None:  # type: ignore[no-untyped-def]
    plane, _ = started(project)
    write_chat(project / ".nbs" / "chat" / "side chat.chat")
    line = plane.register_chat(project, str(project / ".nbs" / "chat" / "side chat.chat"))
    assert line == "register-chat .nbs/chat/side chat.chat"
    assert (project / ".nbs" / "control-inbox").read_text() == line + "\n"
    wait_for(lambda: "chat:.nbs/chat/side chat.chat" in registry_lines(project), what="registered")
    wait_for(lambda: plane.history() and plane.history()[-1].source.endswith("(nbs-tui)"), what="provenance")
    assert plane.flush()
    with pytest.raises(ControlPlaneError, match="already registered"):
        plane.register_chat(project, ".nbs/chat/side chat.chat")
    with pytest.raises(ControlPlaneError, match="no such file"):
        plane.register_chat(project, ".nbs/chat/none.chat")
    (project / "notes.chat").write_text("not a chat\n")
    with pytest.raises(ControlPlaneError, match="not an nbs-chat"):
        plane.register_chat(project, "notes.chat")
    with pytest.raises(ControlPlaneError, match="control character"):
        plane.register_chat(project, ".nbs/chat/a\nregister-hub x")
    plane.unregister_chat(project, "./.nbs/chat/side chat.chat")
    wait_for(lambda: "chat:.nbs/chat/side chat.chat" not in registry_lines(project), what="unregistered")
    assert plane.flush()
    with pytest.raises(ControlPlaneError, match="not registered"):
        plane.unregister_chat(project, ".nbs/chat/side chat.chat")
    assert (project / ".nbs" / "control-inbox").read_text().splitlines() == [
        "register-chat .nbs/chat/side chat.chat",
        "unregister-chat .nbs/chat/side chat.chat",
    ]


def test_an_edit_the_plane_reads_before_its_writer_goes_on_is_still_said_ours(  # type: ignore[no-untyped-def]
    started, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plane may read an edit's line as soon as it is in the inbox (its watcher saw the
    file change), before the writing thread goes on: the history must still say nbs-tui wrote
    it. (It said so only when the writer's note came first: seen lost under load.)"""
    plane, _ = started(project)
    write_chat(project / ".nbs" / "chat" / "side chat.chat")
    original = control_plane_module.append_command

    def append_then_wait_for_the_read(*args: Any, **kwargs: Any) -> tuple[str, int]:
        written: tuple[str, int] = original(*args, **kwargs)
        wait_for(lambda: any(entry.line == written[0] for entry in plane.history()), what="the plane read the line")
        return written

    monkeypatch.setattr(control_plane_module, "append_command", append_then_wait_for_the_read)
    plane.register_chat(project, ".nbs/chat/side chat.chat")
    [entry] = [e for e in plane.history() if e.line == "register-chat .nbs/chat/side chat.chat"]
    assert entry.source == "control-inbox:1 (nbs-tui)"


def test_a_viewers_edit_is_done_only_once_the_lease_holders_registry_shows_it(
    started: Callable[..., tuple[ControlPlane, Recorder]], project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dashboard is a viewer whenever its server's service holds the lease (service = auto):
    another process applies the inbox. Its edit says done when the registry file shows the change
    (read again by the viewer's own plane), and not saved yet when it does not (the holder could
    not save it, or is gone), instead of a bare line in green either way."""
    from nbs_tui.files import control_plane as plane_module

    monkeypatch.setattr(plane_module, "SAVE_WAIT", 2.0)
    holder, _ = started(project)
    viewer, _ = started(project)
    viewer.set_acting(False)
    assert viewer.flush()
    write_chat(project / ".nbs" / "chat" / "one.chat")
    assert viewer.register_chat(project, ".nbs/chat/one.chat") == "register-chat .nbs/chat/one.chat"
    assert "chat:.nbs/chat/one.chat" in registry_lines(project)  # saved before it said so
    assert viewer.unregister_chat(project, ".nbs/chat/one.chat") == "unregister-chat .nbs/chat/one.chat"
    assert "chat:.nbs/chat/one.chat" not in registry_lines(project)
    holder.stop()  # nobody applies the inbox now
    write_chat(project / ".nbs" / "chat" / "two.chat")
    said = viewer.register_chat(project, ".nbs/chat/two.chat")
    assert said == (
        "register-chat .nbs/chat/two.chat (not saved yet: control-registry does not show it after 2 s; "
        "the nbs-tui holding the sidecar lease applies control-inbox)"
    ), said
    assert "chat:.nbs/chat/two.chat" not in registry_lines(project)


def test_an_edit_the_busy_plane_cannot_answer_in_time_is_not_said_done(
    started: Callable[..., tuple[ControlPlane, Recorder]], project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plane held up (here: its listener blocks the plane thread, as a long replay would) cannot
    say within SAVE_WAIT whether the registry took the line: the answer says so."""
    from nbs_tui.files import control_plane as plane_module

    monkeypatch.setattr(plane_module, "SAVE_WAIT", 0.5)
    gate, blocking = threading.Event(), threading.Event()

    def listener(event: ControlEvent) -> None:
        if blocking.is_set():
            gate.wait(30)

    plane = ControlPlane(Settings(projects=(project,)), listener, rescan_interval=0.5)
    plane.start()
    try:
        assert plane.flush()
        write_chat(project / ".nbs" / "chat" / "late.chat")
        blocking.set()
        said = plane.register_chat(project, ".nbs/chat/late.chat")
        assert said.startswith("register-chat .nbs/chat/late.chat (not saved yet: the control plane is busy"), said
        blocking.clear()
        gate.set()
        wait_for(lambda: "chat:.nbs/chat/late.chat" in registry_lines(project), what="applied once free")
    finally:
        gate.set()
        plane.stop()


def test_editor_waits_for_an_agents_unfinished_line(started, project: Path) -> None:  # type: ignore[no-untyped-def]
    plane, _ = started(project)
    inbox = project / ".nbs" / "control-inbox"
    append(inbox, "register-hub half")
    timer = threading.Timer(0.2, append, args=(inbox, "way\n"))
    timer.start()
    write_chat(project / ".nbs" / "chat" / "x.chat")
    plane.register_chat(project, ".nbs/chat/x.chat")
    timer.join()
    assert inbox.read_text() == "register-hub halfway\nregister-chat .nbs/chat/x.chat\n"


def test_create_and_post(started, project: Path) -> None:  # type: ignore[no-untyped-def]
    plane, _ = started(project)
    written = plane.create_chat(project, ".nbs/chat/new.chat")
    assert written == ".nbs/chat/new.chat"
    wait_for(lambda: "chat:.nbs/chat/new.chat" in registry_lines(project), what="new chat registered")
    message = plane.post_message(project / ".nbs" / "chat" / "new.chat", "hello team")
    assert message.handle == "operator"
    chat = read_chat(project / ".nbs" / "chat" / "new.chat")
    assert chat.consistent and [(m.handle, m.text) for m in chat.messages] == [("operator", "hello team")]
    (project / ".nbs" / "chat" / "new.chat.cursors").write_text("# c\nalice=-1\n")
    wait_for(
        lambda: any(c.path.endswith("new.chat") and c.total == 1 and c.readers for c in plane.snapshot().projects[0].chats),
        what="summary with reader",
    )
    with pytest.raises(ControlPlaneError, match="already exists"):
        plane.create_chat(project, ".nbs/chat/new.chat")


def test_scanned_commands(started, project: Path) -> None:  # type: ignore[no-untyped-def]
    plane, _ = started(project)
    plane.apply_scanned_command("%5", project, "\\nbs-register-hub .nbs/h")
    plane.apply_scanned_command("%5", project, "\\nbs-register-hub .nbs/h")  # same screen again
    plane.apply_scanned_command("%6", project, "\\nbs-set-poll-interval 20")
    plane.apply_scanned_command("%6", project / "nowhere", "\\nbs-register-hub x")
    assert plane.flush()
    history = plane.history()
    assert [(e.source, e.outcome) for e in history] == [
        ("pane %5", Outcome.APPLIED),
        ("pane %6", Outcome.APPLIED),
        ("pane %6", Outcome.ERROR),
    ]
    assert "hub:.nbs/h" in registry_lines(project)
    assert plane.poll_interval(project) == 20.0


def test_hundred_thousand_line_inbox(started, project: Path) -> None:  # type: ignore[no-untyped-def]
    lines = []
    for i in range(100_000):
        verb = "register-chat" if i % 3 else "unregister-chat"
        lines.append(f"{verb} .nbs/chat/c{i % 97}.chat\n")
    (project / ".nbs" / "control-inbox").write_text("".join(lines))
    plane, recorder = started(project, history_limit=1000, flush_timeout=120.0)  # 100,000 lines on a loaded machine
    assert plane.snapshot().history_total == 100_000
    assert len(plane.history()) == 1000
    assert sum(len(e.entries) for e in recorder.of(HistoryAppended)) == 100_000
    from nbs_tui.core.control.control_commands import Replay, process_line
    from nbs_tui.core.control.registry import Registry
    from nbs_tui.files.registry_io import seed_entries

    one_by_one = Registry(project)
    one_by_one.seed(seed_entries(project))
    replay = Replay(one_by_one.copy())
    for line in lines:
        process_line(one_by_one, line.rstrip("\n"))
        replay.feed(line.rstrip("\n"))
    assert registry_lines(project) == list(replay.finish().lines)
    assert sorted(registry_lines(project)) == sorted(one_by_one.lines)


def test_events_serialise_to_json(started, project: Path) -> None:  # type: ignore[no-untyped-def]
    import json

    (project / ".nbs" / "control-inbox").write_text("register-hub h\nbad\n")
    _, recorder = started(project)
    for event in list(recorder.events):
        json.dumps(event_as_json(event))
    kinds = {event_as_json(e)["event"] for e in recorder.events}
    assert {"control-snapshot", "control-history", "registry-changed"} <= kinds


def test_nbs_folder_removed_and_recreated(started, project: Path) -> None:  # type: ignore[no-untyped-def]
    import shutil

    plane, _ = started(project, rescan_interval=0.2)
    assert registry_lines(project)[0] == "chat:.nbs/chat/team.chat"
    shutil.rmtree(project / ".nbs")
    wait_for(lambda: not plane.snapshot().projects[0].has_nbs, what="gone shown")
    assert "gone" in plane.snapshot().projects[0].error
    write_chat(project / ".nbs" / "chat" / "fresh.chat")
    (project / ".nbs" / "control-inbox").write_text("register-hub again\n")
    wait_for(
        lambda: (project / ".nbs" / "control-registry").exists()
        and registry_lines(project) == ["chat:.nbs/chat/fresh.chat", "hub:again"],
        what="fresh seed and replay",
    )
    wait_for(lambda: plane.snapshot().projects[0].error == "", what="error cleared")


def test_history_entries_are_numbered(started, project: Path) -> None:  # type: ignore[no-untyped-def]
    (project / ".nbs" / "control-inbox").write_text("register-hub a\n# c\nbad\n")
    plane, _ = started(project)
    assert [e.seq for e in plane.history()] == [1, 2, 3]


READ_ONLY_NBS_SETUP = """
import os
import sys
from pathlib import Path
from nbs_tui.config import Settings
from nbs_tui.core.control.control_commands import Outcome
from nbs_tui.files.control_plane import ControlPlane, ControlPlaneError
import watchfiles  # imported late by the plane's watcher: import it while the checkout is readable
"""

READ_ONLY_NBS_BODY = """
root = Path(sys.argv[1])
nbs = root / ".nbs"
inbox = nbs / "control-inbox"
assert os.access(nbs, os.W_OK) and os.access(inbox, os.W_OK)  # the user's, until made read-only
# the folder and its inbox: a writable inbox in a read-only folder still takes register lines
inbox.chmod(0o444)
nbs.chmod(0o555)
assert not os.access(nbs, os.W_OK) and not os.access(inbox, os.W_OK)
errors = []
plane = ControlPlane(
    Settings(projects=(root,)),
    None,
    rescan_interval=0.5,
    problem=lambda source, message: errors.append(message),
)
plane.start()
try:
    assert plane.flush()
    assert errors, "no problem reported for the registry that could not be written"
    assert not (nbs / "control-registry").exists()
    assert plane.history()[-1].outcome is Outcome.ERROR, plane.history()
    for action in (lambda: plane.register_chat(root, ".nbs/chat/team.chat"), lambda: plane.toggle_pause(root)):
        try:
            action()
        except ControlPlaneError as error:
            assert "cannot" in str(error), error
        else:
            raise AssertionError(f"no ControlPlaneError from {action}")
finally:
    plane.stop()
print("ok")
"""


def test_really_read_only_nbs() -> None:
    """A .nbs/ its user may not write (the tests' user drops to ``nobody`` under root, whom a
    folder's mode does not bind)."""
    with reachable_dir() as base:
        root = make_project(base / "proj")
        (root / ".nbs" / "control-inbox").write_text("register-hub h\n")
        give_away(base)
        result = run_unprivileged(READ_ONLY_NBS_SETUP, READ_ONLY_NBS_BODY, str(root))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


UNSAVED_SETUP = """
import os
import sys
import time
from pathlib import Path
from nbs_tui.config import Settings
from nbs_tui.core.control.control_commands import Outcome
from nbs_tui.files.control_plane import NOT_SAVED, ControlPlane
from tests.helpers import write_chat
import watchfiles  # imported late by the plane's watcher: import it while the checkout is readable
"""

UNSAVED_BODY = """
root = Path(sys.argv[1])
nbs = root / ".nbs"
registry = nbs / "control-registry"
seeded = registry.read_text()
plane = ControlPlane(Settings(projects=(root,)), rescan_interval=0.3)
plane.start()
try:
    assert plane.flush() and plane.snapshot().projects[0].error == ""
    # the inbox (a file) stays writable, the folder (where the registry is replaced) does not
    nbs.chmod(0o555)
    assert not os.access(nbs, os.W_OK) and os.access(nbs / "control-inbox", os.W_OK)
    write_chat(nbs / "chat" / "late.chat")
    said = plane.register_chat(root, ".nbs/chat/late.chat")
    assert said.startswith("register-chat .nbs/chat/late.chat (" + NOT_SAVED + ": cannot write "), said
    assert "Permission denied" in said and "retried" in said, said
    assert (nbs / "control-inbox").read_text() == "register-chat .nbs/chat/late.chat\\n"
    assert registry.read_text() == seeded
    assert plane.history()[-1].outcome is Outcome.ERROR and NOT_SAVED in plane.history()[-1].why
    # the retry stays: once the folder takes writes again, the change is saved without a new line
    nbs.chmod(0o755)
    def saved_again():
        return any("saved the changes not saved before" in e.why for e in plane.history())

    deadline = time.monotonic() + 10
    # the registry is written before the history says so: wait for both
    while not ("chat:.nbs/chat/late.chat" in registry.read_text() and saved_again()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "chat:.nbs/chat/late.chat" in registry.read_text(), registry.read_text()
    assert saved_again(), plane.history()
    # and an edit that is saved says only its line
    write_chat(nbs / "chat" / "next.chat")
    assert plane.register_chat(root, ".nbs/chat/next.chat") == "register-chat .nbs/chat/next.chat"
finally:
    plane.stop()
print("ok")
"""


def test_an_edit_the_registry_cannot_take_says_not_saved_yet_and_is_retried() -> None:
    """register_chat into a .nbs/ that takes the inbox line but not the registry (the folder is
    read-only for a user it binds: ``nobody`` under root): the answer says so, the retry stays."""
    with reachable_dir() as base:
        root = make_project(base / "proj")
        (root / ".nbs" / "control-registry").write_text("chat:.nbs/chat/team.chat\nbus:.nbs/events\n")
        (root / ".nbs" / "control-inbox").write_text("")
        give_away(base)
        result = run_unprivileged(UNSAVED_SETUP, UNSAVED_BODY, str(root))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


READ_ONLY_PROBE = """
import os, sys
from pathlib import Path
from nbs_tui.config import Settings
from nbs_tui.files.control_plane import ControlPlane, ControlPlaneError
root = Path(sys.argv[1])
nbs = root / ".nbs"
if os.system(f"mount --bind '{nbs}' '{nbs}' && mount -o remount,bind,ro '{nbs}'") != 0:
    sys.exit(77)
errors = []
plane = ControlPlane(Settings(projects=(root,)), None, problem=lambda source, message: errors.append(message))
plane.start()
assert plane.flush()
assert errors and "Read-only file system" in errors[0], errors
history = plane.history()
assert history[-1].outcome.value == "error" and "not saved" in history[-1].why, history
refused = 0
for action in (lambda: plane.toggle_pause(root), lambda: plane.create_chat(root, ".nbs/chat/n.chat")):
    try:
        action()
    except ControlPlaneError as error:
        assert "Read-only file system" in str(error)
        refused += 1
assert refused == 2
plane.stop()
print("ok")
"""


def test_read_only_mount(project: Path) -> None:
    """A really read-only .nbs/ (a read-only bind mount in a private mount namespace)."""
    import shutil
    import sys

    # Root (CI) gets a private mount namespace and must: no skip. Anyone else maps to root in a
    # user namespace (-r), which some kernels forbid: only then is the test skipped.
    root = os.geteuid() == 0
    if not root and shutil.which("unshare") is None:
        pytest.skip("needs unshare for a private read-only bind mount")
    (project / ".nbs" / "control-inbox").write_text("register-hub h\n")
    unshare = ["unshare", "-m", "--propagation", "private", *([] if root else ["-r"])]
    result = subprocess.run(
        [*unshare, sys.executable, "-c", READ_ONLY_PROBE, str(project)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if not root and (result.returncode == 77 or "Operation not permitted" in result.stderr):
        pytest.skip("user and mount namespaces are not available to this user here")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    assert not (project / ".nbs" / "control-registry").exists()


def test_fifos_and_folders_where_files_belong_do_not_hang_the_plane(started, project: Path) -> None:  # type: ignore[no-untyped-def]
    os.mkfifo(project / ".nbs" / "control-inbox")
    os.mkfifo(project / ".nbs" / "control-registry-bob")
    (project / ".nbs" / "control-inbox-carol").mkdir()
    os.mkfifo(project / ".nbs" / "chat" / "pipe.chat")
    plane, recorder = started(project)  # flush() returns: nothing blocked
    messages = recorder.errors() + [e.why for e in plane.history()]
    assert any("not a regular file" in m for m in messages), messages
    with pytest.raises(ControlPlaneError):
        plane.register_chat(project, ".nbs/chat/pipe.chat")
    write_chat(project / ".nbs" / "chat" / "other.chat")
    with pytest.raises(ControlPlaneError, match="not a regular file"):
        plane.register_chat(project, ".nbs/chat/other.chat")  # the inbox is a FIFO
    assert plane.flush()


def test_several_projects_at_once(started, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    roots = []
    for name in ("one", "two", "three"):
        root = tmp_path / name
        write_chat(root / ".nbs" / "chat" / f"{name}.chat")
        roots.append(root)
    plane, _ = started(roots[0], rescan_interval=60.0)
    plane.set_pane_dirs({"%1": roots[1], "%2": roots[2], "%3": roots[2]})
    assert plane.flush()
    # --project folders first, then pane folders in name order
    assert [p.root for p in plane.snapshot().projects] == [str(roots[0]), str(roots[2]), str(roots[1])]
    for index, root in enumerate(roots):
        append(root / ".nbs" / "control-inbox", f"register-hub .nbs/h{index}\n")
    for index, root in enumerate(roots):

        def has_hub(r: Path = root, i: int = index) -> bool:
            return f"hub:.nbs/h{i}" in registry_lines(r)

        wait_for(has_hub, what=f"project {index}")
    pane_project = plane.project_for_pane("%3")
    assert pane_project is not None and pane_project.panes == ("%2", "%3")
    # a pane that changes directory is followed
    plane.set_pane_dirs({"%1": roots[1], "%2": roots[1], "%3": roots[1]})
    assert plane.flush()
    assert [p.root for p in plane.snapshot().projects] == [str(roots[0]), str(roots[1])]


def test_chats_created_later_are_offered_not_registered(started, project: Path) -> None:  # type: ignore[no-untyped-def]
    plane, _ = started(project)
    assert plane.snapshot().projects[0].unregistered_chats == ()
    write_chat(project / ".nbs" / "chat" / "later.chat")
    wait_for(
        lambda: plane.snapshot().projects[0].unregistered_chats == (".nbs/chat/later.chat",), what="offered"
    )
    assert "chat:.nbs/chat/later.chat" not in registry_lines(project)  # seeding happens at start only
    plane.register_chat(project, ".nbs/chat/later.chat")
    wait_for(lambda: plane.snapshot().projects[0].unregistered_chats == (), what="no longer offered")


def test_binary_junk_in_the_registry(started, project: Path) -> None:  # type: ignore[no-untyped-def]
    registry = project / ".nbs" / "control-registry"
    junk = b"chat:.nbs/chat/team.chat\nchat:bad\x00name.chat\n\xff\xfe\x00\x01 binary\nchat:caf\xe9.chat\n"
    registry.write_bytes(junk)
    plane, recorder = started(project)
    snap = plane.snapshot().project(project)
    assert snap is not None and snap.error == "", recorder.errors()
    paths = [e.path for e in snap.channels[0].entries]
    assert "bad\x00name.chat" in paths
    append(project / ".nbs" / "control-inbox", "register-hub h\n")
    wait_for(lambda: registry.read_bytes().endswith(b"hub:h\n"), what="write after junk")
    assert registry.read_bytes() == junk + b"bus:.nbs/events\nhub:h\n"  # junk kept, in place


def test_registry_changes_not_saved_are_saved_once_the_disk_takes_them(  # type: ignore[no-untyped-def]
    started, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = sync_module.write_atomic
    full = [True]

    def disk(path: object, text: str, **kwargs: object) -> None:
        if full[0]:
            raise OSError(28, "No space left on device")
        real(path, text, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sync_module, "write_atomic", disk)
    plane, recorder = started(project, rescan_interval=0.2)
    append(project / ".nbs" / "control-inbox", "register-hub one\n")
    wait_for(lambda: any("No space" in message for message in recorder.errors()), what="the error")
    append(project / ".nbs" / "control-inbox", "register-hub two\nunregister-hub one\n")
    wait_for(lambda: len(plane.history()) >= 3, what="both lines seen")
    saved = project / ".nbs" / "control-registry"
    assert not saved.exists()  # nothing could be written, not even the seed
    full[0] = False  # space again: the next cycle saves what the lines made, without a new line
    wait_for(lambda: saved.exists() and "hub:two" in registry_lines(project), what="saved")
    assert "hub:one" not in registry_lines(project)
    wait_for(lambda: "saved the changes not saved before" in plane.history()[-1].why, what="said in the history")

    def cleared() -> bool:  # the snapshot is published after the history line
        snap = plane.snapshot().project(project)
        return snap is not None and not snap.error

    wait_for(cleared, what="the error cleared from the project")
