"""The sidecar's pure decisions: the per-pane state machine, the live-safety rules a screen
must pass before a key, stuck agents, the lease's rules, and what the lease holder relays to
viewers (actions, meters). `nbs_tui.sidecar` carries them out."""
