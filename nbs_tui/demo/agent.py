"""An imitation Claude Code agent for the demo fleet and the benchmarks.

Run it in a terminal (normally a tmux pane)::

    python -m nbs_tui.demo.agent [--name NAME] [--script SCRIPT] [--seed N] [--busy] [--rate R]
                                 [--marker-file PATH] [--marker-fifo PATH] [--project DIR] ...

It draws a full-screen imitation of Claude Code 2.1.2xx (compact welcome header, ``● `` message
blocks with ``⎿`` tool results, a spinner line with ``esc to interrupt`` while working,
``✻ Worked for 6s`` after a turn, the ``❯`` input box between two ``────`` rules, a Bash
permission menu, a plan-approval menu and an AskUserQuestion menu). It really takes keys:
characters, Backspace, Ctrl-U, Enter submits, Esc interrupts or cancels a menu, digits and
Up/Down+Enter answer menus, Shift-Tab cycles the permission mode, Ctrl-C twice exits.

Prompts it understands: ``/nbs-poll`` (check chats: may print ``\\nbs-register-chat ...`` in a
message block, append ``register-chat ...`` to ``.nbs/control-inbox`` and post to a
``.nbs/chat/*.chat`` in the real nbs-chat format); a prompt mentioning ``plan`` goes through the
plan-approval menu, ``bash``/``run``/``permission`` through the Bash permission menu,
``ask``/``question`` through AskUserQuestion; ``/clear`` clears; anything else is a short
turn with a tool call or two.

Scripts (``--script``), deterministic for a given ``--seed``:
  cycle       (default) random idle stretches, then a turn of a random kind; menus it reaches
              answer themselves with option 1 after ``--prompt-timeout`` seconds (default 45)
  idle        only reacts to typed prompts
  working     long working turns with a short idle between them
  permission  reaches a Bash permission menu and waits there until answered
  plan        plan mode; reaches the plan-approval menu and waits there
  question    reaches an AskUserQuestion menu and waits there
  nbs         frequent /nbs-poll-like turns: \\nbs- lines, inbox appends, chat posts
  error       turns that hit "API Error (529 Overloaded) · Retrying in …", then recover or fail
  busy        the same as ``--busy``

``--busy`` keeps working forever and prints colourful log lines (256 colours, truecolour,
bold, italic, wide characters) at ``--rate`` lines per second (default 10), for benchmarks.

Marker facility (latency benchmarks): the agent prints a marker line into its transcript
at once (it redraws without waiting for its next frame) when

* it receives SIGUSR1: the marker is ``NBS-MARK-<pid>-<n>`` (n = 1, 2, ...);
* a line is written to the FIFO given by ``--marker-fifo`` (it creates the FIFO if missing):
  the marker is that line, stripped, printed verbatim (choose a unique string).

After the marker's bytes have been written to the terminal it appends
``<marker>\\t<time.monotonic_ns()>\\t<time.time_ns()>\\n`` to ``--marker-file`` if given, so
a benchmark can take the time the marker reached the pty. CLOCK_MONOTONIC is system-wide on
Linux, so the benchmark can compare it with its own ``time.monotonic_ns()``. The marker line
appears as the last transcript line, just above the spinner and input box, as long as no
menu fills the whole pane (use ``--busy`` or ``--script idle`` for benchmarks).

``--proc-name claude`` rewrites the process's argv[0] (what ``ps`` and tmux's
``#{pane_current_command}`` show) and its comm name, so process-based discovery sees
``claude``. The window title is set with OSC 0 as real Claude Code does: ``✳ <topic>`` when
idle, a braille spinner glyph while working.

Standard library only (termios/tty raw mode, ANSI output, SIGWINCH), so it starts fast and
runs wherever the package is importable.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import ctypes
import json
import os
import random
import re
import select
import signal
import stat
import sys
import termios
import time
import tty
import unicodedata
import uuid
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from nbs_tui.core.chat import ChatError
from nbs_tui.files.chat_io import create_chat, post_message, read_chat

VERSION_LABEL = "v2.1.197"
MODEL_ID = "claude-opus-4-8"

# ---------------------------------------------------------------------------------------------
# Colours (SGR parameter strings). Claude's palette as seen in `tmux capture-pane -e` frames.
CLAUDE = "38;5;174"
CLAUDE_LIGHT = "38;5;216"
CLAUDE_TRUE = "38;2;215;119;87"
GREY = "38;5;246"
RULE = "38;5;244"
DIM = "2"
BOLD = "1"
ITALIC = "3"
WHITE = "38;5;231"
GREEN = "38;2;78;186;101"
RED = "38;2;255;107;128"
SUGGEST = "38;5;153"
PERM_BLUE = "38;5;153"
PLAN_TEAL = "38;5;73"
QUESTION_CHIP = "38;5;16;48;5;153"
ERROR_YELLOW = "38;5;220"
DASH = "38;5;239"
ACCEPT_PURPLE = "38;5;141"
NBSP = "\u00a0"
FULL_RULE = "─" * 1000
"""Rules are drawn wider than any pane; painting clips them to the width."""
FULL_DASH = "╌" * 1000
USER_BG = "48;5;237"
DIFF_ADD_BG = "48;2;34;92;43"
DIFF_DEL_BG = "48;2;122;41;54"
CODE_BLUE = "38;5;153"

SPINNER_GLYPHS = ("·", "✢", "✳", "✶", "✻", "✽", "✻", "✶", "✳", "✢")
TITLE_GLYPHS = ("⠂", "⠐")
SPINNER_INTERVAL = 0.15
PERMISSION_NOTIFY_AFTER = 6.0
"""Claude Code's Notification hook (permission_prompt) comes about 6 s after a menu appears."""
IDLE_NOTIFY_AFTER = 60.0
"""... and idle_prompt after messageIdleNotifThresholdMs (default 60 s) at the prompt."""
FRAME_INTERVAL = 1 / 30
"""While working, repaint at most this often (markers and keys repaint at once)."""

VERBS = (
    "Sautéing", "Brewing", "Baking", "Cogitating", "Crunching", "Percolating", "Undulating",
    "Kneading", "Marinating", "Simmering", "Pondering", "Noodling", "Whisking", "Actualizing",
    "Channelling", "Perusing", "Misting", "Enchanting", "Catapulting", "Frolicking",
)
PAST_VERBS = ("Worked", "Worked", "Worked", "Baked", "Brewed", "Cooked", "Sautéed", "Crunched", "Cogitated")

Seg = tuple[str, str]
"""A run of text and the SGR parameters it is drawn with ("" = default)."""


# ---------------------------------------------------------------------------------------------
# Text measuring, wrapping and painting


def char_width(ch: str) -> int:
    """Terminal cells taken by one character, as wcwidth would say for what we print."""
    code = ord(ch)
    if code < 32 or 0x7F <= code < 0xA0:
        return 0
    if unicodedata.combining(ch) or code in (0x200B, 0x200D, 0xFE0F):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def text_width(text: str) -> int:
    return sum(char_width(ch) for ch in text)


@dataclass(slots=True)
class Row:
    """One logical line: segments, how continuation lines are indented, and options."""

    segs: list[Seg]
    indent: int = 2
    wrap: bool = True
    fill: str | None = None
    """SGR parameters to pad the row to the full width with (the user-message background)."""
    painted_width: int = -1
    painted: str = ""


def wrap_row(row: Row, width: int) -> list[Row]:
    """Split a logical row into rows that each fit ``width`` cells (word wrap, hard split)."""
    if not row.wrap or width <= row.indent + 4:
        return [row]
    total = sum(text_width(t) for t, _ in row.segs)
    if total <= width:
        return [row]
    out: list[Row] = []
    current: list[Seg] = []
    used = 0
    pad = " " * row.indent

    def flush() -> None:
        nonlocal current, used
        out.append(Row(current, row.indent, False, row.fill))
        current = [(pad, row.fill or "")]
        used = row.indent

    for text, style in row.segs:
        for token in re.findall(r"\S+|\s+", text):
            tw = text_width(token)
            if used + tw <= width:
                current.append((token, style))
                used += tw
            elif token.isspace():
                flush()
            elif tw <= width - row.indent:
                flush()
                current.append((token, style))
                used += tw
            else:
                for ch in token:
                    cw = char_width(ch)
                    if used + cw > width:
                        flush()
                    current.append((ch, style))
                    used += cw
    if used > row.indent or not out:
        out.append(Row(current, row.indent, False, row.fill))
    return out


def paint_row(row: Row, width: int) -> str:
    """The escape-sequence string that draws ``row`` from column 0, clipped to ``width`` (cached)."""
    if row.painted_width == width:
        return row.painted
    row.painted = _paint(row, width)
    row.painted_width = width
    return row.painted


def _paint(row: Row, width: int) -> str:
    parts: list[str] = []
    used = 0
    last_style: str | None = None
    for text, style in row.segs:
        if style != last_style:
            parts.append(f"\x1b[0;{style}m" if style else "\x1b[0m")
            last_style = style
        chunk: list[str] = []
        full = False
        for ch in text:
            cw = char_width(ch)
            if used + cw > width:
                full = True
                break
            chunk.append(ch)
            used += cw
        parts.append("".join(chunk))
        if full or used >= width:
            break
    if row.fill is not None and used < width:
        parts.append(f"\x1b[0;{row.fill}m" if row.fill else "\x1b[0m")
        parts.append(" " * (width - used))
        used = width
    parts.append("\x1b[0m")
    if used < width:
        parts.append("\x1b[K")
    return "".join(parts)


