"""``--headless`` prints the dashboard's notification decisions as ``notify`` lines: a demo agent
that finishes a turn is one ``finished`` line (and one only); the config file's notify keys are
taken (a bad one would stop it with exit status 4)."""

from __future__ import annotations

import os
from pathlib import Path

import libtmux
from libtmux.test.retry import retry_until

from tests.app.test_actions import demo_agent, screen_text
from tests.headless_proc import Headless


def test_headless_prints_a_notify_line_when_an_agent_finishes(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path
) -> None:
    pane = demo_agent(session, tmp_path, "idle", "worker")
    home = tmp_path / "home"
    (home / ".config" / "nbs-tui").mkdir(parents=True)
    (home / ".config" / "nbs-tui" / "config.toml").write_text('notify_mute = ["needs-input"]\n', encoding="utf-8")
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
           "XDG_STATE_HOME": str(home / ".state"), "NBS_POLL_DISABLE": "1"}  # fmt: skip
    with Headless(["-L", str(server.socket_name)], env=env) as run:
        assert retry_until(lambda: run.has("state", pane=pane, state="idle"), seconds=30, raises=False), run.events
        server.cmd("send-keys", "-t", pane, "-l", "Say hello")
        server.cmd("send-keys", "-t", pane, "Enter")
        assert retry_until(lambda: run.has("notify", pane=pane, kind="finished"), seconds=40, raises=False), [
            e for e in run.events if e["event"] in ("state", "notify")
        ]
        assert "✻ " in screen_text(session, pane).split("Say hello", 1)[-1]  # the turn really ended
    assert run.returncode == 0, run.stderr
    [note] = run.find("notify", pane=pane)
    assert note["state"] == "idle" and note["reason"] == "done: idle at the prompt"
