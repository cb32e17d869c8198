"""Read a Claude Code screen: state, menu options, typed input, and whether typing now is safe.

Pure and fast: no tmux, no UI. Detection keys on the *structure* of the screen, not on one
version's wording, because Claude Code 2.1.1xx..2.1.3xx reword freely:

* the input box: a ``❯`` (or old ``>``) prompt line, normally between two ``────`` rules, with
  footers below it (``? for shortcuts``, ``⏵⏵ bypass permissions on``, ``esc to interrupt``);
  the prompt stays on screen while the agent works, so a visible prompt alone is not idle;
* a live spinner line: one glyph, a verb ending in an ellipsis, optionally ``(3s · ↓ 6 tokens ·
  esc to interrupt)``, with no newer transcript block (``⏺``/``●`` message, ``❯`` echo,
  ``✻ Worked for 6s`` completion) between it and the input box;
* a numbered option list at the bottom of the screen (``❯ 1. Yes`` marks the selection, not
  an input prompt), classified by the words around it into permission / plan / dialog / question.

Only the bottom of the screen is examined (the last ``TAIL`` non-blank rows), so trailing blank
rows of a tall pane do not push the prompt out of view and old transcript text cannot trigger
a state. Prose that quotes "esc to interrupt" or "Would you like to proceed?" is ignored
because those phrases count only in their structural places (spinner, footer, menu header).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nbs_tui.core.detection.usage_limits import find_limit, is_wait_option, parse_limit_line
from nbs_tui.core.fleet.model import AgentState, Detection, MenuOption, UsageLimit
from nbs_tui.core.screen.screen_rows import (
    CapturedScreen as CapturedScreen,  # until every importer reads screen_rows
)
from nbs_tui.core.screen.screen_rows import capture_lines_and_faint, screen_lines_and_faint

if TYPE_CHECKING:
    from nbs_tui.core.screen.pane_screen import PaneScreen

TAIL = 60
"""How many non-blank rows from the bottom are examined."""

FLAG_CONTEXT_PRESSURE = "context-pressure"
FLAG_PLAN_MODE = "plan-mode"
FLAG_BYPASS = "bypass-permissions"
FLAG_ACCEPT_EDITS = "accept-edits"
FLAG_AUTO_MODE = "auto-mode"
FLAG_GHOST_INPUT = "suggestion"
"""The input box shows Claude Code's greyed suggestion, which typing replaces."""
FLAG_UNNUMBERED = "unnumbered-menu"
FLAG_EXITED = "exited"
"""Claude Code has exited to its shell: what is on screen is its last frame and the shell's prompt."""
"""The menu's options carry no digits (``❯ No, exit``): a digit key does not choose one."""

# --- line shapes ------------------------------------------------------------------------------

