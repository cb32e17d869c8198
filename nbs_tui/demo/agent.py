"""An imitation Claude Code agent for the demo fleet and the benchmarks.

Run it in a terminal (normally a tmux pane)::

    python -m nbs_tui.demo.agent [--name NAME] [--script SCRIPT] [--seed N] [--busy] [--rate R]
                                 [--marker-file PATH] [--marker-fifo PATH] [--project DIR] ...

It draws a full-screen imitation of Claude Code 2.1.2xx (compact welcome header, ``● `` message
blocks with ``⎿`` tool results, a spinner line with ``esc to interrupt`` while working,
``✻ Worked for 6s`` after a turn, the ``❯`` input box between two ``────`` rules, a Bash
permission menu, a plan-approval menu and an AskUserQuestion menu). It really takes keys:
characters, Backspace, Ctrl-U, Enter submits, Esc interrupts or cancels a menu, digits and
Up/Down+Enter answer menus, Shift-Tab cycles the permission mode, Ctrl-C twice exits.

Prompts it understands: ``/nbs-poll`` (check chats: may print ``\\nbs-register-chat ...`` in a
message block, append ``register-chat ...`` to ``.nbs/control-inbox`` and post to a
``.nbs/chat/*.chat`` in the real nbs-chat format); a prompt mentioning ``plan`` goes through the
plan-approval menu, ``bash``/``run``/``permission`` through the Bash permission menu,
``ask``/``question`` through AskUserQuestion; ``/clear`` clears; anything else is a short
turn with a tool call or two.

Scripts (``--script``), deterministic for a given ``--seed``:
  cycle       (default) random idle stretches, then a turn of a random kind; menus it reaches
              answer themselves with option 1 after ``--prompt-timeout`` seconds (default 45)
  idle        only reacts to typed prompts
  working     long working turns with a short idle between them
  permission  reaches a Bash permission menu and waits there until answered
  plan        plan mode; reaches the plan-approval menu and waits there
  question    reaches an AskUserQuestion menu and waits there
  nbs         frequent /nbs-poll-like turns: \\nbs- lines, inbox appends, chat posts
  error       turns that hit "API Error (529 Overloaded) · Retrying in …", then recover or fail
  busy        the same as ``--busy``

``--busy`` keeps working forever and prints colourful log lines (256 colours, truecolour,
bold, italic, wide characters) at ``--rate`` lines per second (default 10), for benchmarks.

Marker facility (latency benchmarks): the agent prints a marker line into its transcript
at once (it redraws without waiting for its next frame) when

* it receives SIGUSR1: the marker is ``NBS-MARK-<pid>-<n>`` (n = 1, 2, ...);
* a line is written to the FIFO given by ``--marker-fifo`` (it creates the FIFO if missing):
  the marker is that line, stripped, printed verbatim (choose a unique string).

After the marker's bytes have been written to the terminal it appends
``<marker>\\t<time.monotonic_ns()>\\t<time.time_ns()>\\n`` to ``--marker-file`` if given, so
a benchmark can take the time the marker reached the pty. CLOCK_MONOTONIC is system-wide on
Linux, so the benchmark can compare it with its own ``time.monotonic_ns()``. The marker line
appears as the last transcript line, just above the spinner and input box, as long as no
menu fills the whole pane (use ``--busy`` or ``--script idle`` for benchmarks).

``--proc-name claude`` rewrites the process's argv[0] (what ``ps`` and tmux's
``#{pane_current_command}`` show) and its comm name, so process-based discovery sees
``claude``. The window title is set with OSC 0 as real Claude Code does: ``✳ <topic>`` when
idle, a braille spinner glyph while working.

Standard library only (termios/tty raw mode, ANSI output, SIGWINCH), so it starts fast and
runs wherever the package is importable.
"""


from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import re
import select
import signal
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path

