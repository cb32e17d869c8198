"""The one problem route in the dashboard (Pilot, real tmux, real files): the control plane, the
sidecar, the sidecar lease and Claude Code's signals fail for real (`problem_world`), and so do
a notification's command (a demo agent finishes a turn while the operator looks at the Control
view), an operator job and a worker of the app; each failure is listed on the problems screen
(``E``) and written to the log file in the same words.

(The tmux fleet's failures are `test_problems_app.py`'s; hosts and another host's control plane
are `tests/remote/test_ssh_problems.py`'s; the same world's ``error`` lines are
`tests/tmux/test_problem_route_headless.py`'s.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import libtmux
import pytest

from nbs_tui.app import NbsApp, create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.problems import Problem
from nbs_tui.housekeeping import logs
from nbs_tui.widgets.problems_screen import ProblemsScreen
from tests.app.helpers import wait_for
from tests.app.test_actions import demo_agent
from tests.app.test_notify_tmux import finish_a_turn
from tests.tmux.fleet_helpers import address
from tests.tmux.problem_world import LEASE_TTL, failing_world

SIZE = (160, 48)
NOTIFY = "/no/such/notify-command"


@pytest.fixture
def log_file(tmp_path: Path) -> Iterator[Path]:
    path = logs.install(tmp_path / "xdg-state" / "nbs-tui" / "nbs-tui.log")
    yield path
    logs.uninstall()


def find(app: NbsApp, source: str, needle: str) -> list[Problem]:
    return [p for p in app.problems.entries() if p.source == source and needle in p.message]


async def test_every_failing_backend_is_on_the_problems_screen_and_in_the_log(
    session: libtmux.Session, tmp_path: Path, log_file: Path
) -> None:
    world = failing_world(session.server, tmp_path)
    talker = demo_agent(session, tmp_path, "idle", "talker")
    settings = Settings(
        server=address(session.server), projects=(world.project,), action_log=world.action_log,
        hook_spool=world.hook_spool, claude_home=tmp_path / "claude-home", limit_resume=True,
        poll_disabled=True, lease_ttl=LEASE_TTL, notify_osc="off", notify_command=f"{NOTIFY} {{pane}}",
    )  # fmt: skip
    expected = world.expected()
    app = create_app(settings)
    async with app.run_test(size=SIZE) as pilot:
        for source, needle in expected:
            await wait_for(pilot, lambda s=source, n=needle: find(app, s, n), 30, f"{source}: {needle}")  # type: ignore[misc]

        # a turn finished where the operator is not looking: notified, and the command fails
        await wait_for(pilot, lambda: app.state.statuses.get(talker) is not None, 30, "the demo agent seen")
        app.dashboard.action_show_view("control")
        finish_a_turn(session, talker)
        expected.append(("notify", f"notify_command: {NOTIFY} not found"))
        await wait_for(pilot, lambda: find(app, *expected[-1]), 60, "the notification's command failed")

        def broken_job() -> None:
            raise OSError(28, "No space left on device")

        app.operator.submit(broken_job)  # the controller's action thread
        expected.append(("operator action", "OSError: [Errno 28] No space left on device"))

        def broken_worker() -> None:
            raise RuntimeError("the worker fell over")

        app.run_worker(broken_worker, name="probe", thread=True, exit_on_error=False)
        expected.append(("nbs-tui", "probe: the worker fell over"))
        for source, needle in expected[-2:]:
            await wait_for(pilot, lambda s=source, n=needle: find(app, s, n), 15, f"{source}: {needle}")  # type: ignore[misc]

        await pilot.press("E")
        screen = app.screen
        assert isinstance(screen, ProblemsScreen)
        listed = screen.text().splitlines()
        for source, needle in expected:
            assert any(line.startswith(f"{source}: ") and needle in line for line in listed), (source, needle, listed)
        shown = [p for source, needle in expected for p in find(app, source, needle)]

    text = log_file.read_text()
    for problem in shown:
        assert f"{problem.source}: {problem.message}" in text, (problem, text)
