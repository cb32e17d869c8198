"""Pane state and the viewers' switches through tmux options, on a real private server."""

from __future__ import annotations

import libtmux
from libtmux.test.retry import retry_until

from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.sidecar.lease_rules import START_CLAIM_OPTION, InflightMark, StartClaim, answered
from nbs_tui.sidecar.heartbeat import LeaseHeartbeat
from nbs_tui.sidecar.pane_options import (
    PaneOptionsPublisher,
    PublishedState,
    SidecarSwitches,
    typing_guard,
)
from nbs_tui.tmux.commands import TmuxServerCommands

STATUS_RIGHT = (
    "#{?@nbs_needs,#[reverse] #{@nbs_needs} #[default],}"
    "#{?@nbs_state, #{@nbs_state},}"
    "#{?@nbs_sidecar,, no sidecar}"
)
"""The README's status-line snippet (kept identical there)."""


def commands_for(server: libtmux.Server) -> TmuxServerCommands:
    return TmuxServerCommands.for_server(ServerAddress(socket_name=str(server.socket_name)))


def make_panes(session: libtmux.Session, n: int, shell: str = "cat") -> list[str]:
    ids = []
    for i in range(n):
        window = session.new_window(window_name=f"a{i}", window_shell=shell, attach=False)
        assert window.active_pane is not None and window.active_pane.pane_id is not None
        ids.append(window.active_pane.pane_id)
    return ids


def listed(commands: TmuxServerCommands) -> dict[str, tuple[str, str, str]]:
    out = commands.run("list-panes", "-a", "-F", "#{pane_id} #{@nbs_state}|#{@nbs_needs}|#{@nbs_since}")
    rows = {}
    for line in out.lines:
        pane_id, rest = line.split(" ", 1)
        state, needs, since = rest.split("|")
        rows[pane_id] = (state, needs, since)
    return rows


def test_published_state_shows_in_list_panes_and_only_changes_are_sent(
    session: libtmux.Session, server: libtmux.Server
) -> None:
    commands = commands_for(server)
    a, b, c = make_panes(session, 3)
    publisher = PaneOptionsPublisher(commands)
    states = {
        a: PublishedState("idle", "", 1700000000),
        b: PublishedState("plan", "plan", 1700000001),
        c: PublishedState("working", "", 1700000002),
    }
    assert publisher.publish(states) == 7  # empty needs are not set
    assert publisher.runs == 1  # one tmux command line for every pane
    rows = listed(commands)
    assert rows[a] == ("idle", "", "1700000000")
    assert rows[b] == ("plan", "plan", "1700000001")
    assert rows[c] == ("working", "", "1700000002")

    assert publisher.publish(states) == 0
    assert publisher.runs == 1  # nothing changed: no tmux at all

    states[b] = PublishedState("working", "", 1700000009)
    assert publisher.publish(states) == 3
    del states[c]
    publisher.publish(states)
    rows = listed(commands)
    assert rows[b] == ("working", "", "1700000009")
    assert rows[c] == ("", "", "")


def test_a_big_fleet_is_split_into_lines_tmux_accepts_and_dead_panes_do_not_stop_it(
    session: libtmux.Session, server: libtmux.Server
) -> None:
    commands = commands_for(server)
    (real,) = make_panes(session, 1)
    publisher = PaneOptionsPublisher(commands)
    states = {f"%{9000 + i}": PublishedState("idle", "question", 1700000000 + i) for i in range(400)}
    states[real] = PublishedState("stuck", "stuck", 1700000000)
    publisher.publish(states)
    assert publisher.runs > 1
    assert listed(commands)[real] == ("stuck", "stuck", "1700000000")


def test_next_holder_clears_what_an_expired_holder_left(
    session: libtmux.Session, server: libtmux.Server
) -> None:
    commands = commands_for(server)
    a, b = make_panes(session, 2)
    PaneOptionsPublisher(commands).publish(
        {a: PublishedState("idle", "", 1), b: PublishedState("question", "question", 2)}
    )
    commands.run("set-option", "-p", "-t", a, "@nbs_poll", "off")  # a switch: not published state
    fresh = PaneOptionsPublisher(commands)
    assert fresh.clear_stale() == 5
    assert listed(commands)[a] == ("", "", "") and listed(commands)[b] == ("", "", "")
    assert commands.run("display-message", "-p", "-t", a, "#{@nbs_poll}").text == "off\n"
    # after clearing, a publish sets everything again even if it matches what was there
    assert fresh.publish({a: PublishedState("idle", "", 1)}) == 2


