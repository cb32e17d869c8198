"""The demo agent's painter, checked against a terminal emulator (pyte) without tmux.

The painter redraws only changed rows and scrolls the pinned transcript with a scroll margin;
whatever it does, the screen must equal a full repaint of the same frame.
"""

from __future__ import annotations

from pathlib import Path

import pyte

from nbs_tui.demo.agent import Agent, Options
from nbs_tui.demo.demo_terminal import Row, Terminal, paint_row, text_width, wrap_row


class PyteTerminal(Terminal):
    """A Terminal that draws into a pyte screen instead of a tty."""

    def __init__(self, width: int, height: int) -> None:
        super().__init__(-1, -1)
        self.screen = pyte.Screen(width, height)
        self.stream = pyte.ByteStream(self.screen)
        self.bytes_written = 0

    def size(self) -> tuple[int, int]:
        return self.screen.columns, self.screen.lines

    def write(self, data: str) -> None:
        raw = data.encode("utf-8")
        self.bytes_written += len(raw)
        self.stream.feed(raw)

    def resize(self, width: int, height: int) -> None:
        self.screen.resize(height, width)


def fresh_display(agent: Agent, now: float) -> list[str]:
    """What a full repaint of the agent's current frame shows."""
    term = PyteTerminal(*agent.term.size())
    saved = agent.term
    agent.term = term
    try:
        agent.render(now)
    finally:
        agent.term = saved
    return list(term.screen.display)


def make_agent(tmp_path: Path, width: int = 80, height: int = 24, **options: object) -> tuple[Agent, PyteTerminal]:
    term = PyteTerminal(width, height)
    opts = Options(name="t", script="idle", seed=1, project=tmp_path, **options)  # type: ignore[arg-type]
    return Agent(opts, term, clock=lambda: 100.0), term


def test_incremental_paint_equals_full_repaint_while_busy(tmp_path: Path) -> None:
    agent, term = make_agent(tmp_path, busy=True, rate=50.0)
    now = 100.0
    agent.begin(now)
    agent.render(now)
    for step in range(60):
        now += 0.05 + (step % 3) * 0.2  # 2 to 12 new lines per frame
        agent.tick(now)
        agent.render(now)
        assert list(term.screen.display) == fresh_display(agent, now), f"frame {step}"
    assert agent.busy_emitted > 100


def test_busy_frames_cost_little_once_the_transcript_scrolls(tmp_path: Path) -> None:
    agent, term = make_agent(tmp_path, busy=True, rate=10.0)
    now = 100.0
    agent.begin(now)
    for _ in range(40):  # fill the screen first
        now += 0.5
        agent.tick(now)
        agent.render(now)
    before = term.bytes_written
    for _ in range(20):
        now += 0.1  # one new line per frame
        agent.tick(now)
        agent.render(now)
    per_frame = (term.bytes_written - before) / 20
    assert per_frame < 80 * 24 / 2, per_frame  # far less than a full repaint


def test_typing_menus_and_resize_stay_consistent(tmp_path: Path) -> None:
    agent, term = make_agent(tmp_path)
    now = 100.0
    agent.begin(now)
    agent.render(now)
    agent.feed("run the tests in bash 日本".encode(), now)
    agent.render(now)
    assert "❯\u00a0run the tests in bash 日本" in "\n".join(term.screen.display)  # NBSP, as 2.1.197
    agent.feed(b"\r", now)
    for _ in range(200):
        now += 0.25
        agent.tick(now)
        agent.render(now)
        if agent.menu is not None:
            break
    assert agent.menu is not None and agent.menu.kind == "permission"
    assert list(term.screen.display) == fresh_display(agent, now)
    term.resize(60, 20)
    agent.term.invalidate()
    agent.render(now)
    assert list(term.screen.display) == fresh_display(agent, now)
    agent.feed(b"1", now)
    agent.render(now)
    assert "Do you want to proceed?" not in "\n".join(term.screen.display)


def test_wrapping_and_clipping_respect_wide_characters() -> None:
    row = Row([("● ", ""), ("日本語のテキスト " * 6, "")])
    for width in (20, 21, 33):
        for part in wrap_row(row, width):
            assert sum(text_width(t) for t, _ in part.segs) <= width
            screen = pyte.Screen(width, 1)
            pyte.ByteStream(screen).feed(paint_row(part, width).encode())
            assert screen.cursor.y == 0  # nothing wrapped onto a second line
