"""The per-pane sidecar state machine, driven by a fake clock and hand-made screens."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from nbs_tui.core.fleet.model import AgentState
from nbs_tui.core.sidecar.pane_sidecar import (
    Action,
    HandshakeEnded,
    InjectPoll,
    PaneSidecar,
    PlanNotice,
    ReportCommand,
    SelectPlanOption,
    SidecarConfig,
    SidecarContext,
    StateChanged,
    SubmitPoll,
)

RULE = "─" * 60


def idle(box: str = "", body: Sequence[str] = ("⏺ Done.", "", "✻ Worked for 2s")) -> list[str]:
    return [*body, RULE, f"❯ {box}", RULE, "  ? for shortcuts"]


def working(n: int = 1) -> list[str]:
    return [
        "⏺ Bash(make)",
        "",
        f"✢ Sautéing… ({n}s · ↓ {n} tokens)",
        RULE,
        "❯ ",
        RULE,
        "  esc to interrupt",
    ]


PERMISSION = [
    "⏺ Bash(rm -rf build)",
    RULE,
    " Bash command",
    " Do you want to proceed?",
    " ❯ 1. Yes",
    "   2. Yes, and always allow access to work/ from this project",
    "   3. No",
    " Esc to cancel · Tab to amend",
]


def plan(v: str = "2.1.197") -> list[str]:
    first = "Yes, and use auto mode" if v == "2.1.197" else "Yes, and bypass permissions"
    return [
        RULE,
        " Ready to code?",
        " Would you like to proceed?",
        f" ❯ 1. {first}",
        "   2. Yes, manually approve edits",
        "   3. Tell Claude what to change",
    ]


def run(
    sidecar: PaneSidecar,
    start: float,
    end: float,
    lines: Sequence[str] | None,
    ctx: SidecarContext | None = None,
) -> list[tuple[float, Action]]:
    """Tick once a second from ``start`` to ``end`` inclusive with the same screen."""
    out: list[tuple[float, Action]] = []
    t = start
    while t <= end:
        out.extend((t, a) for a in sidecar.tick(t, lines, ctx))
        t += 1
    return out


A = TypeVar("A")


def kinds(actions: list[tuple[float, Action]], kind: type[A]) -> list[tuple[float, A]]:
    return [(t, a) for t, a in actions if isinstance(a, kind)]


def test_poll_after_interval_then_handshake_and_backoff() -> None:
    sc = PaneSidecar("%1", SidecarConfig(poll_interval=30))
    acts = run(sc, 0, 29, idle())
    assert not kinds(acts, InjectPoll)
    assert sc.status(29).next_poll_in == 1
    assert sc.tick(30, idle()) == [InjectPoll("/nbs-poll", 1)]
    assert sc.status(30).injecting
    # the text shows in the box: press Enter (once)
    assert sc.tick(31, idle("/nbs-poll")) == [SubmitPoll("/nbs-poll", 1)]
    assert sc.tick(32, idle("/nbs-poll")) == []
    # it left the box: the agent works
    now = sc.tick(33, working())
    assert any(isinstance(a, HandshakeEnded) and a.purpose == "poll" and a.submitted for a in now)
    assert any(isinstance(a, StateChanged) and a.new is AgentState.WORKING for a in now)
    # back to idle at 40; 10 s back-off from 33 ends at 43, then 30 s of stability: 73
    acts = run(sc, 34, 39, working())
    acts = run(sc, 40, 80, idle())
    polls = [t for t, a in kinds(acts, InjectPoll) if a.attempt == 1]
    assert polls == [73.0]


def test_backoff_counts_from_injection_when_screen_settles_fast() -> None:
    sc = PaneSidecar("%1", SidecarConfig(poll_interval=5))
    run(sc, 0, 5, idle())
    sc.tick(6, idle("/nbs-poll"))
    now = sc.tick(7, idle())  # submitted and answered instantly
    assert kinds([(7, a) for a in now], HandshakeEnded)
    acts = run(sc, 8, 30, idle())
    # back-off until 17, then 5 s stable → 22
    assert [t for t, a in kinds(acts, InjectPoll) if a.attempt == 1] == [22.0]


def test_no_poll_while_working_typing_permission_paused_or_pressure() -> None:
    screens = {
        "working": working(),
        "typed": idle("half a thought"),
        "permission": PERMISSION,
        "pressure": idle(body=("❯ go", "  ⎿  Prompt is too long")),
        "shell": ["$ ls", "$ "],
    }
    for name, lines in screens.items():
        sc = PaneSidecar("%1", SidecarConfig(poll_interval=5))
        assert not kinds(run(sc, 0, 60, lines), InjectPoll), name
    sc = PaneSidecar("%1", SidecarConfig(poll_interval=5))
    assert not kinds(run(sc, 0, 60, idle(), SidecarContext(paused=True)), InjectPoll)
    assert sc.status(60, SidecarContext(paused=True)).next_poll_in is None
    sc = PaneSidecar("%1", SidecarConfig(poll_interval=5))
    assert not kinds(run(sc, 0, 60, idle(), SidecarContext(operator_typing=True)), InjectPoll)


def test_screen_changes_reset_the_idle_counter() -> None:
    sc = PaneSidecar("%1", SidecarConfig(poll_interval=10))
    acts: list[tuple[float, Action]] = []
    for t in range(0, 30):
        body = ("⏺ Done.", f"  line {t // 5}")  # changes every 5 s
        acts.extend((t, a) for a in sc.tick(t, idle(body=body)))
    assert not kinds(acts, InjectPoll)
    assert sc.status(29).idle_seconds == 4


def test_unchanged_screen_passed_as_none() -> None:
    sc = PaneSidecar("%1", SidecarConfig(poll_interval=5))
    sc.tick(0, idle())
    acts = run(sc, 1, 5, None)
    assert [a for _, a in acts] == [InjectPoll("/nbs-poll", 1)]


def test_disabled_polling() -> None:
    sc = PaneSidecar("%1", SidecarConfig(poll_interval=5, poll_enabled=False))
    assert not kinds(run(sc, 0, 60, idle()), InjectPoll)
    assert sc.status(60).next_poll_in is None
    sc.set_poll_enabled(True)  # the operator's per-pane toggle
    assert kinds(run(sc, 61, 61, idle()), InjectPoll)


def test_enter_retried_once_then_abandoned() -> None:
    sc = PaneSidecar("%1", SidecarConfig(poll_interval=5))
    run(sc, 0, 5, idle())
    acts = run(sc, 6, 20, idle("/nbs-poll"))
    submits = kinds(acts, SubmitPoll)
    assert [(t, a.attempt) for t, a in submits] == [(6.0, 1), (9.0, 2)]
    failed = [a for _, a in acts if isinstance(a, HandshakeEnded) and not a.submitted]
    assert len(failed) == 1


def test_text_not_shown_is_retyped_once_only_into_an_empty_box() -> None:
    sc = PaneSidecar("%1", SidecarConfig(poll_interval=5))
    run(sc, 0, 5, idle())
    acts = run(sc, 6, 14, None)  # the box stays empty
    injects = kinds(acts, InjectPoll)
    assert [a.attempt for _, a in injects] == [2]
    assert not kinds(acts, SubmitPoll)
    assert any(isinstance(a, HandshakeEnded) and not a.submitted for _, a in acts)


def test_operator_text_in_box_is_never_submitted() -> None:
    sc = PaneSidecar("%1", SidecarConfig(poll_interval=5))
    run(sc, 0, 5, idle())
    acts = run(sc, 6, 30, idle("/nbs-pollhello"))  # the operator typed at the same moment
    assert not kinds(acts, SubmitPoll)
    assert not kinds(acts, InjectPoll)
    assert any(isinstance(a, HandshakeEnded) and not a.submitted for _, a in acts)


def test_refused_action_resets_the_handshake() -> None:
    sc = PaneSidecar("%1", SidecarConfig(poll_interval=5))
    ((_, action),) = kinds(run(sc, 0, 5, idle()), InjectPoll)
    sc.action_refused(5, action, "live screen not idle")
    assert not sc.status(5).injecting
    acts = run(sc, 6, 21, idle())
    assert [t for t, _ in kinds(acts, InjectPoll)] == [20.0]  # 10 s back-off + 5 s


def test_force_poll_ignores_interval_not_safety() -> None:
    sc = PaneSidecar("%1", SidecarConfig(poll_interval=300))
    sc.tick(0, idle())
    ok, _ = sc.request_poll()
    assert ok
    assert sc.tick(1, None) == [InjectPoll("/nbs-poll", 1)]
    sc2 = PaneSidecar("%2")
    sc2.tick(0, working())
    ok, why = sc2.request_poll()
    assert not ok and "working" in why


def test_per_pane_interval() -> None:
    sc = PaneSidecar("%1", SidecarConfig(poll_interval=30))
    sc.set_poll_interval(3)
    acts = run(sc, 0, 5, idle())
    assert [t for t, _ in kinds(acts, InjectPoll)] == [3.0]


def test_plan_choice_once_per_menu_by_label() -> None:
    sc = PaneSidecar("%1")
    acts = run(sc, 0, 20, plan("2.1.197"))
    selects = kinds(acts, SelectPlanOption)
    assert len(selects) == 1
    t, sel = selects[0]
    assert t == 1.0 and sel.number == 1 and "auto mode" in sel.label
    failed = [a for _, a in acts if isinstance(a, PlanNotice) and a.result == "failed"]
    assert len(failed) == 1  # reported once, never pressed again
    assert not kinds(acts, InjectPoll)


def test_plan_choice_lands_and_next_menu_is_new() -> None:
    sc = PaneSidecar("%1")
    acts = run(sc, 0, 1, plan("2.1.158"))
    assert [a.number for _, a in kinds(acts, SelectPlanOption)] == [1]
    acts = run(sc, 2, 2, plan("2.1.158"))  # still drawn for a moment
    assert not kinds(acts, SelectPlanOption)
    acts = run(sc, 3, 6, working())
    assert any(isinstance(a, PlanNotice) and a.result == "landed" for _, a in acts)
    acts = run(sc, 7, 9, plan("2.1.158"))
    assert len(kinds(acts, SelectPlanOption)) == 1


def test_menu_flicker_does_not_cause_second_press() -> None:
    sc = PaneSidecar("%1")
    run(sc, 0, 1, plan())
    acts = run(sc, 2, 2, working()) + run(sc, 3, 10, plan())
    assert not kinds(acts, SelectPlanOption)


def test_plan_policy_off_and_override() -> None:
    sc = PaneSidecar("%1", SidecarConfig(plan_policy="off"))
    acts = run(sc, 0, 10, plan())
    assert not kinds(acts, SelectPlanOption)
    assert len([a for _, a in acts if isinstance(a, PlanNotice) and a.result == "waiting"]) == 1
    sc2 = PaneSidecar("%2")
    sc2.set_plan_policy("off")
    assert not kinds(run(sc2, 0, 10, plan()), SelectPlanOption)


def test_plan_without_matching_label_uses_fallback_or_waits() -> None:
    menu = [" Would you like to proceed?", " ❯ 1. Yes", "   2. No, keep planning"]
    sc = PaneSidecar("%1")
    acts = run(sc, 0, 10, menu)
    assert not kinds(acts, SelectPlanOption)
    sc = PaneSidecar("%1", SidecarConfig(plan_fallback=1))
    acts = run(sc, 0, 10, menu)
    assert [a.number for _, a in kinds(acts, SelectPlanOption)] == [1]


def test_permission_is_never_answered() -> None:
    sc = PaneSidecar("%1")
    acts = run(sc, 0, 120, PERMISSION)
    assert not kinds(acts, SelectPlanOption)
    assert not kinds(acts, InjectPoll)
    assert [a.new for _, a in kinds(acts, StateChanged)] == [AgentState.PERMISSION]


def test_commands_reported_once_while_on_screen_or_scrolling() -> None:
    sc = PaneSidecar("%1")
    cmd = "\\nbs-register-chat .nbs/chat/debug.chat"
    base = ["⏺ Registering.", f"  {cmd}"]
    acts = run(sc, 0, 3, idle(body=base))
    assert [a.line for _, a in kinds(acts, ReportCommand)] == [cmd]
    # it scrolls up as more output arrives: not reported again
    acts = []
    for t in range(4, 10):
        acts += [(t, a) for a in sc.tick(t, idle(body=[*base, *[f"  more {i}" for i in range(t)]]))]
    assert not kinds(acts, ReportCommand)
    # the agent prints it a second time: reported once more
    acts = run(sc, 10, 12, idle(body=[*base, "⏺ Again:", f"  {cmd}"]))
    assert len(kinds(acts, ReportCommand)) == 1


def test_command_flicker_is_not_a_new_command_but_reissue_later_is() -> None:
    sc = PaneSidecar("%1")
    cmd = "\\nbs-set-poll-interval 60"
    with_cmd = idle(body=["⏺ Setting.", f"  {cmd}"])
    without = idle(body=["⏺ Something else."])
    acts = run(sc, 0, 1, with_cmd) + run(sc, 2, 3, without) + run(sc, 4, 5, with_cmd)
    assert len(kinds(acts, ReportCommand)) == 1
    acts = run(sc, 6, 30, without) + run(sc, 31, 32, with_cmd)
    assert len(kinds(acts, ReportCommand)) == 1


def test_prose_mention_is_not_a_command() -> None:
    sc = PaneSidecar("%1")
    acts = run(sc, 0, 2, idle(body=["⏺ You could run \\nbs-register-chat x.chat yourself."]))
    assert not kinds(acts, ReportCommand)


def test_status_and_history() -> None:
    sc = PaneSidecar("%7", SidecarConfig(poll_interval=10))
    assert sc.status(0).detection.state is AgentState.UNKNOWN
    run(sc, 0, 4, idle())
    st = sc.status(4)
    assert st.pane_id == "%7" and st.state is AgentState.IDLE
    assert st.idle_seconds == 4 and st.next_poll_in == 6
    assert st.poll_enabled and st.plan_policy == "no-prompts"
    assert any("state idle" in h.text for h in st.history)


def test_nothing_is_typed_into_the_shell_claude_code_exited_to() -> None:
    """The real screens of Claude Code 2.1.1xx..3xx after it exited (its last frame, an empty
    input box among it, above the shell's prompt), from the screen alone, as when the process
    check is unavailable: well past the poll interval, no poll is typed and no state is idle."""
    from pathlib import Path

    corpus = Path(__file__).resolve().parents[1] / "corpus" / "claude"
    captures = sorted(corpus.glob("*/shell_after_*.txt"))
    assert len(captures) == 5 * 4  # five versions; /exit, Ctrl-C, /exit after an error, fresh /exit
    for capture in captures:
        lines = capture.read_text(encoding="utf-8").split("\n")[2:]  # two header lines
        sc = PaneSidecar("%1", SidecarConfig(poll_interval=30))
        acts = run(sc, 0, 120, lines)
        assert not kinds(acts, InjectPoll), capture
        assert sc.detection.state is AgentState.UNKNOWN, (capture, sc.detection.reason)
