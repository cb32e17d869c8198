"""Detection over the peer corpus, the real-CLI corpus (when captured) and hand-made traps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nbs_tui.core.detection.detect import (
    FLAG_CONTEXT_PRESSURE,
    FLAG_GHOST_INPUT,
    FLAG_PLAN_MODE,
    choose_plan_option,
    detect_lines,
    detect_text,
    detection_as_json,
    screen_key,
)
from nbs_tui.core.fleet.model import AgentState, MenuOption
from nbs_tui.core.screen.screen_rows import strip_escapes

RULE = "─" * 80
REPO = Path(__file__).resolve().parents[2]
CLAUDE_CORPUS = REPO / "tests" / "corpus" / "claude"


def screen(
    *body: str, box: str = "", footer: str = "  ? for shortcuts", blank_after: int = 0
) -> list[str]:
    """A Claude Code 2.1.x screen: transcript rows, the ruled input box, a footer."""
    return [*body, RULE, f"❯ {box}".rstrip() + " ", RULE, footer, *([""] * blank_after)]


# --- the peer corpus (other tools' recordings, read in place) --------------------------------


PEER_LIMITED = {
    "commandmate__error_usage_limit_reached.txt",
    "unresolved__idle_after_weekly_limit.txt",
    "unresolved__usage_limit_choice_menu.txt",
}
"""Usage-limit screens: the shared labels predate nbs-tui's ``limited`` state (they say error,
idle or question); nbs-tui reports them ``limited``, and only that."""


def _peer_cases() -> list[tuple[str, list[str], str]]:
    from tests.conftest import PEER_CORPUS

    labels = PEER_CORPUS / "labels.tsv"
    if not labels.is_file():
        return []
    cases = []
    for line in labels.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, allowed, *rest = line.split("\t")
        states = ["limited"] if name in PEER_LIMITED else allowed.split(",")
        cases.append((name, states, rest[0] if rest else ""))
    return cases


def _peer_body(corpus: Path, name: str) -> str:
    text = (corpus / "screens" / name).read_text(encoding="utf-8", errors="replace")
    return "\n".join(text.split("\n")[2:])  # two header lines: source, the other project's label


@pytest.mark.parametrize(
    ("name", "allowed", "note"),
    # without the corpus one case remains, for the fixture to skip (or fail under CI)
    _peer_cases() or [pytest.param("", [], "", id="peer-corpus-missing")],
)
def test_peer_screen_state_is_allowed(
    peer_corpus: Path, name: str, allowed: list[str], note: str
) -> None:
    detection = detect_text(_peer_body(peer_corpus, name))
    assert detection.state.value in allowed, detection.reason
    if detection.state is not AgentState.IDLE:
        assert not detection.safe_to_inject
    if note.startswith("choice="):
        chosen = [o.label for o in detection.options if o.number == detection.plan_choice]
        assert chosen, f"no plan choice among {detection.options}"
        assert note.removeprefix("choice=").lower() in chosen[0].lower()


def test_peer_corpus_is_fully_covered(peer_corpus: Path) -> None:
    results = [
        detect_text(_peer_body(peer_corpus, name)).state.value in allowed
        for name, allowed, _ in _peer_cases()
    ]
    assert len(results) == 72
    assert all(results)


# --- the real-CLI corpus captured by the project's own harness --------------------------------


MISCAPTURED: dict[str, str] = {}
"""Corpus files known to be captured at the wrong moment (none since the 2.1.197 recapture):
``"<version>/<file>": why``. Each is a strict xfail, so a fixed capture or detection fails the
run until its entry is removed."""


def _claude_cases() -> list[tuple[str, str, list[str], str]]:
    """(version, file, allowed states, note) from every ``<version>/labels.tsv``."""
    cases: list[tuple[str, str, list[str], str]] = []
    if not CLAUDE_CORPUS.is_dir():
        return cases
    for labels in sorted(CLAUDE_CORPUS.glob("*/labels.tsv")):
        for line in labels.read_text(encoding="utf-8").splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            name, allowed, *rest = line.split("\t")
            cases.append((labels.parent.name, name, allowed.split(","), rest[0] if rest else ""))
    return cases


def _claude_params() -> list[object]:
    return [
        pytest.param(
            *case,
            marks=pytest.mark.xfail(strict=True, reason=MISCAPTURED[f"{case[0]}/{case[1]}"]),
        )
        if f"{case[0]}/{case[1]}" in MISCAPTURED
        else pytest.param(*case)
        for case in _claude_cases()
    ]


@pytest.mark.parametrize(
    ("version", "name", "allowed", "note"),
    _claude_params()
    or [
        pytest.param(
            "", "", [], "", marks=pytest.mark.skip(reason="real-CLI corpus not captured yet")
        )
    ],
)
def test_real_cli_screen(version: str, name: str, allowed: list[str], note: str) -> None:
    text = (CLAUDE_CORPUS / version / name).read_text(encoding="utf-8", errors="replace")
    detection = detect_text("\n".join(text.split("\n")[2:]))  # two header lines
    assert detection.state.value in allowed, f"{version}/{name}: {detection.reason}"
    if detection.state is not AgentState.IDLE:
        assert not detection.safe_to_inject
    words = note.removeprefix("choice=") if note.startswith("choice=") else ""
    if words:  # an empty choice= names no expected option
        chosen = [o.label for o in detection.options if o.number == detection.plan_choice]
        assert chosen and words.lower() in chosen[0].lower(), detection.options
    if name.endswith(".ansi") and name.startswith(("error_", "idle_empty")):
        assert detection.input_text in ("", None), "a faint hint is not typed input"


def test_captured_error_screens_are_error_only() -> None:
    """An API-error screen read as idle must fail: no ``error_*`` row may accept another state."""
    rows = [(v, n, allowed) for v, n, allowed, _ in _claude_cases() if n.startswith("error_")]
    assert len(rows) == 5 * 4 * 2  # five versions, four errors, plain and with escapes
    assert [r for r in rows if r[2] != ["error"]] == []


def _with_later_turn(text: str) -> list[str]:
    """A captured error screen with one more turn that ended well, put above the input box."""
    lines = text.split("\n")[2:]
    prompt = max(i for i, line in enumerate(lines) if line.startswith("❯") and i and "───" in lines[i - 1])
    later = ["", "❯ try again", "", "⏺ Hello from the scripted API.", ""]
    return lines[: prompt - 1] + later + lines[prompt - 1 :]


@pytest.mark.parametrize(
    "path",
    sorted(CLAUDE_CORPUS.glob("*/error_*.txt")),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_captured_error_followed_by_a_good_turn_is_idle(path: Path) -> None:
    """The boundary of `error`: the same real screen, with a later reply under the error, is idle."""
    text = path.read_text(encoding="utf-8")
    assert detect_text("\n".join(text.split("\n")[2:])).state is AgentState.ERROR
    detection = detect_lines(_with_later_turn(text))
    assert detection.state is AgentState.IDLE, detection.reason


# --- hand-made traps from the issue ----------------------------------------------------------


def test_prompt_on_screen_while_working_is_not_idle() -> None:
    d = detect_lines(
        screen(
            "⏺ Bash(sleep 30)",
            "  ⎿  Running…",
            "",
            "✢ Sautéing… (3s · ↓ 6 tokens)",
            footer="  esc to interrupt · ← for agents",
        )
    )
    assert d.state is AgentState.WORKING
    assert not d.safe_to_inject


def test_spinner_without_stats_is_working() -> None:
    assert detect_lines(screen("⏺ Let me look.", "", "✢ Sautéing…")).state is AgentState.WORKING


def test_idle_empty_box_is_safe() -> None:
    d = detect_lines(screen("⏺ Done.", "", "✻ Worked for 6s"))
    assert d.state is AgentState.IDLE
    assert d.input_text == ""
    assert d.safe_to_inject


def test_selected_menu_option_is_not_an_input_prompt() -> None:
    d = detect_lines(
        [
            "⏺ Bash(rm -rf build)",
            RULE,
            " Bash command",
            "",
            "   rm -rf build",
            "",
            " Do you want to proceed?",
            " ❯ 1. Yes",
            "   2. Yes, and always allow access to work/ from this project",
            "   3. No",
            "",
            " Esc to cancel · Tab to amend · ctrl+e to explain",
        ]
    )
    assert d.state is AgentState.PERMISSION
    assert d.input_text is None
    assert [o.number for o in d.options] == [1, 2, 3]
    assert d.options[0].selected and not d.options[1].selected
    assert d.options[1].label.startswith("Yes, and always allow")


@pytest.mark.parametrize(
    "footer",
    [
        "  ⏵⏵ bypass permissions on (shift+tab to cycle) · ← for agents",
        "  ⏸ plan mode on (shift+tab to cycle) · ← for agents",
        "  ? for shortcuts · ← for agents",
        "  ⏸ manual mode on · ? for shortcuts · ← for agents",
    ],
)
def test_permanent_footers_are_not_states(footer: str) -> None:
    d = detect_lines(screen("⏺ Ready.", footer=footer))
    assert d.state is AgentState.IDLE
    assert d.safe_to_inject


def test_plan_mode_footer_is_a_flag() -> None:
    d = detect_lines(
        screen("⏺ Ready.", footer="  ⏸ plan mode on (shift+tab to cycle) · ← for agents")
    )
    assert FLAG_PLAN_MODE in d.flags


def test_prose_quoting_states_is_idle() -> None:
    d = detect_lines(
        screen(
            "⏺ When the footer shows (esc to interrupt) the agent is busy.",
            "  Would you like to proceed? I can open the PR.",
            "  Do you want to proceed with the merge?",
            "",
            "✻ Brewed for 2m 12s",
        )
    )
    assert d.state is AgentState.IDLE
    assert d.safe_to_inject


def test_prose_numbered_list_above_idle_box_is_not_a_menu() -> None:
    d = detect_lines(
        screen(
            "⏺ Next steps:",
            "  1. Fix the parser",
            "  2. Add tests",
            "  3. Ship it",
            "",
            "✻ Worked for 3s",
        )
    )
    assert d.state is AgentState.IDLE
    assert d.options == ()


def test_completed_turn_line_is_not_a_spinner() -> None:
    for line in (
        "✻ Worked for 6s",
        "✻ Sautéed for 39s · 1 monitor still running",
        "✶ Crunched for 0s (0 tokens)",
    ):
        assert detect_lines(screen("⏺ ok", "", line)).state is AgentState.IDLE, line


def test_trailing_blank_rows_of_tall_pane() -> None:
    d = detect_lines(screen("⏺ Done.", blank_after=900))
    assert d.state is AgentState.IDLE
    assert d.safe_to_inject


def test_stale_spinner_above_newer_message_is_idle() -> None:
    d = detect_lines(
        screen(
            "✻ Seasoning… (44s · ↓ 247 tokens)",
            "  ⎿ Tip: Use /btw",
            "",
            "⏺ All done.",
            "  - tests pass",
        )
    )
    assert d.state is AgentState.IDLE


def test_typed_text_is_not_safe() -> None:
    d = detect_lines(screen("⏺ Done.", box="please also fix the docs"))
    assert d.state is AgentState.IDLE
    assert d.input_text == "please also fix the docs"
    assert not d.safe_to_inject


def test_multiline_input() -> None:
    lines = ["⏺ Done.", RULE, "❯ first line", "  second line", RULE, "  ? for shortcuts"]
    assert detect_lines(lines).input_text == "first line\nsecond line"


def test_nbsp_after_prompt() -> None:
    d = detect_lines(["⏺ Done.", RULE, "❯\u00a0", RULE, "  ? for shortcuts"])
    assert d.state is AgentState.IDLE and d.input_text == "" and d.safe_to_inject


def test_ghost_suggestion_from_sgr_is_not_typed_input() -> None:
    raw = "\n".join(
        [
            "⏺ Done.",
            RULE,
            "\x1b[39m❯\u00a0\x1b[2mExplain\x1b[0m \x1b[2mthe\x1b[0m \x1b[2mcode\x1b[0m",
            RULE,
            "  ? for shortcuts",
        ]
    )
    d = detect_text(raw)
    assert d.state is AgentState.IDLE
    assert d.input_text == ""
    assert FLAG_GHOST_INPUT in d.flags
    assert d.safe_to_inject


def test_typed_text_in_sgr_is_typed() -> None:
    raw = "\n".join(
        ["⏺ Done.", RULE, "\x1b[38;5;246m❯ \x1b[38;5;231mfix it\x1b[39m", RULE, "  ? for shortcuts"]
    )
    d = detect_text(raw)
    assert d.input_text == "fix it"
    assert not d.safe_to_inject


def test_strip_escapes_handles_osc_hyperlinks() -> None:
    text = "\x1b[94m\x1b]8;id=x;https://example.com\x1b\\link\x1b]8;;\x1b\\\x1b[39m done\r"
    assert strip_escapes(text) == "link done"


def test_context_pressure_flag_blocks_injection() -> None:
    d = detect_lines(screen("❯ do the thing", "  ⎿  Prompt is too long", "", "✻ Worked for 1s"))
    assert FLAG_CONTEXT_PRESSURE in d.flags
    assert not d.safe_to_inject
    d = detect_lines(screen("⏺ ok", "", "✻ Compacting conversation… (12s)"))
    assert d.state is AgentState.WORKING
    assert FLAG_CONTEXT_PRESSURE in d.flags


def test_old_context_pressure_scrolled_away_is_not_a_flag() -> None:
    body = [
        "⏺ Prompt is too long",
        *[f"  line {i}" for i in range(40)],
        "❯ next",
        "⏺ fine",
        "",
        "✻ Worked for 2s",
    ]
    assert FLAG_CONTEXT_PRESSURE not in detect_lines(screen(*body)).flags


def test_shell_is_unknown() -> None:
    assert detect_lines(["$ ls", "a b c", "$ "]).state is AgentState.UNKNOWN
    # a zsh theme using ❯ as its prompt is not Claude Code
    assert detect_lines(["~/project main", "❯ "]).state is AgentState.UNKNOWN
    assert detect_lines([]).state is AgentState.UNKNOWN


def test_api_error_latest_is_error() -> None:
    d = detect_lines(screen("❯ hi", '  ⎿  API Error: 500 {"type":"error"}'))
    assert d.state is AgentState.ERROR
    assert not d.safe_to_inject


def test_old_error_followed_by_success_is_idle() -> None:
    d = detect_lines(
        screen("❯ hi", "  ⎿  API Error: 500", "❯ again", "⏺ Hello!", "", "✻ Worked for 1s")
    )
    assert d.state is AgentState.IDLE


def test_plan_menu_2_1_197() -> None:
    d = detect_lines(
        [
            RULE,
            " Ready to code?",
            "",
            " Here is Claude's plan:",
            " ╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌",
            "  Plan: write hello.txt",
            " ╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌",
            "",
            " Would you like to proceed?",
            "",
            " ❯ 1. Yes, and use auto mode",
            "   2. Yes, manually approve edits",
            "   3. Tell Claude what to change",
            "",
            " ctrl-g to edit in Vim · ~/.claude/plans/x.md",
        ]
    )
    assert d.state is AgentState.PLAN
    assert d.plan_choice == 1


def test_choose_plan_option_by_label() -> None:
    v158 = [
        MenuOption(1, "Yes, and bypass permissions", True),
        MenuOption(2, "Yes, manually approve edits"),
        MenuOption(3, "No, refine with Ultraplan on Claude Code on the web"),
        MenuOption(4, "Tell Claude what to change"),
    ]
    assert choose_plan_option(v158) == 1
    clears = [
        MenuOption(1, "Yes, clear context and bypass permissions"),
        MenuOption(2, "Yes, and bypass permissions"),
    ]
    assert choose_plan_option(clears) == 2
    legacy = [
        MenuOption(1, "Yes"),
        MenuOption(2, "Yes, and auto-accept edits"),
        MenuOption(3, "Yes, manually approve edits"),
    ]
    assert choose_plan_option(legacy) == 2
    plain = [MenuOption(1, "Yes"), MenuOption(2, "No")]
    assert choose_plan_option(plain) is None
    assert choose_plan_option(plain, fallback=1) == 1
    assert choose_plan_option(plain, fallback=7) is None
    assert choose_plan_option(clears, fallback=1, policy="no-prompts") == 2
    only_clear = [MenuOption(1, "Yes, clear context and auto-accept edits"), MenuOption(2, "Yes")]
    assert choose_plan_option(only_clear, fallback=1) is None
    assert choose_plan_option(v158, policy="off") is None


def test_trust_dialog_and_api_key_dialog() -> None:
    d = detect_lines(
        [
            "Accessing workspace:",
            "",
            " /work/x",
            "",
            " ❯ 1. Yes, I trust this folder",
            "   2. No, exit",
            "",
            " Enter to confirm · Esc to cancel",
        ]
    )
    assert d.state is AgentState.DIALOG
    d = detect_lines(
        [
            " Detected a custom API key in your environment",
            "",
            " Do you want to use this API key?",
            "",
            " ❯ 1. Yes",
            "   2. No (recommended)",
            "",
            " Enter to confirm · Esc to cancel",
        ]
    )
    assert d.state is AgentState.DIALOG


def test_ask_user_question_is_question() -> None:
    d = detect_lines(
        [
            RULE,
            " ☐ Color",
            "",
            "Which color scheme do you prefer?",
            "",
            "❯ 1. Dark",
            "     Easy on the eyes",
            "  2. Light",
            "  3. Type something.",
            "",
            "Enter to select · ↑/↓ to navigate · Esc to cancel",
        ]
    )
    assert d.state is AgentState.QUESTION
    assert [o.label for o in d.options] == ["Dark", "Light", "Type something."]


def test_old_style_box() -> None:
    d = detect_lines(
        [
            "⏺ Hi",
            "╭────────────────╮",
            "│ >              │",
            "╰────────────────╯",
            "  ? for shortcuts",
        ]
    )
    assert d.state is AgentState.IDLE
    assert d.input_text == ""


def test_detection_as_json_shape() -> None:
    d = detect_lines(screen("⏺ ok"))
    data = detection_as_json(d)
    assert data["state"] == "idle"
    assert set(data) >= {"state", "options", "input", "safe_to_inject", "plan_choice"}
    json.dumps(data)


def test_detect_screen_uses_dim_attribute_for_suggestions() -> None:
    from nbs_tui.core.detection.detect import detect_screen
    from nbs_tui.core.screen.pane_screen import PaneScreen

    screen = PaneScreen(60, 8)
    rule = "─" * 60
    screen.feed(
        f"⏺ Done.\r\n{rule}\r\n❯ \x1b[2mExplain the code\x1b[0m\r\n{rule}\r\n  ? for shortcuts".encode()
    )
    d = detect_screen(screen)
    assert d.state is AgentState.IDLE and d.input_text == "" and d.safe_to_inject
    screen = PaneScreen(60, 8)
    screen.feed(f"⏺ Done.\r\n{rule}\r\n❯ fix the docs\r\n{rule}\r\n  ? for shortcuts".encode())
    d = detect_screen(screen)
    assert d.input_text == "fix the docs" and not d.safe_to_inject


def test_faint_hint_with_reverse_video_cursor_is_not_typed() -> None:
    raw = "\n".join(
        [
            "⏺ Done.",
            RULE,
            "\x1b[39m❯\u00a0\x1b[7mR\x1b[0;2m\x1b[39mesend your message",
            RULE,
            "  ? for shortcuts",
        ]
    )
    assert detect_text(raw).input_text == ""
    # a 256-colour index 2 is not the faint attribute
    raw = "\n".join(["⏺ Done.", RULE, "❯ \x1b[38;5;2mtyped\x1b[0m", RULE, "  ? for shortcuts"])
    assert detect_text(raw).input_text == "typed"


def test_unnumbered_startup_dialog_without_footer() -> None:
    d = detect_lines(
        [
            " ▜██████▀   Opus 5.5 · API Usage Billing",
            RULE,
            "  Make auto mode your default permission mode?",
            "",
            "  ❯ Yes, set auto mode as my default permission mode",
            "    No, keep plan mode",
        ]
    )
    assert d.state is AgentState.DIALOG
    assert [o.label for o in d.options] == [
        "Yes, set auto mode as my default permission mode",
        "No, keep plan mode",
    ]
    assert d.options[0].selected


def test_plan_bypass_switch_label_2_1_332() -> None:
    options = [
        MenuOption(
            1, "Yes, and switch to BYPASS PERMISSIONS (no further prompts) for this session", True
        ),
        MenuOption(2, "Yes, manually approve edits"),
        MenuOption(3, "Tell Claude what to change"),
    ]
    assert choose_plan_option(options) == 1


def test_shell_after_claude_exits_is_unknown() -> None:
    lines = [
        "❯ say hello",
        "● Hello.",
        RULE,
        "❯ /exit",
        RULE,
        "/exit                         Exit the CLI",
        "Resume this session with:",
        "claude --resume 431c8f57-dd4e-43c1-942f-551d1476244d",
        "$",
    ]
    assert detect_lines(lines).state is AgentState.UNKNOWN
    assert detect_lines(["user@host:~/work$ "]).state is AgentState.UNKNOWN


@pytest.mark.parametrize(
    "prompt",
    ["$", "$ ls -la", "root@vm:/tmp/work#", "user@host:~/work$ make", "bash-5.2#", "vm%", "user@host ~>", "➜  work git:(main) ✗"],
)
def test_a_shell_prompt_below_the_last_frame_is_no_agent(prompt: str) -> None:
    """Claude Code's last frame (an idle box, an API error above it) then a shell prompt: no
    agent, whatever the shell's prompt looks like, so nothing is typed into the shell."""
    last_frame = screen("❯ hi", "  ⎿  API Error: 529 Overloaded", footer="  Press Ctrl-C again to exit")
    d = detect_lines([*last_frame, prompt])
    assert d.state is AgentState.UNKNOWN, d.reason
    assert not d.safe_to_inject