_SPIN_GLYPHS = "·✢✳✶✻✽✺✹✷✸✦✧*⏺●•"
_SPINNER = re.compile(
    rf"^\s{{0,3}}([{_SPIN_GLYPHS}])\s+(?P<verb>[^\s…(][^…]{{0,100}}?)(?:…|\.\.\.)\s*(?:\((?P<paren>[^)]*)\)?)?\s*$"
)
_SPINNER_INTERRUPT = re.compile(
    rf"^\s{{0,3}}[{_SPIN_GLYPHS}]\s.*\((?:[^)]*\b)?(?:esc|ctrl\+c) to interrupt"
)
_SPINNER_SPECIAL = re.compile(
    rf"^\s{{0,3}}[{_SPIN_GLYPHS}]\s+(?:Waiting for \d+ background|.*\bRetrying in \d+|Compacting conversation)"
)
_PAREN_STATS = re.compile(r"\d+\s*[smh]\b|tokens|interrupt|thought|thinking")
_COMPLETION = re.compile(rf"^\s{{0,3}}[{_SPIN_GLYPHS}]\s+\S+(?: \S+)? for \d+(?:\.\d+)?[smh]\b")
_RULE = re.compile(r"^\s*[─━═]{3,}[─━═\s]*$")
_BOX_EDGE = re.compile(r"^\s*[╭╰][─━]")
_NAMED_RULE = re.compile(r"^\s*[─━]{3,} \S[^─━]{0,60} [─━]+\s*$")
"""The box's top rule with the session's name in it (``──── alpha ─``: Claude Code 2.1.332
started with ``--name``); a box's text then spans rows like any other's."""
_PROMPT = re.compile(r"^\s*(?:│\s*)?(❯|>|›)(?:[ \u00a0](?P<text>.*))?$")
_OPTION = re.compile(
    r"^(?P<indent>\s*)(?P<mark>[❯>›▶►]\s*)?(?P<num>\d{1,2})[.)]\s+(?P<label>\S.*?)\s*$"
)
_BLOCK_START = re.compile(r"^(?:[⏺●]\s|[❯>]\s\S)")
_MENU_FOOTER = re.compile(
    r"Enter to (?:select|confirm|continue|submit)|Esc to (?:cancel|exit|go back)|↑/↓ to (?:navigate|select)|Tab to amend",
    re.IGNORECASE,
)
_FOOTER_MARKERS = re.compile(
    r"\? for shortcuts|shift\+tab to cycle|for agents|bypass permissions on|plan mode on|manual mode on|"
    r"accept edits on|auto mode on|esc to interrupt|ctrl\+c to interrupt|auto-compact|/effort|Context:",
    re.IGNORECASE,
)
_FOOTER_BUSY = re.compile(r"\b(?:esc|ctrl\+c) to interrupt\b", re.IGNORECASE)
_SHELL_PROMPT = re.compile(
    r"^(?:(?:\S*@\S+?(?:\s[~/]\S*)?|[~/]\S*|[\w.+-]{1,32})\s?[$#%>]|[$#%])(?:\s.*)?$"
    r"|^➜\s"
)
"""A shell's prompt: ``user@host:~/x$``, ``user@host ~>``, ``/tmp#``, ``bash-5.2#``, ``$``, oh-my-zsh's
``➜``; a command being typed, or what is left of the frame it was printed over, may follow."""
_RESUME_LINE = re.compile(
    r"^claude (?:--resume|-r) [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"
)
"""What Claude Code prints as it leaves a session (under "Resume this session with:")."""
_EXIT_HINT = re.compile(r"Press Ctrl-[CD] again to exit", re.IGNORECASE)
_EXIT_COMMAND = re.compile(r"^/(?:exit|quit)(?=\S)")
_PLACEHOLDER = re.compile(
    r'^Try "[^"]*"$|^Resend your message to try again$|^Once fixed, resend your message$'
)

_ERROR = re.compile(
    r"API Error\b|\busage limit reached|\bhit your (?:\w+ )?limit\b|Please run /login|Invalid API key|"
    r"OAuth token (?:has )?expired|Credit balance is too low|authentication_error|Login failed|"
    r"Failed to authenticate|is currently unavailable|Unable to connect to (?:Anthropic|the API)|"
    r"socket connection closed|Request timed out|Overloaded",
    re.IGNORECASE,
)
_CONTEXT_PRESSURE = re.compile(
    r"Compacting conversation|Prompt is too long|Conversation too long", re.IGNORECASE
)

_DIALOG = re.compile(
    r"trust this folder|Accessing workspace|Quick safety check|Bypass Permissions mode|"
    r"custom API key|use this API key|login method|Select login|Log in with|Welcome to Claude Code|"
    r"Choose the text style|terminal setup|Yes, I accept|No, exit|default permission mode",
    re.IGNORECASE,
)
_PLAN_HEADER = re.compile(
    r"Would you like to proceed|Exit plan mode|ready to execute|Ready to code", re.IGNORECASE
)
_PLAN_WORDS = re.compile(
    r"\bplan\b|approve edits|bypass permissions|auto mode|accept edits|keep planning|Tell Claude what to change",
    re.IGNORECASE,
)
_PERMISSION = re.compile(
    r"^\s*Do you want to\b|\bwants to\b|Bash command|Tab to amend|don't ask again|always allow|"
    r"allow all edits|^\s*(?:❯\s*)?\d\.\s+(?:Allow|Deny)\b",
    re.IGNORECASE | re.MULTILINE,
)


def _is_rule(line: str) -> bool:
    return bool(_RULE.match(line))


def _is_spinner(line: str) -> bool:
    m = _SPINNER.match(line)
    if m:
        glyph = m.group(1)
        if glyph in "⏺●•*":
            paren = m.group("paren")
            return bool(paren and _PAREN_STATS.search(paren))
        return True
    return bool(_SPINNER_INTERRUPT.match(line) or _SPINNER_SPECIAL.match(line))


