"""``nbs-tui --headless`` as a process on a private tmux server with a fake ``claude`` agent:
one JSON object per line, /nbs-poll delivered, clean exit on SIGINT and SIGTERM."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import libtmux
import pytest
from libtmux.test.retry import retry_until

from tests.headless_proc import Headless
from tests.tmux.test_sidecar_runner import write_fake_claude


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_headless_prints_json_events_and_exits_cleanly(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path, signum: signal.Signals
) -> None:
    fake = write_fake_claude(tmp_path / "claude")
    log = tmp_path / "agent.log"
    window = session.new_window(
        window_name="agent", window_shell=f"{fake} idle {log}", attach=False
    )
    pane_id = window.active_pane.pane_id  # type: ignore[union-attr]

    with Headless(["-L", str(server.socket_name), "--poll-interval", "2"], stop_signal=signum) as run:
        events = run.events
        assert retry_until(lambda: run.has("poll", pane=pane_id, result="submitted"), seconds=30, raises=False), events
    assert run.returncode == 0, run.stderr
    assert run.bad == []
    assert events[0]["event"] == "start" and events[-1]["event"] == "stop"
    states = [e for e in events if e["event"] == "state" and e["pane"] == pane_id]
    assert states and states[0]["state"] == "idle"
    assert "SUBMIT /nbs-poll" in log.read_text()


def test_headless_nudges_a_stuck_agent_then_escalates(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path
) -> None:
    fake = write_fake_claude(tmp_path / "claude")
    log = tmp_path / "agent.log"
    window = session.new_window(window_name="agent", window_shell=f"{fake} idle {log}", attach=False)
    pane_id = window.active_pane.pane_id  # type: ignore[union-attr]
    home = tmp_path / "home"  # no user config, an empty hook spool
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "NBS_STUCK_GRACE": "4",
        "NBS_POLL_DISABLE": "1",
    }
    with Headless(["-L", str(server.socket_name)], env=env) as run:
        events = run.events
        assert retry_until(lambda: run.has("escalate", pane=pane_id), seconds=40, raises=False), events
    assert run.returncode == 0, run.stderr
    assert events[0]["event"] == "start" and events[0]["claude_signals"] is True
    nudges = [e for e in events if e["event"] == "nudge" and e["pane"] == pane_id]
    assert [e["result"] for e in nudges] == ["queued", "typed", "enter", "submitted"]
    assert nudges[0]["nudge"] == 1 and nudges[0]["text"]
    [escalation] = [e for e in events if e["event"] == "escalate"]
    assert escalation["reason"] == "stuck" and "after 1 nudge" in escalation["message"]
    submits = [line for line in log.read_text().splitlines() if line.startswith("SUBMIT ")]
    assert submits == [f"SUBMIT {nudges[0]['text']}"]
