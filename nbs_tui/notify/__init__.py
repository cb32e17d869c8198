"""The notify room: everything that tells the operator about an agent outside the dashboard's
own panes, applied here from one set of rules.

Owns: `event_notices` (the sidecar's events through the rules, for processes without a
dashboard: ``--headless``'s ``notify`` lines and the pushes), `push` (`PushSender`: Apprise
pushes, sent by the lease holder only), `terminal_notifier` (`TerminalNotifier`: OSC 9/777/99 and the bell
into the dashboard's own terminal, through tmux's passthrough, and ``notify_command``), `mute`
(the kinds muted here and server-wide, ``@nbs_mute``) and `toasts` (which sidecar events the
dashboard shows as a toast, and how).

The rules themselves are pure and live in the core (`nbs_tui.core.notifications`: kinds,
repeats, coalescing, wording, what the settings mean), where the config and the sidecar, both
below this room, read them too. The dashboard's side (writing into its terminal driver, the
passthrough check on a worker) is `nbs_tui.dashboard.notifications`.

May import: the core, config, the ports (`files` for the browser view's endpoint) and the
sidecar's events and lease. Never the runtime, the app, the dashboard or the widgets
(import-linter contract in pyproject.toml); the runtime and the dashboard call this room.
"""
