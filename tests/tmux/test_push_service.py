"""Push notifications go out once per event, from the process that holds the server's lease:
the service, here, with two dashboards (one of them phone-sized) and a ``--headless`` watching
the same server with the same ``notify_urls`` (each would send too if every watcher pushed). A local HTTP receiver stands
in for the push service; the push says the agent's name, state and question, and its link
opens the agent's card once."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import libtmux
import pytest
from libtmux.test.retry import retry_until

from nbs_tui.app import NbsApp
from nbs_tui.core.fleet.card_target import format_card_target
from nbs_tui.core.fleet.model import AgentState, ServerAddress
from nbs_tui.core.fleet.web_links import LinkRedeemer, new_link_key
from nbs_tui.core.notifications.notify_rules import Notification, NotifyKind
from nbs_tui.core.queue.records import (
    Record,
    TaskAdded,
    TaskDone,
    TaskFailed,
    TaskHanded,
    TaskHanding,
)
from nbs_tui.core.sidecar.lease_rules import MUTE_OPTION
from nbs_tui.files.queue_store import QueueStore, queue_path
from nbs_tui.files.web_endpoint import WebEndpoint, endpoint_path, write_endpoint
from nbs_tui.notify.push import PushSender
from tests.app.helpers import wait_for
from tests.app.test_actions import demo_agent, make_app, screen_text
from tests.headless_proc import Headless
from tests.push_receiver import PushReceiver
from tests.tmux.test_service import cli, service_env

pytestmark = pytest.mark.slow


@contextmanager
def service_running(server: libtmux.Server, env: dict[str, str]) -> Iterator[None]:
    """The server's service (``nbs-tui service start``), stopped cleanly after the block."""
    started = cli(server, env, "start")
    assert started.returncode == 0, started.stderr
    try:
        yield
    finally:
        stopped = cli(server, env, "stop")
    assert stopped.returncode == 0, stopped.stderr


def push_env(tmp_path: Path, config: str) -> dict[str, str]:
    env = {**service_env(tmp_path), "NBS_POLL_DISABLE": "1"}
    env.pop("NBS_POLL_INTERVAL", None)
    folder = Path(env["XDG_CONFIG_HOME"]) / "nbs-tui"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(config, encoding="utf-8")
    return env


def decided(push: PushSender | None) -> list[NotifyKind]:
    """The kinds ``push`` finds due from now on (`PushSender.offer`, which sends them only while
    its process holds the lease), in order."""
    assert push is not None
    kinds: list[NotifyKind] = []
    offer = push.offer

    def offered(notes: Sequence[Notification], question: str = "") -> None:
        kinds.extend(note.kind for note in notes)
        offer(notes, question)

    push.offer = offered  # type: ignore[method-assign]
    return kinds


