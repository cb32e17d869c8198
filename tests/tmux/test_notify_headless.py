"""``--headless`` prints the dashboard's notification decisions as ``notify`` lines: a demo agent
that finishes a turn is one ``finished`` line (and one only); the config file's notify keys are
taken (a bad one would stop it with exit status 4): a muted kind prints nothing, and nor does a
kind muted for the whole server from a dashboard's palette (``@nbs_mute``). The same run with
nothing muted prints the needs-input line first: the muted runs' "nothing" is its absence."""

from __future__ import annotations

import os
from pathlib import Path

import libtmux
import pytest
from libtmux.test.retry import retry_until

from nbs_tui.core.notifications.notify_rules import NotifyKind, encode_kinds
from nbs_tui.core.sidecar.lease_rules import MUTE_OPTION
from tests.app.test_actions import demo_agent, screen_text
from tests.headless_proc import Headless


@pytest.mark.parametrize("muted_by", ["config", "server", "nothing"])
def test_headless_prints_a_notify_line_when_an_agent_finishes_and_none_of_a_muted_kind(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path, muted_by: str
) -> None:
    pane = demo_agent(session, tmp_path, "idle", "worker")
    home = tmp_path / "home"
    (home / ".config" / "nbs-tui").mkdir(parents=True)
    config = 'notify_mute = ["needs-input"]\n' if muted_by == "config" else ""
    (home / ".config" / "nbs-tui" / "config.toml").write_text(config, encoding="utf-8")
    if muted_by == "server":  # as a dashboard's palette mutes it (the lease's PaneOptions.set_muted)
        server.cmd("set-option", "-s", MUTE_OPTION, encode_kinds([NotifyKind.NEEDS_INPUT]))
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
           "XDG_STATE_HOME": str(home / ".state"), "NBS_POLL_DISABLE": "1"}  # fmt: skip

    def states_and_notes() -> list[dict[str, object]]:
        return [e for e in run.events if e["event"] in ("state", "notify")]

    with Headless(["-L", str(server.socket_name)], env=env) as run:
        assert retry_until(lambda: run.has("state", pane=pane, state="idle"), seconds=30, raises=False), run.events
        # A turn through a permission menu: a needs-input notification, were it not muted.
        server.cmd("send-keys", "-t", pane, "-l", "run the tests")
        server.cmd("send-keys", "-t", pane, "Enter")
        assert retry_until(lambda: run.has("state", pane=pane, state="permission"), seconds=30, raises=False), (
            states_and_notes()
        )
        server.cmd("send-keys", "-t", pane, "Enter")  # "Yes": the turn runs on and ends
        assert retry_until(lambda: run.has("notify", pane=pane, kind="finished"), seconds=40, raises=False), (
            states_and_notes()
        )
        assert "✻ " in screen_text(session, pane).split("run the tests", 1)[-1]  # the turn really ended
    assert run.returncode == 0, run.stderr
    # The finished line came after the menu: a needs-input line, unmuted, is before it.
    notes = run.find("notify", pane=pane)
    assert [note["kind"] for note in notes] == (["needs-input"] if muted_by == "nothing" else []) + ["finished"], notes
    if muted_by == "nothing":
        asked = notes.pop(0)
        assert asked["state"] == "permission", asked
    [note] = notes
    assert note["state"] == "idle" and note["reason"] == "done: idle at the prompt"
