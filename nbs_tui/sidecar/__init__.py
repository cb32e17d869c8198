"""The sidecar room: what nbs-claude's per-agent bash loop did, as one service per tmux server.

Owns: `sidecar_runner.SidecarRunner` (the once-a-second tick over every agent pane: detection,
``/nbs-poll``, plan menus, ``\\nbs-`` lines, stuck agents, usage limits, the operator's queued
requests), built from parts, each an object given what it needs: `watched_panes`
(`WatchedPanes`: the panes, their context, the snapshot; `EventOutlet`), `sidecar_tick`
(`SidecarTick`: one pass over every pane), `live_pane` (`LivePane`: the live re-read and the
keys), `action_carrier` (`ActionCarrier`), `limit_watch` (`LimitWatch`), `agent_watch`
(`AgentWatch`: stuck and ended agents), `lease_sync` (`LeaseSync`) and `operator_queue`
(`OperatorQueue`); `events` (one frozen `SidecarEvent` class per thing reported, each with its
JSON line; `SidecarSnapshot`); `sidecar_lease` (`SidecarLease`: the runner's link to the
server's lease and to what viewers write into tmux), `heartbeat` (`LeaseHeartbeat`: holding,
renewing and watching the lease in a tmux option) and `pane_options` (the switches every view
writes and the state the holder publishes, as tmux options).

The decisions themselves are pure and live in the core, where tests hold them without tmux:
`nbs_tui.core.sidecar.pane_sidecar` (the per-pane state machine), `nbs_tui.core.sidecar.live_safety` (what the
live screen must show before a key), `nbs_tui.core.sidecar.lease_rules` (the lease's rules),
`nbs_tui.core.sidecar.relay` (actions relayed to viewers), `nbs_tui.core.sidecar.stuck_agents` and
`nbs_tui.core.detection.usage_limits`. This room carries them out.

May import: the pure core, the ports (`nbs_tui.tmux`, `nbs_tui.claude`), config and logs.
Never the runtime that wires it, nor the UI (import-linter contracts in pyproject.toml).
"""
