"""Forward-only inbox reading: offsets, partial lines, huge lines, replaced and deleted files."""

from __future__ import annotations

import os
from pathlib import Path

from nbs_tui.core.control.control_commands import Outcome, process_line
from nbs_tui.core.control.inbox import InboxLine, InboxNotice
from nbs_tui.core.control.registry import Registry
from nbs_tui.files.inbox_reader import ForwardReader


def lines(items: list[InboxLine | InboxNotice]) -> list[str]:
    return [item.text for item in items if isinstance(item, InboxLine)]


def notices(items: list[InboxLine | InboxNotice]) -> list[str]:
    return [item.message for item in items if isinstance(item, InboxNotice)]


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


def test_reads_only_new_lines_and_never_writes(tmp_path: Path) -> None:
    inbox = tmp_path / "control-inbox"
    append(inbox, b"register-chat a\n# note\n")
    before = inbox.stat()
    reader = ForwardReader(inbox)
    assert lines(reader.read_new()) == ["register-chat a", "# note"]
    assert reader.read_new() == []
    append(inbox, b"register-bus b\n")
    items = reader.read_new()
    assert lines(items) == ["register-bus b"]
    assert isinstance(items[0], InboxLine)
    assert items[0].number == 3 and items[0].offset == len(b"register-chat a\n# note\n")
    after = inbox.stat()
    assert after.st_ino == before.st_ino
    assert inbox.read_bytes() == b"register-chat a\n# note\nregister-bus b\n"


def test_partial_last_line_waits_for_its_newline(tmp_path: Path) -> None:
    inbox = tmp_path / "control-inbox"
    append(inbox, b"register-chat a\nregister-ch")
    reader = ForwardReader(inbox)
    assert lines(reader.read_new()) == ["register-chat a"]
    assert reader.has_partial
    append(inbox, b"at b")
    assert reader.read_new() == []
    append(inbox, b"\n")
    assert lines(reader.read_new()) == ["register-chat b"]
    assert not reader.has_partial and reader.offset == inbox.stat().st_size


def test_ten_megabyte_line_is_reported_not_kept(tmp_path: Path) -> None:
    inbox = tmp_path / "control-inbox"
    append(inbox, b"register-chat a\n" + b"x" * (10 * 1024 * 1024) + b"\nregister-chat b\n")
    reader = ForwardReader(inbox)
    items = [i for i in reader.read_new() if isinstance(i, InboxLine)]
    assert items[0].text == "register-chat a"
    huge = items[1]
    assert huge.too_long and huge.length == 10 * 1024 * 1024 and len(huge.text) <= 200
    assert items[2].text == "register-chat b"


def test_huge_line_arriving_in_pieces(tmp_path: Path) -> None:
    inbox = tmp_path / "control-inbox"
    reader = ForwardReader(inbox, max_line=1000)
    for _ in range(5):
        append(inbox, b"y" * 700)
        assert lines(reader.read_new()) == []
    append(inbox, b"\nregister-chat ok\n")
    items = [i for i in reader.read_new() if isinstance(i, InboxLine)]
    assert items[0].too_long and items[0].length == 3500
    assert items[1].text == "register-chat ok"


def test_binary_junk_and_invalid_utf8(tmp_path: Path) -> None:
    inbox = tmp_path / "control-inbox"
    append(inbox, b"\x00\x01\xff\xfe junk\nregister-chat caf\xe9\nregister-chat caf\xc3\xa9\n")
    reader = ForwardReader(inbox)
    items = [i for i in reader.read_new() if isinstance(i, InboxLine)]
    assert [i.valid_utf8 for i in items] == [False, False, True]
    registry = Registry(tmp_path)
    outcomes = [process_line(registry, i.text)[1].outcome for i in items]
    assert outcomes == [Outcome.ERROR, Outcome.ERROR, Outcome.APPLIED]


def test_replaced_file_is_read_from_its_start(tmp_path: Path) -> None:
    inbox = tmp_path / "control-inbox"
    append(inbox, b"register-chat a\nregister-chat b\n")
    reader = ForwardReader(inbox)
    reader.read_new()
    replacement = tmp_path / "new"
    replacement.write_bytes(b"register-chat c\n")
    os.replace(replacement, inbox)
    items = reader.read_new()
    assert notices(items) and "replaced" in notices(items)[0]
    assert lines(items) == ["register-chat c"]