class Terminal:
    """Owns the tty: raw mode, size, and a frame painter that redraws only changed rows.

    When the transcript pinned at the top of the screen moves up by n rows, the painter scrolls
    that region with a scroll margin (DECSTBM) instead of redrawing it, so a busy agent costs a
    few bytes per new line, as a real terminal program would.
    """

    def __init__(self, in_fd: int, out_fd: int) -> None:
        self.in_fd = in_fd
        self.out_fd = out_fd
        self._saved: list[Any] | None = None
        self._prev: list[str] = []
        self._prev_size = (0, 0)
        self._prev_region: tuple[int, int] | None = None  # (pinned rows, absolute first row)
        self._title = ""

    def size(self) -> tuple[int, int]:
        try:
            columns, lines = os.get_terminal_size(self.out_fd)
        except OSError:
            return 80, 24
        return max(columns, 20), max(lines, 8)

    def enter(self) -> None:
        if os.isatty(self.in_fd):
            self._saved = termios.tcgetattr(self.in_fd)
            tty.setraw(self.in_fd)
        self.write("\x1b[?25l\x1b[?2004h\x1b[2J\x1b[H")

    def leave(self) -> None:
        """Restore the tty; quietly, since on SIGHUP the pty may already be gone."""
        with contextlib.suppress(OSError):
            self.write("\x1b[r\x1b[0m\x1b[?2004l\x1b[?25h\r\n")
        if self._saved is not None:
            with contextlib.suppress(OSError, termios.error):
                termios.tcsetattr(self.in_fd, termios.TCSADRAIN, self._saved)

    def write(self, data: str) -> None:
        raw = data.encode("utf-8")
        while raw:
            try:
                written = os.write(self.out_fd, raw)
            except InterruptedError:
                continue
            except BlockingIOError:
                select.select([], [self.out_fd], [], 1.0)
                continue
            raw = raw[written:]

    def set_title(self, title: str) -> None:
        if title != self._title:
            self._title = title
            self.write(f"\x1b]0;{title}\x07")

    def invalidate(self) -> None:
        self._prev = []
        self._prev_region = None

    def paint(self, rows: list[str], width: int, height: int, region: tuple[int, int] | None) -> None:
        """Draw ``rows`` (already painted strings, one per screen row).

        ``region`` is (pinned rows, absolute index of the first transcript row shown) when the
        transcript fills the top ``pinned`` rows, else None.
        """
        out: list[str] = []
        if (width, height) != self._prev_size:
            self._prev = []
            self._prev_region = None
            self._prev_size = (width, height)
            out.append("\x1b[0m\x1b[2J")
        prev = self._prev + [""] * (height - len(self._prev))
        if region and self._prev_region and self._prev and region[0] == self._prev_region[0]:
            pinned = region[0]
            shift = region[1] - self._prev_region[1]
            if 0 < shift < pinned:
                out.append(f"\x1b[0m\x1b[1;{pinned}r\x1b[{pinned};1H" + "\n" * shift + "\x1b[r")
                prev = prev[shift:pinned] + ["\x1b[K"] * shift + prev[pinned:]
        for index, text in enumerate(rows):
            if prev[index] != text:
                out.append(f"\x1b[{index + 1};1H{text}")
        self._prev = list(rows)
        self._prev_region = region
        if out:
            self.write("".join(out))


# ---------------------------------------------------------------------------------------------
# Turn steps and menus


class Mode(Enum):
    IDLE = "idle"
    WORKING = "working"
    MENU = "menu"


@dataclass(slots=True)
class Work:
    """A turn step: keep the spinner going for ``seconds``."""

    seconds: float
    verb: str | None = None


@dataclass(slots=True)
class Menu:
    """A turn step: show a menu and wait; the turn receives the chosen number or None (Esc)."""

    kind: str  # "permission" | "plan" | "question"
    head: list[Row]
    options: list[tuple[str, str]]  # (label, description)
    foot: list[Row]
    rule: str = RULE
    indent: str = " "
    gap: bool = True
    """A blank row between the transcript and the menu's rule."""
    muted: frozenset[int] = frozenset()
    """Options (0-based) whose label is grey, like "Type something."."""
    separator_before: int | None = None
    selected: int = 0
    shown_at: float = 0.0
    auto_answer_after: float | None = None
    hook: tuple[str, dict[str, Any]] | None = None
    """(tool_name, tool_input) for the PermissionRequest hook this menu stands for."""
    notified: bool = False


Step = Work | Menu
Turn = Generator[Step, int | None, None]


@dataclass(slots=True)
class Task:
    title: str
    files: tuple[str, ...]
    command: str
    command_desc: str
    output: tuple[str, ...]
    summary: str
    plan: tuple[str, ...]
    question: str
    answers: tuple[tuple[str, str], ...]


TASKS = (
    Task(
        "Retry flaky fetches",
        ("src/fetch.py", "tests/test_fetch.py", "src/http/backoff.py"),
        "pytest -q tests/test_fetch.py",
        "Run the fetch tests",
        ("....F.", "FAILED tests/test_fetch.py::test_retry_after - assert 1 == 3", "1 failed, 5 passed in 0.42s"),
        "The fetcher now retries 3 times with jittered backoff and honours `Retry-After`; the flaky test passes 50/50 runs.",
        ("Wrap `fetch()` in a retry loop with jittered exponential backoff", "Honour `Retry-After` on 429 and 503",
         "Add tests for the retry budget and the header", "Run the suite 50 times to check the flake is gone"),
        "How many retries should a fetch get before it gives up?",
        (("3 retries", "Matches the upstream client's default"), ("5 retries", "Better for the slow mirror"),
         ("No limit", "Retry until the deadline only")),
    ),
    Task(
        "Parse the control inbox",
        ("nbs/inbox.py", "nbs/registry.py", "tests/test_inbox.py"),
        "python -m pytest tests/test_inbox.py -q",
        "Run the inbox tests",
        ("..........", "10 passed in 0.08s"),
        "The inbox reader keeps its offset across restarts and skips comments and one-word lines.",
        ("Read `.nbs/control-inbox` from the saved line offset", "Skip `#` comments, blanks and one-word lines",
         "Apply `register-chat` / `unregister-chat` to the registry atomically", "Cover replays from line 0"),
        "Where should the inbox offset be stored?",
        (("In the registry file", "One file to keep in sync"), ("Beside the inbox", "`.nbs/control-inbox.offset`"),
         ("In memory only", "Replay from line 0 at every start")),
    ),
    Task(
        "Speed up the screen mirror",
        ("mirror/screen.py", "mirror/diff.py", "bench/bench_mirror.py"),
        "python bench/bench_mirror.py --panes 50",
        "Benchmark the mirror with 50 panes",
        ("panes=50  frames=3000  p50=4.1ms  p99=11.8ms", "cpu=23%  rss=61MB"),
        "Dirty-row repaints cut p99 frame time from 31 ms to 12 ms at 50 panes 🚀",
        ("Track dirty rows in the screen model", "Repaint only dirty rows in the widget",
         "Cache painted strips per row", "Re-run the 50-pane benchmark"),
        "Which frame budget should the mirror aim for?",
        (("16 ms", "60 Hz, smooth scrolling"), ("33 ms", "30 Hz, half the CPU"), ("Adaptive", "Drop to 10 Hz when idle")),
    ),
    Task(
        "Docs: quick start",
        ("README.md", "docs/quickstart.md", "docs/img/fleet.svg"),
        "make docs",
        "Build the documentation",
        ("sphinx-build -b html docs docs/_build", "build succeeded, 2 warnings.", "The HTML pages are in docs/_build."),
        "The quick start now shows `nbs-tui demo` first, links the keys table and has a 日本語 stub.",
        ("Lead the README with `nbs-tui demo`", "Add a screenshot of the fleet view",
         "Document every key binding in one table", "Fix the two Sphinx warnings"),
        "Which screenshot should lead the README?",
        (("Fleet grid", "Six agents at once"), ("Pane view", "One agent, full size"), ("Both", "Side by side")),
    ),
)

DIFFS: dict[str, tuple[tuple[str, str, tuple[str, ...]], ...]] = {
    ".py": (
        ("    def fetch(self, url):", "       return self.session.get(url)",
         ("       for attempt in retries(3):", "           return self.session.get(url)")),
        ("def test_retry_after(server):", "    assert calls == 1",
         ("    server.reply(429, retry_after=0)", "    assert calls == 3")),
    ),
    ".md": (
        ("## Quick start", "Run `nbs-tui` inside tmux.", ("Run `nbs-tui demo` to see a fleet at once.", "")),
        ("| key | action |", "| p | poll |", ("| p | poll now |", "| d | details |")),
    ),
}
"""Edit snippets by file suffix: (context line, removed line, added lines)."""

PERMISSION_MODES = ("default", "accept-edits", "plan", "auto")
"""``--mode`` values, in the order of ``Agent.MODES`` (the footer texts)."""

CHIPS = {
    "Retry flaky fetches": "Retries",
    "Parse the control inbox": "Offset",
    "Speed up the screen mirror": "Frame budget",
    "Docs: quick start": "Screenshot",
}
"""The short header chip AskUserQuestion shows above each task's question."""

TIPS = (
    "Tip: Use /memory to view and manage Claude memory",
    "Tip: Press shift+tab to cycle between permission modes",
    "Tip: Run /init to create a CLAUDE.md file with instructions for Claude",
    "Tip: Use ctrl+o to expand tool results",
)

NEW_CHATS = ("debug", "review", "bench", "release")
BUSY_WORDS = ("compiling", "linking", "testing", "fetching", "indexing", "rendering", "hashing", "packing")
BUSY_WIDE = ("✓ 完了", "⚠ 警告", "▶ 実行中", "構築", "テスト", "🔧")


def _duration(seconds: float) -> str:
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m {secs}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes}m {secs}s"


def _tokens(count: int) -> str:
    return f"{count / 1000:.1f}k" if count >= 1000 else str(count)


# ---------------------------------------------------------------------------------------------
# What Claude Code writes besides the screen


