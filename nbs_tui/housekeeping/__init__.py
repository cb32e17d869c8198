"""A long-running process's housekeeping: the log file and state folders (`logs`), short garbage
collector pauses (`heap`), and freed memory handed back (`memory`). Below every other room:
the ports and config import it, so it imports no other part of nbs_tui."""
