"""Shared pieces of the property tests: the recorded screens to start from, and strategies for
hostile text (escape sequences whole or cut, wide and combining characters, invalid UTF-8)."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st

from tests.conftest import PEER_CORPUS

REPO = Path(__file__).resolve().parents[2]
CLAUDE_CORPUS = REPO / "tests" / "corpus" / "claude"
SCALE = 20 if os.environ.get("NBS_HYPOTHESIS") == "explore" else 1


def bounded(examples: int) -> settings:
    """A test's example budget (times 20 when exploring): small, so the suite stays fast."""
    return settings(max_examples=examples * SCALE)


@cache
def recorded_screens() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """(name, capture, allowed states) of every recorded screen: the real CLI's own captures
    (with their escapes) and the peer corpus (plain text), headers dropped."""
    found: list[tuple[str, str, tuple[str, ...]]] = []
    for labels in sorted(CLAUDE_CORPUS.glob("*/labels.tsv")):
        for line in labels.read_text(encoding="utf-8").splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            name, allowed, *_ = line.split("\t")
            for variant in (name, name.removesuffix(".txt") + ".ansi"):
                path = labels.parent / variant
                if path.is_file():
                    body = "\n".join(path.read_text(encoding="utf-8").split("\n")[2:])
                    found.append((f"{labels.parent.name}/{variant}", body, tuple(allowed.split(","))))
    peer_labels = PEER_CORPUS / "labels.tsv"
    if peer_labels.is_file():
        for line in peer_labels.read_text(encoding="utf-8").splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            name, allowed, *_ = line.split("\t")
            text = (PEER_CORPUS / "screens" / name).read_text(encoding="utf-8", errors="replace")
            found.append((f"peer/{name}", "\n".join(text.split("\n")[2:]), tuple(allowed.split(","))))
    return tuple(found)


# -- pieces of hostile text --------------------------------------------------------------------

WIDE_AND_COMBINING = "中文字ｱｲｳ한글🙂👍🏽👨‍👩‍👧e\u0301a\u0308\u20dd\u200b\u200d\ufe0f\u0300\u0489"
CLAUDE_GLYPHS = "❯✻✶✳✢·*⏺●⎿─│╭╮╰╯▐▛▜▌▝▘█⏵⏸…"
RENDERING_ESCAPES = st.sampled_from(
    [
        "\x1b[0m", "\x1b[1;31m", "\x1b[38;5;208m", "\x1b[48;2;10;20;30m", "\x1b[2m", "\x1b[7m", "\x1b[22m",
        "\x1b]8;;https://example.com\x1b\\", "\x1b]8;;\x07", "\x1b]0;title\x07", "\x1b[?25l", "\x1b[?25h", "\x1b(B",
    ]
)
"""Whole sequences that change how text looks, never where it is (SGR, OSC 8 links, titles)."""
WHOLE_ESCAPES = st.one_of(RENDERING_ESCAPES, st.sampled_from(["\x1b[K", "\x1b7", "\x1b8", "\x1b[2;5H"]))
"""Whole sequences, cursor moves among them."""
ANY_ESCAPES = st.one_of(
    WHOLE_ESCAPES,
    st.sampled_from(
        [
            "\x1b[", "\x1b]", "\x1b]8;;http", "\x1b[38;5", "\x1bP", "\x1b", "\x9b", "\x1b[?1049h", "\x1b[?1049l",
            "\x1b[2J", "\x1b[H", "\x1b[10;5H", "\x1b[3A", "\x1b[99999C", "\x1b[1;9999r", "\x1b[r", "\x1bM", "\x1bD",
            "\x1b[5@", "\x1b[5P", "\x1b[3L", "\x1b[3M", "\x1b[5X", "\x1b[5b", "\x1b[4h", "\x1b[20h", "\x1b#8",
            "\x1bc", "\x1b[s", "\x1b[u", "\x1b[?6h", "\x1b[?7l", "\x1b[g", "\x1b[3g", "\x08", "\t", "\r", "\x0e", "\x0f",
        ]
    ),
)
"""Whole and cut sequences, cursor moves, scroll regions, screen switches, C0 and C1 controls."""
TEXT_PIECES = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=20),
    st.text(alphabet=WIDE_AND_COMBINING + CLAUDE_GLYPHS + " abc123", max_size=30),
    ANY_ESCAPES,
    st.sampled_from(["\n", "\r\n", " " * 200, "❯ ", "  1. Yes", "esc to interrupt", "? for shortcuts", "─" * 120]),
)
HOSTILE_TEXT = st.lists(TEXT_PIECES, max_size=40).map("".join)
"""Text built of hostile pieces: the kind of thing a pane can print."""


@st.composite
def hostile_bytes(draw: st.DrawFn) -> bytes:
    """Bytes a pane can send: hostile text as UTF-8 with invalid UTF-8 mixed in."""
    parts = draw(
        st.lists(
            st.one_of(
                HOSTILE_TEXT.map(lambda t: t.encode("utf-8", "surrogatepass")),
                st.binary(max_size=16),
                st.sampled_from([b"\xff", b"\xc3", b"\xe2\x94", b"\xf0\x9f\x99", b"\xed\xa0\x80", b"\xc0\xaf"]),
            ),
            max_size=12,
        )
    )
    return b"".join(parts)


@st.composite
def cuts(draw: st.DrawFn, data: bytes) -> list[bytes]:
    """``data`` cut at arbitrary places (in the middle of sequences and characters too)."""
    if not data:
        return []
    points = sorted(set(draw(st.lists(st.integers(0, len(data)), max_size=12))))
    pieces, start = [], 0
    for point in [*points, len(data)]:
        if point > start:
            pieces.append(data[start:point])
            start = point
    return pieces