def _proc_start() -> str | None:
    """Field 22 of /proc/self/stat (start time in clock ticks), as Claude Code's ``procStart``."""
    try:
        raw = Path("/proc/self/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2:].split()
    return fields[19] if len(fields) > 19 else None


class SideChannels:
    """The session-status file, transcript and hook calls a real Claude Code process would produce.

    ``config_dir`` plays ``$CLAUDE_CONFIG_DIR``: the agent keeps ``<config_dir>/sessions/<pid>.json``
    (status idle | busy | waiting, waitingFor, sessionId, cwd, version, statusUpdatedAt,
    procStart) up to date and removes it on exit, and appends its conversation to
    ``<config_dir>/projects/<slug>/<sessionId>.jsonl`` (``user`` prompts and tool results,
    ``assistant`` text / tool_use / thinking / API-error records, ``system`` turn_duration).
    ``spool`` receives one JSON line per hook call in the format of nbs-tui's own hook script
    (``nbs_pane``, ``nbs_tmux``, ``nbs_time``, ``payload``), written with one ``write()`` on an
    O_APPEND descriptor. Both are opt-in.
    """

    def __init__(self, config_dir: Path | None, spool: Path | None, cwd: Path, name: str) -> None:
        self.config_dir = config_dir
        self.spool = spool
        self.cwd = str(cwd)
        self.name = name
        self.session_id = str(uuid.uuid4())
        self.started_ms = int(time.time() * 1000)
        self.proc_start = _proc_start()
        self._status: tuple[str, str | None] | None = None
        self.muted = False
        self.path = config_dir / "sessions" / f"{os.getpid()}.json" if config_dir else None
        slug = re.sub(r"[^A-Za-z0-9]", "-", self.cwd)
        self.transcript_path = config_dir / "projects" / slug / f"{self.session_id}.jsonl" if config_dir else None
        for folder in (self.path, self.transcript_path):
            if folder is not None:
                with contextlib.suppress(OSError):
                    folder.parent.mkdir(parents=True, exist_ok=True)
        self._parent: str | None = None
        self._pending_text: str | None = None

    def status(self, status: str, waiting_for: str | None = None) -> None:
        if self.path is None or self._status == (status, waiting_for):
            return
        self._status = (status, waiting_for)
        now_ms = int(time.time() * 1000)
        data: dict[str, Any] = {
            "pid": os.getpid(), "sessionId": self.session_id, "cwd": self.cwd, "startedAt": self.started_ms,
            "version": VERSION_LABEL.lstrip("v"), "status": status, "statusUpdatedAt": now_ms, "updatedAt": now_ms,
            "procStart": self.proc_start, "name": self.name,
        }
        if waiting_for:
            data["waitingFor"] = waiting_for
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        with contextlib.suppress(OSError):  # the folder is made once: never re-create a removed one
            tmp.write_text(json.dumps(data), encoding="utf-8")
            os.replace(tmp, self.path)

    def hook(self, event: str, **fields: Any) -> None:
        if self.spool is None or self.muted:
            return
        payload = {"session_id": self.session_id, "transcript_path": str(self.transcript_path or ""), "cwd": self.cwd,
                   "hook_event_name": event, **fields}
        record = {
            "nbs_pane": os.environ.get("TMUX_PANE", ""),
            "nbs_tmux": os.environ.get("TMUX", "").split(",")[0],
            "nbs_time": time.time(),
            "payload": payload,
        }
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        with contextlib.suppress(OSError):
            fd = os.open(self.spool, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)

    # -- the transcript -------------------------------------------------------------------------

    def _record(self, kind: str, message: dict[str, Any] | None = None, **extra: Any) -> None:
        if self.transcript_path is None:
            return
        stamp = time.time()
        ident = str(uuid.uuid4())
        record: dict[str, Any] = {
            "parentUuid": self._parent, "isSidechain": False, "userType": "external", "cwd": self.cwd,
            "sessionId": self.session_id, "version": VERSION_LABEL.lstrip("v"), "type": kind, "uuid": ident,
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(stamp)) + f".{int(stamp * 1000) % 1000:03d}Z",
        }
        if message is not None:
            record["message"] = message
        record.update(extra)
        self._parent = ident
        with contextlib.suppress(OSError):
            fd = os.open(self.transcript_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
            finally:
                os.close(fd)

    def _assistant(self, content: list[dict[str, Any]], stop_reason: str | None) -> None:
        self._record("assistant", {"model": MODEL_ID, "id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message",
                                   "role": "assistant", "content": content, "stop_reason": stop_reason})

    def _flush_text(self, stop_reason: str) -> None:
        if self._pending_text is not None:
            text, self._pending_text = self._pending_text, None
            self._assistant([{"type": "text", "text": text}], stop_reason)

    def user_prompt(self, text: str) -> None:
        self._flush_text("end_turn")
        self._record("user", {"role": "user", "content": text})

    def assistant_text(self, text: str) -> None:
        """Held back until the next record says whether the turn goes on (tool_use) or ends."""
        self._flush_text("tool_use")
        self._pending_text = text

    def thinking(self) -> None:
        self._flush_text("tool_use")
        self._assistant([{"type": "thinking", "thinking": "Let me look at the code first.", "signature": ""}], None)

    def tool_use(self, name: str, tool_input: dict[str, Any]) -> str:
        self._flush_text("tool_use")
        ident = f"toolu_{uuid.uuid4().hex[:24]}"
        self._assistant([{"type": "tool_use", "id": ident, "name": name, "input": tool_input}], "tool_use")
        return ident

    def tool_result(self, ident: str, output: str) -> None:
        self._record("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": ident,
                                                            "content": output, "is_error": False}]})

    def turn_end(self, duration_ms: int) -> None:
        self._flush_text("end_turn")
        self._record("system", subtype="turn_duration", durationMs=duration_ms, isMeta=False)

    def interrupted(self) -> None:
        self._flush_text("end_turn")
        self._record("user", {"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user]"}]})

    def api_error(self, text: str, status: int, code: str) -> None:
        self._flush_text("tool_use")
        self._record("assistant", {"model": "<synthetic>", "role": "assistant", "content": [{"type": "text", "text": text}],
                                   "stop_reason": "stop_sequence"}, isApiErrorMessage=True, error=code, apiErrorStatus=status)

    def close(self, reason: str) -> None:
        self.hook("SessionEnd", reason=reason)
        if self.path is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()


# ---------------------------------------------------------------------------------------------
# The agent


@dataclass(slots=True)
class Options:
    name: str = "claude"
    script: str = "cycle"
    seed: int | None = None
    busy: bool = False
    rate: float = 10.0
    project: Path = field(default_factory=Path.cwd)
    marker_file: Path | None = None
    marker_fifo: Path | None = None
    prompt_timeout: float | None = None
    legacy_spinner: bool = False
    placeholder: bool = False
    model: str = "Opus 4.8 (1M context) · Claude Max"
    start_delay: float | None = None
    warm: int = 0
    speed: float = 1.0
    mode: str = "default"
    inbox: str = "shared"
    claude_config: Path | None = None
    hook_spool: Path | None = None


