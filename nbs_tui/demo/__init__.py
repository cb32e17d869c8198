"""The demo fleet: an imitation Claude Code agent and a launcher for a private tmux server."""
