"""The dashboard shows meters it did not read itself (Pilot, real tmux, a real service): the
``nbs-tui service`` holding the lease reads an agent's transcript and publishes its meters; a
dashboard watching the same server with no Claude signals of its own shows them in the status
bar's Σ and in the pane's details (docs/lease.md, "The agents' meters")."""

from __future__ import annotations

from pathlib import Path

import libtmux

from nbs_tui.app import create_app
from nbs_tui.claude.transcript import TranscriptTail
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.sidecar.meters import DEFAULT_PRICES, describe, describe_total
from tests.app.helpers import static_text, wait_for
from tests.tmux.test_meters_relay import agent_with_transcript
from tests.tmux.test_service import cli, service_env

SIZE = (160, 48)


async def test_the_dashboard_shows_the_services_meters(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path
) -> None:
    env = service_env(tmp_path)
    pane_id, transcript = agent_with_transcript(session, tmp_path, Path(env["HOME"]) / ".claude")
    tail = TranscriptTail(transcript)
    tail.read()
    expected = tail.facts.meters
    started = cli(server, env, "start")
    assert started.returncode == 0, started.stderr
    settings = Settings(
        server=ServerAddress(socket_name=server.socket_name),
        action_log=tmp_path / "state" / "actions.log",
        hook_spool=tmp_path / "state" / "hooks.jsonl",
        claude_home=tmp_path / "claude-home",
        poll_disabled=True,
        bell=False,
        service="off",  # the service already holds the lease: this dashboard watches
    )
    app = create_app(settings, control_plane=False, claude=False)  # reads no transcript itself
    try:
        async with app.run_test(size=SIZE) as pilot:
            total = describe_total(expected, DEFAULT_PRICES)
            await wait_for(pilot, lambda: app.dashboard.status_bar.meters[0] == total, timeout=30, what=f"Σ {total}")
            app.dashboard.select_pane(pane_id)
            line = describe(expected, DEFAULT_PRICES) + " · 2 responses"
            await wait_for(pilot, lambda: line in static_text(app.dashboard.detail, 200), what="the details' meters")
            assert not app.runtime.lease or not app.runtime.lease.acting()
    finally:
        assert cli(server, env, "stop").returncode == 0
