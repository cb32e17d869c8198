"""The fleet API's pure parts: its exit codes, an agent's row as the API shows it, and the
resolution of a TARGET to one agent. The commands that use them live in `nbs_tui.fleet_api`."""
