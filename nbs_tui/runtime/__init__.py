"""The runtime room: the backends of one process, built, started and stopped in one place.

Owns: `runtime.Runtime` (one tmux server's fleet, control plane, Claude Code signals and
sidecar, and the one problem sink), `hosts` (a runtime per watched host behind one fleet),
`contract` (the options callers build a runtime with and the listener they give it),
`headless` (``--headless``: the runtime printing JSON lines), `service` and `service_starter`
(the runtime as a detached per-server service, and how a dashboard starts one),
`remote_plane` (another host's control plane, read by its own nbs-tui over ssh), and `early`
(the dashboard's runtime started before the app is imported, its news held until it mounts).

May import: the pure core, the ports (`nbs_tui.tmux`, `nbs_tui.files`, `nbs_tui.claude`), the
sidecar room (`nbs_tui.sidecar`), config and `nbs_tui.housekeeping` (logs). Never the UI
(Textual, widgets, the app): the dashboard and ``--headless`` are two listeners of the same
runtime (import-linter contract in pyproject.toml). Nothing here imports a module that imports
it back (tests/unit/test_import_graph.py).
"""
