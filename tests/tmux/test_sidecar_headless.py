"""``nbs-tui --headless`` as a process on a private tmux server with a fake ``claude`` agent:
one JSON object per line, /nbs-poll delivered, clean exit on SIGINT and SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import libtmux
import pytest
from libtmux.test.retry import retry_until

from tests.tmux.test_sidecar_runner import write_fake_claude

REPO = Path(__file__).resolve().parents[2]


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

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nbs_tui",
            "-L",
            str(server.socket_name),
            "--headless",
            "--poll-interval",
            "2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    events: list[dict[str, Any]] = []
    bad: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                events.append(json.loads(line))
            except ValueError:
                bad.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        submitted = lambda: any(  # noqa: E731
            e.get("event") == "poll" and e.get("pane") == pane_id and e.get("result") == "submitted"
            for e in events
        )
        assert retry_until(submitted, seconds=30, raises=False), events
    finally:
        proc.send_signal(signum)
        code = proc.wait(20)
        reader.join(5)
    assert code == 0, proc.stderr.read() if proc.stderr else ""
    assert bad == []
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
    proc = subprocess.Popen(
        [sys.executable, "-m", "nbs_tui", "-L", str(server.socket_name), "--headless"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env,
    )
    events: list[dict[str, Any]] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            events.append(json.loads(line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        escalated = lambda: any(e["event"] == "escalate" and e["pane"] == pane_id for e in events)  # noqa: E731
        assert retry_until(escalated, seconds=40, raises=False), events
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(20)
        reader.join(5)
    assert code == 0, proc.stderr.read() if proc.stderr else ""
    assert events[0]["event"] == "start" and events[0]["claude_signals"] is True
    nudges = [e for e in events if e["event"] == "nudge" and e["pane"] == pane_id]
    assert [e["result"] for e in nudges] == ["queued", "typed", "enter", "submitted"]
    assert nudges[0]["nudge"] == 1 and nudges[0]["text"]
    [escalation] = [e for e in events if e["event"] == "escalate"]
    assert escalation["reason"] == "stuck" and "after 1 nudge" in escalation["message"]
    submits = [line for line in log.read_text().splitlines() if line.startswith("SUBMIT ")]
    assert submits == [f"SUBMIT {nudges[0]['text']}"]