def _is_block_start(line: str) -> bool:
    """A newer transcript block: message, user echo, completion line or another status line."""
    if _BLOCK_START.match(line):
        return not _OPTION.match(line)
    return bool(_COMPLETION.match(line))


# --- plan choice ------------------------------------------------------------------------------

_CLEARS_CONTEXT = re.compile(
    r"clear(?:s|ing)? (?:the )?(?:context|conversation)|fresh context|new session", re.I
)
_PLAN_PREFERENCE = (
    re.compile(r"bypass permissions", re.IGNORECASE),
    re.compile(r"auto mode", re.IGNORECASE),
    re.compile(r"(?<!manually )(?:auto[- ])?accept(?:ing)? edits", re.IGNORECASE),
)


def choose_plan_option(
    options: Sequence[MenuOption], policy: str = "no-prompts", fallback: int | None = None
) -> int | None:
    """The plan-menu option to press under ``policy``, by label, never one that clears context.

    ``no-prompts`` prefers the option that proceeds without further prompts: bypass permissions,
    then auto mode, then (auto-)accept edits. When no label matches, ``fallback`` is used if it
    names an offered option that does not clear the context; otherwise None (leave the menu).
    """
    if policy != "no-prompts" or not options:
        return None
    usable = [o for o in options if not _CLEARS_CONTEXT.search(o.label)]
    for pattern in _PLAN_PREFERENCE:
        for option in usable:
            if pattern.search(option.label):
                return option.number
    if fallback is not None and any(o.number == fallback for o in usable):
        return fallback
    return None


# --- menus ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Menu:
    options: tuple[MenuOption, ...]
    first_row: int
    last_row: int
    context: str
    prompt: str = ""
    """The rows above the options, as shown (blank rows at either end dropped)."""


def _numbered_menu(rows: Sequence[tuple[int, str]], box_prompt: int | None) -> _Menu | None:
    """The bottom-most run of options 1., 2., ... that reads as an open menu."""
    # walk upward collecting option lines; description lines between options are allowed
    best: list[tuple[int, int, MenuOption]] = []  # (pos in rows, number, option)
    pos = len(rows) - 1
    while pos >= 0:
        idx, line = rows[pos]
        m = _OPTION.match(line)
        if m and (box_prompt is None or idx != box_prompt):
            # gather this run upward
            run: list[tuple[int, int, MenuOption]] = []
            p = pos
            expected: int | None = None
            gap = 0
            while p >= 0:
                _, l2 = rows[p]
                m2 = _OPTION.match(l2)
                if m2:
                    number = int(m2.group("num"))
                    if expected is not None and number != expected:
                        break
                    run.append(
                        (p, number, MenuOption(number, m2.group("label"), bool(m2.group("mark"))))
                    )
                    expected = number - 1
                    gap = 0
                    if number == 1:
                        break
                else:
                    gap += 1
                    if gap > 3:
                        break
                p -= 1
            run.reverse()
            if len(run) >= 2 and run[0][1] == 1:
                best = run
                break
            pos = (run[-1][0] - 1) if run and len(run) < 2 else pos - 1
            continue
        pos -= 1
    if not best:
        return None
    first_pos, last_pos = best[0][0], best[-1][0]
    options = tuple(o for _, _, o in best)
    context_lines: list[str] = []
    p = first_pos - 1
    while p >= 0 and len(context_lines) < 40:
        line = rows[p][1]
        if _is_rule(line) or _BOX_EDGE.match(line) or _is_block_start(line):
            break
        context_lines.append(line)
        p -= 1
    context_lines.reverse()
    after = [line for _, line in rows[last_pos + 1 :]]
    context = "\n".join(context_lines + [o.label for o in options] + after[:6])
    prompt = "\n".join(line.rstrip() for line in context_lines).strip("\n")
    return _Menu(options, rows[first_pos][0], rows[last_pos][0], context, prompt)


