"""The notification rules (pure) and the sequences written for them."""

from __future__ import annotations

import pytest

from nbs_tui.core.notifications.notify_rules import (
    Notification,
    NotifyDecider,
    NotifyKind,
    NotifySettingsError,
    decode_kinds,
    encode_kinds,
    message,
    parse_kinds,
)
from nbs_tui.core.notifications.notify_settings import (
    NotifyConfigError,
    Subject,
    fill,
    guess_protocols,
    parse_protocols,
)
from nbs_tui.notify.terminal_notifier import (
    TerminalNotifier,
    osc_sequence,
    passthrough_problem,
    tmux_wrap,
)
from tests.unit.test_startup import VERSIONS, screen


def kinds(notes: list[Notification]) -> list[str]:
    return [note.kind.value for note in notes]


def test_first_sight_only_seeds_then_changes_notify() -> None:
    decider = NotifyDecider()
    assert decider.observe("%1", "permission", 0.0) == []  # a fleet already waiting: no storm at start
    assert decider.observe("%1", "working", 1.0) == []
    assert kinds(decider.observe("%1", "idle", 2.0)) == ["finished"]
    assert kinds(decider.observe("%1", "question", 3.0, reason="which file?")) == ["needs-input"]
    assert kinds(decider.observe("%1", "error", 4.0)) == ["error"]
    _, limit = screen("2.1.332", "limited_session")  # a real limit screen, as detection reads it
    assert kinds(decider.observe("%1", limit.state.value, 5.0, reason=limit.reason)) == ["limited"]


def test_reasons_and_states_travel_with_the_notification() -> None:
    decider = NotifyDecider()
    decider.observe("%1", "working", 0.0)
    [note] = decider.observe("%1", "permission", 1.0, reason="")
    assert (note.state, note.reason, note.pane_id, note.at) == ("permission", "permission prompt", "%1", 1.0)
    decider.observe("%1", "working", 2.0)
    [done] = decider.observe("%1", "idle", 2.0, reason="empty prompt")  # not the idle screen's reason
    assert done.reason == "done: idle at the prompt"
    assert message(done, "s:1.0") == ("nbs-tui: s:1.0 finished", "done: idle at the prompt")


def test_idle_after_something_other_than_work_is_not_finished() -> None:
    decider = NotifyDecider()
    decider.observe("%1", "permission", 0.0)
    assert decider.observe("%1", "idle", 1.0) == []  # answered and left: nothing finished
    decider.observe("%1", "unknown", 2.0)
    assert decider.observe("%1", "idle", 3.0) == []


def test_plan_menus_notify_only_when_left_to_the_operator() -> None:
    decider = NotifyDecider()
    decider.observe("%1", "working", 0.0)
    decider.observe("%2", "working", 0.0)
    assert decider.observe("%1", "plan", 1.0) == []  # the sidecar answers it
    assert kinds(decider.observe("%2", "plan", 1.0, plan_waits=True)) == ["needs-input"]


def test_not_for_the_pane_on_show_and_not_when_muted() -> None:
    decider = NotifyDecider(muted=frozenset({NotifyKind.FINISHED}))
    for pane in ("%1", "%2"):
        decider.observe(pane, "working", 0.0)
    assert decider.observe("%1", "question", 1.0, looking_at="%1") == []
    assert kinds(decider.observe("%2", "question", 1.0, looking_at="%1")) == ["needs-input"]
    decider.observe("%2", "working", 2.0)
    assert decider.observe("%2", "idle", 3.0) == []
    assert decider.toggle_mute(NotifyKind.FINISHED) is False
    decider.observe("%2", "working", 4.0)
    assert kinds(decider.observe("%2", "idle", 5.0)) == ["finished"]
    assert decider.toggle_mute(NotifyKind.ERROR) is True and NotifyKind.ERROR in decider.muted