from nbs_tui.demo.agent_state import PERMISSION_MODES, Options
from nbs_tui.demo.demo_terminal import Terminal
from nbs_tui.demo.palette import (
    BOLD,
    FRAME_INTERVAL,
    GREY,
    IDLE_NOTIFY_AFTER,
    MODEL_ID,
    PAST_VERBS,
    PERMISSION_NOTIFY_AFTER,
    RED,
    SPINNER_INTERVAL,
    VERBS,
    format_duration,
)
from nbs_tui.demo.steps import Menu, Mode, Turn, Work
from nbs_tui.demo.tasks import TIPS
from nbs_tui.demo.turns import TurnScripts


class Agent(TurnScripts):
    """The imitation: its state (``agent_state.py``), drawing (``agent_screen.py``) and turn scripts
    (``turns.py``), driven here by keys, a turn engine and the clock."""

    def __init__(self, options: Options, terminal: Terminal, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(options, terminal, clock)
        self.welcome()

    # -- keys -----------------------------------------------------------------------------------

    def feed(self, data: bytes, now: float) -> None:
        text = self._decoder.decode(data)
        index = 0
        while index < len(text):
            ch = text[index]
            if self._paste is not None:
                end = text.find("\x1b[201~", index)
                if end < 0:
                    self._paste.append(text[index:])
                    return
                self._paste.append(text[index:end])
                self.insert("".join(self._paste).replace("\r", " ").replace("\n", " "))
                self._paste = None
                index = end + 6
                continue
            if ch == "\x1b":
                rest = text[index + 1:]
                if not rest:
                    self.key("escape", now)
                    index += 1
                    continue
                match = re.match(r"\[([0-9;]*)([A-Za-z~])|O([A-Za-z])", rest)
                if match:
                    seq = match.group(0)
                    index += 1 + len(seq)
                    if seq == "[200~":
                        self._paste = []
                        continue
                    names = {"A": "up", "B": "down", "C": "right", "D": "left", "Z": "backtab", "H": "home", "F": "end"}
                    final = match.group(2) or match.group(3)
                    if final == "~":
                        named = {"3": "delete", "1": "home", "4": "end", "7": "home", "8": "end"}
                        self.key(named.get(match.group(1), "unknown"), now)
                    else:
                        self.key(names.get(final, "unknown"), now)
                    continue
                self.key("escape", now)
                index += 1
                continue
            index += 1
            if ch in "\r\n":
                self.key("enter", now)
            elif ch in "\x7f\x08":
                self.key("backspace", now)
            elif ch == "\x03":
                self.key("ctrl-c", now)
            elif ch == "\x04":
                self.key("ctrl-d", now)
            elif ch == "\x15":
                self.key("ctrl-u", now)
            elif ch == "\x01":
                self.key("home", now)
            elif ch == "\x05":
                self.key("end", now)
            elif ch == "\t":
                self.key("tab", now)
            elif ch >= " ":
                self.insert(ch)
            self.dirty = True

    def insert(self, text: str) -> None:
        if self.mode is Mode.MENU and self.menu is not None:
            for ch in text:
                if ch.isdigit():
                    number = int(ch)
                    if 1 <= number <= len(self.menu.options):
                        self.answer(number)
                        return
            return
        self.input = self.input[: self.cursor] + text + self.input[self.cursor:]
        self.cursor += len(text)
        self.show_placeholder = False
        self.dirty = True

    def key(self, name: str, now: float) -> None:
        self.dirty = True
        if name != "ctrl-c":
            self.notice = None
        if self.mode is Mode.MENU and self.menu is not None:
            menu = self.menu
            if name == "up":
                menu.selected = (menu.selected - 1) % len(menu.options)
            elif name in ("down", "tab"):
                menu.selected = (menu.selected + 1) % len(menu.options)
            elif name == "enter":
                self.answer(menu.selected + 1)
            elif name in ("escape", "ctrl-c"):
                self.answer(None)
            return
        if name == "enter":
            text = self.input.strip()
            self.input, self.cursor = "", 0
            if text:
                self.submit(text, now)
        elif name == "backspace":
            if self.cursor:
                self.input = self.input[: self.cursor - 1] + self.input[self.cursor:]
                self.cursor -= 1
        elif name == "delete":
            self.input = self.input[: self.cursor] + self.input[self.cursor + 1:]
        elif name == "left":
            self.cursor = max(0, self.cursor - 1)
        elif name == "right":
            self.cursor = min(len(self.input), self.cursor + 1)
        elif name == "home":
            self.cursor = 0
        elif name == "end":
            self.cursor = len(self.input)
        elif name == "ctrl-u":
            self.input, self.cursor = self.input[self.cursor:], 0
        elif name == "backtab":
            self.perm_mode = (self.perm_mode + 1) % len(self.MODES)
        elif name == "escape":
            if self.mode is Mode.WORKING:
                self.interrupt(now)
        elif name == "ctrl-c":
            if self.mode is Mode.WORKING:
                self.interrupt(now)
            elif self.input:
                self.input, self.cursor = "", 0
            elif now - self.last_ctrl_c < 2.0:
                self.running = False
            else:
                self.last_ctrl_c = now
                self.notice = "Press Ctrl-C again to exit"
        elif name == "ctrl-d" and not self.input:
            self.running = False

    # -- turns ----------------------------------------------------------------------------------

    def submit(self, text: str, now: float) -> None:
        if self.mode is Mode.WORKING:
            self.queued.append(text)
            return
        if text in ("/clear", "/reset"):
            self.rows.clear()
            self._phys_width = 0
            self._phys_base = 0
            self.term.invalidate()
            self.welcome()
            return
        if text in ("/exit", "/quit"):
            self.running = False
            return
        self.user(text)
        self.start_turn(self.turn_for(text), now)

    def turn_for(self, text: str) -> Turn:
        low = text.lower()
        if low.startswith("/nbs-poll"):
            return self.turn_nbs_poll()
        if low.startswith("/help"):
            return self.turn_help()
        # Whole words only: "task" must not read as "ask", nor "explanation" as "plan".
        words = set(re.findall(r"[a-z]+", low))
        if "plan" in words:
            return self.turn_plan()
        if words & {"bash", "run", "permission", "shell"}:
            return self.turn_permission()
        if words & {"ask", "question", "choose"}:
            return self.turn_question()
        if "busy" in words:
            return self.turn_busy()
        return self.turn_generic(text)

    def start_turn(self, turn: Turn, now: float) -> None:
        self.turn = turn
        self.turn_started = now
        self.mode = Mode.WORKING
        self.verb = self.rng.choice(VERBS)
        self.tokens = 0
        self.tip = self.rng.choice(TIPS) if self.rng.random() < 0.3 else None
        self.wait_until = now
        self.advance(None, now)

    def advance(self, value: int | None, now: float) -> None:
        if self.turn is None:
            return
        try:
            step = self.turn.send(value)
        except StopIteration:
            self.finish_turn(now)
            return
        self.dirty = True
        if isinstance(step, Work):
            self.mode = Mode.WORKING
            self.wait_until = now + step.seconds / self.opt.speed
            if step.verb:
                self.verb = step.verb
        else:
            step.shown_at = now
            if step.auto_answer_after is None and self.opt.prompt_timeout:
                step.auto_answer_after = self.opt.prompt_timeout / self.opt.speed
            self.menu = step
            self.mode = Mode.MENU
            if step.hook is not None:
                self.side.hook("PermissionRequest", tool_name=step.hook[0], tool_input=step.hook[1])

    def answer(self, number: int | None) -> None:
        now = self.clock()
        self.menu = None
        self.mode = Mode.WORKING
        self.dirty = True
        self.advance(number, now)

    def finish_turn(self, now: float) -> None:
        self.turn = None
        self.mode = Mode.IDLE
        self.tip = None
        self.retry = None
        self.blank()
        past = "Worked" if self.opt.script == "idle" else self.rng.choice(PAST_VERBS)
        self.add([("✻ ", GREY), (f"{past} for {format_duration(max(1.0, now - self.turn_started))}", GREY)])
        self.dirty = True
        self._post_tool()
        self.side.turn_end(int(max(0.0, now - self.turn_started) * 1000))
        self.side.hook("Stop", stop_hook_active=False, last_assistant_message=self.last_message)
        self.idle_since, self.idle_notified = now, False
        if self.queued:
            text = self.queued.pop(0)
            self.user(text)
            self.start_turn(self.turn_for(text), now)
            return
        self.schedule_auto(now)

    def interrupt(self, now: float) -> None:
        if self.turn is not None:
            self.turn.close()
        self.turn = None
        self.menu = None
        self.mode = Mode.IDLE
        self.tip = None
        self.retry = None
        self.queued.clear()
        self.add([("  ⎿  ", GREY), ("Interrupted · What should Claude do instead?", RED)], indent=5)
        self.pending_tool = None
        self.side.interrupted()
        self.idle_since, self.idle_notified = now, False
        self.schedule_auto(now, longer=True)

    # -- autonomy ---------------------------------------------------------------------------------

    def schedule_auto(self, now: float, longer: bool = False) -> None:
        script = self.opt.script
        if script == "idle":
            self.next_auto = None
            return
        low, high = {
            "cycle": (6.0, 25.0),
            "working": (1.5, 4.0),
            "permission": (25.0, 50.0),
            "plan": (25.0, 50.0),
            "question": (25.0, 50.0),
            "nbs": (6.0, 15.0),
            "error": (10.0, 20.0),
            "busy": (2.0, 3.0),
        }.get(script, (6.0, 25.0))
        if longer:
            low, high = low * 2, high * 2
        self.next_auto = now + self.rng.uniform(low, high) / self.opt.speed

    def auto_turn(self, now: float) -> None:
        script = self.opt.script
        kinds: dict[str, Callable[[], Turn]] = {
            "working": self.turn_long,
            "permission": self.turn_permission,
            "plan": self.turn_plan,
            "question": self.turn_question,
            "nbs": self.turn_nbs_poll,
            "error": self.turn_error,
            "busy": self.turn_busy,
        }
        if script in kinds:
            make = kinds[script]
        else:
            order = [self.turn_generic_auto, self.turn_permission, self.turn_nbs_poll, self.turn_long,
                     self.turn_plan, self.turn_question, self.turn_generic_auto, self.turn_error]
            make = self.rng.choice(order)
        prompt = {
            self.turn_nbs_poll: "/nbs-poll",
        }.get(make)
        if prompt:
            self.user(prompt)
        else:
            self.user(self.rng.choice((
                f"{self.task.title.lower()}: carry on",
                f"look at {self.task.files[0]} and continue the task",
                "next step please",
                f"check {self.task.files[1]} then report back",
            )))
        self.start_turn(make(), now)

    # -- markers --------------------------------------------------------------------------------

    def marker(self, text: str | None) -> None:
        if text is None:
            self.marker_seq += 1
            text = f"NBS-MARK-{os.getpid()}-{self.marker_seq}"
        self.add([("  ", ""), (text, BOLD + ";38;5;226")], wrap=False)
        self.render(self.clock())
        if self.opt.marker_file is not None:
            stamp = f"{text}\t{time.monotonic_ns()}\t{time.time_ns()}\n"
            with contextlib.suppress(OSError), open(self.opt.marker_file, "a", encoding="utf-8") as handle:
                handle.write(stamp)

    # -- the clock --------------------------------------------------------------------------------

    def tick(self, now: float) -> None:
        if self.mode is Mode.WORKING and self.turn is not None:
            self.tokens += self.fx.randint(0, 9)
            if now >= self.wait_until:
                self.advance(None, now)
            if self.opt.busy or self.opt.script == "busy":
                self.busy_tick(now)
        elif self.mode is Mode.MENU and self.menu is not None:
            menu = self.menu
            if not menu.notified and now - menu.shown_at >= PERMISSION_NOTIFY_AFTER:
                menu.notified = True
                tool = menu.hook[0] if menu.hook else "a tool"
                self.side.hook("Notification", notification_type="permission_prompt",
                               message=f"Claude needs your permission to use {tool}")
            if menu.auto_answer_after is not None and now - menu.shown_at >= menu.auto_answer_after:
                self.answer(1)
        if self.mode is Mode.IDLE and not self.idle_notified and now - self.idle_since >= IDLE_NOTIFY_AFTER:
            self.idle_notified = True
            self.side.hook("Notification", notification_type="idle_prompt", message="Claude is waiting for your input")
        if self.mode is Mode.IDLE and self.next_auto is not None and now >= self.next_auto and not self.input:
            self.next_auto = None
            if self.opt.busy or self.opt.script == "busy":
                self.start_turn(self.turn_busy(), now)
            else:
                self.auto_turn(now)

    def next_deadline(self, now: float) -> float:
        deadlines = []
        if self.mode is Mode.WORKING:
            deadlines.append(now + SPINNER_INTERVAL)
            deadlines.append(self.wait_until)
            if (self.opt.busy or self.opt.script == "busy") and self.opt.rate > 0:
                deadlines.append(self.busy_started + (self.busy_emitted + 1) / self.opt.rate)
        elif self.mode is Mode.MENU and self.menu:
            if self.menu.auto_answer_after is not None:
                deadlines.append(self.menu.shown_at + self.menu.auto_answer_after)
            if not self.menu.notified:
                deadlines.append(self.menu.shown_at + PERMISSION_NOTIFY_AFTER)
        if self.mode is Mode.IDLE and self.next_auto is not None:
            deadlines.append(self.next_auto)
        if self.mode is Mode.IDLE and not self.idle_notified:
            deadlines.append(self.idle_since + IDLE_NOTIFY_AFTER)
        if self.notice:
            deadlines.append(now + 2.0)
        return max(now, min(deadlines)) if deadlines else now + 3600.0

    def prefill(self, turns: int) -> None:
        """Play ``turns`` finished turns instantly, so the agent starts with some history."""
        makers: list[Callable[[], Turn]] = [self.turn_generic_auto, self.turn_long, self.turn_permission]
        prompts = (f"{self.task.title.lower()}: start with {self.task.files[0]}", "run the tests", "next step please")
        self.side.muted = True
        for index in range(turns):
            self.user(prompts[index % len(prompts)])
            turn = makers[index % len(makers)]()
            value: int | None = None
            spent = 0.0
            with contextlib.suppress(StopIteration):
                while True:
                    step = turn.send(value)
                    value = 1 if isinstance(step, Menu) else None
                    spent += step.seconds if isinstance(step, Work) else 2.0
            self.blank()
            self.add([("✻ ", GREY), (f"{self.rng.choice(PAST_VERBS)} for {format_duration(spent)}", GREY)])
        self.turn_started = 1.0 if turns else 0.0
        self.tokens = 0
        self.pending_tool = None
        self.side.muted = False

    def begin(self, now: float) -> None:
        """Schedule the first autonomous action (or start working at once in busy mode)."""
        self.side.hook("SessionStart", source="startup", model=MODEL_ID)
        self.idle_since, self.idle_notified = now, False
        if self.opt.busy or self.opt.script == "busy":
            self.start_turn(self.turn_busy(), now)
            return
        if self.opt.start_delay is not None:
            self.next_auto = now + self.opt.start_delay / self.opt.speed if self.opt.script != "idle" else None
            return
        first = {"permission": 1.0, "plan": 1.0, "question": 1.0, "working": 0.5, "nbs": 2.0}
        if self.opt.script in first:
            self.next_auto = now + first[self.opt.script] / self.opt.speed
        else:
            self.schedule_auto(now)


# ---------------------------------------------------------------------------------------------
# Process naming, signals, main loop


def set_process_name(name: str) -> bool:
    """Make ``ps`` and tmux's ``#{pane_current_command}`` show ``name`` (Linux only).

    Overwrites argv[0] in place (found through /proc/self/stat's arg_start, checked against
    /proc/self/cmdline before writing) and sets the comm name with prctl(PR_SET_NAME).
    """
    ok = False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(15, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)  # PR_SET_NAME
        ok = True
    except (OSError, AttributeError):
        pass
    try:
        stat_text = Path("/proc/self/stat").read_text()
        fields = stat_text[stat_text.rindex(")") + 2:].split()
        arg_start = int(fields[45])
        cmdline = Path("/proc/self/cmdline").read_bytes()
        argv0_len = cmdline.index(b"\0")
        if ctypes.string_at(arg_start, len(cmdline)) != cmdline or argv0_len < len(name):
            return ok
        replacement = name.encode() + b"\0" * (argv0_len - len(name))
        ctypes.memmove(arg_start, replacement, len(replacement))
        return True
    except (OSError, ValueError, IndexError):
        return ok


def _open_fifo(path: Path) -> tuple[int, int]:
    """Open a marker FIFO for reading without ever seeing EOF (we hold a writer too)."""
    if not path.exists():
        os.mkfifo(path, 0o600)
    elif not stat.S_ISFIFO(path.stat().st_mode):
        raise SystemExit(f"--marker-fifo {path} exists and is not a FIFO")
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    writer = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    return reader, writer


def parse_args(argv: list[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(
        prog="python -m nbs_tui.demo.agent", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--name", default="claude", help="the agent's handle (chat posts, header)")
    parser.add_argument("--script", default="cycle",
                        choices=("cycle", "idle", "working", "permission", "plan", "question", "nbs", "error", "busy"))
    parser.add_argument("--seed", type=int, default=None, help="make the behaviour deterministic")
    parser.add_argument("--busy", action="store_true", help="work forever, printing --rate lines per second")
    parser.add_argument("--rate", type=float, default=10.0, help="busy output lines per second (default 10)")
    parser.add_argument("--project", type=Path, default=None, help="project folder holding .nbs/ (default: cwd)")
    parser.add_argument("--marker-file", type=Path, default=None, help="append '<marker>\\t<mono ns>\\t<epoch ns>' per marker")
    parser.add_argument("--marker-fifo", type=Path, default=None, help="print each line written to this FIFO at once")
    parser.add_argument("--prompt-timeout", type=float, default=None,
                        help="menus answer themselves with option 1 after this many seconds (cycle default 45)")
    parser.add_argument("--legacy-spinner", action="store_true", help="'(3s · ↓ 42 tokens · esc to interrupt)' spinner")
    parser.add_argument("--placeholder", action="store_true", help="show a dim suggestion in the empty input box")
    parser.add_argument("--model", default="Opus 4.8 (1M context) · Claude Max", help="the header's model line")
    parser.add_argument("--start-delay", type=float, default=None, help="seconds before the first autonomous turn")
    parser.add_argument("--mode", choices=PERMISSION_MODES, default="default",
                        help="the permission mode shown in the footer (Shift-Tab cycles it)")
    parser.add_argument("--inbox", choices=("shared", "per-handle"), default="shared",
                        help="append to .nbs/control-inbox or to .nbs/control-inbox-<name>")
    parser.add_argument("--speed", type=float, default=1.0, help="run every wait this many times faster")
    parser.add_argument("--claude-config", type=Path, default=None, metavar="DIR",
                        help="keep DIR/sessions/<pid>.json as Claude Code does (pass DIR as CLAUDE_CONFIG_DIR too)")
    parser.add_argument("--hook-spool", type=Path, default=None, metavar="FILE",
                        help="append a hook record per event, as nbs-tui's hook script would")
    parser.add_argument("--warm", type=int, default=0, metavar="N", help="start with N finished turns of history")
    parser.add_argument("--proc-name", default=None, help="rename the process (argv[0] and comm), e.g. 'claude'")
    args = parser.parse_args(argv)
    timeout = args.prompt_timeout
    if timeout is None and args.script == "cycle":
        timeout = 45.0
    if args.proc_name:
        set_process_name(args.proc_name)
    return Options(
        name=args.name, script=args.script, seed=args.seed, busy=args.busy, rate=args.rate,
        project=(args.project or Path.cwd()).resolve(), marker_file=args.marker_file, marker_fifo=args.marker_fifo,
        prompt_timeout=timeout or None, legacy_spinner=args.legacy_spinner, placeholder=args.placeholder,
        model=args.model, start_delay=args.start_delay, warm=max(0, args.warm), speed=max(0.01, args.speed), mode=args.mode, inbox=args.inbox,
        claude_config=args.claude_config.resolve() if args.claude_config else None,
        hook_spool=args.hook_spool.resolve() if args.hook_spool else None,
    )


def run(options: Options) -> int:
    in_fd, out_fd = sys.stdin.fileno(), sys.stdout.fileno()
    term = Terminal(in_fd, out_fd)
    agent = Agent(options, term)
    signals: list[int] = []
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)

    def on_signal(signum: int, _frame: object) -> None:
        signals.append(signum)

    for signum in (signal.SIGWINCH, signal.SIGUSR1, signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, on_signal)
    fifo_r = fifo_w = -1
    fifo_buf = b""
    if options.marker_fifo is not None:
        fifo_r, fifo_w = _open_fifo(options.marker_fifo)
    term.enter()
    end_reason = "prompt_input_exit"
    try:
        now = time.monotonic()
        agent.prefill(options.warm)
        agent.begin(now)
        agent.render(now)
        last_render = now
        while agent.running:
            now = time.monotonic()
            deadline = agent.next_deadline(now)
            if agent.mode is Mode.WORKING:
                deadline = max(deadline, last_render + FRAME_INTERVAL)
            timeout = max(0.0, deadline - now)
            watch = [in_fd, wake_r] + ([fifo_r] if fifo_r >= 0 else [])
            try:
                ready, _, _ = select.select(watch, [], [], timeout)
            except InterruptedError:
                ready = []
            now = time.monotonic()
            while signals:
                received = signals.pop(0)
                if received == signal.SIGWINCH:
                    term.invalidate()
                    agent.dirty = True
                elif received == signal.SIGUSR1:
                    agent.marker(None)
                else:
                    agent.running = False
                    end_reason = "other"
            if wake_r in ready:
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_r, 512)
            if fifo_r >= 0 and fifo_r in ready:
                with contextlib.suppress(BlockingIOError):
                    fifo_buf += os.read(fifo_r, 65536)
                while b"\n" in fifo_buf:
                    line, fifo_buf = fifo_buf.split(b"\n", 1)
                    text = line.decode("utf-8", "replace").strip()
                    if text:
                        agent.marker(text)
            if in_fd in ready:
                try:
                    data = os.read(in_fd, 65536)
                except OSError:
                    data = b""
                if not data:
                    break
                agent.feed(data, now)
            agent.tick(now)
            if agent.mode is not Mode.IDLE or agent.dirty:
                agent.render(now)
                last_render = now
    finally:
        agent.side.close(end_reason)
        term.leave()
        for fd in (fifo_r, fifo_w, wake_r, wake_w):
            if fd >= 0:
                os.close(fd)
    return 0


def main(argv: list[str] | None = None) -> int:
    options = parse_args(argv)
    if options.project != Path.cwd().resolve():
        with contextlib.suppress(OSError):
            os.chdir(options.project)
    return run(options)


if __name__ == "__main__":
    raise SystemExit(main())
