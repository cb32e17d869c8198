"""The real-Claude-Code sidecar scenarios of test_sidecar_e2e.py again, on the fleet
``--headless`` and the service run: nothing watched, no pane output from tmux at all, every
screen read through in-band captures (`TmuxFleet.captured`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import libtmux
import pytest

from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.sidecar.pane_sidecar import SidecarConfig
from nbs_tui.sidecar.sidecar_runner import ControlPort
from nbs_tui.tmux.fleet import TmuxFleet
from tests.realclaude.test_sidecar_e2e import (  # noqa: F401  (run again here, on captures)
    test_nbs_register_chat_on_screen_reaches_the_registry_once,
    test_plan_menu_answered_with_the_no_prompts_option_once,
    test_poll_reaches_only_the_idle_agent_once_per_interval,
)
from tests.tmux.sidecar_helpers import RunningSidecar, sidecars

pytestmark = [pytest.mark.realclaude, pytest.mark.slow]


@pytest.fixture
def sidecar(server: libtmux.Server) -> Iterator[Callable[..., RunningSidecar]]:
    with sidecars(server, watch_all=False, stream_output=False) as start_runner:

        def start(
            interval: float = 3.0, backoff: float = 3.0, control: ControlPort | None = None, **config: object
        ) -> RunningSidecar:
            address = ServerAddress(socket_name=server.socket_name)
            running = start_runner(
                Settings(server=address, poll_interval=interval),
                SidecarConfig(poll_interval=interval, backoff=backoff, **config),  # type: ignore[arg-type]
                control=control,
                seed_timeout=15,
            )
            fleet = running.runner.fleet
            assert isinstance(fleet, TmuxFleet) and not fleet.stream_output and not fleet.watched()
            return running

        yield start
