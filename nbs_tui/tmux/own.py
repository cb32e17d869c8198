"""The tmux this dashboard runs inside (``$TMUX``), as opposed to the server it watches.

Asked through the same command path as every server (`TmuxServerCommands.own`): its pane's
``allow-passthrough`` and its client's terminal (for terminal notifications,
`nbs_tui.notify`). A jump to another host opens its window there too (`nbs_tui.tmux.jump`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from nbs_tui.tmux.commands import TmuxServerCommands
from nbs_tui.tmux.errors import TmuxError

log = logging.getLogger(__name__)


def passthrough_state(environ: Mapping[str, str]) -> str | None:
    """The dashboard's own tmux pane's ``allow-passthrough`` (``0``/``1`` from tmux 3.3), or None
    when not inside tmux (or tmux does not say: then sequences are still wrapped)."""
    if not environ.get("TMUX"):
        return None
    try:
        value = TmuxServerCommands.own(environ).display(environ.get("TMUX_PANE", ""), "#{allow-passthrough}", timeout=5)
    except TmuxError as error:
        log.warning("cannot ask tmux for allow-passthrough: %s", error)
        return None
    return value.strip() or None


def client_terminal(environ: Mapping[str, str]) -> str | None:
    """Inside tmux, the terminal the dashboard's tmux client runs in (``#{client_termname}``,
    e.g. ``xterm-kitty``: the TERM ssh passed to the operator's tmux), which ``TERM``
    (``tmux-256color``) hides; None when not inside tmux or no client is attached."""
    if not environ.get("TMUX"):
        return None
    try:
        value = TmuxServerCommands.own(environ).display(environ.get("TMUX_PANE", ""), "#{client_termname}", timeout=5)
    except TmuxError:
        return None
    return value.strip() or None
