"""Text from panes, agents and files made safe to show on the operator's terminal (pure).

A pane's title, folder and command, a session name, an agent's last message: any of them can
hold control characters (a folder named with ESC, a process renaming itself), and Textual writes
a widget's text to the terminal as it is. An ESC there would be obeyed by the operator's
terminal (set its title, move the cursor, rewrite the screen), so every such string goes
through :func:`printable` before it is shown: C0 controls, DEL and the C1 controls (U+0080-
U+009F, which some terminals take as ESC + a letter, U+009B as CSI) become visible ``^[``-style
caret notation; nothing is dropped silently, so the operator still sees that something odd is
there.
"""

from __future__ import annotations

import json
from typing import Any

_CARET = {code: f"^{chr(code + 64)}" for code in range(0x20)}
_CARET[0x7F] = "^?"
_CARET.update({code: f"<{code:02X}>" for code in range(0x80, 0xA0)})
_ONE_LINE = dict(_CARET)
_MULTI_LINE = dict(_CARET)
del _MULTI_LINE[0x0A]  # a newline is fine where the text may span lines
_ONE_LINE[0x09] = _MULTI_LINE[0x09] = " "  # a tab would jump columns; one space keeps them

_JSON_ESCAPES = {code: f"\\u{code:04x}" for code in (0x7F, *range(0x80, 0xA0))}


def printable(text: str, *, multiline: bool = False) -> str:
    """``text`` with every control character made visible (``^[`` for ESC); newlines are kept
    when ``multiline``."""
    if text.isprintable():  # the common case: nothing to do, no copy
        return text
    return text.translate(_MULTI_LINE if multiline else _ONE_LINE)


def json_line_safe(line: str) -> str:
    """A JSON text written with ``ensure_ascii=False`` with DEL and the C1 controls escaped too
    (``json`` escapes only U+0000-U+001F): still the same JSON, safe to print on a terminal."""
    if line.isascii() and "\x7f" not in line:
        return line
    return line.translate(_JSON_ESCAPES)


def loads_json(data: str | bytes) -> Any:
    """``json.loads`` whose every failure is a ValueError: a line nested thousands deep raises
    RecursionError inside ``json``, which a reader's ``except ValueError`` would let through
    (and lose the rest of its batch with it)."""
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("nested too deeply") from None
