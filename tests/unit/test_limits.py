"""Usage limits: Claude Code's limit messages read, reset instants, the fleet's resume plan."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from nbs_tui.core.detection.detect import detect_lines
from nbs_tui.core.detection.fusion import Reading, Source, fuse
from nbs_tui.core.detection.usage_limits import (
    ResumeConfig,
    ResumePlanner,
    countdown,
    limit_summary,
    parse_limit_line,
    reset_instant,
)
from nbs_tui.core.fleet.model import AgentState, UsageLimit

RULE = "─" * 80


def box(*body: str, footer: tuple[str, ...] = ("  ? for shortcuts",), typed: str = "") -> list[str]:
    return [*body, RULE, f"❯ {typed}", RULE, *footer]


@pytest.mark.parametrize(
    ("line", "kind", "resets", "hour", "minute", "tz", "date"),
    [
        ("  ⎿  You've hit your session limit · resets 12:50am (America/Los_Angeles)", "session",
         "12:50am (America/Los_Angeles)", 0, 50, "America/Los_Angeles", None),
        ("  ⎿  You've hit your 5-hour limit · resets 9:17am (UTC)", "5-hour", "9:17am (UTC)", 9, 17, "UTC", None),
        ("You've hit your weekly limit · resets Aug 3 at 12am (Asia/Tokyo)", "weekly",
         "Aug 3 at 12am (Asia/Tokyo)", 0, 0, "Asia/Tokyo", (8, 3)),
        ("You've hit your Opus weekly limit · resets Dec 1, 3pm (Europe/Paris)", "opus weekly",
         "Dec 1, 3pm (Europe/Paris)", 15, 0, "Europe/Paris", (12, 1)),
        ("Claude usage limit reached. Your limit will reset at 9am (America/Chicago).", "usage",
         "9am (America/Chicago)", 9, 0, "America/Chicago", None),
        ("Claude usage limit reached. Your limit will reset at 3pm.", "usage", "3pm", 15, 0, None, None),
        ("  ⚠ Usage limit reached · limit resets 9:17am", "usage", "9:17am", 9, 17, None, None),
        ("5-hour limit reached ∙ resets 1pm", "5-hour", "1pm", 13, 0, None, None),
        ("You've hit your limit · resets 11pm (UTC)", "usage" , "11pm (UTC)", 23, 0, "UTC", None),
    ],
)
def test_limit_lines_are_read(
    line: str, kind: str, resets: str, hour: int, minute: int, tz: str | None, date: tuple[int, int] | None
) -> None:
    limit = parse_limit_line(line)
    assert limit is not None
    assert (limit.kind, limit.resets, limit.hour, limit.minute, limit.tz) == (kind, resets, hour, minute, tz)
    assert (limit.month, limit.day) == (date or (None, None))


def test_oldest_wording_carries_the_instant() -> None:
    limit = parse_limit_line("Claude AI usage limit reached|1750000000")
    assert limit is not None and limit.epoch == 1750000000


@pytest.mark.parametrize(
    "line",
    [
        "API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit",
        "● I raised the limit in config.py to 500.",
        "The rate limit is reached when the queue is full",
        "❯ what happens when you hit your limit?",
        "● If you see \"You've hit your session limit · resets 3pm\", wait for it.",
        "● The usage limit reached its maximum yesterday.",
    ],
)
def test_other_lines_are_not_limits(line: str) -> None:
    assert parse_limit_line(line) is None


def test_the_session_limit_above_an_idle_box_is_limited_and_the_box_free() -> None:
    d = detect_lines(box(
        "❯ hello",
        "  ⎿  You've hit your session limit · resets 9:18am (UTC)",
        "",
        "✻ Baked for 0s",
    ))
    assert d.state is AgentState.LIMITED
    assert d.input_text == "" and not d.safe_to_inject  # only a resume may type here
    assert d.limit is not None and (d.limit.hour, d.limit.minute, d.limit.tz) == (9, 18, "UTC")
    assert not d.limit.auto_resume


def test_2_1_3xx_says_it_continues_by_itself_in_its_footer() -> None:
    body = (
        "❯ hello",
        "  ⎿  You've hit your 5-hour limit · resets 9:17am (UTC)",
        "",
        "● Usage limit reached · set to continue automatically at 9:17am",
    )
    armed = ("  ⚠ Usage limit reached · limit resets 9:17am",
             "    Continuing automatically at 9:17am · Esc to cancel",
             "  ⏸ manual mode on · ? for shortcuts")
    d = detect_lines(box(*body, footer=armed))
    assert d.state is AgentState.LIMITED
    assert d.limit is not None and d.limit.auto_resume and d.limit.tz == "UTC"
    cancelled = detect_lines(box(*body, footer=("  ⏸ manual mode on · ? for shortcuts",)))
    assert cancelled.state is AgentState.LIMITED
    assert cancelled.limit is not None and not cancelled.limit.auto_resume


def test_the_limit_menu_is_limited_with_its_options() -> None:
    d = detect_lines([
        "❯ hello",
        "  ⎿  You've hit your weekly limit · resets 9:19am (UTC)",
        "",
        "✻ Cooked for 0s",
        "",
        "❯ /rate-limit-options",
        "",
        RULE,
        "  What do you want to do?",
        "",
        "  ❯ 1. Stop and wait for limit to reset",
        "    2. Upgrade your plan",
        "",
        "  Enter to confirm · Esc to cancel",
    ])
    assert d.state is AgentState.LIMITED
    assert [o.label for o in d.options] == ["Stop and wait for limit to reset", "Upgrade your plan"]
    assert d.input_text is None and d.limit is not None and d.limit.kind == "weekly"


def test_a_later_turn_or_an_answer_clears_the_limit() -> None:
    later = detect_lines(box(
        "❯ hello", "  ⎿  You've hit your session limit · resets 9:18am (UTC)", "",
        "❯ continue", "● Carrying on.", "", "✻ Worked for 3s",
    ))
    assert later.state is AgentState.IDLE
    answered = detect_lines(box(
        "❯ hello", "  ⎿  You've hit your session limit · resets 9:18am (UTC)", "",
        "● Usage limit reached · set to continue automatically at 9:18am", "", "● Done.",
    ))
    assert answered.state is AgentState.IDLE
    working = detect_lines(box(
        "❯ hello", "  ⎿  You've hit your session limit · resets 9:18am (UTC)", "", "✢ Sautéing… (3s)",
        footer=("  esc to interrupt",),
    ))
    assert working.state is AgentState.WORKING


def test_a_limit_on_screen_beats_the_stop_hook_and_the_transcript_error() -> None:
    now = 1000.0
    fused = fuse([
        Reading(Source.SCREEN, AgentState.LIMITED, now - 5, "usage limit"),
        Reading(Source.HOOK, AgentState.IDLE, now - 1, "Stop"),
        Reading(Source.TRANSCRIPT, AgentState.ERROR, now - 1, "API error 429"),
    ], now)
    assert fused.state is AgentState.LIMITED and fused.disagreement is None


# --- reset instants ---------------------------------------------------------------------------


def at(text: str, zone: str = "UTC") -> float:
    return datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(zone)).timestamp()


@pytest.mark.parametrize(
    ("resets", "seen", "expected"),
    [
        ("9:17am (UTC)", "2026-11-26T07:00", "2026-11-26T09:17"),
        ("9:17am (UTC)", "2026-11-26T09:20", "2026-11-26T09:17"),  # just passed
        ("1am (UTC)", "2026-11-26T23:00", "2026-11-27T01:00"),  # tomorrow
        ("Aug 3 at 12am (UTC)", "2026-07-31T10:00", "2026-08-03T00:00"),
        ("Jan 2 at 9am (UTC)", "2026-12-30T10:00", "2027-01-02T09:00"),  # next year
    ],
)
def test_reset_instant(resets: str, seen: str, expected: str) -> None:
    limit = parse_limit_line(f"You've hit your weekly limit · resets {resets}")
    assert limit is not None
    assert reset_instant(limit, at(seen), ZoneInfo("UTC")) == at(expected)


def test_reset_instant_in_the_zone_the_screen_names() -> None:
    limit = parse_limit_line("You've hit your session limit · resets 12:50am (America/Los_Angeles)")
    assert limit is not None and limit.tz is not None
    seen = at("2026-11-26T06:00")  # 22:00 the day before in Los Angeles
    got = reset_instant(limit, seen, ZoneInfo(limit.tz))
    assert got == at("2026-11-26T00:50", "America/Los_Angeles")
    assert got == at("2026-11-26T08:50")


def test_countdown_and_summary() -> None:
    assert [countdown(s) for s in (5, 270, 7500, 200000)] == ["5s", "4m30s", "2h05m", "2d07h"]
    limit = UsageLimit("weekly", "x", "Aug 3 at 12am (Asia/Tokyo)")
    assert limit_summary(limit, 1000.0, 100.0) == "weekly limit · resets Aug 3 at 12am (Asia/Tokyo) · in 15m00s"
    assert limit_summary(limit, 1000.0, 2000.0).endswith("reset passed")


# --- the resume plan --------------------------------------------------------------------------


def utc(_: str | None) -> timezone:
    return UTC


def limit_at(hour: int, minute: int = 0, *, auto: bool = False, text: str = "") -> UsageLimit:
    return UsageLimit("session", text or f"You've hit your session limit · resets {hour}:{minute:02d} (UTC)",
                      f"{hour}:{minute:02d} (UTC)", hour, minute, tz="UTC", auto_resume=auto)


T0 = at("2026-11-26T07:00")


def test_nothing_is_resumed_unless_opted_in() -> None:
    planner = ResumePlanner(ResumeConfig(enabled=False), utc)
    events = planner.observe("%1", limit_at(8), T0)
    assert [e.kind for e in events] == ["limited"] and events[0].reset_at == at("2026-11-26T08:00")
    pane, held = planner.due(T0 + 7200, ready=["%1"])
    assert pane is None and [e.message for e in held] == ["automatic resume is off (limit_resume)"]
    assert planner.due(T0 + 7300, ready=["%1"])[1] == []  # said once


def test_resumes_after_the_reset_and_margin_staggered_oldest_reset_first() -> None:
    planner = ResumePlanner(ResumeConfig(enabled=True, margin=60, stagger=30), utc)
    planner.observe("%2", limit_at(8, 5), T0)
    planner.observe("%1", limit_at(8), T0)
    planner.observe("%3", limit_at(8), T0)
    reset = at("2026-11-26T08:00")
    assert planner.due(reset + 59, ready=["%1", "%2", "%3"])[0] is None
    assert planner.next_resume(reset) == {"%1": reset + 60, "%3": reset + 90, "%2": reset + 300 + 60}
    first, events = planner.due(reset + 60, ready=["%1", "%2", "%3"])
    assert first == "%1" and events[-1].kind == "resume"
    assert planner.due(reset + 70, ready=["%1", "%2", "%3"])[0] is None  # stagger
    assert planner.due(reset + 90, ready=["%1", "%2", "%3"])[0] == "%3"
    assert planner.due(reset + 400, ready=["%1", "%2", "%3"])[0] == "%2"
    assert planner.due(reset + 900, ready=["%1", "%2", "%3"])[0] is None  # each once


def test_never_a_second_continue_where_claude_code_resumes_by_itself() -> None:
    planner = ResumePlanner(ResumeConfig(enabled=True), utc)
    planner.observe("%1", limit_at(8, auto=True), T0)
    pane, held = planner.due(at("2026-11-26T09:00"), ready=["%1"])
    assert pane is None and "continues by itself" in held[0].message


def test_a_menu_waits_for_a_choice_and_unknown_resets_are_left_alone() -> None:
    planner = ResumePlanner(ResumeConfig(enabled=True), utc)
    planner.observe("%1", limit_at(8), T0)
    planner.observe("%2", UsageLimit("usage", "usage limit menu"), T0)
    pane, held = planner.due(at("2026-11-26T09:00"), ready=[])
    assert pane is None
    assert {e.pane_id: e.message for e in held} == {
        "%1": "input box not free (a menu is open or text is typed): waiting",
        "%2": "reset time unknown: not resumed",
    }


def test_the_same_limit_again_after_a_resume_is_not_resumed_twice() -> None:
    planner = ResumePlanner(ResumeConfig(enabled=True), utc)
    planner.observe("%1", limit_at(8), T0)
    assert planner.due(at("2026-11-26T08:05"), ready=["%1"])[0] == "%1"
    assert [e.kind for e in planner.observe("%1", None, at("2026-11-26T08:05:10"))] == ["cleared"]
    again = limit_at(8, text="You've hit your session limit · resets 8:00 (UTC) ")
    planner.observe("%1", again, at("2026-11-26T08:06"))
    pane, held = planner.due(at("2026-11-26T08:10"), ready=["%1"])
    assert pane is None and "already resumed once" in held[0].message
    # a new limit with a later reset is resumed again
    planner.observe("%1", limit_at(13), at("2026-11-26T08:30"))
    assert planner.due(at("2026-11-26T13:02"), ready=["%1"])[0] == "%1"


def test_a_resume_not_delivered_is_tried_again_up_to_the_limit() -> None:
    planner = ResumePlanner(ResumeConfig(enabled=True, stagger=0, max_attempts=2), utc)
    planner.observe("%1", limit_at(8), T0)
    t = at("2026-11-26T08:05")
    assert planner.due(t, ready=["%1"])[0] == "%1"
    planner.failed("%1")
    assert planner.due(t + timedelta(seconds=1).total_seconds(), ready=["%1"])[0] == "%1"
    planner.failed("%1")
    pane, held = planner.due(t + 2, ready=["%1"])
    assert pane is None and "not delivered after 2 attempts" in held[0].message


# --- the pane sidecar: no poll, no nudge; only the resume types into a limited pane ----------


def limited_screen(box_text: str = "", footer: tuple[str, ...] = ("  ? for shortcuts",)) -> list[str]:
    return box(
        "❯ hello", "  ⎿  You've hit your session limit · resets 9:18am (UTC)", "", "✻ Baked for 0s",
        typed=box_text, footer=footer,
    )


def test_a_limited_pane_gets_no_poll_and_no_other_text() -> None:
    from nbs_tui.core.sidecar.pane_sidecar import InjectPoll, PaneSidecar, SidecarConfig

    sidecar = PaneSidecar("%1", SidecarConfig(poll_interval=5))
    sidecar.tick(0.0, limited_screen())
    for t in range(1, 60):
        assert not [a for a in sidecar.tick(float(t), None) if isinstance(a, InjectPoll)]
    assert sidecar.detection.state is AgentState.LIMITED
    ok, why = sidecar.request_text("Please continue", "nudge")
    assert not ok and "limited" in why
    assert sidecar.status(60.0).next_poll_in is None


def test_the_resume_goes_through_the_handshake_and_only_into_a_free_box() -> None:
    from nbs_tui.core.sidecar.pane_sidecar import (
        HandshakeEnded,
        InjectPoll,
        PaneSidecar,
        SubmitPoll,
    )

    sidecar = PaneSidecar("%1")
    sidecar.tick(0.0, limited_screen(box_text="half-typed"))
    assert sidecar.request_resume("continue") == (False, "box holds 'half-typed'")
    sidecar.tick(1.0, limited_screen())
    assert sidecar.request_resume("continue")[0]
    assert sidecar.tick(2.0, None) == [InjectPoll("continue", 1, "resume")]
    assert sidecar.tick(3.0, limited_screen("continue")) == [SubmitPoll("continue", 1, "resume")]
    working = box("❯ continue", "✢ Sautéing… (1s)", footer=("  esc to interrupt",))
    actions = sidecar.tick(4.0, working)
    assert HandshakeEnded("resume", True, "continue submitted") in actions


def test_no_resume_where_claude_code_continues_by_itself_or_a_menu_is_open() -> None:
    from nbs_tui.core.sidecar.pane_sidecar import PaneSidecar

    sidecar = PaneSidecar("%1")
    sidecar.tick(0.0, limited_screen(footer=(
        "  ⚠ Usage limit reached · limit resets 9:17am", "    Continuing automatically at 9:17am · Esc to cancel",
    )))
    assert sidecar.request_resume("continue") == (False, "Claude Code continues by itself")
    sidecar.tick(1.0, ["  ⎿  You've hit your weekly limit · resets 9:19am (UTC)", "  What do you want to do?",
                       "  ❯ 1. Stop and wait for limit to reset", "    2. Upgrade your plan",
                       "  Enter to confirm · Esc to cancel"])
    assert sidecar.detection.state is AgentState.LIMITED
    assert sidecar.request_resume("continue") == (False, "input box not free")


# --- the real CLI's screens (tests/corpus/claude, captured against the scripted API) ----------

CORPUS = __import__("pathlib").Path(__file__).resolve().parents[1] / "corpus" / "claude"
AUTO_CONTINUES = {"2.1.265", "2.1.332"}
"""Versions that continue by themselves at the reset (the others open a menu and wait)."""


@pytest.mark.parametrize("version", ["2.1.100", "2.1.150", "2.1.197", "2.1.265", "2.1.332"])
@pytest.mark.parametrize("name", ["limited_session", "limited_weekly"])
def test_real_limit_screens(version: str, name: str) -> None:
    from nbs_tui.core.detection.detect import detect_text

    path = CORPUS / version / f"{name}.ansi"
    d = detect_text("\n".join(path.read_text(encoding="utf-8").split("\n")[2:]))
    assert d.state is AgentState.LIMITED and d.limit is not None
    assert d.limit.tz == "UTC" and d.limit.hour is not None
    assert d.limit.kind in (("weekly",) if name == "limited_weekly" else ("session", "5-hour"))
    assert d.limit.auto_resume is (version in AUTO_CONTINUES)
    if version in AUTO_CONTINUES:
        assert d.input_text == "" and not d.options
    else:  # the menu: "Stop and wait for limit to reset" first
        assert d.input_text is None and "wait for limit" in d.options[0].label


def test_headless_state_events_carry_the_limit() -> None:
    from nbs_tui.core.detection.detect import detection_as_json

    d = detect_lines(limited_screen())
    assert detection_as_json(d)["limit"] == {
        "kind": "session", "resets": "9:18am (UTC)", "tz": "UTC", "auto_resume": False,
        "text": "You've hit your session limit · resets 9:18am (UTC)",
    }
    assert "limit" not in detection_as_json(detect_lines(box("● Done.")))
