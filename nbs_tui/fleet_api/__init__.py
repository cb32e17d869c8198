"""The fleet API: commands that let scripts and other agents steer the fleet (issue 36).

``nbs-tui agents`` and ``nbs-tui read`` so far: `agent_listing` reads the agents from what the
server's leased service already publishes on its panes (and Claude Code's status files),
`service_up` makes sure that service runs, `read_commands` parses and prints; `diff_command` is
``nbs-tui diff`` (an agent's changes against its base, docs/review.md). The exit codes and the
TARGET rules are pure (`nbs_tui.core.fleet_api`).
"""
