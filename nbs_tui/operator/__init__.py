"""The operator's room, without Textual: the actions on panes (`pane_actions`), their
append-only record (`action_log`), the review's actions on an agent's changes (`review_actions`:
comments sent, merge, discard), and `operator_controller.OperatorController`, which decides
and does what the dashboard asks for. May import the core, the ports, config, the runtime and
the lifecycle; never the UI (import-linter contract in pyproject.toml)."""
