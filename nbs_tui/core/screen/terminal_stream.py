# mypy: disable-error-code="assignment,arg-type,index,misc,call-overload"
# (pyte types its cells as ``Char``; ours are the field-compatible ``Cell``.)
"""The parser that feeds a pane's `Terminal`: pyte's `pyte.Stream`, except that what tmux does not
draw (CSI with ``<``/``=``/``>`` prefixes or intermediates, DCS/APC/PM/SOS strings, stray C0
controls) is skipped instead of printed, and SGR colon sub-parameters are kept."""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from typing import Any

import pyte

from nbs_tui.core.screen.terminal import Cell, Terminal

__all__ = ["TerminalStream"]


_SGR: dict[tuple[Cell, str], Cell] = {}
"""(style, SGR parameters) -> the resulting style."""


def _groups(params: str) -> list[list[int]]:
    """``"1;38:2::1:2:3"`` -> ``[[1], [38, 2, 0, 1, 2, 3]]``; empty parameters are 0."""
    return [[int(n) if n else 0 for n in part.split(":")] for part in params.split(";")]


_CSI_ARITY: dict[str, int | None] = {"H": 2, "f": 2, "r": 2, "h": None, "l": None, "s": None, "u": None}
"""How many parameters a CSI handler takes (None: any number); one unless named here."""


