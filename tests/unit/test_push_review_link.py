"""A finished turn or a queued task done that changed files: its push's one-time link opens that
agent's review (issue 38, item 4), through real Apprise to a local receiver; a turn that changed
nothing, and every other kind, keeps the card's link."""

from __future__ import annotations

import os
import time
from pathlib import Path

from libtmux.test.retry import retry_until

from nbs_tui.config import Settings
from nbs_tui.core.fleet.host_spec import HostSpec
from nbs_tui.core.fleet.web_links import LinkRedeemer, new_link_key
from nbs_tui.core.notifications.notify_rules import Notification, NotifyKind
from nbs_tui.files.web_endpoint import WebEndpoint, endpoint_path, write_endpoint
from nbs_tui.notify.event_notices import EventNotices
from nbs_tui.notify.push import PushSender
from nbs_tui.web.server import card_target
from tests.push_receiver import PushReceiver

BASE = "https://phone.example:8443/"


def test_a_finished_turn_with_changes_links_to_the_review_and_the_rest_to_the_card(tmp_path: Path) -> None:
    key = new_link_key()
    write_endpoint(endpoint_path(tmp_path / "state"), WebEndpoint(BASE, os.getpid(), key))
    asked: list[str] = []

    def changed(pane_id: str) -> bool:
        asked.append(pane_id)
        return pane_id == "%3"

    with PushReceiver() as receiver:
        push = PushSender(
            [receiver.url], EventNotices(Settings()), host=HostSpec("local", socket_name="work"),
            names=lambda pane: f"agents:{pane[1:]}.0", acting=lambda: True, problem=lambda s, m: None,
            link_ttl=600.0, state_dir=tmp_path / "state", changed=changed,
        )  # fmt: skip
        push.offer([Notification(NotifyKind.FINISHED, "%3", "idle", "why", 100.0)])
        push.start()
        try:
            assert retry_until(lambda: len(receiver.pushes()) == 1, 20, raises=False)
            push.offer([Notification(NotifyKind.FINISHED, "%4", "idle", "why", 101.0)])
            assert retry_until(lambda: len(receiver.pushes()) == 2, 20, raises=False)
            push.offer([Notification(NotifyKind.NEEDS_INPUT, "%3", "permission", "why", 102.0)], "Proceed?")
            assert retry_until(lambda: len(receiver.pushes()) == 3, 20, raises=False)
            push.offer([Notification(NotifyKind.TASK_DONE, "%3", "done", "task 1", 103.0)])
            assert retry_until(lambda: len(receiver.pushes()) == 4, 20, raises=False)
            push.offer([Notification(NotifyKind.TASK_FAILED, "%3", "failed", "task 2", 104.0)])
            assert retry_until(lambda: len(receiver.pushes()) == 5, 20, raises=False)
        finally:
            push.stop()
    redeemer = LinkRedeemer(key)
    targets = [redeemer.redeem(p["message"].splitlines()[-1].removeprefix(BASE + "open/"), now=time.time()) for p in receiver.pushes()]
    assert targets == [
        "review:local/L-work/%3", "local/L-work/%4", "local/L-work/%3", "review:local/L-work/%3", "local/L-work/%3",
    ]  # fmt: skip
    assert asked == ["%3", "%4", "%3"]  # asked only for finished turns and tasks done
    assert card_target(targets[0] or "") == "review:local/L-work/%3"  # the web view takes it as it is