async def test_one_push_per_event_from_the_service_while_two_dashboards_and_headless_watch(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path
) -> None:
    """Each event is pushed once, checked once every watcher has decided it (any that pushed
    would have queued it then), and again a whole turn later, when the next event's push came."""
    pane = demo_agent(session, tmp_path, "idle", "worker")
    key = new_link_key()
    asking, done_kind = NotifyKind.NEEDS_INPUT, NotifyKind.FINISHED
    with PushReceiver() as receiver:
        # a repeat limit of 1 s: the second turn's menu is pushed too (the event after the checked ones)
        env = push_env(tmp_path, f'notify_urls = ["{receiver.url}"]\nnotify_repeat = 1\n')
        state = Path(env["XDG_STATE_HOME"]) / "nbs-tui"
        write_endpoint(endpoint_path(state), WebEndpoint("https://127.0.0.1:8443/", os.getpid(), key))
        with service_running(server, env), Headless(["-L", str(server.socket_name)], env=env) as viewer:
            app = make_app(server, tmp_path, service="off", notify_urls=(receiver.url,), notify_repeat=1.0)
            second = make_app(server, tmp_path / "second", service="off", notify_urls=(receiver.url,), notify_repeat=1.0)
            async with app.run_test(size=(160, 48)) as pilot, second.run_test(size=(50, 30)) as phone:
                await wait_for(pilot, lambda: viewer.has("state", pane=pane, state="idle"), 40, "the viewer sees idle")
                await wait_for(pilot, lambda: app.runtime.push is not None and app.runtime.lease is not None, 20, "push")
                await wait_for(phone, lambda: second.runtime.push is not None and pane in second.state.statuses, 40, "2nd")
                for dashboard in (app, second):
                    lease = dashboard.runtime.lease
                    assert lease is not None and not lease.acting()  # the service holds it
                assert viewer.find("lease")[-1]["acting"] is False
                decisions = [decided(app.runtime.push), decided(second.runtime.push)]

                def all_decided(*kinds: NotifyKind) -> bool:
                    """Every watcher's last decisions are these (the viewer prints its own). A
                    dashboard may not decide the first menu: its sidecar reads a quiet pane only
                    once it changes, and a first sight only seeds the rules."""
                    printed = [NotifyKind(note["kind"]) for note in viewer.find("notify", pane=pane)]
                    return all(made[-len(kinds):] == list(kinds) for made in (*decisions, printed))

                server.cmd("send-keys", "-t", pane, "-l", "run the tests")
                server.cmd("send-keys", "-t", pane, "Enter")
                await wait_for(pilot, lambda: len(receiver.pushes()) >= 1, 40, "the needs-input push")
                # the menu stays until every watcher's sidecar has read it (the viewer's says so)
                await wait_for(pilot, lambda: viewer.has("state", pane=pane, state="permission"), 20, "viewer: menu")
                server.cmd("send-keys", "-t", pane, "Enter")  # "Yes": the turn runs on and ends
                await wait_for(pilot, lambda: len(receiver.pushes()) >= 2, 40, "the finished push")
                await wait_for(pilot, lambda: all_decided(done_kind), 20, f"every watcher deciding: {decisions}")
                assert "✻ " in screen_text(session, pane).split("run the tests", 1)[-1]  # the turn ended
                # The next turn's menu: its push comes a turn after every watcher decided the
                # first two (a watcher that pushed them would have sent them by now).
                await wait_for(pilot, lambda: app.state.statuses[pane].state is AgentState.IDLE, 40, "idle again")
                server.cmd("send-keys", "-t", pane, "-l", "run the tests")
                server.cmd("send-keys", "-t", pane, "Enter")
                await wait_for(pilot, lambda: len(receiver.pushes()) >= 3, 40, "the second needs-input push")
                await wait_for(pilot, lambda: all_decided(done_kind, asking), 20, f"deciding it: {decisions}")
                assert [note["kind"] for note in viewer.find("notify", pane=pane)] == ["needs-input", "finished", "needs-input"]
                assert len(receiver.pushes()) == 3, receiver.pushes()
    asked, done, again = receiver.pushes()  # once each: not three times, not twice
    target = session.cmd("display", "-p", "-t", pane, "#{session_name}:#{window_index}.#{pane_index}").stdout[0]
    assert asked["title"] == again["title"] == f"nbs-tui: {target} needs input"
    state_line, question, link = asked["message"].splitlines()
    assert (state_line, question) == ("state: permission", "Do you want to proceed?")
    assert link.startswith("https://127.0.0.1:8443/open/")
    redeemer = LinkRedeemer(key)
    card = format_card_target("local", ServerAddress(socket_name=server.socket_name), pane)
    assert redeemer.redeem(link.rsplit("/", 1)[1], now=time.time()) == card
    assert redeemer.redeem(link.rsplit("/", 1)[1], now=time.time()) is None
    assert done["title"] == f"nbs-tui: {target} finished"
    assert done["message"].splitlines()[0] == "state: idle" and "Do you want" not in done["message"]


def test_a_muted_kind_is_not_pushed_and_no_endpoint_means_no_link(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path
) -> None:
    pane = demo_agent(session, tmp_path, "idle", "worker")
    with PushReceiver() as receiver:
        env = push_env(tmp_path, f'notify_urls = ["{receiver.url}"]\nnotify_mute = ["needs-input"]\n')
        with service_running(server, env), Headless(["-L", str(server.socket_name)], env=env) as viewer:
            assert retry_until(lambda: viewer.has("state", pane=pane, state="idle"), 40, raises=False)
            server.cmd("send-keys", "-t", pane, "-l", "run the tests")
            server.cmd("send-keys", "-t", pane, "Enter")
            assert retry_until(lambda: viewer.has("state", pane=pane, state="permission"), 40, raises=False)
            server.cmd("send-keys", "-t", pane, "Enter")
            assert retry_until(lambda: bool(receiver.pushes()), 40, raises=False)
    # the needs-input push, were it not muted, would have come first
    [done] = receiver.pushes()
    assert "finished" in done["title"] and done["message"] == "state: idle"


def muted_on_server(server: libtmux.Server) -> str:
    """The server-wide mute (``@nbs_mute``) as tmux holds it ("" when unset)."""
    shown = server.cmd("show-options", "-sqv", MUTE_OPTION).stdout
    return shown[0] if shown else ""


def palette_toggle(app: NbsApp, title: str) -> None:
    """Run the command palette's entry called ``title``, as the operator picks it."""
    [command] = [c for c in app.get_system_commands(app.screen) if c.title == title]
    command.callback()


