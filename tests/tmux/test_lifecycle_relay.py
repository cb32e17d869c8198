"""A stop or restart, by ``nbs-tui stop`` or by any dashboard, reaches every view of the server
(issue 29, item 4): two real ``nbs-tui --headless`` processes watch a private tmux server (one
holds the lease, the other only watches); ``nbs-tui stop`` ends an agent there (a stand-in with
a Claude Code status file: Ctrl-C ends it) and each view prints that ``stop`` once, ``by`` the
CLI's process; a dashboard's stop (`tell_views`, as `OperatorController` calls it) reaches both
too, and two writers never number two actions alike."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import libtmux
from libtmux.test.retry import retry_until

from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.sidecar.relay import LIFECYCLE_OPTION, parse_ring
from nbs_tui.lifecycle.agent_stop import tell_views
from nbs_tui.tmux.commands import TmuxServerCommands
from tests.headless_proc import REPO
from tests.tmux.test_lease_headless import LeaseHeadless


def stand_in(session: libtmux.Session, config: Path) -> str:
    """A pane whose process has a Claude Code status file (what `nbs-tui stop` looks for)."""
    (config / "sessions").mkdir(parents=True)
    script = config / "stand-in.sh"
    script.write_text(
        f'printf \'{{"pid": %s, "sessionId": "s-1", "status": "busy"}}\' $$ > {config}/sessions/$$.json\n'
        "exec sleep 600\n"
    )
    window = session.new_window(
        window_name="api", window_shell=f"env CLAUDE_CONFIG_DIR={config} sh {script}", attach=False
    )
    pane = window.active_pane
    assert pane is not None and pane.pane_id is not None
    assert retry_until(lambda: any((config / "sessions").glob("*.json")), 10, raises=False)
    return pane.pane_id


def stops(view: LeaseHeadless, pane_id: str) -> list[dict[str, object]]:
    return view.find("stop", pane=pane_id)


def test_a_stop_by_the_cli_or_a_dashboard_reaches_every_view_once(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path
) -> None:
    pane_id = stand_in(session, tmp_path / "claude-config")
    commands = TmuxServerCommands.for_server(ServerAddress(socket_name=str(server.socket_name)))
    views = [LeaseHeadless(server, tmp_path / "h1"), LeaseHeadless(server, tmp_path / "h2")]
    try:
        # Each view's first read of the ring only marks what is there (older news): warm both up
        # with a stop of a pane that does not exist until each has shown one.
        for _ in range(10):
            assert tell_views(commands, "stop", "%999", "x:0.0", "", False, "warm-up", by="test pid 0") == ""
            if retry_until(lambda: all(stops(v, "%999") for v in views), 3, raises=False):
                break
        assert all(stops(v, "%999") for v in views), [v.events[-5:] for v in views]

        env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "NBS_"))}
        env.update(XDG_STATE_HOME=str(tmp_path / "cli-state"), XDG_CONFIG_HOME=str(tmp_path / "cli-config"))
        done = subprocess.run(
            [sys.executable, "-m", "nbs_tui", "-L", str(server.socket_name), "stop", pane_id, "--yes", "--json"],
            capture_output=True, text=True, timeout=60, env=env, cwd=REPO, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["stopped_by"] == "Ctrl-C"
        assert retry_until(lambda: all(stops(v, pane_id) for v in views), 15, raises=False), [v.events[-5:] for v in views]
        for view in views:
            (event,) = stops(view, pane_id)
            assert event["result"] == "sent" and event["text"] == "Ctrl-C" and str(event["target"]).startswith(str(session.name))
            _host, _, pid = str(event["by"]).partition(" pid ")  # the CLI's process, no view's
            assert pid.isdigit() and int(pid) not in (os.getpid(), *(v.proc.pid for v in views)), event

        # a dashboard's stop (its lease names it): the same ring, every other view told
        assert tell_views(commands, "restart", "%7", "crew:1.0", "claude --resume s-9", True, "", by="dash pid 1") == ""
        assert retry_until(lambda: all(v.has("restart", by="dash pid 1") for v in views), 15, raises=False)
        # One more action after both, seen by every view: each has read the ring again since
        # (an action shown again on a later read would show now), and still shows each once.
        assert tell_views(commands, "stop", "%998", "x:0.1", "", False, "later", by="test pid 0") == ""
        assert retry_until(lambda: all(stops(v, "%998") for v in views), 15, raises=False), [v.events[-5:] for v in views]
        for view in views:
            assert len(stops(view, pane_id)) == 1 and len(view.find("restart", by="dash pid 1")) == 1, view.events[-5:]
    finally:
        for view in views:
            view.stop()
    assert [(v.returncode, v.bad) for v in views] == [(0, [])] * 2, [v.stderr[-2000:] for v in views]
    ring = parse_ring(commands.run("display-message", "-p", f"#{{{LIFECYCLE_OPTION}}}").first)
    numbers = [a.seq for a in ring]
    assert numbers == sorted(set(numbers)) and numbers[-1] == len(numbers) + (numbers[0] - 1)
