"""A world where several backends fail for real at once, for the tests of the one problem route
(`nbs_tui.core.fleet.problems`): each failure must reach the problems screen, the log file and
``--headless``'s ``error`` lines, in the same words.

On a private tmux server, with every file in a temporary folder:

* the control plane: a project whose ``.nbs/control-registry`` is a folder (unreadable, also
  for root);
* the sidecar: an agent pane showing Claude Code 2.1.197's usage-limit menu (a screen recorded
  from the real CLI) with ``limit_resume`` on, so the sidecar answers it "Stop and wait" and
  writes that to its action log, which is a folder;
* the sidecar lease: the server's lease option holds a value nbs-tui did not write;
* Claude Code's signals: the hook spool is a folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import libtmux

from nbs_tui.core.sidecar.lease_rules import LEASE_OPTION
from tests.tmux.replay_agent import ReplayPane, corpus_screen, start_replay

LEASE_TTL = 2.0
"""Short, so the foreign lease value is taken over (and the sidecar acts) within seconds."""


@dataclass(frozen=True, slots=True)
class ProblemWorld:
    project: Path
    action_log: Path
    hook_spool: Path
    agent: ReplayPane
    config: Path
    """A config file with every setting above, for the CLI."""

    def expected(self) -> list[tuple[str, str]]:
        """(source, a part of the message) of each problem the world causes."""
        return [
            ("control plane", f"cannot read {self.project}/.nbs/control-registry: not a regular file"),
            ("sidecar", f"{self.agent.pane_id} action log: "),
            ("sidecar lease", "holds a value nbs-tui did not write"),
            ("Claude Code signals", f"hook spool: cannot read {self.hook_spool}"),
        ]


def failing_world(server: libtmux.Server, tmp_path: Path) -> ProblemWorld:
    project = tmp_path / "project"
    (project / ".nbs" / "control-registry").mkdir(parents=True)
    action_log = tmp_path / "state" / "actions.log"
    action_log.mkdir(parents=True)
    hook_spool = tmp_path / "state" / "hooks.jsonl"
    hook_spool.mkdir(parents=True)
    (hook_spool / "x").write_text("a folder where the spool should be")
    agent = start_replay(server, tmp_path, "limited", corpus_screen("2.1.197", "limited_session"))
    server.cmd("set-option", "-s", LEASE_OPTION, "old-sidecar, {pid 7} #x")  # the server runs now
    config = tmp_path / "nbs-tui.toml"
    config.write_text(
        f'projects = ["{project}"]\n'
        f'action_log = "{action_log}"\n'
        f'hook_spool = "{hook_spool}"\n'
        f'claude_home = "{tmp_path / "claude-home"}"\n'
        "limit_resume = true\n"
        "poll_disabled = true\n"
        f"lease_ttl = {LEASE_TTL}\n"
    )
    return ProblemWorld(project, action_log, hook_spool, agent, config)
