"""Pass-through's key translation: Textual key events to tmux ``send-keys`` arguments."""

from __future__ import annotations

import pytest
from textual import events

from nbs_tui.widgets.send_bar import tmux_keys_for


@pytest.mark.parametrize(
    ("key", "character", "expected"),
    [
        ("a", "a", [(True, "a")]),
        ("semicolon", ";", [(True, ";")]),
        ("é", "é", [(True, "é")]),
        ("enter", "\r", [(False, "Enter")]),
        ("escape", "\x1b", [(False, "Escape")]),
        ("tab", "\t", [(False, "Tab")]),
        ("shift+tab", None, [(False, "BTab")]),
        ("ctrl+c", "\x03", [(False, "C-c")]),
        ("up", None, [(False, "Up")]),
        ("shift+up", None, [(False, "S-Up")]),
        ("alt+x", None, [(False, "M-x")]),
        ("backspace", "\x7f", [(False, "BSpace")]),
        ("f5", None, [(False, "F5")]),
        ("pageup", None, [(False, "PPage")]),
    ],
)
def test_keys(key: str, character: str | None, expected: list[tuple[bool, str]]) -> None:
    assert tmux_keys_for(events.Key(key, character)) == expected
