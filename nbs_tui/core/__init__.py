"""The pure core: screen model, detection, sidecar logic, control plane. Imports no UI, no tmux.

Its rooms, each pure:

- `screen`: a pane's mirror (`pane_screen`, over pyte's `terminal` and `terminal_stream`), the
  rows the detector reads (`screen_rows`), scrollback search, and text made safe to show;
- `detection`: reading a Claude Code screen (`detect`), usage limits, the startup screens, the
  answer card's menu, and the fusion of every source into one state;
- `sidecar`: the per-pane sidecar's decisions (`pane_sidecar`), stuck agents, the lease's
  rules, the relays of actions and meters to viewers, and the meters themselves;
- `control`: the NBS control plane: control commands, the registry, inboxes, chats, bus events;
- `fleet`: the value types (`model`), hosts, the fleet's memory and restore plan, new agents,
  the pane state, the needs-you queue, problems, filters, background sessions, process trees;
- `review`: what an agent changed: git's -z output read, its files and who wrote them.
"""
