"""The queue file: forward-only JSON lines, each appended whole under the writers' lock; a torn
last line tolerated, reported and never rewritten; ids given once among concurrent writers."""

from __future__ import annotations

import multiprocessing
import os
import stat
from pathlib import Path

from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.queue.records import Record, TaskAdded, TaskCancelled, TaskHanding, parse_line
from nbs_tui.core.queue.task_states import QueueState, TaskState
from nbs_tui.files.queue_store import QueueStore, queue_path


def test_one_file_per_server_under_the_state_folder(tmp_path: Path) -> None:
    assert queue_path("local", ServerAddress(), tmp_path) == tmp_path / "queue-default.jsonl"
    assert (
        queue_path("local", ServerAddress(socket_name="work"), tmp_path)
        == tmp_path / "queue-L-work.jsonl"
    )
    assert (
        queue_path("box", ServerAddress(socket_name="w"), tmp_path).name == "queue-H-box-L-w.jsonl"
    )


def test_adds_get_ids_one_more_than_the_last_and_the_file_is_the_users_own(tmp_path: Path) -> None:
    store = QueueStore(tmp_path / "q" / "queue.jsonl")
    first = store.add(lambda task_id: TaskAdded(task=task_id, at=1.0, text="one"))
    second = store.add(lambda task_id: TaskAdded(task=task_id, at=2.0, text="two"))
    assert (first.id, second.id) == ("1", "2")
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    again = QueueStore(store.path).refresh()
    assert [(t.id, t.text, t.state) for t in again] == [
        ("1", "one", TaskState.QUEUED),
        ("2", "two", TaskState.QUEUED),
    ]


def test_refresh_reads_only_what_was_appended_since(tmp_path: Path) -> None:
    path = tmp_path / "queue.jsonl"
    writer, reader = QueueStore(path), QueueStore(path)
    writer.add(lambda task_id: TaskAdded(task=task_id, at=1.0, text="one"))
    assert len(reader.refresh()) == 1 and reader.queue.records == 1
    writer.append(TaskCancelled("1", 2.0))
    queue = reader.refresh()
    assert queue.records == 2, "the first record was not folded a second time"
    assert queue.get("1").state is TaskState.CANCELLED  # type: ignore[union-attr]
    assert reader.refresh().records == 2


def test_a_torn_last_line_is_skipped_reported_once_then_ended_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "queue.jsonl"
    store = QueueStore(path)
    store.add(lambda task_id: TaskAdded(task=task_id, at=1.0, text="one"))
    torn = b'{"v":1,"kind":"added","task":"2","at":2,"te'
    with open(path, "ab") as handle:  # a writer killed inside its write
        handle.write(torn)
    before = path.read_bytes()
    reports: list[str] = []
    reader = QueueStore(path, report=reports.append)
    assert [t.id for t in reader.refresh()] == ["1"]
    reader.refresh()
    assert len(reports) == 1 and "line 2 is torn" in reports[0]
    third = reader.add(lambda task_id: TaskAdded(task=task_id, at=3.0, text="three"))
    assert third.id == "2"
    data = path.read_bytes()
    assert data.startswith(before), "the file was rewritten"
    assert data[len(before) : len(before) + 1] == b"\n", (
        "the torn line was ended before the next record"
    )
    assert [parse_line(line) for line in data.split(b"\n")[2:-1]] == [
        TaskAdded(task="2", at=3.0, text="three")
    ]
    later = QueueStore(path, report=reports.append)
    assert [t.text for t in later.refresh()] == ["one", "three"]
    assert "line 2: not a queue record" in reports[-1]


def test_bad_and_newer_lines_are_skipped_with_their_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "queue.jsonl"
    path.write_bytes(
        b'{"v":1,"kind":"added","task":"1","at":1,"text":"a"}\n'
        b"garbage\n"
        b'{"v":9,"kind":"added","task":"2","at":1,"text":"b"}\n'
        b"\n"
        b'{"v":1,"kind":"added","task":"3","at":1,"text":"c"}\n'
    )
    reports: list[str] = []
    queue = QueueStore(path, report=reports.append).refresh()
    assert [t.id for t in queue] == ["1", "3"]
    assert [r.split(": ", 1)[0].rsplit(" ", 2)[-2:] for r in reports] == [
        ["line", "2"],
        ["line", "3"],
    ]
    assert "format 9" in reports[1]


def test_a_replaced_file_is_read_again_from_its_start(tmp_path: Path) -> None:
    path = tmp_path / "queue.jsonl"
    store = QueueStore(path)
    store.add(lambda task_id: TaskAdded(task=task_id, at=1.0, text="one"))
    store.add(lambda task_id: TaskAdded(task=task_id, at=1.0, text="two"))
    os.rename(path, tmp_path / "old")
    QueueStore(path).add(lambda task_id: TaskAdded(task=task_id, at=1.0, text="new"))
    assert [t.text for t in store.refresh()] == ["new"]
    assert "replaced" in store.problems[-1]


def test_append_checked_decides_on_the_latest_queue(tmp_path: Path) -> None:
    path = tmp_path / "queue.jsonl"
    mine, other = QueueStore(path), QueueStore(path)
    mine.add(lambda task_id: TaskAdded(task=task_id, at=1.0, text="one"))
    mine.refresh()
    other.append(TaskCancelled("1", 2.0))  # mine has not seen it

    def hand_if_queued(queue: QueueState) -> Record | None:
        task = queue.get("1")
        return TaskHanding("1", 3.0, pane="%1") if task and task.state is TaskState.QUEUED else None

    assert mine.append_checked(hand_if_queued) is None
    task = mine.queue.get("1")
    assert task is not None and task.state is TaskState.CANCELLED


def _add_many(path: str, writer: int, count: int) -> None:
    store = QueueStore(Path(path))
    for n in range(count):
        text = f"w{writer}-{n}"
        store.add(lambda task_id: TaskAdded(task=task_id, at=1.0, text=text))  # noqa: B023 (called at once)


def test_concurrent_writers_never_interleave_nor_give_an_id_twice(tmp_path: Path) -> None:
    path = tmp_path / "queue.jsonl"
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_add_many, args=(str(path), w, 25)) for w in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 101
    records = [parse_line(line) for line in lines[:-1]]
    adds = [r for r in records if isinstance(r, TaskAdded)]
    assert sorted(int(r.task) for r in adds) == list(range(1, 101))
    assert sorted(r.text for r in adds) == sorted(f"w{w}-{n}" for w in range(4) for n in range(25))
