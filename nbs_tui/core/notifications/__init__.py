"""The pure floor of the notification policy: which states and escalations become notifications,
how they are muted, repeated, coalesced and worded (`notify_rules`), and what the notification
settings mean (`notify_settings`).

Pure, like the rest of the core: no UI, no tmux, no I/O. It sits in the core, not in the notify
room (`nbs_tui.notify`) that applies it, because the floors below that room read it too: the
config checks the settings with it, and the sidecar carries the server-wide mute (``@nbs_mute``)
and a menu's question line in its events.
"""
