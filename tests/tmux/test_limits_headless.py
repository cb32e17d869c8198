"""``nbs-tui --headless`` and a usage-limited agent (a pane replaying 2.1.332's limit screen): the
state event carries the parsed limit, the limit is reported, and with resume on the hold is said
(Claude Code continues by itself) while nothing at all is typed, no nudge either."""

from __future__ import annotations

import os
from pathlib import Path

import libtmux
from libtmux.test.retry import retry_until

from tests.headless_proc import Headless
from tests.tmux.replay_agent import corpus_screen, start_replay


def test_headless_reports_the_limit_and_types_nothing(server: libtmux.Server, tmp_path: Path) -> None:
    pane = start_replay(server, tmp_path, "limited", corpus_screen("2.1.332", "limited_session"))
    home = tmp_path / "home"
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "NBS_LIMIT_RESUME": "1",
        "NBS_STUCK_GRACE": "1",
        "NBS_POLL_INTERVAL": "1",
    }
    with Headless(["-L", str(server.socket_name)], env=env) as run:
        assert retry_until(lambda: run.has("resume", pane=pane.pane_id, result="held"), 20, raises=False), run.events
        # a poll (1 s) or a nudge (1 s grace) would have come by now were they not held
        assert not retry_until(lambda: bool(pane.raw()), 4, raises=False), pane.raw()
    assert run.returncode == 0, run.stderr
    [state] = [e for e in run.events if e["event"] == "state" and e["pane"] == pane.pane_id]
    assert state["state"] == "limited"
    assert state["limit"]["tz"] == "UTC" and state["limit"]["auto_resume"] is True
    assert run.has("limit", pane=pane.pane_id, result="limited")
    [held] = run.find("resume", pane=pane.pane_id)
    assert "continues by itself" in held["message"]
    assert not run.find("nudge", pane=pane.pane_id) and not run.find("poll", pane=pane.pane_id)
    assert pane.raw() == []