def _unnumbered_menu(rows: Sequence[tuple[int, str]], box: _Box | None) -> _Menu | None:
    """A ``❯ No, exit`` / ``Yes, I accept`` choice: a marked line with aligned siblings, above
    an "Enter to confirm" footer, or (without a footer) indented, with no input box below."""
    footer_pos = None
    for p in range(len(rows) - 1, max(-1, len(rows) - 6), -1):
        if re.search(r"Enter to (?:confirm|select)", rows[p][1], re.IGNORECASE):
            footer_pos = p
            break
    end = footer_pos if footer_pos is not None else len(rows)
    for p in range(end - 1, max(-1, end - 12), -1):
        line = rows[p][1]
        m = re.match(r"^(\s*)[❯>›]\s+(\S.*?)\s*$", line)
        if not m or _OPTION.match(line):
            continue
        if footer_pos is None and (not m.group(1) or box is not None):
            return None
        text_col = line.index(m.group(2))

        def sibling(row: str, col: int = text_col) -> bool:
            return row[:col].strip() == "" and bool(row[col:].strip()) and not row[col].isspace()

        above: list[tuple[int, str, bool]] = []
        q = p - 1
        while q >= 0 and len(above) < 8 and sibling(rows[q][1]):
            above.append((q, rows[q][1].strip(), False))
            q -= 1
        labels = [*reversed(above), (p, m.group(2), True)]
        q = p + 1
        while q < end and len(labels) < 10 and sibling(rows[q][1]):
            labels.append((q, rows[q][1].strip(), False))
            q += 1
        if len(labels) < 2:
            return None
        options = tuple(MenuOption(i + 1, label, sel) for i, (_, label, sel) in enumerate(labels))
        context_lines = [row for _, row in rows[max(0, labels[0][0] - 15) : labels[0][0]]]
        context = "\n".join([*context_lines, *(o.label for o in options)])
        prompt = "\n".join(line.rstrip() for line in context_lines).strip("\n")
        return _Menu(options, rows[labels[0][0]][0], rows[labels[-1][0]][0], context, prompt)
    return None


def _classify_menu(menu: _Menu) -> AgentState:
    text = menu.context
    if _DIALOG.search(text):
        return AgentState.DIALOG
    if _PLAN_HEADER.search(text) and (
        _PLAN_WORDS.search(text) or re.search("plan mode", text, re.I)
    ):
        return AgentState.PLAN
    if _PERMISSION.search(text):
        return AgentState.PERMISSION
    return AgentState.QUESTION


def _limit_turn(
    rows: Sequence[tuple[int, str]], end: int, *, menu: bool = False
) -> list[str] | None:
    """The rows of a usage limit that ended the current turn: back from ``end`` to the last user
    prompt echo, up to the last limit line, when no newer message follows it. A completion line
    (``✻ Baked for 0s``) may follow it; an answer (``● ...``) means the agent went on."""
    turn: list[str] = []
    for p in range(end - 1, max(-1, end - 30), -1):
        line = rows[p][1]
        if re.match(r"^[❯>]\s\S", line) and not _OPTION.match(line):
            if "/rate-limit-options" in line:
                continue  # 2.1.1xx echoes the command that opens its limit menu
            break
        turn.append(line)
    turn.reverse()
    last = max((i for i, line in enumerate(turn) if parse_limit_line(line)), default=None)
    if last is None:
        return None
    if not menu and any(_BLOCK_START.match(line) or _is_spinner(line) for line in turn[last + 1 :]):
        return None
    return turn[: last + 1]


# --- the detector -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Box:
    prompt_row: int
    bottom_row: int
    """Last row of the box (its bottom rule, or the prompt's last line when there is none)."""
    input_text: str
    ruled: bool


def _find_box(
    rows: Sequence[tuple[int, str]], faint_rows: Collection[int]
) -> tuple[_Box | None, bool]:
    """The input box: the bottom-most prompt line followed only by box, footer and panel rows.

    Returns (box, ghost) where ghost says the input text is Claude Code's faint suggestion.
    """
    for p in range(len(rows) - 1, -1, -1):
        idx, line = rows[p]
        m = _PROMPT.match(line)
        if not m:
            continue
        if _OPTION.match(line) and not (
            0 < p < len(rows) - 1 and _is_rule(rows[p - 1][1]) and _is_rule(rows[p + 1][1])
        ):
            continue  # "❯ 1. Yes" is a menu's selection, unless it sits in the ruled box
        above = rows[p - 1][1] if p > 0 else ""
        ruled_above = p > 0 and (
            _is_rule(above) or _BOX_EDGE.match(above) is not None or _NAMED_RULE.match(above) is not None
        )
        text_lines = [(m.group("text") or "").rstrip().rstrip("│").rstrip()]
        q = p + 1
        ruled_below = False
        while q < len(rows):
            nxt = rows[q][1]
            if _is_rule(nxt) or nxt.lstrip().startswith("╰"):
                ruled_below = True
                break
            if not ruled_above or q - p > 20:
                break
            text_lines.append(nxt.strip().strip("│").strip())
            q += 1
        if not ruled_below:
            text_lines = text_lines[:1]
        # everything below must be chrome: rules, footers, indented panels; never a new block
        tail_start = q + 1 if ruled_below else p + 1
        if any(
            _is_block_start(rows[r][1]) or _is_spinner(rows[r][1])
            for r in range(tail_start, len(rows))
        ):
            if ruled_above and ruled_below:
                pass  # a real box; odd rows below it (task panels) do not unseat it
            else:
                continue
        text = "\n".join(t for t in text_lines).strip()
        ghost = False
        if text and (idx in faint_rows or _PLACEHOLDER.match(text)):
            ghost = True
            text = ""
        bottom = rows[q][0] if ruled_below and q < len(rows) else idx
        return _Box(idx, bottom, text, ruled_above and ruled_below), ghost
    return None, False


