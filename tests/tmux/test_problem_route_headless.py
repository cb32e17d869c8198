"""The one problem route in ``nbs-tui --headless``, the CLI as a process: the control plane, the
sidecar, the sidecar lease and Claude Code's signals each fail for real (`problem_world`), and
each failure is one ``error`` line (with its source) and the same words in the log file.

(The tmux fleet's, a killed control client, is `test_problems_headless.py`'s; hosts and another
host's control plane are `tests/remote/test_ssh_problems.py`'s.)"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import libtmux
from libtmux.test.retry import retry_until

from tests.headless_proc import Headless
from tests.tmux.problem_world import failing_world


def errors(events: list[dict[str, Any]], source: str, needle: str) -> list[dict[str, Any]]:
    return [e for e in list(events) if e.get("event") == "error" and e.get("source") == source and needle in e["message"]]


def test_every_failing_backend_is_an_error_line_and_a_log_line(server: libtmux.Server, tmp_path: Path) -> None:
    world = failing_world(server, tmp_path)
    state = tmp_path / "xdg-state"
    env = {**os.environ, "XDG_STATE_HOME": str(state), "XDG_CONFIG_HOME": str(tmp_path / "xdg-config")}
    with Headless(["-L", str(server.socket_name), "--config", str(world.config)], env=env) as run:
        for source, needle in world.expected():
            said = retry_until(lambda s=source, n=needle: bool(errors(run.events, s, n)), 30, raises=False)  # type: ignore[misc]
            assert said, (source, needle, [e for e in run.events if e.get("event") == "error"])
        # the sidecar did act (it pressed the limit menu's wait option): its log is what failed
        assert any(line.startswith("KEY ") or line.startswith("RAW ") for line in world.agent.lines())
    assert run.returncode == 0, run.stderr
    assert not run.bad, run.bad
    assert not [e for e in run.events if e.get("event") == "control-error"], "one route, not two"
    # one line per record the log failed to keep (the limit menu's key, and the limit's own record
    # when the tick sees it first): one or more, each about the action log, none another route's
    sidecar_errors = errors(run.events, "sidecar", world.agent.pane_id)
    assert sidecar_errors
    for sidecar in sidecar_errors:
        assert "Is a directory" in sidecar["message"] and str(world.action_log) in sidecar["message"], sidecar
    log = (state / "nbs-tui" / "nbs-tui.log").read_text()
    for source, needle in world.expected():
        for line in errors(run.events, source, needle):
            assert f"{source}: {line['message']}" in log, (source, line, log)
