"""Startup screens (nbs_tui/core/detection/startup.py), on screens recorded from the real CLI.

tests/corpus/claude/<version>/: dialog_trust (the mark on the first option), dialog_trust_moved
(after one Down), dialog_trust_long (a folder whose path wraps), dialog_bypass; and the screens
a start can meet otherwise (idle, working, error, other dialogs, Claude Code exited)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nbs_tui.core.detection.detect import detect_text
from nbs_tui.core.detection.startup import (
    BYPASS_CONFIRMATION,
    TRUST,
    PressKey,
    Ready,
    StartupExpectation,
    StartupGuide,
    Stop,
    Wait,
    trust_folder,
)
from nbs_tui.core.fleet.model import AgentState, Detection, MenuOption

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "claude"
VERSIONS = ("2.1.100", "2.1.150", "2.1.197", "2.1.265", "2.1.332")
UNNUMBERED = ("2.1.265", "2.1.332")


def screen(version: str, name: str) -> tuple[list[str], Detection]:
    text = (CORPUS / version / f"{name}.txt").read_text(encoding="utf-8").split("\n", 2)[2]
    return text.split("\n"), detect_text(text)


def work_folder(version: str, name: str) -> str:
    """The folder the capture's agent ran in (the harness's layout, tests/realclaude/harness.py)."""
    if name == "dialog_trust_long":
        from tests.realclaude.capture_corpus import LONG_FOLDER

        return f"/tmp/nbs-corpus-{version}/{name}/home/{LONG_FOLDER}"
    return f"/tmp/nbs-corpus-{version}/{name}/work"


def guide(folder: str, *, bypass: bool = False, aliases: tuple[str, ...] = (), home: str | None = None) -> StartupGuide:
    return StartupGuide(StartupExpectation(folder, aliases, home, bypass), started_at=100.0)


# -- the trust dialog ----------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", ["dialog_trust", "dialog_trust_moved", "dialog_trust_long"])
def test_the_folder_is_read_whole_from_every_trust_dialog(version: str, name: str) -> None:
    lines, _ = screen(version, name)
    assert trust_folder(lines) == work_folder(version, name)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_named_folder_is_trusted_by_moving_the_mark_then_enter(version: str) -> None:
    first, first_det = screen(version, "dialog_trust")
    moved, moved_det = screen(version, "dialog_trust_moved")
    g = guide(work_folder(version, "dialog_trust"))
    assert isinstance(g.step(first, first_det, 100.0), Wait)  # a fresh dialog settles first
    step = g.step(first, first_det, 101.0)
    if version in UNNUMBERED:  # "❯ No, exit" first: one Down, then Enter on the next screen
        assert step == PressKey("Down", TRUST, False, "move the trust dialog's mark towards 'Yes, I trust this folder'")
        assert g.answered == []
        # the moved screen is a capture of another agent (its own folder): same rules, its folder
        g2 = guide(work_folder(version, "dialog_trust_moved"))
        assert isinstance(g2.step(moved, moved_det, 100.0), Wait)
        step = g2.step(moved, moved_det, 101.0)
        g = g2
    assert isinstance(step, PressKey) and step.key == "Enter" and step.confirms
    assert g.answered == [TRUST]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_wrapped_folder_is_trusted_when_it_is_the_one_named(version: str) -> None:
    lines, det = screen(version, "dialog_trust_long")
    g = guide(work_folder(version, "dialog_trust_long"))
    g.step(lines, det, 100.0)
    assert isinstance(g.step(lines, det, 101.0), PressKey)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_numbered_dialog_with_the_mark_on_no_goes_back_up(version: str) -> None:
    lines, det = screen(version, "dialog_trust_moved")
    g = guide(work_folder(version, "dialog_trust_moved"))
    g.step(lines, det, 100.0)
    step = g.step(lines, det, 101.0)
    assert isinstance(step, PressKey)
    assert step.key == ("Enter" if version in UNNUMBERED else "Up")


@pytest.mark.parametrize(
    "named",
    [
        "/tmp/nbs-corpus-{v}/dialog_trust",  # the parent
        "/tmp/nbs-corpus-{v}/dialog_trust/work/sub",  # a child
        "/tmp/nbs-corpus-{v}/dialog_trust/wor",  # a prefix
        "/tmp/other",
    ],
)
@pytest.mark.parametrize("version", ["2.1.150", "2.1.332"])
def test_another_folder_is_never_trusted(version: str, named: str) -> None:
    lines, det = screen(version, "dialog_trust")
    g = guide(named.format(v=version))
    step = g.step(lines, det, 100.0)
    assert isinstance(step, Stop)
    assert f"asks to trust /tmp/nbs-corpus-{version}/dialog_trust/work, not {named.format(v=version)}" in step.line
    assert g.step(lines, det, 200.0) is step  # the decision holds
    assert g.answered == []


def test_the_folder_by_another_name_of_the_same_place_is_trusted() -> None:
    lines, det = screen("2.1.197", "dialog_trust")
    g = guide("/real/place", aliases=("/tmp/nbs-corpus-2.1.197/dialog_trust/work/",))
    g.step(lines, det, 100.0)
    assert isinstance(g.step(lines, det, 101.0), PressKey)


def test_trust_folder_reads_home_only_when_known_and_nothing_cut_or_out_of_place() -> None:
    dialog = ["", " Accessing workspace:", "", " {}", "", " Quick safety check: Is this a project"]

    def shown(path: str) -> list[str]:
        return [row.format(path) if "{}" in row else row for row in dialog]

    assert trust_folder(shown("~/src/app"), home="/home/me") == "/home/me/src/app"
    assert trust_folder(shown("~"), home="/home/me/") == "/home/me"
    assert trust_folder(shown("~/src/app")) is None
    assert trust_folder(shown("~bob/src"), home="/home/me") is None
    assert trust_folder(shown("/very/long/…/app")) is None
    assert trust_folder(shown("/very/long/.../app")) is None
    assert trust_folder(shown("relative/app")) is None
    assert trust_folder([*dialog[:3], " /a/b", "   c/d", *dialog[4:]]) is None  # not the dialog's column
    assert trust_folder([*dialog[:3], " /a/b", " c/d", *dialog[4:]]) == "/a/bc/d"
    assert trust_folder(dialog[:3]) is None
    assert trust_folder(["nothing here"]) is None


def test_peer_trust_dialogs_without_a_whole_folder_are_left_to_the_operator(peer_corpus: Path) -> None:
    for name, folder, answers in [
        ("oddjobs__workspace_trust_prompt.txt", "/Users/test/project", True),
        ("commandmate__trust_dialog_quick_safety_check.txt", "/Users/test/project", False),
        ("unresolved__trust_dialog_exact_capture.txt", "/Users/test/project", False),
    ]:
        text = (peer_corpus / "screens" / name).read_text(encoding="utf-8").split("\n", 2)[2]
        g = guide(folder)
        g.step(text.split("\n"), detect_text(text), 100.0)
        step = g.step(text.split("\n"), detect_text(text), 101.0)
        assert isinstance(step, PressKey if answers else Stop), (name, step)


# -- the bypass-permissions confirmation ---------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_bypass_is_accepted_only_when_it_was_asked(version: str) -> None:
    lines, det = screen(version, "dialog_bypass")
    asked = guide("/p", bypass=True)
    asked.step(lines, det, 100.0)
    step = asked.step(lines, det, 101.0)
    assert step == PressKey("Down", BYPASS_CONFIRMATION, False, "move the bypass-permissions confirmation's mark towards 'Yes, I accept'")
    not_asked = guide("/p")
    step = not_asked.step(lines, det, 100.0)
    assert isinstance(step, Stop) and "bypass-permissions mode, which was not asked" in step.line


def test_the_bypass_warning_words_are_needed_too() -> None:
    det = Detection(AgentState.DIALOG, options=(MenuOption(1, "No, exit", True), MenuOption(2, "Yes, I accept", False)), prompt="Terms")
    g = guide("/p", bypass=True)
    step = g.step(["Terms"], det, 100.0)
    assert isinstance(step, Stop) and "stopped at a dialog while starting (Terms)" in step.line


# -- everything else ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("name", "outcome", "words"),
    [
        ("idle_empty", Ready, ""),
        ("idle_default_mode", Ready, ""),
        ("idle_typed", Stop, "the input box already holds text ('refactor the parser and add tests')"),
        ("working_streaming", Wait, ""),
        ("working_thinking", Wait, ""),
        ("dialog_api_key", Stop, "stopped at a dialog while starting (Do you want to use this API key?)"),
        ("permission_bash", Stop, "stopped at a permission prompt while starting"),
        ("error_auth", Stop, "shows an error while starting"),
        ("limited_session", Stop, "usage"),
        ("shell_after_exit", Stop, "Claude Code exited while starting"),
    ],
)
def test_each_other_screen(version: str, name: str, outcome: type, words: str) -> None:
    lines, det = screen(version, name)
    step = guide("/p").step(lines, det, 100.0)
    assert isinstance(step, outcome), (det, step)
    if name == "shell_after_exit" and det.state is AgentState.IDLE:
        return  # inline versions' last frame ("❯ /exit") reads as typed text: stopped all the same
    if words:
        assert isinstance(step, Stop) and words in step.line


def test_the_auto_mode_nudge_stops_the_start() -> None:
    lines, det = screen("2.1.332", "dialog_auto_mode_nudge")
    step = guide("/p").step(lines, det, 100.0)
    assert isinstance(step, Stop) and "Make auto mode your default permission mode?" in step.line


def test_no_input_box_in_time_stops_the_start() -> None:
    lines, det = screen("2.1.332", "working_streaming")
    g = StartupGuide(StartupExpectation("/p"), started_at=100.0, timeout=30.0)
    assert isinstance(g.step(lines, det, 129.0), Wait)
    step = g.step(lines, det, 131.0)
    assert isinstance(step, Stop) and step.line.startswith("no Claude Code input box 30 s after the start")


def test_a_blank_screen_waits() -> None:
    assert isinstance(guide("/p").step([""] * 40, detect_text("\n" * 39), 100.0), Wait)


# -- keys that are not taken, dialogs that come back ------------------------------------------


def test_a_move_not_taken_is_pressed_once_more_then_the_start_stops() -> None:
    lines, det = screen("2.1.332", "dialog_trust")
    g = guide(work_folder("2.1.332", "dialog_trust"))
    g.step(lines, det, 100.0)
    assert isinstance(g.step(lines, det, 101.0), PressKey)
    assert isinstance(g.step(lines, det, 102.0), Wait)  # waiting for the key to show
    again = g.step(lines, det, 104.5)
    assert isinstance(again, PressKey) and again.key == "Down"
    assert isinstance(g.step(lines, det, 105.0), Wait)
    step = g.step(lines, det, 108.0)
    assert isinstance(step, Stop) and "still open after nbs-tui pressed Down" in step.line


def test_an_answer_is_never_pressed_twice() -> None:
    lines, det = screen("2.1.150", "dialog_trust")
    g = guide(work_folder("2.1.150", "dialog_trust"))
    g.step(lines, det, 100.0)
    assert g.step(lines, det, 101.0) == PressKey("Enter", TRUST, True, "answer the trust dialog: Yes, I trust this folder")
    assert isinstance(g.step(lines, det, 103.0), Wait)
    step = g.step(lines, det, 104.5)
    assert isinstance(step, Stop) and "still open after nbs-tui pressed Enter" in step.line


def test_a_dialog_back_after_its_answer_stops_the_start() -> None:
    lines, det = screen("2.1.150", "dialog_trust")
    g = guide(work_folder("2.1.150", "dialog_trust"))
    g.step(lines, det, 100.0)
    assert isinstance(g.step(lines, det, 101.0), PressKey)
    assert isinstance(g.step([""] * 40, detect_text("\n" * 39), 102.0), Wait)  # it went away
    step = g.step(lines, det, 103.0)
    assert isinstance(step, Stop) and "came back after nbs-tui answered it" in step.line


@pytest.mark.parametrize("version", UNNUMBERED)
def test_trust_then_bypass_then_ready(version: str) -> None:
    """The whole walk of a bypass agent in an untrusted folder, screen by screen."""
    trust, trust_det = screen(version, "dialog_trust")
    moved, moved_det = screen(version, "dialog_trust_moved")
    bypass, bypass_det = screen(version, "dialog_bypass")
    idle, idle_det = screen(version, "idle_empty")
    folder = work_folder(version, "dialog_trust")
    moved_folder = work_folder(version, "dialog_trust_moved")
    moved = [row.replace(moved_folder, folder) for row in moved]  # as if the same agent's
    g = guide(folder, bypass=True)
    keys = []
    for at, (rows, det) in enumerate([(trust, trust_det)] * 2 + [(moved, moved_det)] * 2 + [(bypass, bypass_det)] * 2, 100):
        step = g.step(rows, det, float(at))
        if isinstance(step, PressKey):
            keys.append(step.key)
    assert keys == ["Down", "Enter", "Down"]
    assert g.answered == [TRUST]
    assert isinstance(g.step(idle, idle_det, 110.0), Ready)
    assert isinstance(g.step(trust, trust_det, 111.0), Ready)  # done is done


def test_a_menu_without_a_mark_takes_the_digit_if_numbered() -> None:
    lines, det = screen("2.1.150", "dialog_trust")
    unmarked = Detection(det.state, tuple(MenuOption(o.number, o.label, False) for o in det.options), prompt=det.prompt)
    g = guide(work_folder("2.1.150", "dialog_trust"))
    g.step(lines, unmarked, 100.0)
    assert g.step(lines, unmarked, 101.0) == PressKey("1", TRUST, True, "answer the trust dialog: Yes, I trust this folder")
    lines, det = screen("2.1.332", "dialog_trust")
    unmarked = Detection(det.state, tuple(MenuOption(o.number, o.label, False) for o in det.options), flags=det.flags, prompt=det.prompt)
    g = guide(work_folder("2.1.332", "dialog_trust"))
    g.step(lines, unmarked, 100.0)
    step = g.step(lines, unmarked, 101.0)
    assert isinstance(step, Stop) and "cannot tell which option of the trust dialog is selected" in step.line
