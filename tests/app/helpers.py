"""Helpers for Pilot tests: bounded waits and reading what a widget shows."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from typing import Any

from rich.console import Console
from rich.text import Text
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Static

from nbs_tui.dashboard.frames import FrameScheduler


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


class FrameLog:
    """What a running app's frame scheduler is given (changes and requests: the causes of
    frames) and the frames it runs, from now on. Every frame drains all that is pending, so
    frames can never outnumber their causes, unless a frame ran for nothing."""

    def __init__(self, frames: FrameScheduler) -> None:
        self.causes = 0
        self.drawn: list[tuple[frozenset[str], bool]] = []
        self._lock = threading.Lock()
        changed, request, draw = frames.changed, frames.request, frames._draw

        def counted_change(pane_ids: AbstractSet[str]) -> None:
            with self._lock:
                self.causes += 1
            changed(pane_ids)

        def counted_request() -> None:
            with self._lock:
                self.causes += 1
            request()

        def logged_draw(pane_ids: AbstractSet[str], whole: bool) -> None:
            self.drawn.append((frozenset(pane_ids), whole))
            draw(pane_ids, whole)

        frames.changed = counted_change  # type: ignore[method-assign]
        frames.request = counted_request  # type: ignore[method-assign]
        frames._draw = logged_draw

    def mark(self) -> tuple[int, int]:
        """(causes, frames) so far, to compare a window's with `since`."""
        with self._lock:
            return self.causes, len(self.drawn)

    def since(self, mark: tuple[int, int]) -> tuple[int, list[tuple[frozenset[str], bool]]]:
        """Causes given and frames run since ``mark``."""
        with self._lock:
            return self.causes - mark[0], self.drawn[mark[1]:]
