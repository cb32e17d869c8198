"""nbs-chat files: decoding all three forms, cursors, archives, create and post under the lock."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from nbs_tui.core.control.chat import (
    ChatError,
    decode_message,
    parse_chat,
    render_chat,
    tail_of,
    unread_count,
)
from nbs_tui.files.chat_io import (
    archives_of,
    create_chat,
    is_chat_file,
    post_message,
    read_chat,
    read_chat_tail,
    read_cursors,
    summarise,
)
from tests.helpers import b64, nbs_chat_bytes, write_chat


def test_decodes_all_three_forms(tmp_path: Path) -> None:
    chat = write_chat(
        tmp_path / "t.chat",
        [b64("alice|1760000000: hello: world"), b64("bob|1760000100|c2lnbmF0dXJl: signed one"), b64("carol: oldest")],
    )
    parsed = read_chat(chat)
    assert parsed.consistent and parsed.valid_header
    assert [(m.handle, m.timestamp, m.text, m.form) for m in parsed.messages] == [
        ("alice", 1760000000, "hello: world", "current"),
        ("bob", 1760000100, "signed one", "signed"),
        ("carol", 0, "oldest", "legacy"),
    ]
    assert parsed.participants == (("alice", 2), ("bob", 1))
    assert parsed.last_writer == "alice"


def test_undecodable_lines_are_skipped_not_fatal(tmp_path: Path) -> None:
    chat = write_chat(tmp_path / "t.chat", ["!!!notbase64", b64("no colon here"), b64("ok|5: fine")])
    parsed = read_chat(chat)
    assert [m.text for m in parsed.messages] == ["fine"] and parsed.undecodable == 2
    assert decode_message(b64(": no handle"), 0) is None


def test_cursors_and_unread(tmp_path: Path) -> None:
    chat = write_chat(tmp_path / "t.chat", [b64(f"a|{i + 1}: m{i}") for i in range(5)])
    (tmp_path / "t.chat.cursors").write_text("# Read cursors — last-read message index per handle\nbob=1\ncarol=4\nbad=x\n")
    before = (tmp_path / "t.chat.cursors").read_bytes()
    assert read_cursors(chat) == {"bob": 1, "carol": 4}
    summary = summarise(chat)
    assert summary.total == 5
    assert {r.handle: r.unread for r in summary.readers} == {"bob": 3, "carol": 0}
    assert summary.newest is not None and summary.newest.text == "m4"
    assert summary.age(now=10.0) == 5.0
    assert unread_count(5, None) == 5
    assert (tmp_path / "t.chat.cursors").read_bytes() == before  # cursors never move


def test_archives_are_marked_and_listed(tmp_path: Path) -> None:
    chat = write_chat(tmp_path / "team.chat", [])
    archive = write_chat(tmp_path / "team-20260101-120000-archive.chat", [b64("a|1: old")])
    write_chat(tmp_path / "team2-20260101-120000-archive.chat", [])
    assert archives_of(chat) == (str(archive),)
    assert summarise(archive).archive and not summarise(chat).archive
    assert summarise(chat).archives == (str(archive),)


def test_missing_and_foreign_files(tmp_path: Path) -> None:
    assert summarise(tmp_path / "none.chat").error == "missing"
    junk = tmp_path / "junk.chat"
    junk.write_bytes(b"\x00\xff binary junk\n")
    assert summarise(junk).error == "not an nbs-chat file"
    assert not is_chat_file(junk)


def test_length_mismatch_is_retried_until_consistent(tmp_path: Path) -> None:
    chat = tmp_path / "t.chat"
    good = nbs_chat_bytes([b64("a|1: one"), b64("b|2: two")])
    chat.write_bytes(good[:-10])  # a reader caught a torn (non-NBS) write
    calls: list[float] = []

    def sleep(seconds: float) -> None:
        calls.append(seconds)
        if len(calls) == 2:
            chat.write_bytes(good)

    parsed = read_chat(chat, sleep=sleep)
    assert parsed.consistent and len(parsed.messages) == 2 and len(calls) == 2
    chat.write_bytes(good[:-10])
    assert not read_chat(chat, retries=2, sleep=lambda s: None).consistent


def test_create_matches_nbs_format(tmp_path: Path) -> None:
    chat = tmp_path / "new.chat"
    create_chat(chat)
    data = chat.read_bytes()
    lines = data.decode().split("\n")
    assert lines[0] == "=== nbs-chat ===" and lines[1] == "last-writer: system"
    assert lines[3] == f"file-length: {len(data)}" and lines[4] == "participants: " and lines[5] == "---"
    assert read_chat(chat).consistent and is_chat_file(chat)
    with pytest.raises(ChatError, match="already exists"):
        create_chat(chat)
    with pytest.raises(ChatError, match=r"\.chat"):
        create_chat(tmp_path / "x.txt")


def test_post_decodes_by_nbs_rules_and_keeps_other_lines(tmp_path: Path) -> None:
    chat = write_chat(tmp_path / "t.chat", [b64("alice|100: first"), "!!junk kept", b64("bob: legacy")])
    (tmp_path / "t.chat.cursors").write_text("# c\nalice=0\n")
    message = post_message(chat, "operator", "hello @alice, see line\nsecond", now=1_760_000_000)
    assert message.index == 2
    data = chat.read_bytes()
    parsed = parse_chat(str(chat), data)
    assert parsed.consistent and parsed.file_length == len(data)
    assert parsed.last_writer == "operator"
    assert dict(parsed.participants) == {"alice": 2, "bob": 1, "operator": 1}
    last_line = data.decode().rstrip("\n").split("\n")[-1]
    assert base64.b64decode(last_line).decode() == "operator|1760000000: hello @alice, see line\nsecond"
    assert parsed.messages[-1].text == "hello @alice, see line\nsecond"
    assert b"!!junk kept\n" in data
    assert (tmp_path / "t.chat.cursors").read_text() == "# c\nalice=0\n"
    assert oct((tmp_path / "t.chat.lock").stat().st_mode & 0o777) == "0o600"
    assert not (tmp_path / "t.chat.tmp").exists()


def test_post_refuses_bad_input(tmp_path: Path) -> None:
    chat = write_chat(tmp_path / "t.chat", [])
    with pytest.raises(ChatError, match="handle"):
        post_message(chat, "bad|handle", "x")
    with pytest.raises(ChatError, match="empty"):
        post_message(chat, "op", "   ")
    junk = tmp_path / "junk.chat"
    junk.write_text("hello\n")
    with pytest.raises(ChatError, match="not an nbs-chat"):
        post_message(junk, "op", "x")
    assert junk.read_text() == "hello\n"


HOLDER = """
import fcntl, os, sys, time, base64
path = sys.argv[1]
fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
fcntl.lockf(fd, fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.readline()
# write a message the NBS way while holding the lock
data = open(path, "rb").read().decode()
line = base64.b64encode(b"holder|1: from the holder").decode()
head, body = data.split("---\\n", 1)
lines = [l for l in head.split("\\n") if l and not l.startswith("file-length")]
before = "\\n".join(lines[:3]) + "\\n"
after = "\\n".join(lines[3:]) + "\\n---\\n" + body + line + "\\n"
base = len(before) + len(after)
n = base + 14 + len(str(base))
if len(str(n)) != len(str(base)):
    n = base + 14 + len(str(n))
open(path + ".tmp", "w").write(before + "file-length: %d\\n" % n + after)
os.replace(path + ".tmp", path)
fcntl.lockf(fd, fcntl.LOCK_UN)
"""


def test_concurrent_writer_holding_the_lock_is_waited_for(tmp_path: Path) -> None:
    chat = write_chat(tmp_path / "t.chat", [b64("alice|1: first")])
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(chat)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        done = threading.Event()
        errors: list[BaseException] = []

        def post() -> None:
            try:
                post_message(chat, "operator", "after the holder", lock_timeout=30)
            except BaseException as error:  # pragma: no cover - reported below
                errors.append(error)
            done.set()

        worker = threading.Thread(target=post)
        worker.start()
        # bounded poll: the poster must still be waiting while the holder keeps the lock
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            assert not done.is_set(), "posted while another process held the lock"
            time.sleep(0.05)
        assert holder.stdin is not None
        holder.stdin.write("go\n")
        holder.stdin.flush()
        assert holder.wait(timeout=30) == 0
        worker.join(timeout=30)
        assert done.is_set() and not errors
    finally:
        if holder.poll() is None:
            holder.kill()
    parsed = read_chat(chat)
    assert parsed.consistent
    assert [m.text for m in parsed.messages] == ["first", "from the holder", "after the holder"]


def test_lock_timeout_is_reported(tmp_path: Path) -> None:
    chat = write_chat(tmp_path / "t.chat", [])
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(chat)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(ChatError, match="locked by another writer"):
            post_message(chat, "operator", "x", lock_timeout=0.2)
    finally:
        holder.kill()
        holder.wait()
    assert read_chat(chat).messages == ()


def test_threads_of_one_process_do_not_lose_posts(tmp_path: Path) -> None:
    chat = write_chat(tmp_path / "t.chat", [])
    threads = [threading.Thread(target=post_message, args=(chat, f"w{i}", f"m{i}")) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(m.text for m in read_chat(chat).messages) == [f"m{i}" for i in range(8)]
    assert os.path.exists(str(chat) + ".lock")


def test_golden_bytes_match_chat_file_c(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Byte for byte what NBS's chat_create/chat_send write (TZ=UTC, fixed clock)."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        chat = tmp_path / "g.chat"
        create_chat(chat, now=1770976800)  # 2026-02-13T10:00:00Z
        assert chat.read_bytes() == (
            b"=== nbs-chat ===\nlast-writer: system\nlast-write: 2026-02-13T10:00:00+0000\n"
            b"file-length: 110\nparticipants: \n---\n"
        )
        post_message(chat, "alice", "hi", now=1770976860)
        line = base64.b64encode(b"alice|1770976860: hi").decode()
        body = f"participants: alice(1)\n---\n{line}\n"
        head = "=== nbs-chat ===\nlast-writer: alice\nlast-write: 2026-02-13T10:01:00+0000\n"
        size = len(head) + len(body) + len("file-length: \n") + 3
        assert chat.read_text() == f"{head}file-length: {size}\n{body}"
        assert len(chat.read_bytes()) == size
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_seeded_chat_is_what_create_and_posts_leave(tmp_path: Path) -> None:
    """render_chat (the demo launcher's seeded history) writes the bytes create + post would."""
    history = [
        ("agent-1", 1770976800, "from the seed"),
        ("operator", 1770976860, "from nbs-tui, 日本語"),
        ("agent-2", 1770976920, "again from the seed"),
        ("agent-1", 1770976980, "line one\nline two"),
    ]
    posted = tmp_path / "posted.chat"
    create_chat(posted, now=1770976700)
    for handle, epoch, text in history:
        post_message(posted, handle, text, now=epoch)
    seeded = tmp_path / "seeded.chat"
    seeded.write_bytes(render_chat(history, "agent-1", 1770976980))
    assert seeded.read_bytes() == posted.read_bytes()

    post_message(seeded, "operator", "after the seed")
    mine = read_chat(seeded)
    assert mine.consistent
    assert [(m.handle, m.text) for m in mine.messages] == [(h, t) for h, _, t in history] + [
        ("operator", "after the seed")
    ]
    assert mine.participants == (("agent-1", 2), ("operator", 2), ("agent-2", 1))
    assert mine.file_length == len(seeded.read_bytes())


def test_reads_survive_concurrent_rename_replace(tmp_path: Path) -> None:
    chat = tmp_path / "busy.chat"
    create_chat(chat)
    stop = threading.Event()

    def writer() -> None:
        for i in range(60):
            post_message(chat, "w", f"message {i} " + "x" * (i * 7))
        stop.set()

    thread = threading.Thread(target=writer)
    thread.start()
    counts = []
    while not stop.is_set():
        parsed = read_chat(chat)
        assert parsed.consistent and parsed.valid_header
        counts.append(len(parsed.messages))
    thread.join()
    assert counts == sorted(counts)  # never a torn or older view after a newer one
    assert len(read_chat(chat).messages) == 60


def test_fifo_chat_is_refused_not_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.chat"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        read_chat(fifo)
    assert not is_chat_file(fifo)
    assert "not a regular file" in summarise(fifo).error
    assert read_cursors(fifo) == {}


def test_the_tail_read_while_a_writer_posts_is_what_a_whole_read_gives(tmp_path: Path) -> None:
    chat = tmp_path / "busy.chat"
    create_chat(chat)
    stop = threading.Event()

    def writer() -> None:
        for i in range(40):
            post_message(chat, "w", f"message {i}")
        stop.set()

    thread = threading.Thread(target=writer)
    thread.start()
    tail, _ = read_chat_tail(chat, 5)
    appended = tail.total
    while not stop.is_set():
        total = tail.total
        tail, grew = read_chat_tail(chat, 5, tail)
        assert tail.consistent and grew is not None  # posts only ever append
        appended += grew
        assert grew == tail.total - total
    thread.join()
    tail, grew = read_chat_tail(chat, 5, tail)
    assert grew is not None and appended + grew == tail.total == 40  # every post counted once
    assert replace(tail, counted=-1, crc=0) == tail_of(read_chat(chat), 5)
    assert [m.text for m in tail.messages] == [f"message {i}" for i in range(35, 40)]
    with pytest.raises(FileNotFoundError):
        read_chat_tail(tmp_path / "none.chat", 5, sleep=lambda s: None)
