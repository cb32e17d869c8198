"""The registry's lines: normalisation, order, hand-edited lines (its files: tests/files/test_registry_io.py)."""

from __future__ import annotations

from pathlib import Path

from nbs_tui.core.control.registry import Registry


def test_spellings_of_one_path_are_one_entry(tmp_path: Path) -> None:
    registry = Registry(tmp_path)
    assert registry.register("chat", "./.nbs/chat/a.chat")
    assert not registry.register("chat", ".nbs/chat/a.chat")
    assert not registry.register("chat", str(tmp_path / ".nbs/chat/a.chat"))
    assert not registry.register("chat", ".nbs//chat/./a.chat")
    assert registry.lines == ("chat:.nbs/chat/a.chat",)


def test_unregister_removes_every_spelling_and_keeps_order(tmp_path: Path) -> None:
    text = f"chat:.nbs/chat/a.chat\nbus:.nbs/events\nchat:{tmp_path}/.nbs/chat/a.chat\nchat:.nbs/chat/b.chat\n"
    registry = Registry.from_text(tmp_path, text)
    assert registry.unregister("chat", "./.nbs/chat/a.chat") == 2
    assert registry.lines == ("bus:.nbs/events", "chat:.nbs/chat/b.chat")
    assert registry.first("chat") is not None and registry.first("chat").path == ".nbs/chat/b.chat"  # type: ignore[union-attr]


def test_paths_with_spaces(tmp_path: Path) -> None:
    registry = Registry(tmp_path)
    registry.register("chat", ".nbs/chat/my team.chat")
    again = Registry.from_text(tmp_path, registry.to_text())
    assert again.contains("chat", "./.nbs/chat/my team.chat")
    assert again.entries()[0].absolute == str(tmp_path / ".nbs/chat/my team.chat")


def test_unknown_lines_are_kept_verbatim(tmp_path: Path) -> None:
    text = "chat:a.chat\nsomething odd\nworker:.nbs/workers/w.md\n"
    registry = Registry.from_text(tmp_path, text)
    registry.register("bus", ".nbs/events")
    assert registry.to_text() == text + "bus:.nbs/events\n"
    assert registry.unparsed_lines() == ("something odd",)