def _exited(rows: Sequence[tuple[int, str]], box: _Box | None, footer_text: str) -> str | None:
    """Why the screen is a shell's under the residue of Claude Code's last frame, or None.

    Inline versions (2.1.1xx) leave their last frame on screen when they exit, input box
    included, and the shell prints below it, or inside the box where they left the cursor.
    A live Claude Code always draws its input box (or a menu) last, with only its indented
    footer below: shell-looking lines in its conversation sit above the box and never count.
    """
    # its goodbye ("claude --resume <session>") with no later frame (rules) below it
    for _, line in reversed(rows):
        if _RESUME_LINE.match(line):
            return "Claude Code exited: its resume line is below its last frame"
        if _is_rule(line) or _BOX_EDGE.match(line):
            break
    # a shell prompt as the last row, below the input box
    last_row, last = rows[-1]
    if (
        (box is None or last_row > box.bottom_row)
        and not last.startswith(" ")
        and _SHELL_PROMPT.match(last)
        and not _OPTION.match(last)
    ):
        return "shell prompt below Claude Code's last frame"
    # the prompt printed inside the box, where the exiting version left its cursor: after the
    # /exit it ran, or under its "Press Ctrl-C again to exit"
    if box is not None and box.input_text:
        command = _EXIT_COMMAND.match(box.input_text)
        if command or _EXIT_HINT.search(footer_text):
            rest = box.input_text[command.end() :] if command else box.input_text
            if _SHELL_PROMPT.match(rest):
                return "shell prompt inside Claude Code's last input box"
    return None


ScreenKey = tuple[tuple[str, ...], tuple[int, ...]]


def screen_key(lines: Sequence[str], faint_rows: Collection[int] = ()) -> ScreenKey:
    """What `detect_lines` reads of a screen: its rows right-stripped, without the blank rows
    at the bottom (it reads only the non-blank rows, by index, right-stripped), and the faint
    rows. Two screens with one key have one detection: a live ``capture-pane -p`` (one more
    empty row after its last newline) of the screen a pane's mirror shows is detected once."""
    rows = [line.rstrip() for line in lines]
    while rows and not rows[-1]:
        rows.pop()
    return tuple(rows), tuple(sorted(faint_rows))


