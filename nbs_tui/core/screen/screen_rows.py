"""A pane's screen as the detector reads it: rows of plain text, and the rows whose typed text
after ``❯`` is faint (Claude Code's greyed suggestion, which is not input).

Three sources give the same two lists: a ``capture-pane`` (plain or with ``-e`` escapes:
`capture_lines_and_faint`, `CapturedScreen` for panes nobody mirrors), and a live mirror
(`screen_lines_and_faint`, with a `RowCache` so only rows that changed are read again).
`nbs_tui.core.detection.detect` reads the state from them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nbs_tui.core.screen.pane_screen import PaneScreen


# --- escape sequences -------------------------------------------------------------------------

_OSC = r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
_CSI = r"\x1b\[[0-?]*[ -/]*[@-~]"
_OTHER_ESC = r"\x1b[PX^_][^\x1b]*\x1b\\|\x1b[()][0-9A-Za-z]|\x1b[@-Z\\-_=>78]"
_ESCAPES = re.compile(f"{_OSC}|{_CSI}|{_OTHER_ESC}")
_SGR = re.compile(r"\x1b\[([0-9;:]*)m")


def strip_escapes(text: str) -> str:
    """Remove ANSI/SGR, OSC (hyperlinks, titles) and other escape sequences, and stray CRs."""
    if "\x1b" in text:
        text = _ESCAPES.sub("", text)
    return text.replace("\r", "")


def _sgr_effects(params_text: str, faint: bool, reverse: bool) -> tuple[bool, bool]:
    """Apply one SGR sequence to the (faint, reverse) pair, skipping colour sub-parameters."""
    params = (
        [int(p) if p.isdigit() else 0 for p in re.split("[;:]", params_text)]
        if params_text
        else [0]
    )
    i = 0
    while i < len(params):
        p = params[i]
        if p in (38, 48, 58):
            i += 3 if i + 1 < len(params) and params[i + 1] == 5 else 5
            continue
        if p == 0:
            faint = reverse = False
        elif p == 2:
            faint = True
        elif p == 22:
            faint = False
        elif p == 7:
            reverse = True
        elif p == 27:
            reverse = False
        i += 1
    return faint, reverse


def _faint_after_prompt(raw: str) -> bool:
    """True when every visible character after the ``❯`` of a raw SGR line is drawn faint.

    Claude Code draws its suggested prompt (ghost text) dim; typed text is normal intensity.
    Characters in reverse video are the cursor block and do not count either way.
    """
    pos = raw.find("❯")
    if pos < 0:
        return False
    faint = reverse = False
    saw_text = False
    i = pos + 1
    n = len(raw)
    while i < n:
        ch = raw[i]
        if ch == "\x1b":
            m = _SGR.match(raw, i)
            if m:
                faint, reverse = _sgr_effects(m.group(1), faint, reverse)
                i = m.end()
                continue
            m2 = _ESCAPES.match(raw, i)
            i = m2.end() if m2 else i + 1
            continue
        if not ch.isspace() and not reverse:
            if not faint:
                return False
            saw_text = True
        i += 1
    return saw_text


def capture_lines_and_faint(text: str) -> tuple[list[str], list[int]]:
    """A captured screen (plain text or ``tmux capture-pane -e`` output) as rows of plain text,
    plus the rows whose text after ``❯`` is all faint (what `screen_lines_and_faint` gives
    for a mirror)."""
    raw_lines = text.split("\n")
    faint: list[int] = []
    if "\x1b" in text:
        for i, raw in enumerate(raw_lines):
            if "❯" in raw and _faint_after_prompt(raw):
                faint.append(i)
        lines = [strip_escapes(raw) for raw in raw_lines]
    else:
        lines = [raw.replace("\r", "") for raw in raw_lines]
    return lines, faint


@dataclass(frozen=True, slots=True)
class CapturedScreen:
    """A pane's screen as one ``capture-pane -p -e`` printed it, for panes nobody mirrors.

    Rows of plain text (trailing spaces dropped, as a mirror's ``row_text``) and the faint
    prompt rows: all the sidecar reads. No terminal model is kept. ``version`` moves only when
    the text did; ``raw`` is the capture, kept to tell an unchanged screen cheaply.
    """

    raw: str
    lines: tuple[str, ...]
    faint_rows: tuple[int, ...]
    version: int

    @classmethod
    def parse(cls, raw: str, version: int) -> CapturedScreen:
        """``raw``: the capture's rows joined by newlines (no newline after the last)."""
        lines, faint = capture_lines_and_faint(raw)
        return cls(raw, tuple(line.rstrip() for line in lines), tuple(faint), version)


class RowCache:
    """Per-pane memory of a mirror's rows, so only rows whose version moved are read again
    (a working agent changes its spinner row, not its 50 rows, every tick)."""

    __slots__ = ("key", "rows", "screen")

    def __init__(self) -> None:
        self.screen: PaneScreen | None = None
        """The mirror the rows came from, held (not its ``id``: a new object may reuse an id)."""
        self.key: tuple[int, int] = (0, 0)
        self.rows: list[tuple[int, str, bool]] = []


def _row_faint(screen: PaneScreen, y: int) -> bool:
    cells = screen.row_cells(y)
    x = next((i for i, c in enumerate(cells) if c.data == "❯"), None)
    if x is None:
        return False
    text = [c for c in cells[x + 1 :] if c.data.strip() and not c.reverse]
    return bool(text) and all(c.dim for c in text)


def screen_lines_and_faint(
    screen: PaneScreen, cache: RowCache | None = None
) -> tuple[list[str], list[int]]:
    """A pane mirror's rows as text, plus the rows whose text after ``❯`` is all faint.

    With ``cache`` (one per pane), rows whose ``row_version`` did not move are not read again.
    """
    cache = cache if cache is not None else RowCache()
    with screen.lock:
        height = screen.height
        key = (screen.width, height)
        if cache.screen is not screen or cache.key != key or len(cache.rows) != height:
            cache.screen = screen
            cache.key = key
            cache.rows = [(-1, "", False)] * height
        rows = cache.rows
        for y in range(height):
            version = screen.row_version(y)
            if rows[y][0] == version and version != 0:
                continue
            text = screen.row_text(y)
            rows[y] = (version, text, "❯" in text and _row_faint(screen, y))
    return [r[1] for r in rows], [y for y, r in enumerate(rows) if r[2]]