def test_the_server_wide_mute_adds_to_the_own_and_travels_as_one_word() -> None:
    decider = NotifyDecider(muted=frozenset({NotifyKind.ERROR}))
    decider.observe("%1", "working", 0.0)
    decider.also_muted = decode_kinds(encode_kinds({NotifyKind.NEEDS_INPUT, NotifyKind.FINISHED}))
    assert decider.observe("%1", "permission", 1.0) == []
    assert decider.observe("%1", "error", 2.0) == []  # the own mute still holds
    decider.also_muted = frozenset()
    assert kinds(decider.observe("%1", "permission", 3.0)) == ["needs-input"]  # never counted as sent
    assert encode_kinds({NotifyKind.STUCK, NotifyKind.FINISHED}) == "finished,stuck" and encode_kinds(()) == ""
    assert decode_kinds("") == frozenset() and decode_kinds("bells, stuck") == {NotifyKind.STUCK}  # a newer kind: left out


def test_repeats_are_rate_limited_per_pane_and_kind() -> None:
    decider = NotifyDecider(repeat=60.0)
    decider.observe("%1", "working", 0.0)
    decider.observe("%2", "working", 0.0)
    assert kinds(decider.observe("%1", "permission", 1.0)) == ["needs-input"]
    decider.observe("%1", "working", 2.0)
    assert decider.observe("%1", "permission", 3.0) == []  # flapping: once a minute at most
    assert kinds(decider.observe("%2", "permission", 3.0)) == ["needs-input"]  # another pane: its own
    decider.observe("%1", "working", 10.0)
    assert kinds(decider.observe("%1", "idle", 11.0)) == ["finished"]  # another kind: its own
    decider.observe("%1", "working", 62.0)
    assert kinds(decider.observe("%1", "permission", 63.0)) == ["needs-input"]


def test_stuck_once_per_escalation_and_sync_forgets_gone_panes() -> None:
    decider = NotifyDecider()
    assert decider.sync({"%1": "idle", "%2": "working"}, 0.0) == []
    notes = decider.sync({"%1": "idle", "%2": "idle"}, 1.0, stuck={"%1": "stuck (1 nudge)"})
    assert sorted(kinds(notes)) == ["finished", "stuck"]
    assert [n.reason for n in notes if n.kind is NotifyKind.STUCK] == ["stuck (1 nudge)"]
    assert decider.sync({"%1": "idle", "%2": "idle"}, 2.0, stuck={"%1": "stuck (1 nudge)"}) == []
    assert decider.sync({"%2": "idle"}, 3.0) == []  # %1 gone: forgotten
    assert decider.sync({"%1": "working", "%2": "idle"}, 4.0) == []  # back as new: seeds again


def test_mute_names_are_checked() -> None:
    assert parse_kinds(["needs_input", " Finished "]) == {NotifyKind.NEEDS_INPUT, NotifyKind.FINISHED}
    with pytest.raises(NotifySettingsError, match="unknown notification kind 'bells'"):
        parse_kinds(["bells"])


NOTE = Notification(NotifyKind.NEEDS_INPUT, "%4", "permission", "Bash: rm -rf 'x'; echo $HOME", 0.0)
DONE = Notification(NotifyKind.FINISHED, "%5", "idle", "done: idle at the prompt", 0.0)


def test_sequences_of_each_protocol() -> None:
    assert osc_sequence("9", "T", "B") == "\x1b]9;T: B\x1b\\"
    assert osc_sequence("777", "T;x", "B;y") == "\x1b]777;notify;T,x;B;y\x1b\\"
    assert osc_sequence("99", "T", "B", 7) == "\x1b]99;i=7:d=0:p=title;T\x1b\\\x1b]99;i=7:d=1:p=body;B\x1b\\"
    # a control character in a pane's text cannot end the sequence early or start another
    assert osc_sequence("9", "T", "a\x1b]0;evil\x07b") == "\x1b]9;T: a ]0;evil b\x1b\\"
    with pytest.raises(NotifyConfigError):
        osc_sequence("52", "T", "B")