def detect_lines(lines: Sequence[str], *, faint_rows: Collection[int] = ()) -> Detection:
    """Detect the agent state from plain-text screen rows (no escape sequences).

    ``faint_rows`` are row indices whose text after ``❯`` is drawn faint (Claude Code's greyed
    suggestion); callers with attributes (``detect_text`` on ``capture-pane -e`` output, or a
    pyte screen) pass them so a suggestion is not mistaken for typed input.
    """
    rows: list[tuple[int, str]] = []
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i]
        if line and not line.isspace():
            rows.append((i, line.replace("\u00a0", " ").rstrip()))
            if len(rows) >= TAIL:
                break
    rows.reverse()
    if not rows:
        return Detection(AgentState.UNKNOWN, reason="blank screen")

    box, ghost = _find_box(rows, faint_rows)
    box_pos = next((p for p, (i, _) in enumerate(rows) if box and i == box.prompt_row), None)
    footer_text = ""
    if box is not None:
        footer_text = "\n".join(line for i, line in rows if i > box.bottom_row)
    else:
        footer_text = "\n".join(line for _, line in rows[-3:])

    flags: set[str] = set()
    if re.search(r"plan mode on", footer_text, re.I):
        flags.add(FLAG_PLAN_MODE)
    if re.search(r"bypass permissions on", footer_text, re.I):
        flags.add(FLAG_BYPASS)
    if re.search(r"accept edits on", footer_text, re.I):
        flags.add(FLAG_ACCEPT_EDITS)
    if re.search(r"auto mode on", footer_text, re.I):
        flags.add(FLAG_AUTO_MODE)
    if ghost:
        flags.add(FLAG_GHOST_INPUT)

    # the current turn: rows after the last user echo or message block above the box
    limit = box_pos if box_pos is not None else len(rows)
    turn_start = 0
    for p in range(limit - 1, -1, -1):
        if _BLOCK_START.match(rows[p][1]) and not _OPTION.match(rows[p][1]):
            turn_start = p
            break
    recent = [line for _, line in rows[max(turn_start, limit - 25) : limit]]
    if any(_CONTEXT_PRESSURE.search(line) for line in recent) or _CONTEXT_PRESSURE.search(
        footer_text
    ):
        flags.add(FLAG_CONTEXT_PRESSURE)
    frozen_flags = frozenset(flags)
    input_text = box.input_text if box is not None else None

    # 0. Claude Code has exited: its last frame, then the shell (nothing may be typed there)
    exited = _exited(rows, box, footer_text)
    if exited:
        return Detection(AgentState.UNKNOWN, reason=exited, flags=frozen_flags | {FLAG_EXITED})

    # 1. an open menu at the bottom
    menu = _numbered_menu(rows, box.prompt_row if box is not None else None)
    if menu is not None:
        newer_box = box is not None and box.prompt_row > menu.last_row
        between = [
            line
            for i, line in rows
            if menu.last_row < i < (box.prompt_row if box and newer_box else 10**9)
        ]
        stale = any(_is_block_start(line) or _is_spinner(line) for line in between)
        marked = any(o.selected for o in menu.options)
        footer = any(_MENU_FOOTER.search(line) for line in between) or bool(
            _MENU_FOOTER.search(menu.context)
        )
        headed = bool(
            re.search(r"\?\s*$", menu.context.split("\n" + menu.options[0].label)[0].strip()[-200:])
        )
        if not stale and (marked or footer or headed or not newer_box):
            state = _classify_menu(menu)
            menu_limit = None
            if state in (AgentState.QUESTION, AgentState.DIALOG) or any(
                is_wait_option(o.label) for o in menu.options
            ):
                first = next(p for p, (i, _) in enumerate(rows) if i == menu.first_row)
                menu_limit = find_limit(_limit_turn(rows, first, menu=True) or [])
                if menu_limit is None and any(is_wait_option(o.label) for o in menu.options):
                    menu_limit = UsageLimit("usage", "usage limit menu")
            if menu_limit is not None and not (newer_box and not (marked or footer)):
                return Detection(
                    AgentState.LIMITED,
                    options=menu.options,
                    reason=f"usage limit menu with {len(menu.options)} options: {menu_limit.text[:60]}",
                    flags=frozen_flags,
                    limit=menu_limit,
                    prompt=menu.prompt,
                )
            if newer_box and not (marked or footer):
                menu = None  # a numbered list in prose above an idle box, however it is worded
            else:
                plan_choice = choose_plan_option(menu.options) if state is AgentState.PLAN else None
                return Detection(
                    state,
                    options=menu.options,
                    input_text=None,
                    safe_to_inject=False,
                    plan_choice=plan_choice,
                    reason=f"{state.value} menu with {len(menu.options)} options",
                    flags=frozen_flags,
                    prompt=menu.prompt,
                )
    unnumbered = _unnumbered_menu(rows, box if box is not None and box.ruled else None)
    if unnumbered is not None:
        state = _classify_menu(unnumbered)
        if state is AgentState.QUESTION:
            state = AgentState.DIALOG  # unnumbered choices are Claude Code's own dialogs
        return Detection(
            state,
            options=unnumbered.options,
            reason=f"{state.value} choice of {len(unnumbered.options)}",
            flags=frozen_flags | {FLAG_UNNUMBERED},
            prompt=unnumbered.prompt,
        )

    # 2. a live spinner, or the busy footer
    for p in range(len(rows) - 1, -1, -1):
        idx, line = rows[p]
        if box is not None and box.prompt_row <= idx <= box.bottom_row:
            continue
        if _is_spinner(line):
            later = [
                row_line
                for row_idx, row_line in rows[p + 1 :]
                if box is None or not (box.prompt_row <= row_idx)
            ]
            if not any(_is_block_start(row_line) for row_line in later):
                return Detection(
                    AgentState.WORKING,
                    input_text=input_text,
                    reason=f"spinner: {line.strip()[:60]}",
                    flags=frozen_flags,
                )
            break
        if _is_block_start(line) and (box is None or idx < box.prompt_row):
            break
    if box is not None and _FOOTER_BUSY.search(footer_text):
        return Detection(
            AgentState.WORKING,
            input_text=input_text,
            reason="footer says esc to interrupt",
            flags=frozen_flags,
        )

    # 3. a usage limit that ended the turn (the box may be free: the agent waits for the reset)
    limit_end = box_pos if box_pos is not None else len(rows)
    footer_lines = [line for i, line in rows if box is not None and i > box.bottom_row]
    turn = _limit_turn(rows, limit_end)
    usage = find_limit(turn or [], footer_lines)
    if usage is not None and (turn is not None or usage.auto_resume):
        return Detection(
            AgentState.LIMITED,
            input_text=input_text,
            reason=f"usage limit: {usage.text[:80]}",
            flags=frozen_flags,
            limit=usage,
        )

    # 4. an error as the latest thing on screen
    for line in recent:
        if _ERROR.search(line) and not _is_spinner(line):
            return Detection(
                AgentState.ERROR,
                input_text=input_text,
                reason=f"error: {line.strip()[:80]}",
                flags=frozen_flags,
            )
    if box is None:
        for _, line in rows[-4:]:
            if _ERROR.search(line):
                return Detection(
                    AgentState.ERROR, reason=f"error: {line.strip()[:80]}", flags=frozen_flags
                )

    # 5. the input box with nothing going on
    if box is not None:
        evidence = (
            box.ruled
            or bool(_FOOTER_MARKERS.search(footer_text))
            or any(
                _COMPLETION.match(line) or line.startswith(("⏺", "●", "⎿", "  ⎿"))
                for _, line in rows
            )
        )
        if evidence:
            safe = input_text == "" and FLAG_CONTEXT_PRESSURE not in frozen_flags
            return Detection(
                AgentState.IDLE,
                input_text=input_text,
                safe_to_inject=safe,
                reason="input box, nothing running" + (" (text typed)" if input_text else ""),
                flags=frozen_flags,
            )
    if any(
        line.startswith(("⏺", "●")) or line.lstrip().startswith("⎿") or _COMPLETION.match(line)
        for _, line in rows[-12:]
    ):
        # Claude Code's transcript without its input box in view (cropped or scrolled): idle,
        # but nothing may be typed since the box cannot be checked
        return Detection(AgentState.IDLE, reason="transcript without input box", flags=frozen_flags)
    return Detection(
        AgentState.UNKNOWN,
        input_text=input_text,
        reason="no Claude Code input box, menu or spinner",
        flags=frozen_flags,
    )