class TerminalStream(pyte.Stream):
    """A VT parser that skips what tmux does not draw, instead of printing it like pyte."""

    _controls = "".join(chr(c) for c in range(0x20)) + "\x7f\x9b\x9d\x90\x98\x9e\x9f"
    _text_pattern = re.compile("[^" + "".join(f"\\x{ord(c):02x}" for c in _controls) + "]+")

    _csi_pattern = re.compile(r"\x1b\[([<=>?]?)([0-9;:]*)([ -/]*)([@-~])")

    def __init__(self, screen: Terminal) -> None:
        self.terminal = screen
        term = screen
        self._csi: dict[str, Callable[..., None]] = {
            "@": term.insert_characters,
            "A": term.cursor_up,
            "B": term.cursor_down,
            "C": term.cursor_forward,
            "D": term.cursor_back,
            "E": term.cursor_down1,
            "F": term.cursor_up1,
            "G": term.cursor_to_column,
            "H": term.cursor_position,
            "J": term.erase_in_display,
            "K": term.erase_in_line,
            "L": term.insert_lines,
            "M": term.delete_lines,
            "P": term.delete_characters,
            "X": term.erase_characters,
            "a": term.cursor_forward,
            "d": term.cursor_to_line,
            "e": term.cursor_down,
            "f": term.cursor_position,
            "g": term.clear_tab_stop,
            "h": term.set_mode,
            "l": term.reset_mode,
            "r": term.set_margins,
            "`": term.cursor_to_column,
            "S": term.scroll_up,
            "T": term.scroll_down,
            "b": term.repeat,
            "s": lambda *_: term.save_cursor(),
            "u": lambda *_: term.restore_cursor(),
        }
        super().__init__(screen, strict=False)
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def feed_bytes(self, data: bytes) -> None:
        self.feed(self.decoder.decode(data))

    def feed(self, data: str) -> None:
        """pyte's loop, plus a fast path: a whole CSI sequence is matched by one regex and
        dispatched at once instead of char by char through the generator."""
        send = self._send_to_parser
        draw = self.terminal.draw
        match_text = self._text_pattern.match
        match_csi = self._csi_pattern.match
        taking_plain_text = self._taking_plain_text
        length = len(data)
        offset = 0
        while offset < length:
            if taking_plain_text:
                match = match_text(data, offset)
                if match:
                    start, offset = match.span()
                    draw(data[start:offset])
                    continue
                if data[offset] == "\x1b":
                    match = match_csi(data, offset)
                    if match:
                        offset = match.end()
                        self._dispatch_csi(*match.groups())
                        continue
            taking_plain_text = send(data[offset])
            offset += 1
        self._taking_plain_text = taking_plain_text

    def _dispatch_csi(self, prefix: str, params: str, intermediates: str, final: str) -> None:
        if intermediates or (prefix and prefix in "<=>"):
            return
        term = self.terminal
        if final == "m":
            if prefix:
                return
            key = (term.cursor.attrs, params)
            cached = _SGR.get(key)
            if cached is None:
                term.select_graphic_rendition(groups=_groups(params))
                if len(_SGR) > 8192:
                    _SGR.clear()
                _SGR[key] = term.cursor.attrs
            else:
                term.cursor.attrs = cached
            return
        self._dispatch(prefix, _groups(params), final)

    def _dispatch(self, prefix: str, groups: list[list[int]], final: str) -> None:
        handler = self._csi.get(final)
        if handler is None:
            return
        numbers = [min(g[0], 9999) for g in groups]
        arity = _CSI_ARITY.get(final, 1)
        if arity is not None:
            del numbers[arity:]  # extra parameters are ignored, as terminals do (they used to raise)
        if prefix == "?":
            if final in "hl":
                handler(*numbers, private=True)
            elif final in "JK":
                handler(*numbers)
        else:
            handler(*numbers)

    def _parser_fsm(self) -> Any:
        term = self.terminal
        basic: dict[str, Callable[[], None]] = {
            "\x07": lambda: None,
            "\x08": term.backspace,
            "\x09": term.tab,
            "\x0a": term.linefeed,
            "\x0b": term.linefeed,
            "\x0c": term.linefeed,
            "\x0d": term.carriage_return,
        }
        escape: dict[str, Callable[[], None]] = {
            "c": term.reset,
            "D": term.index,
            "E": term.linefeed,
            "M": term.reverse_index,
            "H": term.set_tab_stop,
            "7": term.save_cursor,
            "8": term.restore_cursor,
        }
        strings = "P^_X"  # DCS, PM, APC, SOS: skipped up to ST
        char: str = yield True
        while True:
            if char == "\x1b":
                char = yield None
                if char == "[":
                    char = "\x9b"
                elif char == "]":
                    char = "\x9d"
                elif char in strings:
                    char = "\x90"
                elif char == "#":
                    code = yield None
                    if code == "8":
                        term.alignment_display()
                    char = yield True
                    continue
                elif char in "()*+-./%":
                    yield None  # charset designation: UTF-8 only
                    char = yield True
                    continue
                else:
                    handler = escape.get(char)
                    if handler is not None:
                        handler()
                    char = yield True
                    continue
            if char == "\x9b":
                prefix = ""
                intermediates = ""
                groups: list[list[int]] = []
                current: list[int] = []
                digits = ""
                while True:
                    char = yield None
                    if "0" <= char <= "9":
                        digits += char
                    elif char == ";":
                        current.append(int(digits) if digits else 0)
                        groups.append(current)
                        current, digits = [], ""
                    elif char == ":":
                        current.append(int(digits) if digits else 0)
                        digits = ""
                    elif char in "<=>?" and not groups and not current and not digits:
                        prefix = char
                    elif " " <= char <= "/":
                        intermediates += char
                    elif char in basic:
                        basic[char]()
                    elif char == "\x1b" or char in "\x18\x1a":
                        break  # cancelled
                    elif "@" <= char <= "~":
                        current.append(int(digits) if digits else 0)
                        groups.append(current)
                        if intermediates or (prefix in "<=>" and prefix):
                            break
                        if char == "m":
                            if not prefix:
                                term.select_graphic_rendition(groups=groups)
                            break
                        self._dispatch(prefix, groups, char)
                        break
                    # other bytes inside a CSI are ignored
                char = yield True
                continue
            if char == "\x9d" or char == "\x90":
                # OSC / DCS-like strings: consume to BEL (OSC only) or ST. Titles come from tmux.
                osc = char == "\x9d"
                while True:
                    char = yield None
                    if char == "\x07" and osc:
                        break
                    if char == "\x9c":
                        break
                    if char == "\x1b":
                        char = yield None
                        if char == "\\":
                            break
                char = yield True
                continue
            handler = basic.get(char)
            if handler is not None:
                handler()
            elif char >= " " and char != "\x7f":
                term.draw(char)
            char = yield True
