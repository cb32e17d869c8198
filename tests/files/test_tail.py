"""The one forward reader of appended files, on real files (inbox, spool and transcript use it)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from nbs_tui.files.tail import (
    BACK,
    DELETED,
    REPLACED,
    SHRANK,
    UNREADABLE,
    TailLine,
    TailNotice,
    TailReader,
)


def reader(path: Path, **kwargs: object) -> TailReader[TailLine]:
    kwargs.setdefault("max_line", 1000)
    return TailReader(path, TailLine, **kwargs)  # type: ignore[arg-type]


def raw(items: list[TailLine | TailNotice]) -> list[bytes]:
    return [item.raw for item in items if isinstance(item, TailLine)]


def kinds(items: list[TailLine | TailNotice]) -> list[str]:
    return [item.kind for item in items if isinstance(item, TailNotice)]


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


def test_complete_lines_forward_and_the_partial_one_held_back(tmp_path: Path) -> None:
    path = tmp_path / "log"
    tail = reader(path)
    assert tail.read() == [] and tail.size is None  # not there yet: quiet
    path.write_bytes(b"one\ntwo\nthr")
    items = tail.read()
    assert items == [TailLine(1, 0, b"one", 3, False), TailLine(2, 4, b"two", 3, False)]
    assert tail.has_partial and tail.offset == 8 and tail.size == 11 and tail.grew
    assert tail.read() == [] and not tail.grew
    append(path, b"ee\n")
    assert tail.read() == [TailLine(3, 8, b"three", 5, False)]
    assert tail.offset == path.stat().st_size and not tail.has_partial


def test_a_line_longer_than_max_line_is_cut_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "log"
    tail = reader(path, max_line=200)
    path.write_bytes(b"x" * 150)
    assert tail.read() == []
    append(path, b"y" * 10_000 + b"\nok\n")  # finishes across reads: memory stays bounded
    long, ok = tail.read()
    assert isinstance(long, TailLine) and long.too_long and long.length == 10_150 and long.raw == b"x" * 120
    assert ok == TailLine(2, 10_151, b"ok", 2, False)


def test_replaced_deleted_and_truncated_files_are_followed(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_bytes(b"a\nb\n")
    tail = reader(path)
    assert raw(tail.read()) == [b"a", b"b"]
    fresh = tmp_path / "fresh"
    fresh.write_bytes(b"c\n")
    fresh.replace(path)
    items = tail.read()
    assert kinds(items) == [REPLACED] and raw(items) == [b"c"] and items[0].restarted  # type: ignore[union-attr]
    path.unlink()
    assert kinds(tail.read()) == [DELETED]
    assert tail.read() == []  # said once
    path.write_bytes(b"d\n")
    items = tail.read()
    assert kinds(items) == [BACK] and raw(items) == [b"d"]
    path.write_bytes(b"")  # truncated in place: same inode, shorter than what was read
    append(path, b"")
    items = tail.read()
    assert kinds(items) == [SHRANK]
    append(path, b"e\n")
    assert tail.read() == [TailLine(1, 0, b"e", 1, False)]


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    tail = reader(fifo)
    done: list[list[TailLine | TailNotice]] = []
    thread = threading.Thread(target=lambda: done.append(tail.read()), daemon=True)
    thread.start()
    thread.join(5)
    assert done, "reading a FIFO blocked"
    assert kinds(done[0]) == [UNREADABLE] and "not a regular file (a FIFO)" in done[0][0].message  # type: ignore[union-attr]
    assert tail.read() == []  # said once


def test_a_device_is_refused(tmp_path: Path) -> None:
    tail = reader(Path("/dev/zero"))
    [notice] = tail.read()
    assert isinstance(notice, TailNotice) and notice.kind == UNREADABLE and "a character device" in notice.message


def test_start_tail_drops_the_cut_line_and_only_once(tmp_path: Path) -> None:
    path = tmp_path / "log"
    lines = [f"line {i:02d}".encode() for i in range(20)]  # 7 bytes + newline each
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    tail = reader(path, start_tail=20)
    got = raw(tail.read())
    assert got == lines[-2:]  # the 20 bytes hold 2.5 lines: the cut one is dropped
    exact = reader(path, start_tail=16)  # the cut falls on a line start: that line is kept
    assert raw(exact.read()) == lines[-2:]
    small = reader(path, start_tail=10_000)
    assert raw(small.read()) == lines
    path.write_bytes(b"x\n")  # a truncated file is read whole, not from its tail
    assert raw(tail.read()) == [b"x"]


def test_limit_reads_a_backlog_in_slices(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_bytes(b"".join(b"%05d\n" % i for i in range(1000)))
    tail = reader(path)
    slices = []
    while True:
        items = tail.read(limit=600)
        if not items:
            break
        slices.append(len(items))
    assert sum(slices) == 1000 and max(slices) <= 100 and len(slices) >= 10


def test_read_moved_returns_the_rest_of_a_rotated_file(tmp_path: Path) -> None:
    path = tmp_path / "spool"
    path.write_bytes(b"a\n")
    tail = reader(path)
    assert raw(tail.read()) == [b"a"]
    moved = tmp_path / "spool.1"
    os.link(path, moved)
    append(path, b"late\nunfinished")  # a writer appends between the check and the move
    path.unlink()
    assert raw(tail.read_moved(moved)) == [b"late", b"unfinished"]
    path.write_bytes(b"new\n")
    items = tail.read()
    assert items == [TailLine(1, 0, b"new", 3, False)]  # from the start, no notice


def test_read_moved_of_another_file_reads_nothing_from_it(tmp_path: Path) -> None:
    path = tmp_path / "spool"
    path.write_bytes(b"a\n")
    tail = reader(path)
    tail.read()
    other = tmp_path / "other"
    other.write_bytes(b"not ours\n")
    assert tail.read_moved(other) == []


@pytest.mark.parametrize("chunk", [1, 3, 7])
def test_lines_split_across_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    from nbs_tui.files import tail as tail_module

    monkeypatch.setattr(tail_module, "CHUNK", chunk)
    path = tmp_path / "log"
    path.write_bytes(b"alpha\n\nbeta gamma\nd\n")
    items = reader(path, max_line=8).read()
    assert [(i.raw, i.length, i.too_long) for i in items if isinstance(i, TailLine)] == [
        (b"alpha", 5, False),
        (b"", 0, False),
        (b"beta gamma", 10, True),  # too long for max_line 8: its first PREVIEW bytes, however split
        (b"d", 1, False),
    ]
