"""NBS bus events (nbs_tui/core/control/nbs_events.py, nbs_tui/files/nbs_bus.py) written into real folders
and read back the way NBS's own reader (src/nbs-bus/bus.c) reads them."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from nbs_tui.core.control.nbs_events import (
    BusEvent,
    EventError,
    event_text,
    worker_died,
    worker_spawned,
)
from nbs_tui.files.nbs_bus import events_dir, publish


def nbs_pending(folder: Path) -> list[str]:
    """The names NBS's scan takes: regular files ending in ``.event`` whose name starts with the
    microsecond time and a dash (bus.c: scan_events, parse_event_filename_timestamp)."""
    return sorted(
        name for name in os.listdir(folder)
        if name.endswith(".event") and (folder / name).is_file() and re.match(r"^\d+-", name)
    )  # fmt: skip


def nbs_fields(path: Path) -> dict[str, str]:
    """bus.c's read_event_fields and read_event_dedup_key: the first line with each prefix."""
    fields: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").split("\n"):
        for key in ("source", "type", "priority", "timestamp", "dedup-key"):
            if line.startswith(f"{key}: ") and key not in fields:
                fields[key] = line[len(key) + 2 :]
    return fields


def payload_of(path: Path) -> str:
    """The YAML literal block after ``payload: |`` (two-space indent)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    start = lines.index("payload: |") + 1
    return "\n".join(line[2:] for line in lines[start:] if line.startswith("  ") or line == "").strip("\n")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".nbs" / "events").mkdir(parents=True)
    return tmp_path


def test_worker_spawned_reads_back_as_nbs_reads_it(project: Path) -> None:
    folder = events_dir(project)
    assert folder is not None
    event = worker_spawned("parser-a3f1", target="work:3.0", pane_id="%12", session_id="59ced8f6")
    path = publish(folder, event, clock=lambda: 1_795_912_723.25, pid=4242)
    assert path.name == "1795912723250000-parser-a3f1-worker-spawned-4242.event"
    assert nbs_pending(folder) == [path.name]
    assert nbs_fields(path) == {
        "source": "parser-a3f1",
        "type": "worker-spawned",
        "priority": "normal",
        "timestamp": "2026-11-29T00:38:43Z",
        "dedup-key": "parser-a3f1:worker-spawned",
    }
    assert payload_of(path) == (
        "Worker parser-a3f1 started by nbs-tui in tmux pane %12 (work:3.0)\n"
        "Task file: .nbs/workers/parser-a3f1.md\n"
        "Claude Code session: 59ced8f6"
    )
    assert (folder / "processed").is_dir()


def test_worker_died_is_high(project: Path) -> None:
    folder = project / ".nbs" / "events"
    path = publish(folder, worker_died("parser-a3f1", target="work:3.0", pane_id="%12", why="Claude Code exited"))
    assert nbs_fields(path)["priority"] == "high"
    assert nbs_fields(path)["type"] == "worker-died"
    assert payload_of(path) == "Worker parser-a3f1 in tmux pane %12 (work:3.0): Claude Code exited"
    assert path.name.endswith(f"-parser-a3f1-worker-died-{os.getpid()}.event")


def test_a_reader_never_sees_half_an_event(project: Path) -> None:
    folder = project / ".nbs" / "events"
    seen: list[tuple[list[str], list[str]]] = []

    def look(temp: str) -> None:  # the event is written and synced, not yet renamed
        seen.append((nbs_pending(folder), sorted(os.listdir(folder))))
        assert Path(temp).read_text().startswith("source: w\n")

    path = publish(folder, BusEvent("w", "worker-spawned", payload="x"), before_replace=look)
    ((pending, names),) = seen
    assert pending == []  # NBS would list nothing yet
    temp = [n for n in names if n != "processed"]
    assert len(temp) == 1 and temp[0].startswith(".") and temp[0].endswith(".tmp")
    assert nbs_pending(folder) == [path.name]
    assert sorted(os.listdir(folder)) == sorted(["processed", path.name])


def test_two_events_in_one_microsecond_get_two_files(project: Path) -> None:
    folder = project / ".nbs" / "events"
    event = BusEvent("w", "worker-spawned")
    first = publish(folder, event, clock=lambda: 100.0, pid=7)
    second = publish(folder, event, clock=lambda: 100.0, pid=7)
    assert first != second and len(nbs_pending(folder)) == 2
    (folder / "processed" / "100000002-w-worker-spawned-7.event").write_text("acked")
    third = publish(folder, event, clock=lambda: 100.0, pid=7)
    assert third.name == "100000003-w-worker-spawned-7.event"  # never the name of an acknowledged one


def test_a_project_without_events_gets_none(tmp_path: Path) -> None:
    assert events_dir(tmp_path) is None
    (tmp_path / ".nbs").mkdir()
    (tmp_path / ".nbs" / "events").write_text("not a folder")
    assert events_dir(tmp_path) is None
    with pytest.raises(FileNotFoundError):
        publish(tmp_path / ".nbs" / "events", BusEvent("w", "t"))
    with pytest.raises(FileNotFoundError):
        publish(tmp_path / "missing", BusEvent("w", "t"))
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize(
    ("event", "words"),
    [
        (BusEvent("a b", "t"), "source 'a b'"),
        (BusEvent("../x", "t"), "source '../x'"),
        (BusEvent("w", ""), "type ''"),
        (BusEvent("w", "t", "urgent"), "priority 'urgent'"),
        (BusEvent("w", "t", payload="x" * 16385), "larger than 16384 bytes"),
    ],
)
def test_an_event_nbs_could_not_read_is_refused_and_nothing_written(project: Path, event: BusEvent, words: str) -> None:
    folder = project / ".nbs" / "events"
    with pytest.raises(EventError, match=re.escape(words)):
        publish(folder, event)
    assert os.listdir(folder) == []


def test_payload_lines_stay_inside_the_block() -> None:
    text = event_text(BusEvent("w", "t", payload="one\r\n\nsource: fake\x1b[31m\n"), 0.0)
    assert text.split("\n")[0] == "source: w"
    assert "\n  source: fake [31m\n" in text  # indented: never read as a field; escape defused
    assert "payload" not in event_text(BusEvent("w", "t"), 0.0)
