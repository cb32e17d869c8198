"""What the imitation looks like and how fast it moves: Claude Code 2.1.2xx's colours (SGR
parameter strings), glyphs, spinner verbs and timings, and its way of writing durations and
token counts. Constants only; no state.
"""

from __future__ import annotations

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


def format_duration(seconds: float) -> str:
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m {secs}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes}m {secs}s"


def format_tokens(count: int) -> str:
    return f"{count / 1000:.1f}k" if count >= 1000 else str(count)
