"""What an agent changed, decided without I/O: git's own output read (`git_output`: ``git status
--porcelain=v2 -z``, ``git diff --raw --numstat -z``), and the changes as the review, the change
column and ``nbs-tui diff`` show them (`agent_changes`: `FileChange`, `AgentChanges`, whose files
are an agent's own where several agents share a folder). Git itself is run by
`nbs_tui.files.git_changes`; nbs-tui never computes a diff.

The review screen's part: `unified_diff` reads git's diff of one file into hunks and numbered
lines; `review_comments` writes the one prompt that sends the operator's comments back to the
agent; `review_rules` says when sending, merge and discard are allowed."""
