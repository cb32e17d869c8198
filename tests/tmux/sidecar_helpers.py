"""A SidecarRunner over a TmuxFleet on a test's private tmux server, recording its events.

Shared by the fake-agent tests (tests/tmux/test_sidecar_runner.py) and the real Claude Code
tests (tests/realclaude/test_sidecar_e2e.py), which drive the runner the same way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

import libtmux

from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.sidecar.pane_sidecar import SidecarConfig
from nbs_tui.sidecar.events import SidecarEvent
from nbs_tui.sidecar.sidecar_runner import ControlPort, SidecarRunner

E = TypeVar("E", bound=SidecarEvent)


@dataclass
class RunningSidecar:
    runner: SidecarRunner
    events: list[SidecarEvent]
    lock: threading.Lock

    def of(self, pane_id: str, kind: type[E], **match: object) -> list[E]:
        """Events of class ``kind`` for ``pane_id`` whose fields equal every ``match`` item."""
        with self.lock:
            found = [e for e in self.events if e.pane_id == pane_id and isinstance(e, kind)]
        return [e for e in found if all(getattr(e, k) == v for k, v in match.items())]


StartSidecar = Callable[..., RunningSidecar]


@contextmanager
def sidecars(server: libtmux.Server, **fleet_options: object) -> Iterator[StartSidecar]:
    """Yield ``start(settings, config, control=None, seed_timeout=10.0)``; every runner it
    started, and its fleet (built with ``fleet_options``), is stopped on the way out."""
    from nbs_tui.tmux.fleet import TmuxFleet

    started: list[tuple[TmuxFleet, SidecarRunner]] = []

    def start(
        settings: Settings,
        config: SidecarConfig,
        control: ControlPort | None = None,
        seed_timeout: float = 10.0,
    ) -> RunningSidecar:
        fleet = TmuxFleet(ServerAddress(socket_name=server.socket_name), **fleet_options)  # type: ignore[arg-type]
        fleet.start()
        assert fleet.wait_seeded(seed_timeout)
        events: list[SidecarEvent] = []
        lock = threading.Lock()

        def on_event(event: SidecarEvent) -> None:
            with lock:
                events.append(event)

        runner = SidecarRunner(fleet, settings, on_event, control=control, sidecar_config=config)
        runner.start()
        started.append((fleet, runner))
        return RunningSidecar(runner, events, lock)

    try:
        yield start
    finally:
        for fleet, runner in started:
            runner.stop()
            fleet.stop()
