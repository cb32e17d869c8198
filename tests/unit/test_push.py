"""Push notifications (nbs_tui/push.py) through real Apprise to a local HTTP receiver: the text,
the one-time link, a burst folded into one, nothing while another process holds the lease,
failures as rate-limited problems; ``notify_urls`` checked when the config is loaded (strings)
and by the sender, which alone loads Apprise (URLs it cannot use)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from libtmux.test.retry import retry_until

from nbs_tui.config import ConfigError, Settings, load_settings
from nbs_tui.core.fleet.host_spec import HostSpec
from nbs_tui.core.fleet.model import AgentState, Detection
from nbs_tui.core.fleet.web_links import LinkRedeemer, new_link_key
from nbs_tui.core.notifications.notify_rules import (
    Notification,
    NotifyKind,
    push_message,
    question_line,
)
from nbs_tui.core.queue.records import TaskAdded, TaskDone, TaskFailed, TaskHanded, TaskHanding
from nbs_tui.files.queue_store import QueueStore
from nbs_tui.files.web_endpoint import WebEndpoint, endpoint_path, write_endpoint
from nbs_tui.notify.event_notices import EventNotices
from nbs_tui.notify.push import PushSender
from nbs_tui.sidecar.events import SidecarEvent, StateChange
from tests.push_receiver import PushReceiver

LOCAL = HostSpec("local", socket_name="work")


def note(kind: NotifyKind, pane: str, state: str, at: float = 100.0) -> Notification:
    return Notification(kind, pane, state, "why", at)


class Sender:
    def __init__(
        self, url: str | list[str], tmp_path: Path, *, acting: bool = True, load_after: float = 5.0,
        queue: Path | None = None, **changes: object,
    ) -> None:  # fmt: skip
        self.acting = acting
        self.problems: list[tuple[str, str]] = []
        settings = Settings(**changes)  # type: ignore[arg-type]
        self.push = PushSender(
            [url] if isinstance(url, str) else url, EventNotices(settings), host=LOCAL,
            names=lambda pane: f"agents:{pane[1:]}.0",
            acting=lambda: self.acting, problem=lambda s, m: self.problems.append((s, m)),
            link_ttl=600.0, state_dir=tmp_path / "state", load_after=load_after,
            queue_store=QueueStore(queue) if queue is not None else None,
        )  # fmt: skip

    def __enter__(self) -> PushSender:
        self.push.start()
        return self.push

    def __exit__(self, *_: object) -> None:
        self.push.stop()


def test_question_line_is_the_line_that_asks() -> None:
    prompt = " Bash command\n\n   curl -H 'Authorization: secret' x\n   Fetch x\n\n Do you want to proceed?\n"
    assert question_line(prompt) == "Do you want to proceed?"
    assert question_line("Which colour\n  red or blue") == "Which colour"
    assert question_line("") == ""
    assert len(question_line("x" * 500)) == 120


def test_push_message_has_name_state_question_and_link_only() -> None:
    title, body = push_message(note(NotifyKind.NEEDS_INPUT, "%3", "permission"), "agents:1.0", "Proceed?", "https://h/open/c")
    assert title == "nbs-tui: agents:1.0 needs input"
    assert body.splitlines() == ["state: permission", "Proceed?", "https://h/open/c"]


def test_a_push_reaches_the_receiver_with_a_link_that_opens_the_card_once(tmp_path: Path) -> None:
    key = new_link_key()
    write_endpoint(endpoint_path(tmp_path / "state"), WebEndpoint("https://phone.example:8443/", os.getpid(), key))
    with PushReceiver() as receiver, Sender(receiver.url, tmp_path) as push:
        push.offer([note(NotifyKind.NEEDS_INPUT, "%3", "permission")], "Do you want to proceed?")
        assert retry_until(lambda: len(receiver.pushes()) == 1, 20, raises=False)
    [got] = receiver.pushes()
    assert got["title"] == "nbs-tui: agents:3.0 needs input"
    state, question, link = got["message"].splitlines()
    assert (state, question) == ("state: permission", "Do you want to proceed?")
    assert link.startswith("https://phone.example:8443/open/")
    credential = link.removeprefix("https://phone.example:8443/open/")
    redeemer = LinkRedeemer(key)
    assert redeemer.redeem(credential, now=time.time()) == "local/L-work/%3"
    assert redeemer.redeem(credential, now=time.time()) is None  # once
    assert LinkRedeemer(key).redeem(credential, now=time.time() + 601) is None  # expired after web_link_ttl


def test_no_endpoint_file_no_link_and_only_needs_input_carries_the_question(tmp_path: Path) -> None:
    with PushReceiver() as receiver, Sender(receiver.url, tmp_path) as push:
        push.offer([note(NotifyKind.FINISHED, "%4", "idle")], "a question of an older menu")
        assert retry_until(lambda: len(receiver.pushes()) == 1, 20, raises=False)
    assert receiver.pushes()[0]["message"] == "state: idle"


def test_a_burst_of_one_kind_is_one_push(tmp_path: Path) -> None:
    with PushReceiver() as receiver:
        sender = Sender(receiver.url, tmp_path)
        # queued before the worker starts: one moment, whatever the machine's load
        sender.push.offer([note(NotifyKind.LIMITED, f"%{n}", "limited") for n in range(1, 6)])
        sender.push.offer([note(NotifyKind.FINISHED, "%9", "idle")])  # not of the burst's kind
        with sender:
            assert retry_until(lambda: any("finished" in p["title"] for p in receiver.pushes()), 20, raises=False)
    titles = [p["title"] for p in receiver.pushes()]
    assert titles == ["nbs-tui: agents:1.0 and 4 more usage limit", "nbs-tui: agents:9.0 finished"]


def test_nothing_is_sent_while_another_process_holds_the_lease(tmp_path: Path) -> None:
    with PushReceiver() as receiver:
        sender = Sender(receiver.url, tmp_path, acting=False)
        with sender as push:
            push.offer([note(NotifyKind.ERROR, "%1", "error")])
            sender.acting = True  # this process took the lease over
            push.offer([note(NotifyKind.ERROR, "%2", "error")])
            assert retry_until(lambda: len(receiver.pushes()) >= 1, 20, raises=False)
    assert [p["title"] for p in receiver.pushes()] == ["nbs-tui: agents:2.0 error"]


def test_the_rules_see_every_event_muted_kinds_are_not_sent(tmp_path: Path) -> None:
    def state(pane: str, value: str, at: float, question: str = "") -> SidecarEvent:
        return StateChange(pane, at, detection=Detection(AgentState(value)), question=question)

    with PushReceiver() as receiver, Sender(receiver.url, tmp_path, notify_mute=("needs-input",)) as push:
        push.observe(state("%1", "working", 1.0))  # first sight: seeds only
        push.observe(state("%1", "permission", 2.0, "Proceed?"))  # muted
        push.observe(state("%1", "working", 3.0))
        push.observe(state("%1", "idle", 4.0))  # finished
        assert retry_until(lambda: len(receiver.pushes()) >= 1, 20, raises=False)
    assert [p["title"] for p in receiver.pushes()] == ["nbs-tui: agents:1.0 finished"]


def test_failures_are_push_problems_at_most_one_a_minute(tmp_path: Path) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, never listening: connections are refused
        sender = Sender(f"json://127.0.0.1:{port}/", tmp_path)
        with sender as push:
            push.offer([note(NotifyKind.ERROR, "%1", "error")])
            assert retry_until(lambda: bool(sender.problems), 20, raises=False)
            push.offer([note(NotifyKind.ERROR, "%2", "error")])
            assert retry_until(lambda: push._unsaid == 1, 20, raises=False)
    [(source, text)] = sender.problems
    assert source == "push" and "a push about %1 was not delivered" in text


@pytest.mark.parametrize(
    ("urls", "says"),
    [
        ('["json://127.0.0.1:9/", ""]', "notify_urls[1] must be a non-empty string"),
        ('["json://127.0.0.1:9/", 3]', "notify_urls[1] must be a non-empty string"),
    ],
)
def test_a_bad_url_is_a_config_error_that_does_not_print_it(tmp_path: Path, urls: str, says: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(f"notify_urls = {urls}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_settings(path, environ={})
    assert says in str(raised.value) and "token" not in str(raised.value)


def test_good_urls_and_the_link_lifetime_load(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('notify_urls = ["ntfy://127.0.0.1:9/agents", "json://localhost/"]\nweb_link_ttl = 3\n', encoding="utf-8")
    settings = load_settings(path, environ={})
    assert settings.notify_urls == ("ntfy://127.0.0.1:9/agents", "json://localhost/")
    assert settings.web_link_ttl == 3.0
    assert load_settings(tmp_path / "config.toml", environ={}).web_link_ttl == 3.0
    assert Settings().notify_urls == () and Settings().web_link_ttl == 10.0


def test_loading_the_config_does_not_load_apprise(tmp_path: Path) -> None:
    """Apprise and its plugins cost a dashboard's start ~0.25-0.6 s: only the sender loads them,
    so a URL Apprise cannot use loads (the sender says so, below)."""
    path = tmp_path / "config.toml"
    path.write_text('notify_urls = ["nope://token@x", "json://127.0.0.1:9/"]\n', encoding="utf-8")
    check = (
        "import sys; from pathlib import Path; from nbs_tui.config import load_settings; "
        f"s = load_settings(Path({str(path)!r}), environ={{}}); "
        "print(len(s.notify_urls), 'apprise' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["2", "False"]


def test_a_url_apprise_cannot_use_is_a_push_problem_and_the_others_still_send(tmp_path: Path) -> None:
    with PushReceiver() as receiver:
        sender = Sender(["nope://token@x", receiver.url], tmp_path)
        with sender as push:
            push.offer([note(NotifyKind.ERROR, "%1", "error")])  # the first push loads Apprise
            assert retry_until(lambda: len(receiver.pushes()) >= 1, 20, raises=False)
    [(source, text)] = sender.problems
    assert source == "push" and text.startswith("notify_urls[0]: Apprise cannot send to this URL (scheme nope)")
    assert "token" not in text and "push notifications are off" not in text
    assert [p["title"] for p in receiver.pushes()] == ["nbs-tui: agents:1.0 error"]


def test_with_nothing_to_send_the_urls_are_checked_once_this_process_acts(tmp_path: Path) -> None:
    sender = Sender(["nope://token@x"], tmp_path, acting=False, load_after=0.0)
    with sender:
        sender.acting = True  # took the lease: Apprise is loaded, the URL checked, no push needed
        assert retry_until(lambda: bool(sender.problems), 20, raises=False)
    [(source, text)] = sender.problems
    assert source == "push" and "(scheme nope)" in text and text.endswith("; push notifications are off")


def test_an_apprise_that_cannot_be_loaded_is_a_push_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "apprise", None)  # what a broken install does: import apprise fails
    sender = Sender("json://127.0.0.1:9/", tmp_path)
    with sender as push:
        push.offer([note(NotifyKind.ERROR, "%1", "error")])
        assert retry_until(lambda: bool(sender.problems), 20, raises=False)
    [(source, text)] = sender.problems
    assert source == "push" and text.startswith("push notifications are off: Apprise cannot be loaded")


def hand_out(store: QueueStore, task: str, pane: str) -> None:
    """What the holder's feeder writes when it types a task into ``pane``."""
    store.append(TaskHanding(task=task, at=time.time(), pane=pane))
    store.append(TaskHanded(task=task, at=time.time(), pane=pane))