async def test_muting_in_a_dashboard_mutes_the_services_pushes_until_it_unmutes(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path
) -> None:
    """The palette's mute is the server's: the service (another process, the lease holder)
    sends no push of the muted kind while it is muted, and sends it again once unmuted."""
    pane = demo_agent(session, tmp_path, "idle", "worker")
    with PushReceiver() as receiver:
        env = push_env(tmp_path, f'notify_urls = ["{receiver.url}"]\n')
        with service_running(server, env):
            app = make_app(server, tmp_path, service="off", notify_urls=(receiver.url,))
            async with app.run_test(size=(160, 48)) as pilot:
                await wait_for(pilot, lambda: app.runtime.lease is not None and pane in app.state.statuses, 40, "watching")
                lease = app.runtime.lease
                assert lease is not None
                await wait_for(pilot, lambda: not lease.acting(), 20, "service holds")
                palette_toggle(app, "Mute needs input notifications")
                await wait_for(pilot, lambda: muted_on_server(server) == "needs-input", 10, "@nbs_mute set")

                server.cmd("send-keys", "-t", pane, "-l", "run the tests")
                server.cmd("send-keys", "-t", pane, "Enter")
                await wait_for(pilot, lambda: app.state.statuses[pane].state is AgentState.PERMISSION, 40, "permission")
                server.cmd("send-keys", "-t", pane, "Enter")  # "Yes": the turn runs on and ends
                await wait_for(pilot, lambda: len(receiver.pushes()) >= 1, 40, "the finished push")
                # the needs-input push, were it not muted, would have come first
                [done] = receiver.pushes()
                assert "finished" in done["title"], done

                palette_toggle(app, "Unmute needs input notifications")
                await wait_for(pilot, lambda: muted_on_server(server) == "", 10, "@nbs_mute unset")
                await wait_for(pilot, lambda: app.state.statuses[pane].state is AgentState.IDLE, 40, "idle again")
                server.cmd("send-keys", "-t", pane, "-l", "run the tests")
                server.cmd("send-keys", "-t", pane, "Enter")
                await wait_for(pilot, lambda: len(receiver.pushes()) >= 2, 40, "the needs-input push, unmuted")
    asked = receiver.pushes()[1]
    assert "needs input" in asked["title"] and asked["message"].startswith("state: permission"), asked


async def test_the_service_pushes_a_task_done_and_failed_and_a_dashboards_mute_silences_them(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path
) -> None:
    """The queue's outcomes are pushed by the lease holder (the service here) from the queue file;
    a dashboard's palette mute of "task done" reaches it through ``@nbs_mute`` and silences that
    kind alone, until unmuted. The outcomes are written here as the holder's feeder writes them
    (its own feeder finds no agent that may take these tasks, and each outcome follows its
    hand-out at once)."""
    pane = demo_agent(session, tmp_path, "idle", "worker")
    with PushReceiver() as receiver:
        env = push_env(tmp_path, f'notify_urls = ["{receiver.url}"]\n')
        queue = QueueStore(queue_path("local", ServerAddress(socket_name=server.socket_name), Path(env["XDG_STATE_HOME"]) / "nbs-tui"))
        for n in (1, 2, 3):  # for no agent of this server: the service's feeder never hands them out
            queue.append(TaskAdded(task=str(n), at=time.time(), text=f"queued task {n}", agents="nobody-here"))

        def ends(task: str, outcome: Record) -> None:
            queue.append(TaskHanding(task=task, at=time.time(), pane=pane))
            queue.append(TaskHanded(task=task, at=time.time(), pane=pane))
            queue.append(outcome)

        with service_running(server, env):
            app = make_app(server, tmp_path, service="off", notify_urls=(receiver.url,))
            async with app.run_test(size=(160, 48)) as pilot:
                await wait_for(pilot, lambda: app.runtime.lease is not None and pane in app.state.statuses, 40, "watching")
                lease = app.runtime.lease
                assert lease is not None
                await wait_for(pilot, lambda: not lease.acting(), 20, "service holds")
                palette_toggle(app, "Mute task done notifications")
                await wait_for(pilot, lambda: muted_on_server(server) == "task-done", 10, "@nbs_mute set")
                await pilot.pause(3.0)  # the service's lease reads @nbs_mute at its tick (nothing to see of it here)
                ends("1", TaskDone(task="1", at=time.time(), message="muted"))
                ends("2", TaskFailed(task="2", at=time.time(), reason="the agent exited", final=True))
                await wait_for(pilot, lambda: len(receiver.pushes()) >= 1, 40, "the task-failed push")
                await pilot.pause(2.0)  # the task-done push, were it not muted, came with it
                [failed] = receiver.pushes()
                assert failed["title"].endswith(" task failed"), failed
                assert failed["message"] == "task 2: queued task 2\nfailed (failed for good): the agent exited"

                palette_toggle(app, "Unmute task done notifications")
                await wait_for(pilot, lambda: muted_on_server(server) == "", 10, "@nbs_mute unset")
                await pilot.pause(3.0)  # as above
                ends("3", TaskDone(task="3", at=time.time(), message="All done."))
                await wait_for(pilot, lambda: len(receiver.pushes()) >= 2, 40, "the task-done push, unmuted")
    target = session.cmd("display", "-p", "-t", pane, "#{session_name}:#{window_index}.#{pane_index}").stdout[0]
    assert [p["title"] for p in receiver.pushes()] == [f"nbs-tui: {target} task failed", f"nbs-tui: {target} task done"], receiver.pushes()
    assert receiver.pushes()[1]["message"] == "task 3: queued task 3\ndone: All done."