def detect_text(text: str) -> Detection:
    """Detect from a captured screen: plain text or ``tmux capture-pane -e`` output."""
    lines, faint = capture_lines_and_faint(text)
    return detect_lines(lines, faint_rows=faint)


def detect_screen(screen: PaneScreen) -> Detection:
    """Detect from a live pane mirror, using its attributes to tell a suggestion from typing."""
    lines, faint = screen_lines_and_faint(screen)
    return detect_lines(lines, faint_rows=faint)


def detection_as_json(detection: Detection) -> dict[str, Any]:
    """The JSON object ``nbs-tui detect`` prints and headless events embed."""
    return {
        "state": detection.state.value,
        "options": [
            {"number": o.number, "label": o.label, "selected": o.selected}
            for o in detection.options
        ],
        "input": detection.input_text,
        "safe_to_inject": detection.safe_to_inject,
        "plan_choice": detection.plan_choice,
        "flags": sorted(detection.flags),
        "reason": detection.reason,
        **({"limit": _limit_json(detection.limit)} if detection.limit is not None else {}),
    }


def _limit_json(limit: UsageLimit) -> dict[str, Any]:
    """The usage limit as headless ``state`` events carry it (the reset as the screen wrote it)."""
    return {
        "kind": limit.kind,
        "resets": limit.resets,
        "tz": limit.tz,
        "auto_resume": limit.auto_resume,
        "text": limit.text,
    }
