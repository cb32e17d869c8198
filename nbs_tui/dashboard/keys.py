"""What the keys offer, as the operator reads it: the help screen (``?``) and the command palette.

Both come from `nbs_tui.dashboard.key_table.COMMANDS` (the one table of the app's keys), as bound now (a
keymap may have rebound them), then the keys of the grid, the scrollback, the Control view and the queue view.
The palette also offers a mute switch per kind of notification and a jump to every pane.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

from textual.app import App, SystemCommand
from textual.screen import Screen

from nbs_tui.core.fleet.background import BackgroundSession
from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.core.notifications.notify_rules import KIND_LABELS, TASK_KINDS, NotifyKind
from nbs_tui.dashboard.key_table import COMMAND_BY_ID, COMMANDS, help_rows, scope_bindings
from nbs_tui.housekeeping import logs
from nbs_tui.widgets.control_view import ControlView
from nbs_tui.widgets.grid import PaneGrid
from nbs_tui.widgets.queue_view import QueueView
from nbs_tui.widgets.scrollback import Scrollback


def key_rows(app: App[Any], control: ControlView) -> list[tuple[str, str, str]]:
    """(keys, what, binding id) for the help screen: the key table's as bound now on the
    dashboard screen, the app's own, then the widgets' own."""
    screen = app.screen
    active = [
        a.binding for a in screen.active_bindings.values()
        if a.node is app or (a.node is screen and a.binding.id in COMMAND_BY_ID)
    ]  # fmt: skip
    widget_keys: list[tuple[str, Sequence[object]]] = [
        ("Grid", PaneGrid.BINDINGS),
        ("Scrollback", Scrollback.BINDINGS),
        ("Review", scope_bindings("review")),
        *(("Control", panel.BINDINGS) for panel in (control, control.registry_panel, control.inbox_panel)),
        ("Queue", QueueView.BINDINGS),
    ]
    return help_rows(app.get_key_display, active, widget_keys)


def open_help(app: App[Any], control: ControlView, server: str) -> None:
    """The help screen: every key, what is watched, where the log is."""
    from nbs_tui.widgets.help_screen import HelpScreen

    log_path = logs.installed_path()
    app.push_screen(
        HelpScreen(key_rows(app, control), intro=f"Watching {server}.", log_path=str(log_path) if log_path else None)
    )


def palette_commands(
    app: App[Any], dashboard: Screen[Any], muted: Iterable[NotifyKind], toggle_mute: Callable[[NotifyKind], None],
    panes: Iterable[PaneInfo], select_pane: Callable[[PaneId], None],
    background: Iterable[BackgroundSession] = (), open_background: Callable[[BackgroundSession], None] | None = None,
) -> Iterable[SystemCommand]:  # fmt: skip
    """The command palette's entries beyond Textual's own: one "Open background session" per
    Claude Code background session listed (none where the version has none)."""
    for command in COMMANDS:
        if command.in_palette:
            yield SystemCommand(command.palette or command.label, command.help, partial(app.run_action, command.action, dashboard))
    muted = frozenset(muted)
    for kind in NotifyKind:
        off = kind in muted
        yield SystemCommand(
            f"{'Unmute' if off else 'Mute'} {KIND_LABELS[kind]} notifications",
            f"{'Send' if off else 'Stop'} {'pushes' if kind in TASK_KINDS else 'terminal notifications, notify_command and pushes'}"
            f" for '{kind.value}'",
            partial(toggle_mute, kind),
        )
    for session in background:
        if open_background is None:
            break
        yield SystemCommand(
            f"Open background session {session.label} in tmux",
            f"claude attach {session.id} in a new window ({session.reported}, {session.cwd})",
            partial(open_background, session),
        )
    for pane in panes:
        label = f"Show pane {pane.target}"
        detail = " · ".join(x for x in (pane.title, pane.current_command) if x)
        yield SystemCommand(label, detail or pane.pane_id, partial(select_pane, pane.pane_id), discover=False)
