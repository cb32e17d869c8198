"""Helpers for Pilot tests: bounded waits and reading what a widget shows."""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from typing import Any

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
