"""The lifecycle room: start, stop, restart, restore and open agents, on one `Host` at a time.

`host.Host` decides once whether a tmux server is this machine's or another host's (over ssh)
and carries its command path, its process reads, nbs-tui run there and its NBS bus.
`operations.Lifecycle` is what ``nbs-tui new/stop/restart/restore`` and the dashboard
(`threaded.LifecycleController`) call; its parts are `agent_start`, `agent_stop`, `restore_run`
and `remote_agent` (``new --host``'s checks there). The acting runtime's `fleet_keeper` keeps the
fleet memory, and `background_poll` lists Claude Code's background sessions. `arguments` turns
the command line into the lifecycle's requests. No UI (import-linter contract in pyproject.toml);
docs/lifecycle.md.
"""
