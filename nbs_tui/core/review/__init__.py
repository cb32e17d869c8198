"""What an agent changed, decided without I/O: git's own output read (`git_output`: ``git status
--porcelain=v2 -z``, ``git diff --raw --numstat -z``), and the changes as the review, the change
column and ``nbs-tui diff`` show them (`agent_changes`: `FileChange`, `AgentChanges`, whose files
are an agent's own where several agents share a folder). Git itself is run by
`nbs_tui.files.git_changes`; nbs-tui never computes a diff."""