def test_status_line_snippet(session: libtmux.Session, server: libtmux.Server) -> None:
    commands = commands_for(server)
    a, b = make_panes(session, 2)
    commands.run("set-option", "-g", "status-right", STATUS_RIGHT)

    def status(pane: str) -> str:
        return commands.run("display-message", "-p", "-t", pane, "#{E:status-right}").text.rstrip("\n")

    assert status(a) == " no sidecar"
    beat = LeaseHeartbeat(commands)
    beat.tick()
    publisher = PaneOptionsPublisher(commands)
    publisher.publish({a: PublishedState("plan", "plan", 5), b: PublishedState("working", "", 5)})
    assert status(a) == "#[reverse] plan #[default] plan"
    assert status(b) == " working"
    publisher.clear_mine()
    beat.stop()
    assert status(b) == " no sidecar"


def test_switches_requests_and_pause_round_trip(
    session: libtmux.Session, server: libtmux.Server
) -> None:
    commands = commands_for(server)
    a, b = make_panes(session, 2)
    viewer = SidecarSwitches(commands)
    viewer.set_switch(a, "poll", False)
    viewer.set_switch(b, "plan", True)
    request = viewer.request_poll(b)
    viewer.set_paused(True)

    holder = SidecarSwitches(commands)
    paused, panes = holder.read()
    assert paused
    assert panes[a].poll is False and panes[a].plan is None
    assert panes[b].plan is True and panes[b].poll_request == request
    assert not answered(request, panes[b].poll_answer)
    holder.answer_poll(b, request, False, "agent is working")
    viewer.set_switch(a, "poll", None)
    viewer.set_paused(False)
    paused, panes = viewer.read()
    assert not paused and panes[a].poll is None
    assert answered(request, panes[b].poll_answer)
    assert panes[b].poll_answer == f"{request} no agent is working"


def test_typing_is_marked_fenced_and_a_left_over_poll_is_erased(
    session: libtmux.Session, server: libtmux.Server
) -> None:
    commands = commands_for(server)
    (pane,) = make_panes(session, 1)
    old = LeaseHeartbeat(commands)
    old.tick()
    switches = SidecarSwitches(commands)
    assert commands.type_text(pane, "/nbs-poll", guard=typing_guard(old.token, pane, "/nbs-poll"))
    assert retry_until(lambda: "/nbs-poll" in capture(commands, pane), 5, raises=False)
    _, panes = switches.read()
    assert panes[pane].inflight == InflightMark(old.token, "/nbs-poll")

    # the old holder dies without submitting; a new one holds the lease
    old.stop(release=True)
    new = LeaseHeartbeat(commands)
    new.tick()
    assert not commands.type_text(pane, "again", guard=typing_guard(old.token, pane, "again"))  # the dead token types nothing
    assert not switches.erase_inflight(old.token, pane, 9)
    assert switches.erase_inflight(new.token, pane, len("/nbs-poll"))
    assert retry_until(lambda: "/nbs-poll" not in capture(commands, pane), 5, raises=False)
    _, panes = switches.read()
    assert panes[pane].inflight is None
    new.stop()


def capture(commands: TmuxServerCommands, pane: str) -> str:
    return commands.run("capture-pane", "-p", "-t", pane).text


def test_a_pane_claimed_by_a_start_is_never_typed_into_by_the_holder_and_an_expired_claim_is_dropped(
    session: libtmux.Session, server: libtmux.Server
) -> None:
    commands = commands_for(server)
    (pane,) = make_panes(session, 1)
    holder = LeaseHeartbeat(commands)
    holder.tick()
    switches = SidecarSwitches(commands)
    claim = StartClaim("ab12cd34ef56ab78", 2_000_000_000)
    commands.run("set-option", "-p", "-t", pane, START_CLAIM_OPTION, claim.render())
    _, panes = switches.read()
    assert panes[pane].start_claim == claim and claim.holds(1_900_000_000)
    # the holder's fence and the claim are one step inside tmux: nothing typed, no in-flight mark
    assert not commands.type_text(pane, "/nbs-poll", guard=typing_guard(holder.token, pane, "/nbs-poll"))
    _, panes = switches.read()
    assert panes[pane].inflight is None and "/nbs-poll" not in capture(commands, pane)
    # only the claim read is dropped (a new start's claim is another value), and only by the holder
    assert not switches.drop_start_claim(holder.token, pane, "ab12cd34ef56ab78 1")
    assert not switches.drop_start_claim("ffffffffffffffff", pane, claim.render())
    assert switches.drop_start_claim(holder.token, pane, claim.render())
    _, panes = switches.read()
    assert panes[pane].start_claim is None
    assert commands.type_text(pane, "/nbs-poll", guard=typing_guard(holder.token, pane, "/nbs-poll"))
    holder.stop()
