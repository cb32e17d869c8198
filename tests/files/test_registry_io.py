"""The registry's files: seeding from the folder, reading, written back byte for byte (the atomic
write itself: tests/files/test_atomic.py)."""

from __future__ import annotations

from pathlib import Path

from nbs_tui.core.control.registry import Registry
from nbs_tui.files.atomic import write_atomic
from nbs_tui.files.registry_io import read_text, seed_entries


def test_seed_skips_archives_and_adds_events(tmp_path: Path) -> None:
    chat = tmp_path / ".nbs" / "chat"
    chat.mkdir(parents=True)
    for name in ("b.chat", "a.chat", "a-20260101-000000-archive.chat", "notes.txt", "a.chat.cursors"):
        (chat / name).write_text("x")
    (chat / "dir.chat").mkdir()
    assert seed_entries(tmp_path) == [("chat", ".nbs/chat/a.chat"), ("chat", ".nbs/chat/b.chat")]
    (tmp_path / ".nbs" / "events").mkdir()
    registry = Registry.from_text(tmp_path, f"chat:{tmp_path}/.nbs/chat/b.chat\n")
    assert registry.seed(seed_entries(tmp_path)) == ["chat:.nbs/chat/a.chat", "bus:.nbs/events"]
    assert registry.seed(seed_entries(tmp_path)) == []
    assert [e.line for e in registry.entries()] == [
        f"chat:{tmp_path}/.nbs/chat/b.chat",
        "chat:.nbs/chat/a.chat",
        "bus:.nbs/events",
    ]


def test_write_atomic_round_trips_undecodable_bytes(tmp_path: Path) -> None:
    target = tmp_path / "control-registry"
    target.write_bytes(b"chat:caf\xe9.chat\n")
    text = read_text(target)
    assert text is not None
    registry = Registry.from_text(tmp_path, text)
    registry.register("bus", "events")
    write_atomic(target, registry.to_text())
    assert target.read_bytes() == b"chat:caf\xe9.chat\nbus:events\n"
    assert read_text(tmp_path / "missing") is None
