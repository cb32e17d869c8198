"""The runtime room: the backends of one process, built, started and stopped in one place.

Owns: `runtime.Runtime` (one tmux server's fleet, control plane, Claude Code signals and
sidecar, and the one problem sink), `hosts` (a runtime per watched host behind one fleet),
`contract` (the options callers build a runtime with and the listener they give it),
`headless` (``--headless``: the runtime printing JSON lines), `service` and `service_starter`
(the runtime as a detached per-server service, and how a dashboard starts one),
`remote_plane` (another host's control plane, read by its own nbs-tui over ssh), and `early`
(the dashboard's runtime started before the app is imported, its news held until it mounts),
`change_counter` (the fleet list's change column: each agent's files and lines changed, from its
worktree's watch and the hooks).

It builds the lifecycle room's parts a runtime runs: the fleet memory's keeper
(`nbs_tui.lifecycle.fleet_keeper`) and the background-session poll
(`nbs_tui.lifecycle.background_poll`); the watched host is a `nbs_tui.lifecycle.host.Host` (its
service is started, and its control plane read, through it). The dashboard's lifecycle reaches
the runtime through `nbs_tui.lifecycle.threaded.WatchedServers` (`Runtime.command_paths`).

May import: the pure core, the ports (`nbs_tui.tmux`, `nbs_tui.files`, `nbs_tui.claude`), the
sidecar and lifecycle rooms (`nbs_tui.sidecar`, `nbs_tui.lifecycle`), config and
`nbs_tui.housekeeping` (logs). Never the UI (Textual, widgets, the app): the dashboard and
``--headless`` are two listeners of the same runtime (import-linter contract in pyproject.toml).
Nothing here imports a module that imports it back (tests/unit/test_import_graph.py).
"""
