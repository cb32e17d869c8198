"""The turn scripts: generators that write to the transcript and yield ``Work`` and ``Menu``
steps (a thinking pause, a plain turn, a long turn with a diff and todos, the Bash permission,
plan-approval and AskUserQuestion menus, an overloaded API, ``/nbs-poll`` with ``\\nbs-`` lines,
inbox appends and chat posts, and the endless busy turn of the benchmarks).
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator
from pathlib import Path

from nbs_tui.core.control.chat import ChatError
from nbs_tui.demo.agent_screen import AgentScreen, inline_code
from nbs_tui.demo.demo_terminal import Row, Seg
from nbs_tui.demo.palette import (
    BOLD,
    CLAUDE_LIGHT,
    CODE_BLUE,
    DASH,
    DIFF_ADD_BG,
    DIFF_DEL_BG,
    DIM,
    ERROR_YELLOW,
    FULL_DASH,
    FULL_RULE,
    GREEN,
    GREY,
    ITALIC,
    NBSP,
    PERM_BLUE,
    PLAN_TEAL,
    QUESTION_CHIP,
    RED,
    VERBS,
    WHITE,
    format_duration,
)
from nbs_tui.demo.steps import Menu, Step, Turn, Work
from nbs_tui.demo.tasks import BUSY_WIDE, BUSY_WORDS, CHIPS, DIFFS, NEW_CHATS
from nbs_tui.files.chat_io import create_chat, post_message, read_chat


class TurnScripts(AgentScreen):
    """What each kind of turn does; ``Agent`` picks one and drives it step by step."""

    # -- turn scripts (generators) --------------------------------------------------------------

    def _think(self) -> Generator[Step, int | None, None]:
        seconds = self.rng.uniform(0.8, 2.5)
        self.side.thinking()
        yield Work(seconds)
        self.blank()
        self.add([("✻ ", GREY), (f"Thought for {format_duration(max(1, seconds))}", GREY + ";" + ITALIC),
                  (" (ctrl+o to show thinking)", DIM + ";" + ITALIC)])

    def turn_error(self) -> Turn:
        """An overloaded API: a few retries under the spinner, then recovery or an error block."""
        yield from self._think()
        self.tool("Read", self.task.files[0])
        yield Work(self.rng.uniform(0.5, 1.2))
        self.result([[("Read ", GREY), (str(self.rng.randint(40, 400)), BOLD), (" lines", GREY)]])
        attempts = self.rng.randint(2, 4)
        for attempt in range(1, attempts + 1):
            wait = min(2.0 ** attempt, 10.0)
            self.retry = (attempt, self.clock() + wait / self.opt.speed)
            yield Work(wait)
        self.retry = None
        if self.rng.random() < 0.5:
            self.blank()
            self.add([("● ", ERROR_YELLOW), ("API Error: 529 Overloaded. This is a server-side issue, usually temporary — "
                                             "try again in a moment.", ERROR_YELLOW)])
            self.last_message = "API Error: 529 Overloaded."
            self.side.api_error("API Error: 529 Overloaded. This is a server-side issue, usually temporary — "
                                "try again in a moment.", 529, "overloaded_error")
            return
        yield Work(self.rng.uniform(1.0, 2.0))
        self.say(self.task.summary)

    def turn_help(self) -> Turn:
        yield Work(0.6)
        self.say("This agent imitates Claude Code for the nbs-tui demo.\n"
                 "Try: `/nbs-poll`, `make a plan`, `run the tests in bash`, `ask me a question`, `/clear`.")

    def turn_generic(self, prompt: str) -> Turn:
        yield from self._think()
        file = self.rng.choice(self.task.files)
        self.tool("Read", file)
        yield Work(self.rng.uniform(0.6, 1.5))
        self.result([[("Read ", GREY), (str(self.rng.randint(40, 400)), BOLD), (" lines", GREY)]])
        yield Work(self.rng.uniform(0.8, 2.0))
        if self.rng.random() < 0.5:
            self.tool("Update", file)
            yield Work(self.rng.uniform(0.5, 1.2))
            self.diff(file)
            yield Work(self.rng.uniform(0.5, 1.5))
        words = prompt if len(prompt) < 60 else prompt[:57] + "…"
        self.say(f"Done with \"{words}\". {self.task.summary}")

    def turn_generic_auto(self) -> Turn:
        return self.turn_generic(f"{self.task.title}")

    def diff(self, file: str) -> None:
        """An Edit result with its diff: removed and added lines on red and green (truecolour)."""
        line = self.rng.randint(10, 90)
        context, removed, added = DIFFS.get(Path(file).suffix, DIFFS[".py"])[self.rng.randrange(2)]
        self.result([[("Updated ", GREY), (file, BOLD), (" with ", GREY), (str(len(added)), BOLD),
                      (" additions and ", GREY), ("1", BOLD), (" removal", GREY)]])
        body: list[list[Seg]] = [[(f"{line:>6}  ", GREY), (context, "")],
                                 [(f"{line + 1:>6} ", GREY + ";" + DIFF_DEL_BG), ("-" + removed, DIFF_DEL_BG)]]
        for offset, text in enumerate(added, 1):
            body.append([(f"{line + offset:>6} ", GREY + ";" + DIFF_ADD_BG), ("+" + text, DIFF_ADD_BG)])
        for segs in body:
            self.add([("     ", ""), *segs], indent=5, wrap=False)

    def turn_long(self) -> Turn:
        yield from self._think()
        self.todos()
        yield Work(self.rng.uniform(1.0, 2.0))
        for file in self.task.files:
            self.tool("Read", file)
            yield Work(self.rng.uniform(1.0, 3.0))
            self.result([[("Read ", GREY), (str(self.rng.randint(40, 400)), BOLD), (" lines", GREY)]])
            self.tokens += self.rng.randint(200, 900)
        self.tool("Bash", self.task.command)
        yield Work(self.rng.uniform(3.0, 8.0), verb=self.rng.choice(VERBS))
        self.result(self.task.output)
        yield Work(self.rng.uniform(2.0, 6.0))
        self.say(self.task.summary)

    def todos(self) -> None:
        self.blank()
        self.add([("● ", GREEN), ("Update Todos", BOLD)])
        done = self.rng.randint(0, len(self.task.plan) - 1)
        lines: list[list[Seg]] = []
        for index, item in enumerate(self.task.plan):
            if index < done:
                lines.append([("☒ ", GREY), (item, GREY + ";9")])
            elif index == done:
                lines.append([("☐ ", ""), (item, BOLD)])
            else:
                lines.append([("☐ ", ""), (item, "")])
        self.result(lines)

    def turn_permission(self) -> Turn:
        """A Bash call that needs approval: the 2.1.197 permission dialog under ``⎿  Waiting…``."""
        yield from self._think()
        self.say(f"Let me run the tests for {self.task.files[0]}.")
        yield Work(0.5)
        self.tool("Bash", self.task.command, pending=True)
        waiting = self.add([("  ⎿ " + NBSP, GREY), ("Waiting…", GREY)], indent=5)
        folder = self.opt.project.name or "project"
        answer = yield Menu(
            kind="permission",
            head=[
                Row([(" ", ""), ("Bash command", PERM_BLUE + ";" + BOLD)]),
                Row([("", "")]),
                Row([("   ", ""), (self.task.command, "")], indent=3),
                Row([("   ", ""), (self.task.command_desc, GREY)], indent=3),
                Row([("", "")]),
                Row([(" Do you want to proceed?", "")]),
            ],
            options=[
                ("Yes", ""),
                (f"Yes, and always allow access to {folder}/ from this project", ""),
                ("No", ""),
            ],
            foot=[Row([("", "")]), Row([(" Esc to cancel · Tab to amend · ctrl+e to explain", GREY)])],
            rule=PERM_BLUE,
            hook=("Bash", {"command": self.task.command, "description": self.task.command_desc}),
        )
        self.drop_row(waiting)
        if answer in (1, 2):
            running = self.add([("  ⎿ " + NBSP, GREY), ("Running…", GREY)], indent=5)
            yield Work(self.rng.uniform(1.0, 3.0))
            self.drop_row(running)
            self.result(self.task.output, style="")
            self.tokens += 400
            yield Work(self.rng.uniform(1.0, 2.5))
            self.say(self.task.summary)
        else:
            self.result([[("Interrupted · What should Claude do instead?", RED)]])
            return

    def turn_plan(self) -> Turn:
        """Plan mode: read a little, then the ExitPlanMode approval dialog of 2.1.197."""
        self.perm_mode = 2
        yield from self._think()
        for file in self.task.files[:2]:
            self.tool("Read", file)
            yield Work(self.rng.uniform(0.8, 2.0))
            self.result([[("Read ", GREY), (str(self.rng.randint(40, 400)), BOLD), (" lines", GREY)]])
        yield Work(self.rng.uniform(1.0, 2.5))
        self.say("Here is my plan.")
        slug = "-".join(self.task.title.lower().replace(":", "").split()[:3])
        head = [
            Row([(" ", ""), ("Ready to code?", PERM_BLUE + ";" + BOLD)]),
            Row([("", "")]),
            Row([(" Here is Claude's plan:", "")]),
            Row([(FULL_DASH, DASH)], wrap=False),
            Row([(" ", ""), (f"Plan: {self.task.title}", "1;3;4")]),
            Row([("", "")]),
            *(Row([(f" {index}. ", ""), *inline_code(item)], indent=4) for index, item in enumerate(self.task.plan, 1)),
            Row([(FULL_DASH, DASH)], wrap=False),
            Row([("", "")]),
            Row([(FULL_RULE, PLAN_TEAL)], wrap=False),
            Row([(" ", ""), ("Claude has written up a plan and is ready to execute. Would you like to proceed?", GREY)]),
            Row([("", "")]),
        ]
        answer = yield Menu(
            kind="plan",
            head=head,
            options=[
                ("Yes, and use auto mode", ""),
                ("Yes, manually approve edits", ""),
                ("Tell Claude what to change", "shift+tab to approve with this feedback"),
            ],
            foot=[Row([("", "")]),
                  Row([(" ctrl+g to edit in ", GREY), (" Vim ", GREY + ";" + BOLD), (f" · ~/.claude/plans/{slug}.md", GREY)])],
            rule=PLAN_TEAL,
            muted=frozenset({2}),
            hook=("ExitPlanMode", {"plan": "\n".join([f"# Plan: {self.task.title}", *(f"{i}. {x}" for i, x in
                                                                                      enumerate(self.task.plan, 1))])}),
        )
        if answer in (1, 2):
            self.perm_mode = 3 if answer == 1 else 0
            self.say([("User approved Claude's plan", "")], bullet=GREEN)
            for file in self.task.files[:2]:
                self.tool("Update", file)
                yield Work(self.rng.uniform(1.0, 2.5))
                self.diff(file)
            yield Work(1.0)
            self.say(self.task.summary)
        else:
            self.result([[("User rejected Claude's plan", RED)]])
            self.say("Understood — tell me what to change and I will revise the plan.")

    def turn_question(self) -> Turn:
        """AskUserQuestion as 2.1.197 draws one question: chip, options, Type something, Chat about this."""
        yield from self._think()
        chip = CHIPS.get(self.task.title, "Choice")
        answers = [*self.task.answers, ("Type something.", ""), ("Chat about this", "")]
        answer = yield Menu(
            kind="question",
            head=[Row([(f" ☐ {chip} ", QUESTION_CHIP)], wrap=False), Row([("", "")]),
                  Row([(self.task.question, BOLD + ";" + WHITE)], indent=0), Row([("", "")])],
            options=answers,
            foot=[Row([("", "")]), Row([("Enter to select · ↑/↓ to navigate · Esc to cancel", GREY)], indent=0)],
            rule=GREY,
            indent="",
            gap=False,
            muted=frozenset({len(self.task.answers)}),
            separator_before=len(self.task.answers) + 1,
            hook=("AskUserQuestion", {"questions": [{
                "question": self.task.question, "header": chip, "multiSelect": False,
                "options": [{"label": label, "description": desc} for label, desc in self.task.answers]}]}),
        )
        if answer is None:
            self.result([[("User declined to answer questions", RED)]])
            return
        choice = answers[answer - 1][0]
        if answer > len(self.task.answers):
            choice = "let's talk it through" if answer == len(answers) else "(typed answer)"
        self.say([("User answered Claude's questions:", "")])
        self.result([[("· ", GREY), (self.task.question, GREY), (" → ", GREY), (choice, "")]])
        yield Work(self.rng.uniform(1.0, 2.5))
        self.say(f"Going with {choice}. {self.task.summary}")

    def turn_nbs_poll(self) -> Turn:
        """/nbs-poll: read the chat, register a new chat, post a reply.

        The first poll registers with a ``\\nbs-register-chat`` line in its message block, the
        second by appending ``register-chat`` to ``.nbs/control-inbox``; later polls pick at
        random (and sometimes find nothing new), so tests can rely on the first two.
        """
        self.polls += 1
        project = self.opt.project
        chat_dir = project / ".nbs" / "chat"
        spawned = {f"{n}.chat" for n in NEW_CHATS}
        chats = sorted(p for p in chat_dir.glob("*.chat") if not p.name.endswith("-archive.chat")) if chat_dir.is_dir() else []
        home = [p for p in chats if p.name not in spawned] or chats
        target = home[0] if home else chat_dir / f"{self.opt.name}.chat"
        yield Work(self.rng.uniform(0.6, 1.5))
        self.tool("Bash", f"nbs-chat read .nbs/chat/{target.name} --unread={self.opt.name}")
        yield Work(self.rng.uniform(0.5, 1.2))
        last = None
        with contextlib.suppress(OSError):
            messages = read_chat(target).messages
            last = next((m for m in reversed(messages) if m.handle != self.opt.name), None)
        if self.polls > 2 and self.rng.random() < 0.3:
            self.result(["(no new messages)"])
            yield Work(0.5)
            self.say("Nothing new on the chat or the bus. Carrying on with the task.")
            return
        peer = last.handle if last else self.rng.choice(("bench-claude", "docs-claude", "alex"))
        if last:
            self.result([[(f"{last.handle}: ", CLAUDE_LIGHT), (last.text, GREY)]])
        else:
            self.result(["(no new messages)"])
        new_chat = NEW_CHATS[(self.polls - 1 + self.rng.randrange(len(NEW_CHATS)) * (self.polls > 2)) % len(NEW_CHATS)]
        rel = f".nbs/chat/{new_chat}.chat"
        yield Work(self.rng.uniform(0.8, 1.6))
        self._create_chat(project / rel)
        via_line = self.polls == 1 or (self.polls > 2 and self.rng.random() < 0.5)
        verb, target_path = "register-chat", rel
        if self.polls > 2:
            roll = self.rng.random()
            if roll < 0.2 and self.registered:
                verb, target_path = "unregister-chat", self.registered.pop(0)
            elif roll < 0.3:
                (project / ".nbs" / "events").mkdir(parents=True, exist_ok=True)
                verb, target_path = "register-bus", ".nbs/events"
        if verb == "register-chat":
            self.registered.append(rel)
        why = {
            "register-chat": f"{peer} wants the follow-up on {rel}. Registering it so I hear about replies.",
            "unregister-chat": f"{target_path} is finished with; unregistering it.",
            "register-bus": "The team moved to the event bus; registering `.nbs/events` too.",
        }[verb]
        if via_line:
            # The AI-facing convention: a \nbs- line in the message block, for the sidecar to pick up.
            self.say(why)
            self.add([("  ", ""), (f"\\nbs-{verb} {target_path}", "")], wrap=False)
        else:
            # The other route: append to the control inbox directly, as a tool call.
            line = f"{verb} {target_path}"
            self.tool("Bash", f"echo '{line}' >> {self.inbox_rel}")
            yield Work(0.4)
            self._append_inbox(line)
            self.result(["(No output)"])
        yield Work(self.rng.uniform(0.5, 1.2))
        text = self.rng.choice((
            f"@{peer} on it: {self.task.title.lower()} — tests next",
            f"status: {self.task.summary}",
            f"@{peer} can you review {self.task.files[0]}? the retry budget is 3",
            f"moved the follow-up to {rel}; will report there",
        ))
        short = text if len(text) <= 40 else text[:39] + "…"
        self.tool("Bash", f"nbs-chat send .nbs/chat/{target.name} {self.opt.name} \"{short}\"")
        yield Work(0.5)
        try:
            self._create_chat(target)  # nbs-chat send to a chat nobody made yet makes it
            post_message(target, self.opt.name, text)
            self.result(["Sent"])
        except (OSError, ChatError) as error:
            self.result([[(f"Error: {error}", RED)]])
        yield Work(0.6)
        done = {"register-chat": "registered", "unregister-chat": "unregistered", "register-bus": "registered"}[verb]
        self.say(f"Replied on `{target.name}`; {done} `{target_path}`.")

    @property
    def inbox_rel(self) -> str:
        """``.nbs/control-inbox`` (seed era) or ``.nbs/control-inbox-<handle>`` (later releases)."""
        return ".nbs/control-inbox" + (f"-{self.opt.name}" if self.opt.inbox == "per-handle" else "")

    @staticmethod
    def _create_chat(chat: Path) -> None:
        """Make ``chat`` (and its folder) unless it exists; a chat already there is left alone."""
        with contextlib.suppress(OSError, ChatError):
            chat.parent.mkdir(parents=True, exist_ok=True)
            create_chat(chat)

    def _append_inbox(self, line: str) -> None:
        inbox = self.opt.project / self.inbox_rel
        with contextlib.suppress(OSError):
            inbox.parent.mkdir(parents=True, exist_ok=True)
            with open(inbox, "a", encoding="utf-8") as handle:
                handle.write(line + "\n")

    def turn_busy(self) -> Turn:
        self.tool("Bash", self.rng.choice(("make -j8 test", "cargo build --release", "npm run test -- --watch=false",
                                           "pytest -n 4 -q")))
        self.busy_started = self.clock()
        self.busy_emitted = 0
        while True:
            yield Work(3600.0)

    # -- busy output ----------------------------------------------------------------------------

    def busy_line(self) -> list[Seg]:
        n = self.busy_emitted
        rng = self.rng
        word = BUSY_WORDS[n % len(BUSY_WORDS)]
        colour = 16 + (n * 7) % 216
        r, g, b = (n * 37) % 256, (n * 91) % 256, (n * 53) % 256
        segs: list[Seg] = [
            (f"[{n:>6}] ", GREY),
            (f"{word:<9}", f"38;5;{colour};1"),
            (" ", ""),
            (f"pkg/{rng.choice(('core', 'mirror', 'ui', 'tmux', 'files'))}/{rng.choice(('screen', 'detect', 'diff', 'inbox'))}.py",
             ITALIC + ";" + CODE_BLUE),
            (" ", ""),
            ("█" * (1 + n % 12), f"38;2;{r};{g};{b}"),
        ]
        if n % 5 == 0:
            segs += [(" ", ""), (BUSY_WIDE[n % len(BUSY_WIDE)], "38;5;220")]
        if n % 7 == 0:
            segs += [(" ok", GREEN + ";1")]
        elif n % 11 == 0:
            segs += [(" warn", "38;5;208;3")]
        self.busy_emitted += 1
        self.tokens += self.fx.randint(5, 40)
        return segs

    def busy_tick(self, now: float) -> None:
        if self.turn is None or self.opt.rate <= 0 or not self.busy_started:
            return
        due = int((now - self.busy_started) * self.opt.rate) - self.busy_emitted
        for _ in range(min(due, 500)):
            self.add([("  ", ""), *self.busy_line()], indent=4, wrap=False)
        if due > 500:  # we fell behind: skip rather than flood
            self.busy_emitted += due - 500
