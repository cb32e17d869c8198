"""`PaneSidecar.request_text`: other text (the stuck watch's nudge) through the poll's handshake."""

from __future__ import annotations

from nbs_tui.core.sidecar.pane_sidecar import (
    HandshakeEnded,
    InjectPoll,
    PaneSidecar,
    SidecarConfig,
    SidecarContext,
    SubmitPoll,
)
from tests.unit.test_sidecar import idle, working

NUDGE = "Please continue."


def sidecar() -> PaneSidecar:
    sc = PaneSidecar("%1", SidecarConfig(poll_interval=300.0, poll_enabled=False))
    sc.tick(0, idle())
    return sc


def test_text_is_typed_whole_submitted_and_confirmed_with_its_purpose() -> None:
    sc = sidecar()
    assert sc.request_text(NUDGE, "nudge") == (True, "nudge queued for the next tick")
    assert sc.tick(1, None) == [InjectPoll(NUDGE, 1, "nudge")]
    assert sc.injecting
    assert sc.tick(2, idle(NUDGE)) == [SubmitPoll(NUDGE, 1, "nudge")]
    notices = [a for a in sc.tick(3, working()) if isinstance(a, HandshakeEnded)]
    assert notices == [HandshakeEnded("nudge", True, f"{NUDGE} submitted")]
    assert not sc.injecting
    assert sc.last_change == 3


def test_text_is_not_typed_when_the_box_became_unsafe() -> None:
    sc = sidecar()
    assert sc.request_text(NUDGE, "nudge")[0]
    actions = sc.tick(1, idle(), SidecarContext(operator_typing=True))
    assert actions == [HandshakeEnded("nudge", False, f"{NUDGE} not typed: operator typing")]
    assert sc.tick(2, None) == []  # dropped, not retried


def test_operator_text_in_the_box_makes_the_handshake_give_up_as_the_purpose() -> None:
    sc = sidecar()
    sc.request_text(NUDGE, "nudge")
    sc.tick(1, None)
    actions = sc.tick(5, idle("my own words"))
    assert [a for a in actions if isinstance(a, HandshakeEnded)] == [
        HandshakeEnded("nudge", False, f"{NUDGE} did not show in the input box (box holds 'my own words')")
    ]


def test_refused_while_busy_unsafe_or_paused() -> None:
    sc = sidecar()
    assert sc.request_text(NUDGE, "nudge")[0]
    assert sc.request_text("again", "nudge") == (False, "an injection is already in progress")
    sc2 = PaneSidecar("%2", SidecarConfig(poll_enabled=False))
    sc2.tick(0, working())
    ok, why = sc2.request_text(NUDGE, "nudge")
    assert not ok and why.startswith("not safe to type: working")
    sc3 = sidecar()
    sc3.tick(1, None, SidecarContext(paused=True))
    assert sc3.request_text(NUDGE, "nudge") == (False, "project is paused (.nbs/control-pause)")
    assert sc3.request_text("", "nudge") == (False, "nothing to type")


def test_the_poll_keeps_its_own_text_after_a_nudge() -> None:
    sc = PaneSidecar("%1", SidecarConfig(poll_interval=5.0, backoff=1.0))
    sc.tick(0, idle())
    sc.request_text(NUDGE, "nudge")
    assert sc.tick(1, None) == [InjectPoll(NUDGE, 1, "nudge")]
    sc.tick(2, idle(NUDGE))
    sc.tick(3, idle())
    polls = [a for t in range(4, 12) for a in sc.tick(t, None) if isinstance(a, InjectPoll)]
    assert polls == [InjectPoll("/nbs-poll", 1, "poll")]
