"""Where the layout turns narrow: a phone held upright shows 40-60 columns in the browser view.

The app sets `HORIZONTAL_BREAKPOINTS` from it (Textual adds ``-narrow`` or ``-wide`` to every
screen as the terminal resizes; styles/app.tcss and the answer card's CSS key off them), and a
widget whose content, not only its style, changes with the width asks `is_narrow`.
"""

from __future__ import annotations

NARROW_BELOW = 72
"""Columns below which the screen is narrow."""

HORIZONTAL_BREAKPOINTS: list[tuple[int, str]] = [(0, "-narrow"), (NARROW_BELOW, "-wide")]


def is_narrow(width: int) -> bool:
    return width < NARROW_BELOW
