"""The hook spool reader: forward-only, partial lines held back, bad lines reported, rotation."""

from __future__ import annotations

import json
from pathlib import Path

from nbs_tui.claude import spool as spool_module
from nbs_tui.claude.spool import SpoolReader, parse_line, rotate


def _line(event: str, pane: str = "%1", session: str = "s1", t: float = 1000.0, **fields: object) -> bytes:
    payload = {"session_id": session, "hook_event_name": event, "transcript_path": "/t.jsonl", "cwd": "/w", **fields}
    record = {"nbs_pane": pane, "nbs_tmux": "/tmp/tmux-0/x", "nbs_time": t, "payload": payload}
    return json.dumps(record).encode() + b"\n"


def test_reads_events_and_holds_back_a_partial_line(tmp_path: Path) -> None:
    path = tmp_path / "hooks.jsonl"
    reader = SpoolReader(path, clock=lambda: 5000.0)
    assert reader.read() == []  # no file yet
    first, second = _line("Stop", last_assistant_message="hi"), _line("UserPromptSubmit", pane="%2", t=1001.5)
    path.write_bytes(first + second[:10])
    [event] = reader.read()
    assert (event.event, event.pane_id, event.session_id, event.time, event.received) == ("Stop", "%1", "s1", 1000.0, 5000.0)
    assert event.tmux_socket == "/tmp/tmux-0/x" and event.transcript_path == "/t.jsonl" and event.cwd == "/w"
    assert event.text("last_assistant_message") == "hi"
    assert reader.read() == []
    with path.open("ab") as handle:
        handle.write(second[10:])
    [event] = reader.read()
    assert (event.event, event.pane_id, event.time) == ("UserPromptSubmit", "%2", 1001.5)
    assert reader.offset == len(first) + len(second)


def test_bad_lines_are_counted_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "hooks.jsonl"
    path.write_bytes(b"not json\n" + b'{"nbs_pane":"%1","payload":}\n' + b"[1]\n" + _line("Stop") + b"\n")
    reader = SpoolReader(path)
    events = reader.read()
    assert [e.event for e in events] == ["Stop"]
    assert reader.bad_lines == 3 and reader.last_error is not None


def test_missing_pane_and_time_fall_back(tmp_path: Path) -> None:
    event = parse_line(b'{"nbs_pane":"","nbs_time":0,"payload":{"hook_event_name":"Stop"}}', 42.0)
    assert event.pane_id is None and event.session_id is None and event.time == 42.0


def test_rotation_and_truncation_restart_from_the_beginning(tmp_path: Path) -> None:
    path = tmp_path / "hooks.jsonl"
    path.write_bytes(_line("Stop") + _line("Stop"))
    reader = SpoolReader(path)
    assert len(reader.read()) == 2
    path.write_bytes(_line("SessionStart"))  # truncated and rewritten: shorter than our offset
    assert [e.event for e in reader.read()] == ["SessionStart"]
    rotated = tmp_path / "new.jsonl"
    rotated.write_bytes(_line("SessionEnd") + _line("SessionEnd") + _line("SessionEnd"))
    rotated.replace(path)  # a new file under the same name
    assert [e.event for e in reader.read()] == ["SessionEnd"] * 3


def test_a_long_spool_is_read_from_its_tail(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(spool_module, "START_TAIL", 300)
    path = tmp_path / "hooks.jsonl"
    lines = [_line("PostToolUse", t=1000.0 + i) for i in range(20)]
    path.write_bytes(b"".join(lines))
    events = SpoolReader(path).read()
    assert events and len(events) < 20
    assert events[-1].time == 1019.0
    assert [e.time for e in events] == sorted(e.time for e in events)
    everything = SpoolReader(path, from_start=True).read()
    assert len(everything) == 20


def test_rotation_of_a_large_spool_once_read(tmp_path: Path) -> None:
    path = tmp_path / "hooks.jsonl"
    path.write_bytes(_line("Stop") * 3)
    reader = SpoolReader(path, from_start=True)
    assert rotate(path, reader, max_bytes=10, now=0.0) is None  # not read yet: keep it
    assert len(reader.read()) == 3
    rotated = rotate(path, reader, max_bytes=10, now=0.0)
    assert rotated is not None
    archive, late = rotated
    assert archive == tmp_path / "hooks.jsonl.19700101T000000Z" and late == []
    assert archive.read_bytes() == _line("Stop") * 3 and not path.exists()
    assert rotate(path, reader, max_bytes=10) is None
    path.write_bytes(_line("SessionStart"))  # the next hook creates a fresh spool
    assert [e.event for e in reader.read()] == ["SessionStart"]


def test_two_rotations_keep_both_old_spools(tmp_path: Path) -> None:
    path = tmp_path / "hooks.jsonl"
    reader = SpoolReader(path, from_start=True)
    archives = []
    for event in ("Stop", "SessionEnd", "SessionStart"):
        path.write_bytes(_line(event) * 2)
        assert [e.event for e in reader.read()] == [event] * 2
        rotated = rotate(path, reader, max_bytes=10, now=0.0)  # the same second every time
        assert rotated is not None
        archives.append(rotated[0])
    assert [a.name for a in archives] == [
        "hooks.jsonl.19700101T000000Z",
        "hooks.jsonl.19700101T000000Z-1",
        "hooks.jsonl.19700101T000000Z-2",
    ]
    assert [a.read_bytes() for a in archives] == [
        _line("Stop") * 2,
        _line("SessionEnd") * 2,
        _line("SessionStart") * 2,
    ]


def test_lines_appended_while_rotating_are_read_from_the_archive(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "hooks.jsonl"
    path.write_bytes(_line("Stop"))
    reader = SpoolReader(path, from_start=True)
    assert len(reader.read()) == 1
    real_link = spool_module.os.link

    def link_then_hook_appends(src: Path, dst: Path) -> None:
        real_link(src, dst)
        with open(src, "ab") as handle:  # a hook appends between the size check and the move
            handle.write(_line("PostToolUse"))

    monkeypatch.setattr(spool_module.os, "link", link_then_hook_appends)
    rotated = rotate(path, reader, max_bytes=10, now=0.0)
    assert rotated is not None
    archive, late = rotated
    assert [e.event for e in late] == ["PostToolUse"]
    assert archive.read_bytes() == _line("Stop") + _line("PostToolUse")
    path.write_bytes(_line("SessionStart"))
    assert [e.event for e in reader.read()] == ["SessionStart"]
