"""nbs-tui: one dashboard for a fleet of Claude Code agents running in tmux panes."""

__version__ = "0.1.0"
