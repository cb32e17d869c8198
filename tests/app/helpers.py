"""Helpers for Pilot tests: bounded waits and reading what a widget shows."""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from typing import Any

import libtmux
from rich.console import Console
from rich.text import Text
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Static


async def wait_for(pilot: Pilot[Any], condition: Callable[[], object], timeout: float = 15.0, what: str = "") -> None:
    """Let the app run until ``condition()`` is true; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        await pilot.pause(0.05)


def widget_text(widget: Widget) -> str:
    """The text a line-API widget draws now, one line per row, trailing spaces stripped."""
    lines = []
    for y in range(widget.size.height):
        strip = widget.render_line(y)
        lines.append("".join(segment.text for segment in strip).rstrip())
    return "\n".join(lines)


def static_text(widget: Static, width: int = 120) -> str:
    """What a Static holds, rendered to plain text."""
    console = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    content = widget.content
    console.print(content if not isinstance(content, str) else Text(content))
    return console.export_text()


def only_a_quiet_pane(session: libtmux.Session, text: str = "QUIET-PANE") -> tuple[libtmux.Pane, str]:
    """The session's one pane (and its id) from now on: it prints ``text`` once, then nothing (``cat``).

    For tests that count frames while nothing changes: the shells the session started with
    print their prompts whenever they get to it (under load, well after a dashboard started),
    and each such prompt is a real change that runs frames."""
    window = session.new_window(window_name="quiet", window_shell=f"printf '{text}\\n'; exec cat", attach=False)
    for other in session.server.windows:
        if other.window_id != window.window_id:
            other.kill()
    pane = window.active_pane
    assert pane is not None and pane.pane_id is not None
    return pane, pane.pane_id
