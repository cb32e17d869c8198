"""The port to tmux: discovery, control-mode streams, pane mirrors, sending keys."""
