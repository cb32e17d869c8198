"""Issue 11's check with real processes: one server of demo agents watched by one sidecar, then by
three at once (two dashboards, each ``python -m nbs_tui`` in a pane of another tmux server, and
one ``--headless``), all allowed to act. The agents' own transcripts count the polls: three
watchers poll each idle agent as often as one does (and at least once), and no prompt box ever
holds a doubled command. Windows of 20 s each (several polls per agent at interval 2 s; the suite runs on two shared cores)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import libtmux
import pytest
from libtmux.test.retry import retry_until

from nbs_tui.core.sidecar.lease_rules import LEASE_OPTION
from nbs_tui.demo.launcher import DemoFleet
from tests.tmux.test_lease_headless import LeaseHeadless

REPO = Path(__file__).resolve().parents[2]
WINDOW = 20.0
INTERVAL = 2
"""The poll interval of every watcher (`LeaseHeadless` runs with 2 s)."""
AGENTS = 3
DOUBLED = "/nbs-poll/nbs-poll"


def polls(fleet: DemoFleet) -> dict[str, int]:
    """Per transcript (one per agent): the ``/nbs-poll`` prompts it received so far."""
    counts: dict[str, int] = {}
    for path in fleet.claude_config.glob("projects/*/*.jsonl"):
        n = 0
        for line in path.read_text().splitlines():
            record = json.loads(line)
            content = record.get("message", record).get("content")
            if record.get("type", record.get("role")) == "user" and isinstance(content, str):
                assert DOUBLED not in content, f"a doubled command was submitted: {content!r}"
                n += content.startswith("/nbs-poll")
        counts[path.stem] = n
    return counts


def boxes_clean(fleet: DemoFleet) -> Callable[[], None]:
    def check() -> None:
        for agent in fleet.agents:
            screen = fleet.tmux("capture-pane", "-p", "-t", agent.pane_id)
            assert DOUBLED not in screen, f"{agent.name}'s box holds a doubled command:\n{screen}"

    return check


def window(fleet: DemoFleet, check: Callable[[], None]) -> dict[str, int]:
    """The polls each agent receives over `WINDOW` seconds, checking the boxes all along."""
    before = polls(fleet)
    end = time.monotonic() + WINDOW
    while time.monotonic() < end:
        check()
        time.sleep(0.3)  # sampling the boxes while the window runs, not waiting on a condition
    after = polls(fleet)
    return {name: after[name] - before.get(name, 0) for name in after}


def held(fleet: DemoFleet) -> bool:
    return fleet.tmux("display-message", "-p", f"#{{{LEASE_OPTION}}}").strip() != ""


def dashboard(viewers: libtmux.Server, fleet: DemoFleet, home: Path, name: str) -> libtmux.Session:
    """A real dashboard (service = "off": it contends for the lease like --headless)."""
    home.mkdir(parents=True, exist_ok=True)
    socket = fleet.server.socket_name
    assert socket is not None
    command = (
        f"env HOME={home} XDG_CONFIG_HOME={home}/.config XDG_STATE_HOME={home}/.state NBS_SERVICE=off "
        f"{sys.executable} -m nbs_tui -L {socket} --poll-interval {INTERVAL}"
    )
    return viewers.new_session(name, window_command=command, start_directory=str(REPO), x=160, y=48)


@pytest.mark.slow
def test_three_watchers_poll_each_idle_agent_as_often_as_one_and_never_double(
    server: libtmux.Server, tmp_path: Path
) -> None:
    fleet = DemoFleet.start_busy(AGENTS, busy_fraction=0.0)
    check = boxes_clean(fleet)
    assert fleet.server.socket_name is not None
    fleet_server = libtmux.Server(socket_name=fleet.server.socket_name)
    watchers: list[LeaseHeadless] = []
    try:
        one = LeaseHeadless(fleet_server, tmp_path / "one")
        watchers.append(one)
        assert retry_until(one.acting, 30, raises=False), one.events[-5:]
        single = window(fleet, check)
        assert one.stop() == 0
        watchers.remove(one)

        sessions = [dashboard(server, fleet, tmp_path / f"dash{i}", f"dash{i}") for i in (1, 2)]
        third = LeaseHeadless(fleet_server, tmp_path / "three")
        watchers.append(third)
        for session in sessions:
            pane = session.active_pane
            assert pane is not None

            def connected(p: libtmux.Pane = pane) -> bool:
                return "● connected" in "\n".join(p.capture_pane())

            assert retry_until(connected, 60, raises=False), (
                "\n".join(pane.capture_pane())
            )
        assert retry_until(lambda: held(fleet), 30, raises=False)
        three = window(fleet, check)
        for session in sessions:  # every dashboard still runs: three watchers all along
            pane = session.active_pane
            assert pane is not None and "● connected" in "\n".join(pane.capture_pane())
        assert third.proc.poll() is None
    finally:
        for session in server.sessions:
            pane = session.active_pane
            if pane is not None:
                pane.send_keys("q", enter=False)
        for watcher in watchers:
            watcher.stop()
        retry_until(lambda: not server.sessions, 15, raises=False)
        fleet.stop()

    print(f"polls per agent in {WINDOW:g} s: one watcher {single}, three watchers {three}")
    # Every idle agent is polled in each window, by one sidecar and by three: an upper bound
    # alone passed with no poll at all.
    assert len(single) == AGENTS and all(count >= 1 for count in single.values()), single
    assert len(three) == AGENTS and all(count >= 1 for count in three.values()), (single, three)
    for name, count in three.items():
        # one sidecar's count, give or take the one poll a window's edge may cut off;
        # two sidecars acting would give about twice as many
        assert count <= single.get(name, 0) + 1, (single, three)
    assert sum(three.values()) <= sum(single.values()) + 1, (single, three)