def test_deleted_file_is_waited_for(tmp_path: Path) -> None:
    inbox = tmp_path / "control-inbox"
    append(inbox, b"register-chat a\n")
    reader = ForwardReader(inbox)
    reader.read_new()
    inbox.unlink()
    assert "deleted" in notices(reader.read_new())[0]
    assert reader.read_new() == []  # reported once
    append(inbox, b"register-chat z\n")
    items = reader.read_new()
    assert lines(items) == ["register-chat z"]


def test_truncated_file_is_reread(tmp_path: Path) -> None:
    inbox = tmp_path / "control-inbox"
    append(inbox, b"register-chat a\nregister-chat b\n")
    reader = ForwardReader(inbox)
    reader.read_new()
    with open(inbox, "r+b") as handle:
        handle.truncate(0)
        handle.write(b"register-hub h\n")
    items = reader.read_new()
    assert "shrank" in notices(items)[0]
    assert lines(items) == ["register-hub h"]


def test_missing_file_is_quiet(tmp_path: Path) -> None:
    reader = ForwardReader(tmp_path / "nothing")
    assert reader.read_new() == []


def test_hundred_thousand_lines_in_slices(tmp_path: Path) -> None:
    inbox = tmp_path / "control-inbox"
    body = b"".join(b"register-chat .nbs/chat/c%d.chat\n" % (i % 50) for i in range(100_000))
    inbox.write_bytes(body)
    reader = ForwardReader(inbox)
    got = 0
    while True:
        items = reader.read_new(limit=256 * 1024)
        if not items:
            break
        got += len(items)
    assert got == 100_000 and reader.lines_read == 100_000 and reader.offset == len(body)


def test_crlf_lines(tmp_path: Path) -> None:
    inbox = tmp_path / "control-inbox"
    append(inbox, b"register-chat a\r\n")
    assert lines(ForwardReader(inbox).read_new()) == ["register-chat a"]


def test_any_split_of_appends_gives_the_same_lines(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import random

    from nbs_tui.files import tail as inbox_module

    monkeypatch.setattr(inbox_module, "CHUNK", 7)  # force lines across chunk boundaries
    rng = random.Random(11)
    for trial in range(40):
        lines = []
        for _ in range(rng.randint(1, 30)):
            kind = rng.random()
            if kind < 0.1:
                lines.append(b"z" * rng.randint(41, 120))  # longer than max_line below
            elif kind < 0.2:
                lines.append(b"crlf line\r")
            else:
                lines.append(bytes(rng.choice(b"abc xyz-/.") for _ in range(rng.randint(0, 40))))
        data = b"".join(line + b"\n" for line in lines)
        path = tmp_path / f"inbox{trial}"
        path.write_bytes(b"")
        reader = ForwardReader(path, max_line=40)
        got: list[InboxLine] = []
        position = 0
        while position < len(data):
            step = rng.randint(1, 25)
            append(path, data[position : position + step])
            position += step
            got.extend(i for i in reader.read_new(limit=rng.choice([None, 3, 50])) if isinstance(i, InboxLine))
        while True:
            more = [i for i in reader.read_new() if isinstance(i, InboxLine)]
            if not more:
                break
            got.extend(more)
        assert [g.number for g in got] == list(range(1, len(lines) + 1))
        offsets = [0]
        for line in lines[:-1]:
            offsets.append(offsets[-1] + len(line) + 1)
        assert [g.offset for g in got] == offsets
        for line, item in zip(lines, got, strict=True):
            assert item.length == len(line)
            assert item.too_long == (len(line) > 40)
            if not item.too_long:
                assert item.text == line.decode().removesuffix("\r")
        assert reader.offset == len(data) and not reader.has_partial


def test_fifo_inbox_is_reported_not_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "control-inbox"
    os.mkfifo(fifo)
    items = ForwardReader(fifo).read_new()
    assert "not a regular file" in notices(items)[0]