def test_tmux_passthrough_doubles_every_escape() -> None:
    wrapped = tmux_wrap("\x1b]9;hi\x1b\\")
    assert wrapped == "\x1bPtmux;\x1b\x1b]9;hi\x1b\x1b\\\x1b\\"


def test_protocol_choice() -> None:
    assert parse_protocols("off", {}) == ()
    assert parse_protocols("9, osc777", {}) == ("9", "777")
    with pytest.raises(NotifyConfigError):
        parse_protocols("9,1337", {})
    assert guess_protocols({"TERM": "xterm-kitty"}) == ("99",)
    assert guess_protocols({"LC_TERMINAL": "iTerm2"}) == ("9",)
    assert guess_protocols({"TERM": "xterm-ghostty"}) == ("777",)
    assert guess_protocols({"TERM": "xterm-256color", "VTE_VERSION": "7600"}) == ("777",)
    assert parse_protocols("auto", {"TERM": "foot"}) == ("777",)
    assert parse_protocols("777, bell", {}) == ("777", "bell")


def test_a_terminal_that_cannot_be_told_gets_one_plain_bell_not_three_notifications() -> None:
    """Unknown terminals (xterm, tmux's own TERM, Alacritty...): no OSC at all (a terminal that
    speaks two would show two), one bell per tick however many notifications it carries, none
    when the needs-you bell already rang in it, and never wrapped for tmux."""
    for unknown in ({"TERM": "xterm-256color"}, {"TERM": "tmux-256color", "TMUX": "/tmp/x,1,0"}, {}):
        assert guess_protocols(unknown) == ("bell",)
    for in_tmux in (False, True):
        written: list[str] = []
        notifier = TerminalNotifier(
            written.append, parse_protocols("auto", {"TERM": "xterm"}), in_tmux=in_tmux,
            problem=lambda *_: None, subject=lambda n: Subject(n.pane_id, "h", "p"),
        )  # fmt: skip
        notifier.notify_all([NOTE, DONE])
        assert written == ["\a"]
        notifier.notify_all([NOTE], bell_rang=True)
        notifier.notify_all([])
        assert written == ["\a"]
    # a named protocol and the bell: the OSC wrapped for tmux, the bell beside it, plain
    written = []
    both = TerminalNotifier(
        written.append, ("777", "bell"), in_tmux=True,
        problem=lambda *_: None, subject=lambda n: Subject(n.pane_id, "h", "p"),
    )  # fmt: skip
    both.notify_all([NOTE])
    assert len(written) == 2 and written[0].startswith("\x1bPtmux;\x1b\x1b]777;notify;") and written[1] == "\a"


def test_command_placeholders_stay_one_argument_each() -> None:
    argv = fill("curl -d '{project}: {reason}' -H 'Title: {pane} {event}' ntfy.sh/x", NOTE, Subject("a:1.0", "gpu", "web"))
    assert argv == ["curl", "-d", "web: Bash: rm -rf 'x'; echo $HOME", "-H", "Title: a:1.0 needs-input", "ntfy.sh/x"]
    assert fill("echo {host} {state} {pane_id}", NOTE, Subject("a", "gpu", "p")) == ["echo", "gpu", "permission", "%4"]
    with pytest.raises(NotifyConfigError, match="bad placeholder"):
        fill("echo {nope}", NOTE, Subject("a", "b", "c"))


def test_passthrough_advice_only_when_off() -> None:
    assert passthrough_problem(None) is None
    assert passthrough_problem("on") is None
    assert passthrough_problem("1") is None and passthrough_problem("all") is None
    assert passthrough_problem("0") is not None  # what tmux 3.3a says
    advice = passthrough_problem("off")
    assert advice is not None and "tmux set -g allow-passthrough on" in advice


