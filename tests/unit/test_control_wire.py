"""The control plane's snapshot and history survive the ssh stdio channel, named by their host."""

from __future__ import annotations

import json

from nbs_tui.core.control.chat import ChatMessage, ChatSummary, ReaderState
from nbs_tui.core.control.control_commands import Outcome
from nbs_tui.core.fleet.host_spec import HostSpec
from nbs_tui.files.control_events import (
    HISTORY_KEEP,
    ChannelSnapshot,
    EntryStatus,
    HistoryAppended,
    HistoryEntry,
    PlaneSnapshot,
    ProjectSnapshot,
)
from nbs_tui.files.control_wire import (
    decode_entries,
    decode_snapshot,
    encode_history,
    encode_snapshot,
    history_seqs,
)
from nbs_tui.runtime.remote_plane import RemoteControlPlane


def _snapshot(q: str) -> PlaneSnapshot:
    chat = ChatSummary(
        f"{q}/p/.nbs/chat/t.chat", True, False, 2, (ReaderState("bob", 0, 1),),
        ChatMessage(1, "alice", 1700000000, "hi", "current"), archives=(f"{q}/p/.nbs/chat/t.chat.1",),
    )  # fmt: skip
    channel = ChannelSnapshot(
        "", f"{q}/p/.nbs/control-inbox", f"{q}/p/.nbs/control-registry",
        (EntryStatus("chat", ".nbs/chat/t.chat", f"{q}/p/.nbs/chat/t.chat", True),), ("junk",), 3, 2.0,
    )  # fmt: skip
    project = ProjectSnapshot(f"{q}/p", True, (channel,), (chat,), True, 2.0, ("%3",),
                              "", (".nbs/chat/x.chat",))  # fmt: skip
    return PlaneSnapshot((project,), 7)


def test_snapshot_round_trip_qualifies_paths_and_panes() -> None:
    sent = json.loads(json.dumps(encode_snapshot(_snapshot(""))))
    got = decode_snapshot(sent, lambda p: f"hosta:{p}", lambda p: f"hosta:{p}")
    project = got.projects[0]
    assert project.root == "hosta:/p" and project.panes == ("hosta:%3",)
    assert project.channels[0].entries[0].absolute == "hosta:/p/.nbs/chat/t.chat"
    assert project.chats[0].newest == ChatMessage(1, "alice", 1700000000, "hi", "current")
    assert project.chats[0].readers == (ReaderState("bob", 0, 1),)
    assert got.project("hosta:/p") is project  # found as given: no realpath of another host's path
    assert decode_snapshot(sent) == _snapshot("")


def test_history_round_trip() -> None:
    entries = (HistoryEntry(1.5, "/p", "control-inbox:1", "", "register-chat a.chat", Outcome.APPLIED, "", 4),)
    record = json.loads(json.dumps(encode_history(entries)))
    got = decode_entries(record["entries"], lambda p: f"hosta:{p}")
    assert got == (HistoryEntry(1.5, "hosta:/p", "control-inbox:1", "", "register-chat a.chat", Outcome.APPLIED, "", 0),)
    assert history_seqs(record) == (4,)
    # each entry keeps its seven fields: a viewer of an older nbs-tui unpacks exactly those
    assert [len(fields) for fields in record["entries"]] == [7]
    # from a host that sends no seqs (an older nbs-tui there)
    assert history_seqs({"t": "history", "entries": record["entries"]}) == (None,)


def test_a_repeated_pane_command_is_taken_again_but_its_replay_is_not() -> None:
    """An agent may print the same ``\\nbs-`` line twice, read in one pass (one time) and with
    the same outcome: both are history. A new channel's replay of them is not."""
    told: list[object] = []
    remote = RemoteControlPlane(HostSpec("far", "far"), None, told.append, lambda *_: None)
    same = ("/p", "pane %4", "", "\\nbs-note hello", Outcome.COMMENT, "")
    record = json.loads(json.dumps(encode_history(tuple(HistoryEntry(7.0, *same, seq) for seq in (11, 12)))))
    remote._take(record)
    assert [e.line for e in remote.history()] == ["\\nbs-note hello"] * 2
    remote._take(record)  # the replay of a new channel
    assert len(remote.history()) == 2
    later = HistoryEntry(9.0, *same, 1)  # the host's service restarted: its seq starts again
    remote._take(json.loads(json.dumps(encode_history((later,)))))
    assert len(remote.history()) == 3


def test_a_host_without_nbs_tui_shows_one_line_and_opens_no_channel() -> None:
    said: list[object] = []
    remote = RemoteControlPlane(HostSpec("far", "far"), None, said.append, lambda *_: None)
    remote.start()  # nothing to run: no thread, no ssh
    (note,) = remote.snapshot().projects
    assert note.root == "far:" and not note.has_nbs and note.error.startswith("far: nbs-tui is not installed")
    assert remote._thread is None and said == []
    remote.stop()


def test_a_hosts_history_is_kept_to_its_bound_and_a_replay_is_not_taken_twice() -> None:
    """A dashboard watching a host for hours keeps that host's newest `HISTORY_KEEP` entries
    (and as many keys to recognise a replay), not every line ever relayed."""
    told: list[object] = []
    remote = RemoteControlPlane(HostSpec("far", "far"), None, told.append, lambda *_: None)

    def batch(first: int, count: int) -> dict[str, object]:
        entries = tuple(
            HistoryEntry(1.0, "/p", f"control-inbox:{n}", "", f"line {n}", Outcome.APPLIED, "", n)
            for n in range(first, first + count)
        )
        return json.loads(json.dumps(encode_history(entries)))

    for start in range(1, 5 * HISTORY_KEEP, 500):
        remote._take(batch(start, 500))
    history = remote.history()
    assert len(history) == HISTORY_KEEP
    assert history[-1].line == f"line {5 * HISTORY_KEEP}" and history[0].line == f"line {4 * HISTORY_KEEP + 1}"
    assert len(remote._seen) <= 2 * HISTORY_KEEP
    appended = sum(isinstance(e, HistoryAppended) for e in told)
    remote._take(batch(4 * HISTORY_KEEP + 1, HISTORY_KEEP))  # a new channel replays the host's newest
    assert sum(isinstance(e, HistoryAppended) for e in told) == appended
    remote._take(batch(5 * HISTORY_KEEP + 1, 1))  # and a new line is taken
    assert remote.history()[-1].line == f"line {5 * HISTORY_KEEP + 1}"
