"""Meters reach every view through tmux (nbs_tui/core/sidecar/meters_relay.py): a real ``nbs-tui
service`` process, whose Claude signals read an agent's transcript with known usage, publishes
the agent's meters in ``@nbs_meters``; a separate dashboard runtime, only a viewer and reading
no transcript, shows the same totals, follows a new response, and drops them when the service
stops (it clears what it published)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import libtmux
from libtmux.test.retry import retry_until

from nbs_tui.claude.transcript import TranscriptTail
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.fleet.pane_state import PaneState
from nbs_tui.core.sidecar.meters import DEFAULT_PRICES, Meters, Tokens, describe, describe_total
from nbs_tui.core.sidecar.meters_relay import METERS_OPTION, parse_meters
from nbs_tui.runtime.contract import LeaseMode, RuntimeOptions
from nbs_tui.runtime.runtime import Runtime
from nbs_tui.sidecar.events import MetersNews
from nbs_tui.tmux.commands import TmuxServerCommands
from tests.tmux.test_lease_headless import agent
from tests.tmux.test_service import LeaseRecorder, cli, service_env
from tests.unit.test_runtime import settings

MODEL = "claude-sonnet-4-5-20250929"


def response(msg_id: str, i: int, o: int, cw: int, cr: int) -> list[dict[str, Any]]:
    """One API response as Claude Code writes it: a line per content block, usage repeated."""
    usage = {"input_tokens": i, "output_tokens": o, "cache_creation_input_tokens": cw, "cache_read_input_tokens": cr}
    return [
        {
            "type": "assistant", "uuid": f"{msg_id}-{block}", "requestId": f"req-{msg_id}",
            "message": {"id": msg_id, "model": MODEL, "role": "assistant", "usage": usage,
                        "content": [{"type": block, "text": "ok"}]},
        }
        for block in ("text", "tool_use")
    ]


def append(path: Path, records: list[dict[str, Any]]) -> None:
    with path.open("a") as handle:
        handle.write("".join(json.dumps(r) + "\n" for r in records))


def agent_with_transcript(
    session: libtmux.Session, tmp_path: Path, claude_home: Path
) -> tuple[str, Path]:
    """An agent pane whose Claude files (session status, transcript) are in ``claude_home``."""
    pane_id, _log = agent(session, tmp_path, "metered")
    pid = int(session.server.cmd("display-message", "-p", "-t", pane_id, "#{pane_pid}").stdout[0])
    (claude_home / "sessions").mkdir(parents=True)
    status = {"pid": pid, "sessionId": "s-meters", "cwd": str(tmp_path), "status": "idle", "version": "2.1.332"}
    (claude_home / "sessions" / f"{pid}.json").write_text(json.dumps(status))
    transcript = claude_home / "projects" / "-work" / "s-meters.jsonl"
    transcript.parent.mkdir(parents=True)
    append(transcript, response("msg-1", 1000, 50, 200, 3000) + response("msg-2", 7, 11, 13, 17))
    return pane_id, transcript


def test_a_viewer_shows_the_meters_the_service_reads(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path
) -> None:
    env = service_env(tmp_path)  # the service's HOME: its Claude home is HOME/.claude
    pane_id, transcript = agent_with_transcript(session, tmp_path, Path(env["HOME"]) / ".claude")
    address = ServerAddress(socket_name=str(server.socket_name))
    commands = TmuxServerCommands.for_server(address)
    recorder = LeaseRecorder()
    viewer = Runtime(
        replace(settings(tmp_path), server=address, poll_interval=600.0), recorder,
        RuntimeOptions(lease=LeaseMode.WATCH, claude=False, control_plane=False),
    )

    def relayed() -> Meters | None:
        told = [e for e in list(recorder.sidecar) if isinstance(e, MetersNews) and e.pane_id == pane_id]
        return told[-1].meters if told else None

    def counted(expected: Tokens) -> bool:
        meters = relayed()
        return meters is not None and meters.tokens == expected

    started = cli(server, env, "start")
    assert started.returncode == 0, started.stderr
    try:
        viewer.start()
        first = Tokens(input=1007, output=61, cache_creation=213, cache_read=3017)
        assert retry_until(lambda: counted(first), 30, raises=False), (relayed(), recorder.sidecar[-5:])
        meters = relayed()
        assert meters is not None and meters.responses == 2  # each response once, not each line
        # what the holder reads from the transcript is what the viewer shows, priced alike
        tail = TranscriptTail(transcript)
        tail.read()
        assert meters == tail.facts.meters
        assert describe(meters, DEFAULT_PRICES) == describe(tail.facts.meters, DEFAULT_PRICES)
        assert describe(meters, DEFAULT_PRICES).startswith("ctx 0% · in 1.0k +cache 3.0k/213 · out 61 · ~$")
        state = PaneState()
        state.set_fleet(recorder.fleets[-1])
        for event in recorder.sidecar:
            if isinstance(event, MetersNews):
                state.set_relayed_meters(event.pane_id, event.meters)
        total = state.fleet_meters()
        assert total is not None
        assert describe_total(total, DEFAULT_PRICES) == describe_total(tail.facts.meters, DEFAULT_PRICES)
        assert parse_meters(commands.run("show-options", "-pqv", "-t", pane_id, METERS_OPTION).text) == meters
        # a new response moves the viewer's meters
        append(transcript, response("msg-3", 5, 100, 0, 3230))
        grown = Tokens(input=1012, output=161, cache_creation=213, cache_read=6247)
        assert retry_until(lambda: counted(grown), 15, raises=False), relayed()
        # a clean stop unsets what the service published: the viewer's meters go too
        assert cli(server, env, "stop").returncode == 0
        assert retry_until(lambda: relayed() is None, 15, raises=False), relayed()
    finally:
        viewer.stop()
        cli(server, env, "stop")