def test_headless_prints_notify_lines_from_sidecar_events() -> None:
    import io
    import json

    from nbs_tui.config import Settings
    from nbs_tui.core.fleet.model import AgentState, Detection
    from nbs_tui.runtime.headless import _Events, _Printer
    from nbs_tui.sidecar.events import Escalation, StateChange

    out = io.StringIO()
    events = _Events(_Printer(out), Settings(notify_mute=("error",)))
    for state, at in [("working", 1.0), ("idle", 2.0), ("error", 3.0)]:
        events.sidecar_event(StateChange("%3", at, "why", detection=Detection(AgentState(state), reason="why")))
    events.sidecar_event(Escalation("%3", 4.0, "still idle 60s after 1 nudge(s)"))
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    notes = [line for line in lines if line["event"] == "notify"]
    assert notes == [
        {"event": "notify", "pane": "%3", "kind": "finished", "state": "idle", "reason": "done: idle at the prompt", "time": 2.0},
        {"event": "notify", "pane": "%3", "kind": "stuck", "state": "error", "reason": "still idle 60s after 1 nudge(s)", "time": 4.0},
    ]  # error muted


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", ["limited_session", "limited_weekly"])
def test_a_real_limit_screen_read_by_detection_is_a_usage_limit_notification(version: str, name: str) -> None:
    """The rules see the state and reason detection reads from a limit screen recorded from the
    real CLI (as the dashboard's controller passes them on), after a working one."""
    decider = NotifyDecider()
    for at, shown in enumerate(("working_streaming", name)):
        _, detection = screen(version, shown)
        notes = decider.observe("%1", detection.state.value, float(at), reason=detection.reason)
    [note] = notes
    assert (note.kind, note.state) == (NotifyKind.LIMITED, "limited"), note
    assert "resets 9:25am" in note.reason, note
    assert message(note, "s:1.0") == ("nbs-tui: s:1.0 usage limit", note.reason)


def test_a_burst_of_one_kind_becomes_one_notification() -> None:
    from nbs_tui.core.notifications.notify_rules import coalesce

    limited = [Notification(NotifyKind.LIMITED, f"%{i}", "limited", "resets 9am", 5.0) for i in range(6)]
    finished = [Notification(NotifyKind.FINISHED, "%9", "idle", "done", 5.0)]
    [one, done] = coalesce(limited + finished)
    assert (one.pane_id, one.also, one.reason) == ("%0", ("%1", "%2", "%3", "%4", "%5"), "resets 9am")
    assert done == finished[0]
    assert message(one, "s:0.0") == ("nbs-tui: s:0.0 and 5 more usage limit", "resets 9am")
    assert coalesce(limited[:3]) == limited[:3]  # a few stay apart
    assert fill("echo {pane}", one, Subject("s:0.0", "h", "p")) == ["echo", "s:0.0 and 5 more"]


def test_the_mute_toggles_here_and_on_every_server_and_follows_what_the_servers_say() -> None:
    from nbs_tui.notify.mute import Mute

    class Server:  # the part of a lease the mute reads and writes (@nbs_mute)
        def __init__(self, *kinds: NotifyKind) -> None:
            self.muted = frozenset(kinds)

        def set_muted(self, kinds: frozenset[NotifyKind]) -> None:
            self.muted = kinds

    a, b = Server(), Server(NotifyKind.ERROR)
    decider = NotifyDecider(muted=frozenset({NotifyKind.STUCK}))
    mute = Mute(decider, lambda: [a, b])
    assert mute.muted() == {NotifyKind.STUCK, NotifyKind.ERROR}
    assert mute.toggle(NotifyKind.FINISHED)  # muted here and on both servers
    assert NotifyKind.FINISHED in decider.muted and NotifyKind.FINISHED in a.muted and NotifyKind.FINISHED in b.muted
    assert not mute.toggle(NotifyKind.ERROR)  # muted on one server: unmuted everywhere
    assert NotifyKind.ERROR not in mute.muted() | a.muted | b.muted
    b.set_muted(frozenset({NotifyKind.LIMITED}))  # another dashboard muted it for the server
    mute.follow_servers()
    assert decider.also_muted == {NotifyKind.FINISHED, NotifyKind.LIMITED} and mute.reaches_servers()
    assert not Mute(NotifyDecider()).reaches_servers()