def test_a_shell_prompt_printed_inside_the_last_box_is_no_agent() -> None:
    """2.1.1xx can leave the cursor in its box as it exits: the shell's prompt lands there."""
    after_exit = detect_lines([*screen("⏺ Hello.", box="/exit$"), "/exit    Exit the REPL"])
    assert after_exit.state is AgentState.UNKNOWN, after_exit.reason
    after_ctrl_c = detect_lines(screen("⏺ Hello.", box="root@vm:~/work#", footer="  Press Ctrl-C again to exit"))
    assert after_ctrl_c.state is AgentState.UNKNOWN, after_ctrl_c.reason
    # the same text typed into a live box is typed text, not an exit
    typed = detect_lines(screen("⏺ Hello.", box="root@vm:~/work#"))
    assert typed.state is AgentState.IDLE and typed.input_text == "root@vm:~/work#"


def test_shell_lines_in_a_live_conversation_are_not_an_exit() -> None:
    """The input box is the tell: prompts and even Claude Code's goodbye quoted in the
    conversation sit above a live box (the real screens: ``idle_shell_lines_in_reply``)."""
    body = (
        "⏺ Here is what the session looked like:",
        "$ npm test",
        "root@build:~/work# make",
        "Resume this session with:",
        "claude --resume 0f8e4c2a-1b3d-4e5f-8a9b-0c1d2e3f4a5b",
        "$",
    )
    d = detect_lines(screen(*body))
    assert d.state is AgentState.IDLE and d.safe_to_inject, d.reason
    # the slash-command menu under a live box starts at column 0 too
    menu = detect_lines([*screen("⏺ Hello.", box="/exit"), "/exit                Exit the REPL"])
    assert menu.state is AgentState.IDLE and menu.input_text == "/exit", menu.reason
    # Ctrl-C pressed once: the live box says how to leave, nothing is below it yet
    once = detect_lines(screen("⏺ Hello.", footer="  Press Ctrl-C again to exit"))
    assert once.state is AgentState.IDLE, once.reason


