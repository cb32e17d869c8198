"""`HeldNews` (nbs_tui/runtime/early.py): a runtime started before the app reports to it; what it
held reaches the app's listener in order once attached, and everything after goes straight on."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from nbs_tui.core.fleet.host_spec import HostState
from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.runtime.contract import RuntimeListener
from nbs_tui.runtime.early import HeldNews


class Recorder(RuntimeListener):
    """A listener that keeps the optional ``lease_changed`` of its base: a call to it does nothing."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def fleet_changed(self, panes: Sequence[PaneInfo]) -> None:
        self.calls.append(("fleet", tuple(p.pane_id for p in panes)))

    def screens_changed(self, pane_ids: frozenset[PaneId]) -> None:
        self.calls.append(("screens", pane_ids))

    def connection_changed(self, connected: bool, message: str) -> None:
        self.calls.append(("connection", (connected, message)))

    def claude_facts_changed(self, facts: Mapping[PaneId, Any]) -> None:
        self.calls.append(("facts", dict(facts)))

    def sidecar_event(self, event: Any) -> None:
        self.calls.append(("sidecar", event))

    def control_event(self, event: Any) -> None:
        self.calls.append(("control", event))

    def problem(self, source: str, message: str) -> None:
        self.calls.append(("problem", (source, message)))

    def hosts_changed(self, states: tuple[HostState, ...]) -> None:
        self.calls.append(("hosts", tuple(s.name for s in states)))


def _pane(pane_id: str) -> PaneInfo:
    return PaneInfo(pane_id, "s", 0, "w", 0, "", "sh", "/", 1, 80, 24)


def test_held_news_reaches_the_listener_in_order_with_only_the_latest_whole_state() -> None:
    news = HeldNews()
    news.connection_changed(True, "connected")
    news.fleet_changed([_pane("%0")])
    news.screens_changed(frozenset({"%0"}))
    news.screens_changed(frozenset({"%1"}))  # one set with the tick before it
    news.hosts_changed((HostState("a"),))
    news.problem("ssh", "a: slow")
    news.fleet_changed([_pane("%0"), _pane("%1")])  # the whole fleet again: the earlier one goes
    news.hosts_changed((HostState("a"), HostState("b")))
    news.screens_changed(frozenset({"%2"}))  # after other news: its own entry
    news.lease_changed(None, False)  # the base class's lease_changed: nothing, not an error
    assert news.held == 7
    listener = Recorder()
    news.attach(listener)
    assert listener.calls == [
        ("connection", (True, "connected")),
        ("screens", frozenset({"%0", "%1"})),
        ("problem", ("ssh", "a: slow")),
        ("fleet", ("%0", "%1")),
        ("hosts", ("a", "b")),
        ("screens", frozenset({"%2"})),
    ]
    assert news.held == 0
    news.screens_changed(frozenset({"%3"}))  # attached: straight on, one call each
    news.screens_changed(frozenset({"%4"}))
    assert listener.calls[-2:] == [("screens", frozenset({"%3"})), ("screens", frozenset({"%4"}))]
    assert news.held == 0


def test_a_call_during_the_hand_over_comes_after_the_held_news() -> None:
    news = HeldNews()
    news.problem("first", "held")
    started, release = threading.Event(), threading.Event()

    class Slow(Recorder):
        def problem(self, source: str, message: str) -> None:
            super().problem(source, message)
            if source == "first":
                started.set()
                release.wait(5)

    listener = Slow()
    attaching = threading.Thread(target=news.attach, args=(listener,))
    attaching.start()
    assert started.wait(5)
    late = threading.Thread(target=news.problem, args=("second", "live"))
    late.start()
    late.join(0.2)
    assert late.is_alive()  # it waits for the held news to be handed over
    release.set()
    attaching.join(5)
    late.join(5)
    assert [c[1][0] for c in listener.calls] == ["first", "second"]


def test_a_listener_failing_on_held_news_does_not_stop_the_rest() -> None:
    news = HeldNews()
    news.problem("ssh", "one")
    news.connection_changed(False, "lost")

    class Failing(Recorder):
        def problem(self, source: str, message: str) -> None:
            raise RuntimeError("boom")

    listener = Failing()
    news.attach(listener)
    assert listener.calls == [("connection", (False, "lost"))]


def test_change_counts_are_held_each_in_order_and_it_asks_for_them_as_the_bridge_does() -> None:
    from nbs_tui.bridge import FleetBridge
    from nbs_tui.core.review.agent_changes import ChangeCount

    class Counts(Recorder):
        def changes_counted(self, counts: Mapping[PaneId, ChangeCount]) -> None:
            self.calls.append(("changes", dict(counts)))

    assert HeldNews.shows_changes == FleetBridge.shows_changes is True  # the runtime counts them for it
    news = HeldNews()
    news.changes_counted({"%0": ChangeCount(1, 2, 0)})
    news.changes_counted({"%1": ChangeCount(3, 0, 4)})  # other agents: not a whole state, both kept
    listener = Counts()
    news.attach(listener)
    assert listener.calls == [("changes", {"%0": ChangeCount(1, 2, 0)}), ("changes", {"%1": ChangeCount(3, 0, 4)})]