class Agent:
    """The imitation: a transcript, an input box, a turn engine driven by scripts and keys."""

    MODES = ("", "⏵⏵ accept edits on", "⏸ plan mode on", "⏵⏵ auto mode on")
    """Shift-Tab cycles these; index 2 is plan mode, 3 is what "Yes, and use auto mode" turns on."""

    def __init__(self, options: Options, terminal: Terminal, clock: Callable[[], float] = time.monotonic) -> None:
        self.opt = options
        self.term = terminal
        self.clock = clock
        self.rng = random.Random(options.seed)
        self.task = TASKS[self.rng.randrange(len(TASKS))]
        self.rows: list[Row] = []
        self._phys: list[Row] = []
        self._phys_width = 0
        self._phys_base = 0  # physical rows dropped from the front (transcript trimming)
        self._wrapped_upto = 0
        self.mode = Mode.IDLE
        self.input = ""
        self.cursor = 0
        self.queued: list[str] = []
        self.turn: Turn | None = None
        self.turn_started = 0.0
        self.wait_until = 0.0
        self.verb = "Sautéing"
        self.tokens = 0
        self.menu: Menu | None = None
        self.tip: str | None = None
        self.retry: tuple[int, float] | None = None
        self.perm_mode = 2 if options.script == "plan" else PERMISSION_MODES.index(options.mode)
        self.show_placeholder = options.placeholder
        self.next_auto: float | None = None
        self.running = True
        self.dirty = True
        self.last_ctrl_c = -10.0
        self.notice: str | None = None
        self.marker_seq = 0
        self.busy_emitted = 0
        self.busy_started = 0.0
        self.polls = 0
        self.registered: list[str] = []
        self.fx = random.Random()
        """Randomness that depends on timing (token counts); kept apart so --seed stays exact."""
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._paste: list[str] | None = None
        self.side = SideChannels(options.claude_config, options.hook_spool, options.project, options.name)
        self.pending_tool: tuple[str, dict[str, Any], str] | None = None
        self.last_message = ""
        self.idle_since = 0.0
        self.idle_notified = True
        self.welcome()

    # -- transcript ---------------------------------------------------------------------------

    def add(self, segs: list[Seg], indent: int = 2, wrap: bool = True, fill: str | None = None) -> Row:
        row = Row(segs, indent, wrap, fill)
        self.rows.append(row)
        self.dirty = True
        if len(self.rows) > 3000:
            self._trim()
        return row

    def _trim(self) -> None:
        width = self._phys_width
        drop = len(self.rows) - 2000
        if width and self._wrapped_upto >= drop:
            dropped_phys = sum(len(wrap_row(r, width)) for r in self.rows[:drop])
            del self._phys[:dropped_phys]
            self._phys_base += dropped_phys
            self._wrapped_upto -= drop
        else:
            self._phys_width = 0
            self.term.invalidate()
        del self.rows[:drop]

    def drop_row(self, row: Row) -> None:
        """Remove a placeholder row (``⎿  Waiting…``) from the transcript; rewraps on next paint."""
        for index in range(len(self.rows) - 1, -1, -1):
            if self.rows[index] is row:
                del self.rows[index]
                self._phys_width = 0
                self.term.invalidate()
                self.dirty = True
                return

    def blank(self) -> None:
        self.add([("", "")])

    def say(self, text: str | list[Seg], bullet: str = "") -> None:
        """A ``● `` message block; ``text`` may hold several paragraphs separated by newlines."""
        self.blank()
        self.last_message = text if isinstance(text, str) else "".join(t for t, _ in text)
        self.side.assistant_text(self.last_message)
        if isinstance(text, str):
            paragraphs = text.split("\n")
            first = _inline_code(paragraphs[0])
            self.add([("● ", bullet or WHITE), *first])
            for para in paragraphs[1:]:
                self.add([("  ", ""), *_inline_code(para)] if para else [("", "")])
        else:
            self.add([("● ", bullet or WHITE), *text])

    def tool(self, name: str, arg: str, ok: bool = True, pending: bool = False) -> None:
        self._post_tool()
        tool_input: dict[str, Any] = {"command": arg} if name == "Bash" else {"file_path": arg}
        self.pending_tool = (name, tool_input, self.side.tool_use(name, tool_input))
        self.side.hook("PreToolUse", tool_name=name, tool_input=tool_input)
        self.blank()
        self.add([("● ", GREY if pending else GREEN if ok else RED), (name, BOLD), (f"({arg})", "")], indent=2)

    def _post_tool(self, output: str = "") -> None:
        if self.pending_tool is not None:
            name, tool_input, ident = self.pending_tool
            self.pending_tool = None
            self.side.tool_result(ident, output)
            self.side.hook("PostToolUse", tool_name=name, tool_input=tool_input, tool_response={"stdout": output})

    def result(self, lines: Iterable[str | list[Seg]], style: str = GREY) -> None:
        lines = list(lines)
        self._post_tool("\n".join(x if isinstance(x, str) else "".join(t for t, _ in x) for x in lines))
        for index, line in enumerate(lines):
            lead = "  ⎿  " if index == 0 else "     "
            segs = [(line, style)] if isinstance(line, str) else line
            self.add([(lead, GREY), *segs], indent=5)

    def user(self, text: str) -> None:
        self.side.hook("UserPromptSubmit", prompt=text)
        self.side.user_prompt(text)
        self.blank()
        self.add([("❯ ", "38;5;239;" + USER_BG), (text, WHITE + ";" + USER_BG)], indent=2)

    def welcome(self) -> None:
        home = str(Path.home())
        where = str(self.opt.project)
        if where.startswith(home + "/"):
            where = "~" + where[len(home):]
        logo = (
            [(" ▐", CLAUDE), ("▛███▜", CLAUDE + ";48;5;16"), ("▌", CLAUDE)],
            [("▝▜", CLAUDE), ("█████", CLAUDE + ";48;5;16"), ("▛▘", CLAUDE)],
            [("  ▘▘ ▝▝  ", CLAUDE)],
        )
        texts: list[list[Seg]] = [
            [("   ", ""), ("Claude Code", BOLD), (" ", ""), (VERSION_LABEL, GREY)],
            [("  ", ""), (self.opt.model, GREY)],
            [("  ", ""), (where, GREY)],
        ]
        for left, right in zip(logo, texts, strict=True):
            self.add(left + right, wrap=False)
        self.blank()
        self.add([(" ", ""), ("▎", DIM + ";" + CLAUDE), (" ", ""), ("Welcome to the nbs-tui demo fleet", BOLD)], wrap=False)
        self.add(
            [(" ", ""), ("▎", DIM + ";" + CLAUDE), (" ", ""), ("This is an imitation agent named ", GREY), (self.opt.name, CLAUDE_LIGHT + ";" + BOLD),
             (" · type a prompt, or ", GREY), ("/nbs-poll", WHITE), (" · ", GREY), ("/help", ITALIC + ";" + GREY)],
            indent=3,
        )

    # -- physical rows --------------------------------------------------------------------------

    def physical(self, width: int) -> list[Row]:
        if width != self._phys_width:
            self._phys_width = width
            self._phys = []
            self._wrapped_upto = 0
        for row in self.rows[self._wrapped_upto:]:
            self._phys.extend(wrap_row(row, width))
        self._wrapped_upto = len(self.rows)
        return self._phys

    # -- the bottom area ------------------------------------------------------------------------

    def bottom(self, width: int, now: float) -> list[Row]:
        rows: list[Row] = []
        if self.mode is Mode.MENU and self.menu is not None:
            return self.menu_rows(self.menu, width)
        if self.mode is Mode.WORKING:
            rows.append(Row([("", "")]))
            if self.retry is not None:
                attempt, until = self.retry
                left = max(1, int(until - now + 0.999))
                rows.append(Row([("✻", CLAUDE), (" ", ""),
                                 (f"API error · Retrying in {left}s · attempt {attempt}/10", GREY)], wrap=False))
            else:
                rows.append(Row(self.spinner_segs(now), wrap=False))
            if self.tip and self.retry is None:
                rows.append(Row([("  ⎿  ", GREY), (self.tip, GREY)], wrap=False))
        for text in self.queued:
            rows.append(Row([("  ❯ ", GREY), (text, GREY)], wrap=False))
        rows.append(Row([("", "")]))
        rows.append(Row([("─" * width, RULE)], wrap=False))
        rows.extend(self.input_rows(width))
        rows.append(Row([("─" * width, RULE)], wrap=False))
        rows.append(Row(self.footer_segs(width), wrap=False))
        return rows

    def input_rows(self, width: int) -> list[Row]:
        if not self.input and self.show_placeholder:
            return [Row([("❯" + NBSP, ""), ("Try \"refactor fetch.py to retry on 429\"", DIM)], wrap=False)]
        text = self.input
        before, after = text[: self.cursor], text[self.cursor:]
        under = after[:1] or " "
        prompt = GREY if self.mode is Mode.WORKING else ""
        segs: list[Seg] = [("❯" + NBSP, prompt), (before, ""), (under, "7"), (after[1:], "")]
        rows = wrap_row(Row(segs, indent=2), width)
        return rows[-6:]

    def footer_segs(self, width: int) -> list[Seg]:
        """``? for shortcuts · ← for agents`` (or the mode, or ``esc to interrupt``) on the left,
        ``● high · /effort`` on the right; the left hint goes while text is typed, as in 2.1.197."""
        left: list[Seg] = [("  ", "")]
        if self.notice:
            left.append((self.notice, GREY))
        else:
            mode = self.MODES[self.perm_mode]
            hints: list[str] = []
            if mode:
                left.append((mode, PLAN_TEAL if self.perm_mode == 2 else ACCEPT_PURPLE if self.perm_mode == 1 else
                             ERROR_YELLOW))
                left.append((" (shift+tab to cycle)", GREY))
            if not self.input:
                if self.mode is Mode.WORKING:
                    hints.append("esc to interrupt")
                elif not mode:
                    hints.append("? for shortcuts")
                hints.append("← for agents")
            if hints:
                left.append(((" · " if mode else "") + " · ".join(hints), GREY))
        right: list[Seg] = [("● high · /effort", GREY)]
        used = sum(text_width(t) for t, _ in left)
        room = width - 2 - used - text_width(right[0][0])
        return [*left, (" " * room, ""), *right] if room >= 2 else left

    def spinner_segs(self, now: float) -> list[Seg]:
        elapsed = now - self.turn_started
        glyph = SPINNER_GLYPHS[int(now / SPINNER_INTERVAL) % len(SPINNER_GLYPHS)]
        segs: list[Seg] = [(glyph, CLAUDE), (" ", "")]
        # A shimmer: one letter of the verb in truecolour, moving along it.
        word = self.verb
        hot = int(now * 8) % (len(word) + 6)
        for index, ch in enumerate(word):
            segs.append((ch, CLAUDE_TRUE + ";1" if abs(index - hot) <= 1 else CLAUDE))
        segs.append(("…", CLAUDE_LIGHT))
        detail = f"{_duration(elapsed)} · ↓ {_tokens(self.tokens)} tokens"
        if self.opt.legacy_spinner:
            detail += " · esc to interrupt"
        segs.append((f" ({detail})", GREY))
        return segs

    def menu_rows(self, menu: Menu, width: int) -> list[Row]:
        rows: list[Row] = [Row([("", "")])] if menu.gap else []
        rows.append(Row([(FULL_RULE, menu.rule)], wrap=False))
        for row in menu.head:
            rows.extend(wrap_row(row, width))
        lead = menu.indent
        for index, (label, desc) in enumerate(menu.options):
            if menu.separator_before == index:
                rows.append(Row([(FULL_RULE, menu.rule)], wrap=False))
            chosen = index == menu.selected
            mark: list[Seg] = [("❯", SUGGEST), (" ", "")] if chosen else [("  ", "")]
            style = SUGGEST if chosen else (GREY if index in menu.muted else "")
            segs: list[Seg] = [(lead, ""), *mark, (f"{index + 1}.", GREY), (" ", ""), (label, style)]
            rows.extend(wrap_row(Row(segs, indent=len(lead) + 5), width))
            if desc:
                rows.extend(wrap_row(Row([(" " * (len(lead) + 5), ""), (desc, GREY)], indent=len(lead) + 5), width))
        for row in menu.foot:
            rows.extend(wrap_row(row, width))
        return rows

    # -- title ------------------------------------------------------------------------------------

    def title(self, now: float) -> str:
        if self.mode is Mode.WORKING:
            return f"{TITLE_GLYPHS[int(now) % 2]} {self.task.title}"
        return f"✳ {self.task.title}" if self.turn_started else "✳ Claude Code"

    # -- drawing ------------------------------------------------------------------------------------

    def render(self, now: float) -> None:
        width, height = self.term.size()
        bottom = self.bottom(width, now)
        phys = self.physical(width)
        avail = height - len(bottom)
        if avail < 0:
            bottom = bottom[-height:]
            avail = 0
        region: tuple[int, int] | None
        if len(phys) <= avail:
            shown = list(phys)
            region = None
        else:
            start = len(phys) - avail
            shown = phys[start:] if avail else []
            region = (avail, self._phys_base + start) if avail else None
        screen = shown + bottom
        painted = [paint_row(row, width) for row in screen]
        painted += ["\x1b[0m\x1b[K"] * (height - len(painted))
        self.term.paint(painted, width, height, region)
        self.term.set_title(self.title(now))
        self.dirty = False
        if self.mode is Mode.IDLE:
            self.side.status("idle")
        elif self.mode is Mode.WORKING:
            self.side.status("busy")
        else:
            self.side.status("waiting", "permission prompt")

    # -- keys -----------------------------------------------------------------------------------

    def feed(self, data: bytes, now: float) -> None:
        text = self._decoder.decode(data)
        index = 0
        while index < len(text):
            ch = text[index]
            if self._paste is not None:
                end = text.find("\x1b[201~", index)
                if end < 0:
                    self._paste.append(text[index:])
                    return
                self._paste.append(text[index:end])
                self.insert("".join(self._paste).replace("\r", " ").replace("\n", " "))
                self._paste = None
                index = end + 6
                continue
            if ch == "\x1b":
                rest = text[index + 1:]
                if not rest:
                    self.key("escape", now)
                    index += 1
                    continue
                match = re.match(r"\[([0-9;]*)([A-Za-z~])|O([A-Za-z])", rest)
                if match:
                    seq = match.group(0)
                    index += 1 + len(seq)
                    if seq == "[200~":
                        self._paste = []
                        continue
                    names = {"A": "up", "B": "down", "C": "right", "D": "left", "Z": "backtab", "H": "home", "F": "end"}
                    final = match.group(2) or match.group(3)
                    if final == "~":
                        named = {"3": "delete", "1": "home", "4": "end", "7": "home", "8": "end"}
                        self.key(named.get(match.group(1), "unknown"), now)
                    else:
                        self.key(names.get(final, "unknown"), now)
                    continue
                self.key("escape", now)
                index += 1
                continue
            index += 1
            if ch in "\r\n":
                self.key("enter", now)
            elif ch in "\x7f\x08":
                self.key("backspace", now)
            elif ch == "\x03":
                self.key("ctrl-c", now)
            elif ch == "\x04":
                self.key("ctrl-d", now)
            elif ch == "\x15":
                self.key("ctrl-u", now)
            elif ch == "\x01":
                self.key("home", now)
            elif ch == "\x05":
                self.key("end", now)
            elif ch == "\t":
                self.key("tab", now)
            elif ch >= " ":
                self.insert(ch)
            self.dirty = True

    def insert(self, text: str) -> None:
        if self.mode is Mode.MENU and self.menu is not None:
            for ch in text:
                if ch.isdigit():
                    number = int(ch)
                    if 1 <= number <= len(self.menu.options):
                        self.answer(number)
                        return
            return
        self.input = self.input[: self.cursor] + text + self.input[self.cursor:]
        self.cursor += len(text)
        self.show_placeholder = False
        self.dirty = True

    def key(self, name: str, now: float) -> None:
        self.dirty = True
        if name != "ctrl-c":
            self.notice = None
        if self.mode is Mode.MENU and self.menu is not None:
            menu = self.menu
            if name == "up":
                menu.selected = (menu.selected - 1) % len(menu.options)
            elif name in ("down", "tab"):
                menu.selected = (menu.selected + 1) % len(menu.options)
            elif name == "enter":
                self.answer(menu.selected + 1)
            elif name in ("escape", "ctrl-c"):
                self.answer(None)
            return
        if name == "enter":
            text = self.input.strip()
            self.input, self.cursor = "", 0
            if text:
                self.submit(text, now)
        elif name == "backspace":
            if self.cursor:
                self.input = self.input[: self.cursor - 1] + self.input[self.cursor:]
                self.cursor -= 1
        elif name == "delete":
            self.input = self.input[: self.cursor] + self.input[self.cursor + 1:]
        elif name == "left":
            self.cursor = max(0, self.cursor - 1)
        elif name == "right":
            self.cursor = min(len(self.input), self.cursor + 1)
        elif name == "home":
            self.cursor = 0
        elif name == "end":
            self.cursor = len(self.input)
        elif name == "ctrl-u":
            self.input, self.cursor = self.input[self.cursor:], 0
        elif name == "backtab":
            self.perm_mode = (self.perm_mode + 1) % len(self.MODES)
        elif name == "escape":
            if self.mode is Mode.WORKING:
                self.interrupt(now)
        elif name == "ctrl-c":
            if self.mode is Mode.WORKING:
                self.interrupt(now)
            elif self.input:
                self.input, self.cursor = "", 0
            elif now - self.last_ctrl_c < 2.0:
                self.running = False
            else:
                self.last_ctrl_c = now
                self.notice = "Press Ctrl-C again to exit"
        elif name == "ctrl-d" and not self.input:
            self.running = False

    # -- turns ----------------------------------------------------------------------------------

    def submit(self, text: str, now: float) -> None:
        if self.mode is Mode.WORKING:
            self.queued.append(text)
            return
        if text in ("/clear", "/reset"):
            self.rows.clear()
            self._phys_width = 0
            self._phys_base = 0
            self.term.invalidate()
            self.welcome()
            return
        if text in ("/exit", "/quit"):
            self.running = False
            return
        self.user(text)
        self.start_turn(self.turn_for(text), now)

    def turn_for(self, text: str) -> Turn:
        low = text.lower()
        if low.startswith("/nbs-poll"):
            return self.turn_nbs_poll()
        if low.startswith("/help"):
            return self.turn_help()
        # Whole words only: "task" must not read as "ask", nor "explanation" as "plan".
        words = set(re.findall(r"[a-z]+", low))
        if "plan" in words:
            return self.turn_plan()
        if words & {"bash", "run", "permission", "shell"}:
            return self.turn_permission()
        if words & {"ask", "question", "choose"}:
            return self.turn_question()
        if "busy" in words:
            return self.turn_busy()
        return self.turn_generic(text)

    def start_turn(self, turn: Turn, now: float) -> None:
        self.turn = turn
        self.turn_started = now
        self.mode = Mode.WORKING
        self.verb = self.rng.choice(VERBS)
        self.tokens = 0
        self.tip = self.rng.choice(TIPS) if self.rng.random() < 0.3 else None
        self.wait_until = now
        self.advance(None, now)

    def advance(self, value: int | None, now: float) -> None:
        if self.turn is None:
            return
        try:
            step = self.turn.send(value)
        except StopIteration:
            self.finish_turn(now)
            return
        self.dirty = True
        if isinstance(step, Work):
            self.mode = Mode.WORKING
            self.wait_until = now + step.seconds / self.opt.speed
            if step.verb:
                self.verb = step.verb
        else:
            step.shown_at = now
            if step.auto_answer_after is None and self.opt.prompt_timeout:
                step.auto_answer_after = self.opt.prompt_timeout / self.opt.speed
            self.menu = step
            self.mode = Mode.MENU
            if step.hook is not None:
                self.side.hook("PermissionRequest", tool_name=step.hook[0], tool_input=step.hook[1])

    def answer(self, number: int | None) -> None:
        now = self.clock()
        self.menu = None
        self.mode = Mode.WORKING
        self.dirty = True
        self.advance(number, now)

    def finish_turn(self, now: float) -> None:
        self.turn = None
        self.mode = Mode.IDLE
        self.tip = None
        self.retry = None
        self.blank()
        past = "Worked" if self.opt.script == "idle" else self.rng.choice(PAST_VERBS)
        self.add([("✻ ", GREY), (f"{past} for {_duration(max(1.0, now - self.turn_started))}", GREY)])
        self.dirty = True
        self._post_tool()
        self.side.turn_end(int(max(0.0, now - self.turn_started) * 1000))
        self.side.hook("Stop", stop_hook_active=False, last_assistant_message=self.last_message)
        self.idle_since, self.idle_notified = now, False
        if self.queued:
            text = self.queued.pop(0)
            self.user(text)
            self.start_turn(self.turn_for(text), now)
            return
        self.schedule_auto(now)

    def interrupt(self, now: float) -> None:
        if self.turn is not None:
            self.turn.close()
        self.turn = None
        self.menu = None
        self.mode = Mode.IDLE
        self.tip = None
        self.retry = None
        self.queued.clear()
        self.add([("  ⎿  ", GREY), ("Interrupted · What should Claude do instead?", RED)], indent=5)
        self.pending_tool = None
        self.side.interrupted()
        self.idle_since, self.idle_notified = now, False
        self.schedule_auto(now, longer=True)

    # -- autonomy ---------------------------------------------------------------------------------

    def schedule_auto(self, now: float, longer: bool = False) -> None:
        script = self.opt.script
        if script == "idle":
            self.next_auto = None
            return
        low, high = {
            "cycle": (6.0, 25.0),
            "working": (1.5, 4.0),
            "permission": (25.0, 50.0),
            "plan": (25.0, 50.0),
            "question": (25.0, 50.0),
            "nbs": (6.0, 15.0),
            "error": (10.0, 20.0),
            "busy": (2.0, 3.0),
        }.get(script, (6.0, 25.0))
        if longer:
            low, high = low * 2, high * 2
        self.next_auto = now + self.rng.uniform(low, high) / self.opt.speed

    def auto_turn(self, now: float) -> None:
        script = self.opt.script
        kinds: dict[str, Callable[[], Turn]] = {
            "working": self.turn_long,
            "permission": self.turn_permission,
            "plan": self.turn_plan,
            "question": self.turn_question,
            "nbs": self.turn_nbs_poll,
            "error": self.turn_error,
            "busy": self.turn_busy,
        }
        if script in kinds:
            make = kinds[script]
        else:
            order = [self.turn_generic_auto, self.turn_permission, self.turn_nbs_poll, self.turn_long,
                     self.turn_plan, self.turn_question, self.turn_generic_auto, self.turn_error]
            make = self.rng.choice(order)
        prompt = {
            self.turn_nbs_poll: "/nbs-poll",
        }.get(make)
        if prompt:
            self.user(prompt)
        else:
            self.user(self.rng.choice((
                f"{self.task.title.lower()}: carry on",
                f"look at {self.task.files[0]} and continue the task",
                "next step please",
                f"check {self.task.files[1]} then report back",
            )))
        self.start_turn(make(), now)

    # -- turn scripts (generators) --------------------------------------------------------------

    def _think(self) -> Generator[Step, int | None, None]:
        seconds = self.rng.uniform(0.8, 2.5)
        self.side.thinking()
        yield Work(seconds)
        self.blank()
        self.add([("✻ ", GREY), (f"Thought for {_duration(max(1, seconds))}", GREY + ";" + ITALIC),
                  (" (ctrl+o to show thinking)", DIM + ";" + ITALIC)])

    def turn_error(self) -> Turn:
        """An overloaded API: a few retries under the spinner, then recovery or an error block."""
        yield from self._think()
        self.tool("Read", self.task.files[0])
        yield Work(self.rng.uniform(0.5, 1.2))
        self.result([[("Read ", GREY), (str(self.rng.randint(40, 400)), BOLD), (" lines", GREY)]])
        attempts = self.rng.randint(2, 4)
        for attempt in range(1, attempts + 1):
            wait = min(2.0 ** attempt, 10.0)
            self.retry = (attempt, self.clock() + wait / self.opt.speed)
            yield Work(wait)
        self.retry = None
        if self.rng.random() < 0.5:
            self.blank()
            self.add([("● ", ERROR_YELLOW), ("API Error: 529 Overloaded. This is a server-side issue, usually temporary — "
                                             "try again in a moment.", ERROR_YELLOW)])
            self.last_message = "API Error: 529 Overloaded."
            self.side.api_error("API Error: 529 Overloaded. This is a server-side issue, usually temporary — "
                                "try again in a moment.", 529, "overloaded_error")
            return
        yield Work(self.rng.uniform(1.0, 2.0))
        self.say(self.task.summary)

    def turn_help(self) -> Turn:
        yield Work(0.6)
        self.say("This agent imitates Claude Code for the nbs-tui demo.\n"
                 "Try: `/nbs-poll`, `make a plan`, `run the tests in bash`, `ask me a question`, `/clear`.")

    def turn_generic(self, prompt: str) -> Turn:
        yield from self._think()
        file = self.rng.choice(self.task.files)
        self.tool("Read", file)
        yield Work(self.rng.uniform(0.6, 1.5))
        self.result([[("Read ", GREY), (str(self.rng.randint(40, 400)), BOLD), (" lines", GREY)]])
        yield Work(self.rng.uniform(0.8, 2.0))
        if self.rng.random() < 0.5:
            self.tool("Update", file)
            yield Work(self.rng.uniform(0.5, 1.2))
            self.diff(file)
            yield Work(self.rng.uniform(0.5, 1.5))
        words = prompt if len(prompt) < 60 else prompt[:57] + "…"
        self.say(f"Done with \"{words}\". {self.task.summary}")

    def turn_generic_auto(self) -> Turn:
        return self.turn_generic(f"{self.task.title}")

    def diff(self, file: str) -> None:
        """An Edit result with its diff: removed and added lines on red and green (truecolour)."""
        line = self.rng.randint(10, 90)
        context, removed, added = DIFFS.get(Path(file).suffix, DIFFS[".py"])[self.rng.randrange(2)]
        self.result([[("Updated ", GREY), (file, BOLD), (" with ", GREY), (str(len(added)), BOLD),
                      (" additions and ", GREY), ("1", BOLD), (" removal", GREY)]])
        body: list[list[Seg]] = [[(f"{line:>6}  ", GREY), (context, "")],
                                 [(f"{line + 1:>6} ", GREY + ";" + DIFF_DEL_BG), ("-" + removed, DIFF_DEL_BG)]]
        for offset, text in enumerate(added, 1):
            body.append([(f"{line + offset:>6} ", GREY + ";" + DIFF_ADD_BG), ("+" + text, DIFF_ADD_BG)])
        for segs in body:
            self.add([("     ", ""), *segs], indent=5, wrap=False)

    def turn_long(self) -> Turn:
        yield from self._think()
        self.todos()
        yield Work(self.rng.uniform(1.0, 2.0))
        for file in self.task.files:
            self.tool("Read", file)
            yield Work(self.rng.uniform(1.0, 3.0))
            self.result([[("Read ", GREY), (str(self.rng.randint(40, 400)), BOLD), (" lines", GREY)]])
            self.tokens += self.rng.randint(200, 900)
        self.tool("Bash", self.task.command)
        yield Work(self.rng.uniform(3.0, 8.0), verb=self.rng.choice(VERBS))
        self.result(self.task.output)
        yield Work(self.rng.uniform(2.0, 6.0))
        self.say(self.task.summary)

    def todos(self) -> None:
        self.blank()
        self.add([("● ", GREEN), ("Update Todos", BOLD)])
        done = self.rng.randint(0, len(self.task.plan) - 1)
        lines: list[list[Seg]] = []
        for index, item in enumerate(self.task.plan):
            if index < done:
                lines.append([("☒ ", GREY), (item, GREY + ";9")])
            elif index == done:
                lines.append([("☐ ", ""), (item, BOLD)])
            else:
                lines.append([("☐ ", ""), (item, "")])
        self.result(lines)

    def turn_permission(self) -> Turn:
        """A Bash call that needs approval: the 2.1.197 permission dialog under ``⎿  Waiting…``."""
        yield from self._think()
        self.say(f"Let me run the tests for {self.task.files[0]}.")
        yield Work(0.5)
        self.tool("Bash", self.task.command, pending=True)
        waiting = self.add([("  ⎿ " + NBSP, GREY), ("Waiting…", GREY)], indent=5)
        folder = self.opt.project.name or "project"
        answer = yield Menu(
            kind="permission",
            head=[
                Row([(" ", ""), ("Bash command", PERM_BLUE + ";" + BOLD)]),
                Row([("", "")]),
                Row([("   ", ""), (self.task.command, "")], indent=3),
                Row([("   ", ""), (self.task.command_desc, GREY)], indent=3),
                Row([("", "")]),
                Row([(" Do you want to proceed?", "")]),
            ],
            options=[
                ("Yes", ""),
                (f"Yes, and always allow access to {folder}/ from this project", ""),
                ("No", ""),
            ],
            foot=[Row([("", "")]), Row([(" Esc to cancel · Tab to amend · ctrl+e to explain", GREY)])],
            rule=PERM_BLUE,
            hook=("Bash", {"command": self.task.command, "description": self.task.command_desc}),
        )
        self.drop_row(waiting)
        if answer in (1, 2):
            running = self.add([("  ⎿ " + NBSP, GREY), ("Running…", GREY)], indent=5)
            yield Work(self.rng.uniform(1.0, 3.0))
            self.drop_row(running)
            self.result(self.task.output, style="")
            self.tokens += 400
            yield Work(self.rng.uniform(1.0, 2.5))
            self.say(self.task.summary)
        else:
            self.result([[("Interrupted · What should Claude do instead?", RED)]])
            return

    def turn_plan(self) -> Turn:
        """Plan mode: read a little, then the ExitPlanMode approval dialog of 2.1.197."""
        self.perm_mode = 2
        yield from self._think()
        for file in self.task.files[:2]:
            self.tool("Read", file)
            yield Work(self.rng.uniform(0.8, 2.0))
            self.result([[("Read ", GREY), (str(self.rng.randint(40, 400)), BOLD), (" lines", GREY)]])
        yield Work(self.rng.uniform(1.0, 2.5))
        self.say("Here is my plan.")
        slug = "-".join(self.task.title.lower().replace(":", "").split()[:3])
        head = [
            Row([(" ", ""), ("Ready to code?", PERM_BLUE + ";" + BOLD)]),
            Row([("", "")]),
            Row([(" Here is Claude's plan:", "")]),
            Row([(FULL_DASH, DASH)], wrap=False),
            Row([(" ", ""), (f"Plan: {self.task.title}", "1;3;4")]),
            Row([("", "")]),
            *(Row([(f" {index}. ", ""), *_inline_code(item)], indent=4) for index, item in enumerate(self.task.plan, 1)),
            Row([(FULL_DASH, DASH)], wrap=False),
            Row([("", "")]),
            Row([(FULL_RULE, PLAN_TEAL)], wrap=False),
            Row([(" ", ""), ("Claude has written up a plan and is ready to execute. Would you like to proceed?", GREY)]),
            Row([("", "")]),
        ]
        answer = yield Menu(
            kind="plan",
            head=head,
            options=[
                ("Yes, and use auto mode", ""),
                ("Yes, manually approve edits", ""),
                ("Tell Claude what to change", "shift+tab to approve with this feedback"),
            ],
            foot=[Row([("", "")]),
                  Row([(" ctrl+g to edit in ", GREY), (" Vim ", GREY + ";" + BOLD), (f" · ~/.claude/plans/{slug}.md", GREY)])],
            rule=PLAN_TEAL,
            muted=frozenset({2}),
            hook=("ExitPlanMode", {"plan": "\n".join([f"# Plan: {self.task.title}", *(f"{i}. {x}" for i, x in
                                                                                      enumerate(self.task.plan, 1))])}),
        )
        if answer in (1, 2):
            self.perm_mode = 3 if answer == 1 else 0
            self.say([("User approved Claude's plan", "")], bullet=GREEN)
            for file in self.task.files[:2]:
                self.tool("Update", file)
                yield Work(self.rng.uniform(1.0, 2.5))
                self.diff(file)
            yield Work(1.0)
            self.say(self.task.summary)
        else:
            self.result([[("User rejected Claude's plan", RED)]])
            self.say("Understood — tell me what to change and I will revise the plan.")

    def turn_question(self) -> Turn:
        """AskUserQuestion as 2.1.197 draws one question: chip, options, Type something, Chat about this."""
        yield from self._think()
        chip = CHIPS.get(self.task.title, "Choice")
        answers = [*self.task.answers, ("Type something.", ""), ("Chat about this", "")]
        answer = yield Menu(
            kind="question",
            head=[Row([(f" ☐ {chip} ", QUESTION_CHIP)], wrap=False), Row([("", "")]),
                  Row([(self.task.question, BOLD + ";" + WHITE)], indent=0), Row([("", "")])],
            options=answers,
            foot=[Row([("", "")]), Row([("Enter to select · ↑/↓ to navigate · Esc to cancel", GREY)], indent=0)],
            rule=GREY,
            indent="",
            gap=False,
            muted=frozenset({len(self.task.answers)}),
            separator_before=len(self.task.answers) + 1,
            hook=("AskUserQuestion", {"questions": [{
                "question": self.task.question, "header": chip, "multiSelect": False,
                "options": [{"label": label, "description": desc} for label, desc in self.task.answers]}]}),
        )
        if answer is None:
            self.result([[("User declined to answer questions", RED)]])
            return
        choice = answers[answer - 1][0]
        if answer > len(self.task.answers):
            choice = "let's talk it through" if answer == len(answers) else "(typed answer)"
        self.say([("User answered Claude's questions:", "")])
        self.result([[("· ", GREY), (self.task.question, GREY), (" → ", GREY), (choice, "")]])
        yield Work(self.rng.uniform(1.0, 2.5))
        self.say(f"Going with {choice}. {self.task.summary}")

    def turn_nbs_poll(self) -> Turn:
        """/nbs-poll: read the chat, register a new chat, post a reply.

        The first poll registers with a ``\\nbs-register-chat`` line in its message block, the
        second by appending ``register-chat`` to ``.nbs/control-inbox``; later polls pick at
        random (and sometimes find nothing new), so tests can rely on the first two.
        """
        self.polls += 1
        project = self.opt.project
        chat_dir = project / ".nbs" / "chat"
        spawned = {f"{n}.chat" for n in NEW_CHATS}
        chats = sorted(p for p in chat_dir.glob("*.chat") if not p.name.endswith("-archive.chat")) if chat_dir.is_dir() else []
        home = [p for p in chats if p.name not in spawned] or chats
        target = home[0] if home else chat_dir / f"{self.opt.name}.chat"
        yield Work(self.rng.uniform(0.6, 1.5))
        self.tool("Bash", f"nbs-chat read .nbs/chat/{target.name} --unread={self.opt.name}")
        yield Work(self.rng.uniform(0.5, 1.2))
        last = None
        with contextlib.suppress(OSError):
            messages = read_chat(target).messages
            last = next((m for m in reversed(messages) if m.handle != self.opt.name), None)
        if self.polls > 2 and self.rng.random() < 0.3:
            self.result(["(no new messages)"])
            yield Work(0.5)
            self.say("Nothing new on the chat or the bus. Carrying on with the task.")
            return
        peer = last.handle if last else self.rng.choice(("bench-claude", "docs-claude", "alex"))
        if last:
            self.result([[(f"{last.handle}: ", CLAUDE_LIGHT), (last.text, GREY)]])
        else:
            self.result(["(no new messages)"])
        new_chat = NEW_CHATS[(self.polls - 1 + self.rng.randrange(len(NEW_CHATS)) * (self.polls > 2)) % len(NEW_CHATS)]
        rel = f".nbs/chat/{new_chat}.chat"
        yield Work(self.rng.uniform(0.8, 1.6))
        self._create_chat(project / rel)
        via_line = self.polls == 1 or (self.polls > 2 and self.rng.random() < 0.5)
        verb, target_path = "register-chat", rel
        if self.polls > 2:
            roll = self.rng.random()
            if roll < 0.2 and self.registered:
                verb, target_path = "unregister-chat", self.registered.pop(0)
            elif roll < 0.3:
                (project / ".nbs" / "events").mkdir(parents=True, exist_ok=True)
                verb, target_path = "register-bus", ".nbs/events"
        if verb == "register-chat":
            self.registered.append(rel)
        why = {
            "register-chat": f"{peer} wants the follow-up on {rel}. Registering it so I hear about replies.",
            "unregister-chat": f"{target_path} is finished with; unregistering it.",
            "register-bus": "The team moved to the event bus; registering `.nbs/events` too.",
        }[verb]
        if via_line:
            # The AI-facing convention: a \nbs- line in the message block, for the sidecar to pick up.
            self.say(why)
            self.add([("  ", ""), (f"\\nbs-{verb} {target_path}", "")], wrap=False)
        else:
            # The other route: append to the control inbox directly, as a tool call.
            line = f"{verb} {target_path}"
            self.tool("Bash", f"echo '{line}' >> {self.inbox_rel}")
            yield Work(0.4)
            self._append_inbox(line)
            self.result(["(No output)"])
        yield Work(self.rng.uniform(0.5, 1.2))
        text = self.rng.choice((
            f"@{peer} on it: {self.task.title.lower()} — tests next",
            f"status: {self.task.summary}",
            f"@{peer} can you review {self.task.files[0]}? the retry budget is 3",
            f"moved the follow-up to {rel}; will report there",
        ))
        short = text if len(text) <= 40 else text[:39] + "…"
        self.tool("Bash", f"nbs-chat send .nbs/chat/{target.name} {self.opt.name} \"{short}\"")
        yield Work(0.5)
        try:
            self._create_chat(target)  # nbs-chat send to a chat nobody made yet makes it
            post_message(target, self.opt.name, text)
            self.result(["Sent"])
        except (OSError, ChatError) as error:
            self.result([[(f"Error: {error}", RED)]])
        yield Work(0.6)
        done = {"register-chat": "registered", "unregister-chat": "unregistered", "register-bus": "registered"}[verb]
        self.say(f"Replied on `{target.name}`; {done} `{target_path}`.")

    @property
    def inbox_rel(self) -> str:
        """``.nbs/control-inbox`` (seed era) or ``.nbs/control-inbox-<handle>`` (later releases)."""
        return ".nbs/control-inbox" + (f"-{self.opt.name}" if self.opt.inbox == "per-handle" else "")

    @staticmethod
    def _create_chat(chat: Path) -> None:
        """Make ``chat`` (and its folder) unless it exists; a chat already there is left alone."""
        with contextlib.suppress(OSError, ChatError):
            chat.parent.mkdir(parents=True, exist_ok=True)
            create_chat(chat)

    def _append_inbox(self, line: str) -> None:
        inbox = self.opt.project / self.inbox_rel
        with contextlib.suppress(OSError):
            inbox.parent.mkdir(parents=True, exist_ok=True)
            with open(inbox, "a", encoding="utf-8") as handle:
                handle.write(line + "\n")

    def turn_busy(self) -> Turn:
        self.tool("Bash", self.rng.choice(("make -j8 test", "cargo build --release", "npm run test -- --watch=false",
                                           "pytest -n 4 -q")))
        self.busy_started = self.clock()
        self.busy_emitted = 0
        while True:
            yield Work(3600.0)

    # -- busy output ----------------------------------------------------------------------------

    def busy_line(self) -> list[Seg]:
        n = self.busy_emitted
        rng = self.rng
        word = BUSY_WORDS[n % len(BUSY_WORDS)]
        colour = 16 + (n * 7) % 216
        r, g, b = (n * 37) % 256, (n * 91) % 256, (n * 53) % 256
        segs: list[Seg] = [
            (f"[{n:>6}] ", GREY),
            (f"{word:<9}", f"38;5;{colour};1"),
            (" ", ""),
            (f"pkg/{rng.choice(('core', 'mirror', 'ui', 'tmux', 'files'))}/{rng.choice(('screen', 'detect', 'diff', 'inbox'))}.py",
             ITALIC + ";" + CODE_BLUE),
            (" ", ""),
            ("█" * (1 + n % 12), f"38;2;{r};{g};{b}"),
        ]
        if n % 5 == 0:
            segs += [(" ", ""), (BUSY_WIDE[n % len(BUSY_WIDE)], "38;5;220")]
        if n % 7 == 0:
            segs += [(" ok", GREEN + ";1")]
        elif n % 11 == 0:
            segs += [(" warn", "38;5;208;3")]
        self.busy_emitted += 1
        self.tokens += self.fx.randint(5, 40)
        return segs

    def busy_tick(self, now: float) -> None:
        if self.turn is None or self.opt.rate <= 0 or not self.busy_started:
            return
        due = int((now - self.busy_started) * self.opt.rate) - self.busy_emitted
        for _ in range(min(due, 500)):
            self.add([("  ", ""), *self.busy_line()], indent=4, wrap=False)
        if due > 500:  # we fell behind: skip rather than flood
            self.busy_emitted += due - 500

    # -- markers --------------------------------------------------------------------------------

    def marker(self, text: str | None) -> None:
        if text is None:
            self.marker_seq += 1
            text = f"NBS-MARK-{os.getpid()}-{self.marker_seq}"
        self.add([("  ", ""), (text, BOLD + ";38;5;226")], wrap=False)
        self.render(self.clock())
        if self.opt.marker_file is not None:
            stamp = f"{text}\t{time.monotonic_ns()}\t{time.time_ns()}\n"
            with contextlib.suppress(OSError), open(self.opt.marker_file, "a", encoding="utf-8") as handle:
                handle.write(stamp)

    # -- the clock --------------------------------------------------------------------------------

    def tick(self, now: float) -> None:
        if self.mode is Mode.WORKING and self.turn is not None:
            self.tokens += self.fx.randint(0, 9)
            if now >= self.wait_until:
                self.advance(None, now)
            if self.opt.busy or self.opt.script == "busy":
                self.busy_tick(now)
        elif self.mode is Mode.MENU and self.menu is not None:
            menu = self.menu
            if not menu.notified and now - menu.shown_at >= PERMISSION_NOTIFY_AFTER:
                menu.notified = True
                tool = menu.hook[0] if menu.hook else "a tool"
                self.side.hook("Notification", notification_type="permission_prompt",
                               message=f"Claude needs your permission to use {tool}")
            if menu.auto_answer_after is not None and now - menu.shown_at >= menu.auto_answer_after:
                self.answer(1)
        if self.mode is Mode.IDLE and not self.idle_notified and now - self.idle_since >= IDLE_NOTIFY_AFTER:
            self.idle_notified = True
            self.side.hook("Notification", notification_type="idle_prompt", message="Claude is waiting for your input")
        if self.mode is Mode.IDLE and self.next_auto is not None and now >= self.next_auto and not self.input:
            self.next_auto = None
            if self.opt.busy or self.opt.script == "busy":
                self.start_turn(self.turn_busy(), now)
            else:
                self.auto_turn(now)

    def next_deadline(self, now: float) -> float:
        deadlines = []
        if self.mode is Mode.WORKING:
            deadlines.append(now + SPINNER_INTERVAL)
            deadlines.append(self.wait_until)
            if (self.opt.busy or self.opt.script == "busy") and self.opt.rate > 0:
                deadlines.append(self.busy_started + (self.busy_emitted + 1) / self.opt.rate)
        elif self.mode is Mode.MENU and self.menu:
            if self.menu.auto_answer_after is not None:
                deadlines.append(self.menu.shown_at + self.menu.auto_answer_after)
            if not self.menu.notified:
                deadlines.append(self.menu.shown_at + PERMISSION_NOTIFY_AFTER)
        if self.mode is Mode.IDLE and self.next_auto is not None:
            deadlines.append(self.next_auto)
        if self.mode is Mode.IDLE and not self.idle_notified:
            deadlines.append(self.idle_since + IDLE_NOTIFY_AFTER)
        if self.notice:
            deadlines.append(now + 2.0)
        return max(now, min(deadlines)) if deadlines else now + 3600.0

    def prefill(self, turns: int) -> None:
        """Play ``turns`` finished turns instantly, so the agent starts with some history."""
        makers: list[Callable[[], Turn]] = [self.turn_generic_auto, self.turn_long, self.turn_permission]
        prompts = (f"{self.task.title.lower()}: start with {self.task.files[0]}", "run the tests", "next step please")
        self.side.muted = True
        for index in range(turns):
            self.user(prompts[index % len(prompts)])
            turn = makers[index % len(makers)]()
            value: int | None = None
            spent = 0.0
            with contextlib.suppress(StopIteration):
                while True:
                    step = turn.send(value)
                    value = 1 if isinstance(step, Menu) else None
                    spent += step.seconds if isinstance(step, Work) else 2.0
            self.blank()
            self.add([("✻ ", GREY), (f"{self.rng.choice(PAST_VERBS)} for {_duration(spent)}", GREY)])
        self.turn_started = 1.0 if turns else 0.0
        self.tokens = 0
        self.pending_tool = None
        self.side.muted = False

    def begin(self, now: float) -> None:
        """Schedule the first autonomous action (or start working at once in busy mode)."""
        self.side.hook("SessionStart", source="startup", model=MODEL_ID)
        self.idle_since, self.idle_notified = now, False
        if self.opt.busy or self.opt.script == "busy":
            self.start_turn(self.turn_busy(), now)
            return
        if self.opt.start_delay is not None:
            self.next_auto = now + self.opt.start_delay / self.opt.speed if self.opt.script != "idle" else None
            return
        first = {"permission": 1.0, "plan": 1.0, "question": 1.0, "working": 0.5, "nbs": 2.0}
        if self.opt.script in first:
            self.next_auto = now + first[self.opt.script] / self.opt.speed
        else:
            self.schedule_auto(now)