def test_typed_numbered_text_in_the_box_is_input_not_a_menu() -> None:
    d = detect_lines(screen("⏺ Done.", box="1. fix the tests"))
    assert d.state is AgentState.IDLE
    assert d.input_text == "1. fix the tests"
    assert d.options == ()
    assert not d.safe_to_inject


def test_prose_question_with_numbered_answers_above_idle_box_is_idle() -> None:
    d = detect_lines(
        screen(
            "⏺ I found two ways to do it.",
            "  Do you want to proceed?",
            "  1. Yes, refactor the parser",
            "  2. No, leave it",
        )
    )
    assert d.state is AgentState.IDLE
    assert d.safe_to_inject


def test_row_cache_reads_the_same_as_a_fresh_read() -> None:
    from nbs_tui.core.screen.pane_screen import PaneScreen
    from nbs_tui.core.screen.screen_rows import RowCache, screen_lines_and_faint

    screen = PaneScreen(40, 8)
    cache = RowCache()
    screen.feed(
        f"⏺ hi\r\n✢ Sautéing… (1s)\r\n{'─' * 40}\r\n❯ \x1b[2mghost\x1b[0m\r\n{'─' * 40}".encode()
    )
    assert screen_lines_and_faint(screen, cache) == screen_lines_and_faint(screen)
    screen.feed(
        b"\x1b[2;1H\x1b[2K\xe2\x9c\xa2 Saut\xc3\xa9ing\xe2\x80\xa6 (2s)"
    )  # the spinner row only
    screen.feed(b"\x1b[4;3H\x1b[0Ktyped")  # and the box: ghost replaced by typing
    lines, faint = screen_lines_and_faint(screen, cache)
    assert (lines, faint) == screen_lines_and_faint(screen)
    assert lines[1].endswith("(2s)") and lines[3] == "❯ typed" and faint == []
    screen.feed(b"\r\n\r\n\r\n\r\n\r\nscrolled")  # scrolling moves every row
    assert screen_lines_and_faint(screen, cache) == screen_lines_and_faint(screen)


def test_screens_with_one_screen_key_have_one_detection() -> None:
    """`screen_key` keeps what detection reads: a live ``capture-pane -p`` of the screen a
    mirror shows (an empty row after its last newline, trailing spaces) has the mirror's key
    and detection, so the live re-check reuses the tick's; a changed row is a new key."""
    rule = "─" * 40
    mirror = ["⏺ Done.", "", rule, "❯ ", rule, "  ? for shortcuts", "", ""]
    captured = "\n".join(row + "  " if row else row for row in mirror[:6]) + "\n"
    live = captured.split("\n")
    assert len(live) != len(mirror) and live != mirror
    assert screen_key(live, [3]) == screen_key(mirror, [3])
    assert detect_lines(live, faint_rows=[3]) == detect_lines(mirror, faint_rows=[3])
    typed = [*mirror[:3], "❯ half a thought", *mirror[4:]]
    assert screen_key(typed, [3]) != screen_key(mirror, [3])
    assert screen_key(mirror, [3]) != screen_key(mirror, [])
    assert detect_lines(typed).input_text != detect_lines(mirror).input_text
