"""A dashboard that does not act (the service holds the lease) adds a task from its queue view;
the service's feeder hands it to an idle agent, and the dashboard follows it from the queue's
file to running, needs (a permission prompt) and done, while the service pushes "task done"
through Apprise to a local receiver."""

from __future__ import annotations

from pathlib import Path

import libtmux
import pytest
from textual.widgets import TextArea

from nbs_tui.app import NbsApp
from nbs_tui.core.fleet.model import AgentState
from nbs_tui.core.queue.task_states import Task, TaskState
from nbs_tui.widgets.add_task_form import AddTaskScreen
from tests.app.helpers import wait_for
from tests.app.test_actions import demo_agent, make_app
from tests.push_receiver import PushReceiver
from tests.tmux.test_push_service import push_env, service_running

pytestmark = pytest.mark.slow


def task_one(app: NbsApp) -> Task | None:
    return next((task for task in app.dashboard.queue_view.snapshot.tasks if task.id == "1"), None)


def seen(states: list[TaskState], app: NbsApp) -> bool:
    """Record each state task 1 is shown in (the view's snapshot), once each; true once done."""
    task = task_one(app)
    if task is not None and (not states or states[-1] is not task.state):
        states.append(task.state)
    return task is not None and task.state is TaskState.DONE


async def test_a_viewer_adds_a_task_and_follows_it_to_done_while_the_service_hands_it_out_and_pushes(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pane = demo_agent(session, tmp_path, "idle", "worker")
    with PushReceiver() as receiver:
        env = push_env(tmp_path, f'notify_urls = ["{receiver.url}"]\n')
        monkeypatch.setenv("XDG_STATE_HOME", env["XDG_STATE_HOME"])  # the dashboard reads the service's queue
        with service_running(server, env):
            app = make_app(server, tmp_path, service="off")
            async with app.run_test(size=(160, 48)) as pilot:
                await wait_for(pilot, lambda: app.runtime.lease is not None and pane in app.state.statuses, 40, "watching")
                lease = app.runtime.lease
                assert lease is not None
                await wait_for(pilot, lambda: not lease.acting(), 20, "the service holds the lease")
                await wait_for(pilot, lambda: app.state.statuses[pane].state is AgentState.IDLE, 40, "the agent idle")
                await pilot.press("4", "a")
                await wait_for(pilot, lambda: isinstance(app.screen, AddTaskScreen), what="the add form")
                app.screen.query_one("#task-text", TextArea).insert("run the tests")
                await pilot.press("ctrl+s")
                states: list[TaskState] = []
                await wait_for(pilot, lambda: seen(states, app) or states[-1:] == [TaskState.NEEDS], 60, f"needs: {states}")
                task = task_one(app)
                assert task is not None and task.pane == pane
                assert "worker" in str(app.dashboard.queue_view.table.get_row("1"))  # its agent, by window name
                server.cmd("send-keys", "-t", pane, "Enter")  # "Yes": the turn runs on and ends
                await wait_for(pilot, lambda: seen(states, app), 60, f"done: {states}")
                await wait_for(pilot, lambda: any("task done" in p["title"] for p in receiver.pushes()), 30, "the push")
    assert states[0] in (TaskState.QUEUED, TaskState.HANDING, TaskState.RUNNING) and states[-2:] == [TaskState.RUNNING, TaskState.DONE]
    assert TaskState.NEEDS in states
    [done] = [p for p in receiver.pushes() if "task done" in p["title"]]
    assert done["message"].startswith("task 1: run the tests\ndone")
