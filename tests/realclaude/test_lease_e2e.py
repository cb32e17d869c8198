"""Three sidecars on one tmux server with the real Claude Code CLI: exactly one acts (holds the
server's lease), so each idle agent gets the polls (and stuck nudges) of one sidecar, and its box
never holds a doubled command. Each sidecar is what ``--headless`` runs: its own TmuxFleet, SidecarRunner and
lease, only in this process."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import libtmux
import pytest
from libtmux.test.retry import retry_until

from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.sidecar.pane_sidecar import SidecarConfig
from nbs_tui.sidecar.events import NudgeStep, PollStep, SidecarEvent, TypingStep
from nbs_tui.sidecar.heartbeat import LeaseHeartbeat
from nbs_tui.sidecar.sidecar_lease import SidecarLease
from nbs_tui.sidecar.sidecar_runner import SidecarRunner
from nbs_tui.tmux.commands import TmuxServerCommands
from nbs_tui.tmux.fleet import TmuxFleet
from tests.realclaude.harness import ClaudeFleet, Text

pytestmark = [pytest.mark.realclaude, pytest.mark.slow]

POLL_NEEDLE = "Check your inbox and the registry"
WINDOW = 30.0  # seconds of three sidecars watching after every agent was polled once


class Watcher:
    def __init__(self, server: libtmux.Server) -> None:
        address = ServerAddress(socket_name=server.socket_name)
        self.fleet = TmuxFleet(address)
        commands = TmuxServerCommands.for_server(address)
        self.lease = SidecarLease(commands, LeaseHeartbeat(commands))
        self.events: list[SidecarEvent] = []
        self.lock = threading.Lock()
        self.runner = SidecarRunner(
            self.fleet, Settings(server=address, poll_interval=3.0), self.on_event,
            sidecar_config=SidecarConfig(poll_interval=3.0, backoff=3.0), lease=self.lease,
        )

    def on_event(self, event: SidecarEvent) -> None:
        with self.lock:
            self.events.append(event)

    def typed(self, pane_id: str, kind: type[TypingStep] = PollStep) -> int:
        with self.lock:
            return sum(
                1 for e in self.events
                if e.pane_id == pane_id and isinstance(e, kind) and e.result == "typed"
                and not e.by  # a view hears of the holder's typing: not its own
            )  # fmt: skip

    def start(self) -> None:
        self.fleet.start()
        assert self.fleet.wait_seeded(15)
        self.lease.start()
        self.runner.start()

    def stop(self) -> None:
        self.runner.stop()
        self.lease.stop()
        self.fleet.stop()


@contextmanager
def watchers(server: libtmux.Server, n: int) -> Iterator[list[Watcher]]:
    started = [Watcher(server) for _ in range(n)]
    try:
        for watcher in started:
            watcher.start()
        yield started
    finally:
        for watcher in started:
            watcher.stop()


def test_three_sidecars_poll_like_one(claude_fleet: ClaudeFleet, server: libtmux.Server) -> None:
    agents = claude_fleet.start_many([Text("idle")] * 20, [Text("idle")] * 20)
    with watchers(server, 3) as running:
        assert retry_until(lambda: sum(w.lease.acting() for w in running) == 1, 20, raises=False)
        assert retry_until(
            lambda: all(a.api.count_prompts(POLL_NEEDLE) >= 1 for a in agents), 60, interval=0.5, raises=False
        )
        deadline_reached = threading.Event()
        threading.Timer(WINDOW, deadline_reached.set).start()
        while not deadline_reached.wait(1.0):
            assert sum(w.lease.acting() for w in running) <= 1
        actors = [
            w for w in running if any(w.typed(a.pane_id) or w.typed(a.pane_id, NudgeStep) for a in agents)
        ]
        assert len(actors) == 1, [[w.typed(a.pane_id) for a in agents] for w in running]
        (actor,) = actors
        for agent in agents:
            prompts = agent.api.prompts()  # one reading: a poll may land while we look
            typed = actor.typed(agent.pane_id)  # read after: it may be one ahead, never behind
            polls = sum(POLL_NEEDLE in p for p in prompts)
            # the stuck watch may nudge an agent idle past its grace: by the holder too, once each
            nudges = [p for p in prompts if POLL_NEEDLE not in p]
            nudged = actor.typed(agent.pane_id, NudgeStep)
            assert len(nudges) in (nudged, nudged - 1), (nudges, nudged)
            assert all(p == Settings().stuck_nudge for p in nudges), nudges
            # every poll typed became one turn (the last may still be in flight) and the agent
            # saw nothing else: no doubled or half command ever reached it
            assert polls in (typed, typed - 1), (agent.name, typed, polls)
            assert all(p.count("/nbs-poll</command-name>") == 1 for p in prompts if POLL_NEEDLE in p)
            assert "/nbs-poll/nbs-poll" not in agent.screen()
            # one sidecar's rate: 3 s idle + the turn + 3 s backoff, so at most one per 6 s
            assert polls <= (WINDOW + 60) / 6 + 1
        print("polls per agent:", [a.api.count_prompts(POLL_NEEDLE) for a in agents],
              "nudges typed:", [[w.typed(a.pane_id, NudgeStep) for a in agents] for w in running],
              "typed by each sidecar:", [[w.typed(a.pane_id) for a in agents] for w in running])
