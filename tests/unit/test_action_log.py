"""The action log appends whole JSON lines, never truncates, and reads its tail back."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from nbs_tui.operator.action_log import ActionLog, ActionRecord, Outcome


def record(n: int, sent: str = "hi") -> ActionRecord:
    return ActionRecord(
        time=1_700_000_000.0 + n,
        action="text",
        pane_id=f"%{n}",
        target=f"s:0.{n}",
        sent=sent,
        why="operator",
        outcome=Outcome.SENT,
    )


def test_append_creates_parents_and_round_trips(tmp_path: Path) -> None:
    log = ActionLog(tmp_path / "deep" / "actions.log")
    tricky = 'a;b $HOME "q" \'s\' -x é 🙂\tTab\nline2'
    log.append(record(1, tricky))
    lines = log.path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0])["sent"] == tricky
    (back,) = log.tail()
    assert back == record(1, tricky)
    assert "%1" in back.describe() or "s:0.1" in back.describe()


def test_never_truncates_existing_content(tmp_path: Path) -> None:
    path = tmp_path / "actions.log"
    path.write_text("older line from another version\n", encoding="utf-8")
    log = ActionLog(path)
    log.append(record(1))
    text = path.read_text(encoding="utf-8")
    assert text.startswith("older line from another version\n")
    tail = log.tail()
    assert tail[0] == "older line from another version"  # shown raw, not hidden
    assert tail[1] == record(1)


def test_tail_reads_only_the_last_lines_across_blocks(tmp_path: Path) -> None:
    log = ActionLog(tmp_path / "a.log")
    for n in range(500):
        log.append(record(n, "x" * 300))
    tail = log.tail(7)
    assert [r.pane_id for r in tail if isinstance(r, ActionRecord)] == [f"%{n}" for n in range(493, 500)]
    assert ActionLog(tmp_path / "missing.log").tail() == []


def test_concurrent_writers_interleave_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    logs = [ActionLog(path), ActionLog(path)]  # two writers, as dashboard + headless would be

    def write(log: ActionLog, base: int) -> None:
        for n in range(200):
            log.append(record(base + n, "y" * 2000))

    threads = [threading.Thread(target=write, args=(log, i * 1000)) for i, log in enumerate(logs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 400
    assert all(ActionRecord.from_json(line) for line in lines)


def test_a_new_writer_never_takes_a_line_being_written_for_a_torn_one(tmp_path: Path) -> None:
    """A writer's first record checks whether the file ends mid-line (a writer killed inside a
    write) and starts on a line of its own if so. Made while another writer was mid-way through
    a record longer than a page, the check saw the part written so far and added an empty line
    (a fresh-clone CI run: 401 lines of 400). Writers now hold the file's lock over both."""
    path = tmp_path / "a.log"
    stop = threading.Event()
    long_records = [0]

    def write_long_records() -> None:
        log = ActionLog(path)
        while not stop.is_set():
            log.append(record(1, "y" * 9000))
            long_records[0] += 1

    writer = threading.Thread(target=write_long_records)
    writer.start()
    try:
        for _ in range(400):  # each a new writer: each makes the check
            ActionLog(path).append(record(2))
    finally:
        stop.set()
        writer.join()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert "" not in lines
    assert len(lines) == long_records[0] + 400 and long_records[0] > 0


def test_listeners_hear_each_record(tmp_path: Path) -> None:
    log = ActionLog(tmp_path / "a.log")
    heard: list[ActionRecord] = []
    unsubscribe = log.subscribe(heard.append)
    log.append(record(1))
    unsubscribe()
    log.append(record(2))
    assert heard == [record(1)]


def test_a_line_cut_by_a_crash_is_closed_before_the_next_record(tmp_path: Path) -> None:
    path = tmp_path / "actions.log"
    path.write_bytes(record(1).to_json().encode() + b"\n" + record(2).to_json().encode()[:40])  # killed mid-write
    log = ActionLog(path)
    log.append(record(3))
    log.append(record(4))
    data = path.read_bytes()
    assert data.endswith(b"\n")
    lines = data.decode().splitlines()
    assert len(lines) == 4 and lines[1] == record(2).to_json()[:40]  # the torn line kept, on its own
    assert [r for r in log.tail() if isinstance(r, ActionRecord)] == [record(1), record(3), record(4)]