def test_a_task_done_and_a_task_failed_are_pushed_from_the_queue_file(tmp_path: Path) -> None:
    """The feeder's records (written here as it writes them) become one push each; the tasks
    that ended before the sender first looked are not pushed."""
    queue = tmp_path / "queue-L-work.jsonl"
    store = QueueStore(queue)
    for n in (1, 2, 3):
        store.append(TaskAdded(task=str(n), at=time.time(), text=f"task number {n}\nmore"))
    hand_out(store, "1", "%1")
    store.append(TaskDone(task="1", at=time.time(), message="ended before the sender looked"))
    with PushReceiver() as receiver, Sender(receiver.url, tmp_path, queue=queue) as push:
        assert retry_until(lambda: push.queue_records > 0, 10, raises=False)  # the first look: seeds
        hand_out(store, "2", "%2")
        store.append(TaskDone(task="2", at=time.time(), message="All 12 tests pass.\nThe details"))
        assert retry_until(lambda: len(receiver.pushes()) == 1, 20, raises=False)
        hand_out(store, "3", "%3")
        store.append(TaskFailed(task="3", at=time.time(), reason="the agent exited"))
        assert retry_until(lambda: len(receiver.pushes()) == 2, 20, raises=False)
        time.sleep(1.5)  # a later look must not push them again
    done, failed = receiver.pushes()
    assert done["title"] == "nbs-tui: agents:2.0 task done"
    assert done["message"] == "task 2: task number 2\ndone: All 12 tests pass."
    assert failed["title"] == "nbs-tui: agents:3.0 task failed"
    assert failed["message"] == "task 3: task number 3\nfailed (handed out once more): the agent exited"


def test_a_muted_task_kind_is_not_pushed(tmp_path: Path) -> None:
    queue = tmp_path / "queue-L-work.jsonl"
    store = QueueStore(queue)
    for n in (1, 2):
        store.append(TaskAdded(task=str(n), at=time.time(), text=f"task {n}"))
    with PushReceiver() as receiver, Sender(receiver.url, tmp_path, queue=queue, notify_mute=("task-done",)) as push:
        assert retry_until(lambda: push.queue_records > 0, 10, raises=False)
        hand_out(store, "1", "%1")
        store.append(TaskDone(task="1", at=time.time()))  # muted
        hand_out(store, "2", "%2")
        store.append(TaskFailed(task="2", at=time.time(), reason="limit", final=True))
        assert retry_until(lambda: len(receiver.pushes()) >= 1, 20, raises=False)
        time.sleep(1.0)  # the done push, were it sent, would have come first
    assert [p["title"] for p in receiver.pushes()] == ["nbs-tui: agents:2.0 task failed"]
