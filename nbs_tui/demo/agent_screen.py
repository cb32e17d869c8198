"""How the agent draws itself: the transcript it appends to (message blocks, tool calls and
results, the user's prompts, the welcome header), its wrapping into physical rows, the bottom
area (spinner, queued prompts, input box, footer, menus), the window title, and ``render``,
which paints one frame through ``Terminal``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nbs_tui.demo.agent_state import AgentState
from nbs_tui.demo.demo_terminal import Row, Seg, paint_row, text_width, wrap_row
from nbs_tui.demo.palette import (
    ACCEPT_PURPLE,
    BOLD,
    CLAUDE,
    CLAUDE_LIGHT,
    CLAUDE_TRUE,
    CODE_BLUE,
    DIM,
    ERROR_YELLOW,
    FULL_RULE,
    GREEN,
    GREY,
    ITALIC,
    NBSP,
    PLAN_TEAL,
    RED,
    RULE,
    SPINNER_GLYPHS,
    SPINNER_INTERVAL,
    SUGGEST,
    TITLE_GLYPHS,
    USER_BG,
    VERSION_LABEL,
    WHITE,
    format_duration,
    format_tokens,
)
from nbs_tui.demo.steps import Menu, Mode


class AgentScreen(AgentState):
    """Transcript and drawing; the turn scripts write through ``say``/``tool``/``result``."""

    # -- transcript ---------------------------------------------------------------------------

    def add(self, segs: list[Seg], indent: int = 2, wrap: bool = True, fill: str | None = None) -> Row:
        row = Row(segs, indent, wrap, fill)
        self.rows.append(row)
        self.dirty = True
        if len(self.rows) > 3000:
            self._trim()
        return row

    def _trim(self) -> None:
        width = self._phys_width
        drop = len(self.rows) - 2000
        if width and self._wrapped_upto >= drop:
            dropped_phys = sum(len(wrap_row(r, width)) for r in self.rows[:drop])
            del self._phys[:dropped_phys]
            self._phys_base += dropped_phys
            self._wrapped_upto -= drop
        else:
            self._phys_width = 0
            self.term.invalidate()
        del self.rows[:drop]

    def drop_row(self, row: Row) -> None:
        """Remove a placeholder row (``⎿  Waiting…``) from the transcript; rewraps on next paint."""
        for index in range(len(self.rows) - 1, -1, -1):
            if self.rows[index] is row:
                del self.rows[index]
                self._phys_width = 0
                self.term.invalidate()
                self.dirty = True
                return

    def blank(self) -> None:
        self.add([("", "")])

    def say(self, text: str | list[Seg], bullet: str = "") -> None:
        """A ``● `` message block; ``text`` may hold several paragraphs separated by newlines."""
        self.blank()
        self.last_message = text if isinstance(text, str) else "".join(t for t, _ in text)
        self.side.assistant_text(self.last_message)
        if isinstance(text, str):
            paragraphs = text.split("\n")
            first = inline_code(paragraphs[0])
            self.add([("● ", bullet or WHITE), *first])
            for para in paragraphs[1:]:
                self.add([("  ", ""), *inline_code(para)] if para else [("", "")])
        else:
            self.add([("● ", bullet or WHITE), *text])

    def tool(self, name: str, arg: str, ok: bool = True, pending: bool = False) -> None:
        self._post_tool()
        tool_input: dict[str, Any] = {"command": arg} if name == "Bash" else {"file_path": arg}
        self.pending_tool = (name, tool_input, self.side.tool_use(name, tool_input))
        self.side.hook("PreToolUse", tool_name=name, tool_input=tool_input)
        self.blank()
        self.add([("● ", GREY if pending else GREEN if ok else RED), (name, BOLD), (f"({arg})", "")], indent=2)

    def _post_tool(self, output: str = "") -> None:
        if self.pending_tool is not None:
            name, tool_input, ident = self.pending_tool
            self.pending_tool = None
            self.side.tool_result(ident, output)
            self.side.hook("PostToolUse", tool_name=name, tool_input=tool_input, tool_response={"stdout": output})

    def result(self, lines: Iterable[str | list[Seg]], style: str = GREY) -> None:
        lines = list(lines)
        self._post_tool("\n".join(x if isinstance(x, str) else "".join(t for t, _ in x) for x in lines))
        for index, line in enumerate(lines):
            lead = "  ⎿  " if index == 0 else "     "
            segs = [(line, style)] if isinstance(line, str) else line
            self.add([(lead, GREY), *segs], indent=5)

    def user(self, text: str) -> None:
        self.side.hook("UserPromptSubmit", prompt=text)
        self.side.user_prompt(text)
        self.blank()
        self.add([("❯ ", "38;5;239;" + USER_BG), (text, WHITE + ";" + USER_BG)], indent=2)

    def welcome(self) -> None:
        home = str(Path.home())
        where = str(self.opt.project)
        if where.startswith(home + "/"):
            where = "~" + where[len(home):]
        logo = (
            [(" ▐", CLAUDE), ("▛███▜", CLAUDE + ";48;5;16"), ("▌", CLAUDE)],
            [("▝▜", CLAUDE), ("█████", CLAUDE + ";48;5;16"), ("▛▘", CLAUDE)],
            [("  ▘▘ ▝▝  ", CLAUDE)],
        )
        texts: list[list[Seg]] = [
            [("   ", ""), ("Claude Code", BOLD), (" ", ""), (VERSION_LABEL, GREY)],
            [("  ", ""), (self.opt.model, GREY)],
            [("  ", ""), (where, GREY)],
        ]
        for left, right in zip(logo, texts, strict=True):
            self.add(left + right, wrap=False)
        self.blank()
        self.add([(" ", ""), ("▎", DIM + ";" + CLAUDE), (" ", ""), ("Welcome to the nbs-tui demo fleet", BOLD)], wrap=False)
        self.add(
            [(" ", ""), ("▎", DIM + ";" + CLAUDE), (" ", ""), ("This is an imitation agent named ", GREY), (self.opt.name, CLAUDE_LIGHT + ";" + BOLD),
             (" · type a prompt, or ", GREY), ("/nbs-poll", WHITE), (" · ", GREY), ("/help", ITALIC + ";" + GREY)],
            indent=3,
        )

    # -- physical rows --------------------------------------------------------------------------

    def physical(self, width: int) -> list[Row]:
        if width != self._phys_width:
            self._phys_width = width
            self._phys = []
            self._wrapped_upto = 0
        for row in self.rows[self._wrapped_upto:]:
            self._phys.extend(wrap_row(row, width))
        self._wrapped_upto = len(self.rows)
        return self._phys

    # -- the bottom area ------------------------------------------------------------------------

    def bottom(self, width: int, now: float) -> list[Row]:
        rows: list[Row] = []
        if self.mode is Mode.MENU and self.menu is not None:
            return self.menu_rows(self.menu, width)
        if self.mode is Mode.WORKING:
            rows.append(Row([("", "")]))
            if self.retry is not None:
                attempt, until = self.retry
                left = max(1, int(until - now + 0.999))
                rows.append(Row([("✻", CLAUDE), (" ", ""),
                                 (f"API error · Retrying in {left}s · attempt {attempt}/10", GREY)], wrap=False))
            else:
                rows.append(Row(self.spinner_segs(now), wrap=False))
            if self.tip and self.retry is None:
                rows.append(Row([("  ⎿  ", GREY), (self.tip, GREY)], wrap=False))
        for text in self.queued:
            rows.append(Row([("  ❯ ", GREY), (text, GREY)], wrap=False))
        rows.append(Row([("", "")]))
        rows.append(Row([("─" * width, RULE)], wrap=False))
        rows.extend(self.input_rows(width))
        rows.append(Row([("─" * width, RULE)], wrap=False))
        rows.append(Row(self.footer_segs(width), wrap=False))
        return rows

    def input_rows(self, width: int) -> list[Row]:
        if not self.input and self.show_placeholder:
            return [Row([("❯" + NBSP, ""), ("Try \"refactor fetch.py to retry on 429\"", DIM)], wrap=False)]
        text = self.input
        before, after = text[: self.cursor], text[self.cursor:]
        under = after[:1] or " "
        prompt = GREY if self.mode is Mode.WORKING else ""
        segs: list[Seg] = [("❯" + NBSP, prompt), (before, ""), (under, "7"), (after[1:], "")]
        rows = wrap_row(Row(segs, indent=2), width)
        return rows[-6:]

    def footer_segs(self, width: int) -> list[Seg]:
        """``? for shortcuts · ← for agents`` (or the mode, or ``esc to interrupt``) on the left,
        ``● high · /effort`` on the right; the left hint goes while text is typed, as in 2.1.197."""
        left: list[Seg] = [("  ", "")]
        if self.notice:
            left.append((self.notice, GREY))
        else:
            mode = self.MODES[self.perm_mode]
            hints: list[str] = []
            if mode:
                left.append((mode, PLAN_TEAL if self.perm_mode == 2 else ACCEPT_PURPLE if self.perm_mode == 1 else
                             ERROR_YELLOW))
                left.append((" (shift+tab to cycle)", GREY))
            if not self.input:
                if self.mode is Mode.WORKING:
                    hints.append("esc to interrupt")
                elif not mode:
                    hints.append("? for shortcuts")
                hints.append("← for agents")
            if hints:
                left.append(((" · " if mode else "") + " · ".join(hints), GREY))
        right: list[Seg] = [("● high · /effort", GREY)]
        used = sum(text_width(t) for t, _ in left)
        room = width - 2 - used - text_width(right[0][0])
        return [*left, (" " * room, ""), *right] if room >= 2 else left

    def spinner_segs(self, now: float) -> list[Seg]:
        elapsed = now - self.turn_started
        glyph = SPINNER_GLYPHS[int(now / SPINNER_INTERVAL) % len(SPINNER_GLYPHS)]
        segs: list[Seg] = [(glyph, CLAUDE), (" ", "")]
        # A shimmer: one letter of the verb in truecolour, moving along it.
        word = self.verb
        hot = int(now * 8) % (len(word) + 6)
        for index, ch in enumerate(word):
            segs.append((ch, CLAUDE_TRUE + ";1" if abs(index - hot) <= 1 else CLAUDE))
        segs.append(("…", CLAUDE_LIGHT))
        detail = f"{format_duration(elapsed)} · ↓ {format_tokens(self.tokens)} tokens"
        if self.opt.legacy_spinner:
            detail += " · esc to interrupt"
        segs.append((f" ({detail})", GREY))
        return segs

    def menu_rows(self, menu: Menu, width: int) -> list[Row]:
        rows: list[Row] = [Row([("", "")])] if menu.gap else []
        rows.append(Row([(FULL_RULE, menu.rule)], wrap=False))
        for row in menu.head:
            rows.extend(wrap_row(row, width))
        lead = menu.indent
        for index, (label, desc) in enumerate(menu.options):
            if menu.separator_before == index:
                rows.append(Row([(FULL_RULE, menu.rule)], wrap=False))
            chosen = index == menu.selected
            mark: list[Seg] = [("❯", SUGGEST), (" ", "")] if chosen else [("  ", "")]
            style = SUGGEST if chosen else (GREY if index in menu.muted else "")
            segs: list[Seg] = [(lead, ""), *mark, (f"{index + 1}.", GREY), (" ", ""), (label, style)]
            rows.extend(wrap_row(Row(segs, indent=len(lead) + 5), width))
            if desc:
                rows.extend(wrap_row(Row([(" " * (len(lead) + 5), ""), (desc, GREY)], indent=len(lead) + 5), width))
        for row in menu.foot:
            rows.extend(wrap_row(row, width))
        return rows

    # -- title ------------------------------------------------------------------------------------

    def title(self, now: float) -> str:
        if self.mode is Mode.WORKING:
            return f"{TITLE_GLYPHS[int(now) % 2]} {self.task.title}"
        return f"✳ {self.task.title}" if self.turn_started else "✳ Claude Code"

    # -- drawing ------------------------------------------------------------------------------------

    def render(self, now: float) -> None:
        width, height = self.term.size()
        bottom = self.bottom(width, now)
        phys = self.physical(width)
        avail = height - len(bottom)
        if avail < 0:
            bottom = bottom[-height:]
            avail = 0
        region: tuple[int, int] | None
        if len(phys) <= avail:
            shown = list(phys)
            region = None
        else:
            start = len(phys) - avail
            shown = phys[start:] if avail else []
            region = (avail, self._phys_base + start) if avail else None
        screen = shown + bottom
        painted = [paint_row(row, width) for row in screen]
        painted += ["\x1b[0m\x1b[K"] * (height - len(painted))
        self.term.paint(painted, width, height, region)
        self.term.set_title(self.title(now))
        self.dirty = False
        if self.mode is Mode.IDLE:
            self.side.status("idle")
        elif self.mode is Mode.WORKING:
            self.side.status("busy")
        else:
            self.side.status("waiting", "permission prompt")


def inline_code(text: str) -> list[Seg]:
    """Markdown-ish inline code: `x` in the code colour, as Claude Code renders it."""
    segs: list[Seg] = []
    for index, part in enumerate(text.split("`")):
        if part:
            segs.append((part, CODE_BLUE if index % 2 else ""))
    return segs or [("", "")]