def _inline_code(text: str) -> list[Seg]:
    """Markdown-ish inline code: `x` in the code colour, as Claude Code renders it."""
    segs: list[Seg] = []
    for index, part in enumerate(text.split("`")):
        if part:
            segs.append((part, CODE_BLUE if index % 2 else ""))
    return segs or [("", "")]


# ---------------------------------------------------------------------------------------------
# Process naming, signals, main loop


def set_process_name(name: str) -> bool:
    """Make ``ps`` and tmux's ``#{pane_current_command}`` show ``name`` (Linux only).

    Overwrites argv[0] in place (found through /proc/self/stat's arg_start, checked against
    /proc/self/cmdline before writing) and sets the comm name with prctl(PR_SET_NAME).
    """
    ok = False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(15, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)  # PR_SET_NAME
        ok = True
    except (OSError, AttributeError):
        pass
    try:
        stat_text = Path("/proc/self/stat").read_text()
        fields = stat_text[stat_text.rindex(")") + 2:].split()
        arg_start = int(fields[45])
        cmdline = Path("/proc/self/cmdline").read_bytes()
        argv0_len = cmdline.index(b"\0")
        if ctypes.string_at(arg_start, len(cmdline)) != cmdline or argv0_len < len(name):
            return ok
        replacement = name.encode() + b"\0" * (argv0_len - len(name))
        ctypes.memmove(arg_start, replacement, len(replacement))
        return True
    except (OSError, ValueError, IndexError):
        return ok


