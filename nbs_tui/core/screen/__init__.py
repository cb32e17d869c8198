"""A pane's screen: the mirror fed by tmux's output, the rows the detector reads, scrollback
search, and text made safe to show."""
