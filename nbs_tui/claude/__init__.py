"""Claude Code signals besides the screen: hooks, session-status files, transcripts."""
