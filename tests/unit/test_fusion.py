"""Fusion of screen, hook, status-file and transcript readings into one state per pane."""

from __future__ import annotations

from nbs_tui.core.detection.fusion import FusionPolicy, Reading, Source, fuse, screen_reading
from nbs_tui.core.fleet.model import AgentState, Detection

S = AgentState


def screen(state: AgentState, at: float, detail: str = "") -> Reading:
    return Reading(Source.SCREEN, state, at, detail)


def hook(state: AgentState, at: float, detail: str = "") -> Reading:
    return Reading(Source.HOOK, state, at, detail)


def status(state: AgentState, at: float, detail: str = "") -> Reading:
    return Reading(Source.STATUS, state, at, detail)


def transcript(state: AgentState, at: float, detail: str = "") -> Reading:
    return Reading(Source.TRANSCRIPT, state, at, detail)


def test_a_hook_newer_than_the_last_screen_change_wins() -> None:
    fused = fuse([screen(S.WORKING, 100.0), hook(S.IDLE, 100.5, "Stop")], now=100.6)
    assert (fused.state, fused.source) == (S.IDLE, Source.HOOK)
    assert "Stop" in fused.why


def test_a_screen_change_after_the_hook_wins() -> None:
    # Esc fires no hook: the screen went idle after the last hook said working.
    fused = fuse([hook(S.WORKING, 100.0, "UserPromptSubmit"), screen(S.IDLE, 103.0)], now=104.0)
    assert (fused.state, fused.source) == (S.IDLE, Source.SCREEN)


def test_a_menu_on_screen_beats_a_newer_busy() -> None:
    fused = fuse([screen(S.PERMISSION, 100.0), status(S.WORKING, 101.0, "busy"), hook(S.WORKING, 101.0)], now=102.0)
    assert (fused.state, fused.source) == (S.PERMISSION, Source.SCREEN)


def test_the_hook_refines_a_bare_permission_into_a_plan() -> None:
    readings = [screen(S.PERMISSION, 100.0), hook(S.PLAN, 100.1, "PermissionRequest ExitPlanMode"), status(S.PERMISSION, 100.2)]
    fused = fuse(readings, now=101.0)
    assert (fused.state, fused.source) == (S.PLAN, Source.HOOK)
    # Same without a screen reading that knows: the status file's "waiting" takes the hook's plan.
    fused = fuse([screen(S.UNKNOWN, 99.0), hook(S.PLAN, 100.1), status(S.PERMISSION, 100.2)], now=101.0)
    assert fused.state == S.PLAN


def test_status_file_newer_than_hook_wins_when_the_screen_is_not_newer() -> None:
    fused = fuse([screen(S.WORKING, 100.0), hook(S.WORKING, 100.0), status(S.IDLE, 101.0, "idle")], now=101.1)
    assert (fused.state, fused.source) == (S.IDLE, Source.STATUS)


def test_a_quiet_source_is_not_trusted_forever() -> None:
    policy = FusionPolicy(quiet_after=60.0)
    readings = [screen(S.IDLE, 100.0), hook(S.WORKING, 101.0, "PreToolUse Bash")]
    assert fuse(readings, now=110.0, policy=policy).state == S.WORKING
    late = fuse(readings, now=200.0, policy=policy)
    assert (late.state, late.source) == (S.IDLE, Source.SCREEN)


def test_an_unrecognised_screen_falls_back_to_exact_sources_of_any_age() -> None:
    fused = fuse([screen(S.UNKNOWN, 500.0), hook(S.IDLE, 100.0, "Stop")], now=1000.0)
    assert (fused.state, fused.source) == (S.IDLE, Source.HOOK)
    fused = fuse([transcript(S.WORKING, 100.0)], now=101.0)
    assert (fused.state, fused.source) == (S.WORKING, Source.TRANSCRIPT)
    assert fuse([], now=1.0).state == S.UNKNOWN


def test_an_api_error_in_the_transcript_is_the_state_until_the_next_prompt() -> None:
    readings = [
        screen(S.IDLE, 105.1),
        hook(S.WORKING, 100.0, "UserPromptSubmit"),
        status(S.IDLE, 105.0),
        transcript(S.ERROR, 105.0, "API error: Credit balance is too low"),
    ]
    fused = fuse(readings, now=106.0)
    assert (fused.state, fused.source) == (S.ERROR, Source.TRANSCRIPT)
    readings.append(hook(S.WORKING, 110.0, "UserPromptSubmit"))
    assert fuse(readings, now=110.5).state == S.WORKING


def test_long_disagreement_is_reported() -> None:
    policy = FusionPolicy(disagree_after=10.0, quiet_after=1000.0)
    readings = [screen(S.IDLE, 50.0), hook(S.WORKING, 100.0, "UserPromptSubmit")]
    first = fuse(readings, now=100.0, policy=policy)
    assert first.disagreement is None and first.disagree_since == 100.0
    later = fuse(readings, now=115.0, previous=first, policy=policy)
    assert later.disagreement is not None and "screen says idle" in later.disagreement and "hook says working" in later.disagreement
    agreed = fuse([screen(S.IDLE, 50.0), hook(S.IDLE, 116.0)], now=116.0, previous=later, policy=policy)
    assert agreed.disagreement is None and agreed.disagree_since is None


def test_plan_and_permission_do_not_count_as_disagreement() -> None:
    first = fuse([screen(S.PLAN, 100.0), status(S.PERMISSION, 100.0)], now=100.0)
    assert first.disagree_since is None


def test_readings_are_kept_per_source_newest_first_wins() -> None:
    fused = fuse([hook(S.WORKING, 1.0), hook(S.IDLE, 2.0), screen(S.IDLE, 0.5)], now=3.0)
    assert fused.reading(Source.HOOK) == hook(S.IDLE, 2.0)
    assert [r.source for r in fused.readings] == [Source.SCREEN, Source.HOOK]


def test_screen_reading_from_a_detection() -> None:
    reading = screen_reading(Detection(AgentState.IDLE, reason="prompt"), 12.0)
    assert reading == Reading(Source.SCREEN, S.IDLE, 12.0, "prompt")