def _open_fifo(path: Path) -> tuple[int, int]:
    """Open a marker FIFO for reading without ever seeing EOF (we hold a writer too)."""
    if not path.exists():
        os.mkfifo(path, 0o600)
    elif not stat.S_ISFIFO(path.stat().st_mode):
        raise SystemExit(f"--marker-fifo {path} exists and is not a FIFO")
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    writer = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    return reader, writer


def parse_args(argv: list[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(
        prog="python -m nbs_tui.demo.agent", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--name", default="claude", help="the agent's handle (chat posts, header)")
    parser.add_argument("--script", default="cycle",
                        choices=("cycle", "idle", "working", "permission", "plan", "question", "nbs", "error", "busy"))
    parser.add_argument("--seed", type=int, default=None, help="make the behaviour deterministic")
    parser.add_argument("--busy", action="store_true", help="work forever, printing --rate lines per second")
    parser.add_argument("--rate", type=float, default=10.0, help="busy output lines per second (default 10)")
    parser.add_argument("--project", type=Path, default=None, help="project folder holding .nbs/ (default: cwd)")
    parser.add_argument("--marker-file", type=Path, default=None, help="append '<marker>\\t<mono ns>\\t<epoch ns>' per marker")
    parser.add_argument("--marker-fifo", type=Path, default=None, help="print each line written to this FIFO at once")
    parser.add_argument("--prompt-timeout", type=float, default=None,
                        help="menus answer themselves with option 1 after this many seconds (cycle default 45)")
    parser.add_argument("--legacy-spinner", action="store_true", help="'(3s · ↓ 42 tokens · esc to interrupt)' spinner")
    parser.add_argument("--placeholder", action="store_true", help="show a dim suggestion in the empty input box")
    parser.add_argument("--model", default="Opus 4.8 (1M context) · Claude Max", help="the header's model line")
    parser.add_argument("--start-delay", type=float, default=None, help="seconds before the first autonomous turn")
    parser.add_argument("--mode", choices=PERMISSION_MODES, default="default",
                        help="the permission mode shown in the footer (Shift-Tab cycles it)")
    parser.add_argument("--inbox", choices=("shared", "per-handle"), default="shared",
                        help="append to .nbs/control-inbox or to .nbs/control-inbox-<name>")
    parser.add_argument("--speed", type=float, default=1.0, help="run every wait this many times faster")
    parser.add_argument("--claude-config", type=Path, default=None, metavar="DIR",
                        help="keep DIR/sessions/<pid>.json as Claude Code does (pass DIR as CLAUDE_CONFIG_DIR too)")
    parser.add_argument("--hook-spool", type=Path, default=None, metavar="FILE",
                        help="append a hook record per event, as nbs-tui's hook script would")
    parser.add_argument("--warm", type=int, default=0, metavar="N", help="start with N finished turns of history")
    parser.add_argument("--proc-name", default=None, help="rename the process (argv[0] and comm), e.g. 'claude'")
    args = parser.parse_args(argv)
    timeout = args.prompt_timeout
    if timeout is None and args.script == "cycle":
        timeout = 45.0
    if args.proc_name:
        set_process_name(args.proc_name)
    return Options(
        name=args.name, script=args.script, seed=args.seed, busy=args.busy, rate=args.rate,
        project=(args.project or Path.cwd()).resolve(), marker_file=args.marker_file, marker_fifo=args.marker_fifo,
        prompt_timeout=timeout or None, legacy_spinner=args.legacy_spinner, placeholder=args.placeholder,
        model=args.model, start_delay=args.start_delay, warm=max(0, args.warm), speed=max(0.01, args.speed), mode=args.mode, inbox=args.inbox,
        claude_config=args.claude_config.resolve() if args.claude_config else None,
        hook_spool=args.hook_spool.resolve() if args.hook_spool else None,
    )


def run(options: Options) -> int:
    in_fd, out_fd = sys.stdin.fileno(), sys.stdout.fileno()
    term = Terminal(in_fd, out_fd)
    agent = Agent(options, term)
    signals: list[int] = []
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)

    def on_signal(signum: int, _frame: object) -> None:
        signals.append(signum)

    for signum in (signal.SIGWINCH, signal.SIGUSR1, signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, on_signal)
    fifo_r = fifo_w = -1
    fifo_buf = b""
    if options.marker_fifo is not None:
        fifo_r, fifo_w = _open_fifo(options.marker_fifo)
    term.enter()
    end_reason = "prompt_input_exit"
    try:
        now = time.monotonic()
        agent.prefill(options.warm)
        agent.begin(now)
        agent.render(now)
        last_render = now
        while agent.running:
            now = time.monotonic()
            deadline = agent.next_deadline(now)
            if agent.mode is Mode.WORKING:
                deadline = max(deadline, last_render + FRAME_INTERVAL)
            timeout = max(0.0, deadline - now)
            watch = [in_fd, wake_r] + ([fifo_r] if fifo_r >= 0 else [])
            try:
                ready, _, _ = select.select(watch, [], [], timeout)
            except InterruptedError:
                ready = []
            now = time.monotonic()
            while signals:
                received = signals.pop(0)
                if received == signal.SIGWINCH:
                    term.invalidate()
                    agent.dirty = True
                elif received == signal.SIGUSR1:
                    agent.marker(None)
                else:
                    agent.running = False
                    end_reason = "other"
            if wake_r in ready:
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_r, 512)
            if fifo_r >= 0 and fifo_r in ready:
                with contextlib.suppress(BlockingIOError):
                    fifo_buf += os.read(fifo_r, 65536)
                while b"\n" in fifo_buf:
                    line, fifo_buf = fifo_buf.split(b"\n", 1)
                    text = line.decode("utf-8", "replace").strip()
                    if text:
                        agent.marker(text)
            if in_fd in ready:
                try:
                    data = os.read(in_fd, 65536)
                except OSError:
                    data = b""
                if not data:
                    break
                agent.feed(data, now)
            agent.tick(now)
            if agent.mode is not Mode.IDLE or agent.dirty:
                agent.render(now)
                last_render = now
    finally:
        agent.side.close(end_reason)
        term.leave()
        for fd in (fifo_r, fifo_w, wake_r, wake_w):
            if fd >= 0:
                os.close(fd)
    return 0


def main(argv: list[str] | None = None) -> int:
    options = parse_args(argv)
    if options.project != Path.cwd().resolve():
        with contextlib.suppress(OSError):
            os.chdir(options.project)
    return run(options)


if __name__ == "__main__":
    raise SystemExit(main())
