"""A pane that shows a screen recorded from the real Claude Code CLI, and logs every key it gets.

The agent is an executable named ``claude`` (so discovery counts it as an agent) that draws one
corpus screen (``tests/corpus/claude/<version>/<name>.txt``, header lines dropped) in a 120x40
pane and reads keys in raw mode, appending ``RAW <bytes>`` for each read to its log. When the
screen has Claude Code's input box, typed text shows in it and Enter logs ``SUBMIT <text>`` and
moves on to an ordinary finished turn; when it shows a menu instead, the first key logs
``KEY <key>`` and moves on the same way, or to ``after`` (another recorded screen: what the CLI
showed after that answer). Either way the recorded state ends, as it would.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import libtmux
from libtmux.test.retry import retry_until

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "corpus" / "claude"

REPLAY = r"""#!PYTHON
import os, sys, tty, select

screen_path, log_path = sys.argv[1], sys.argv[2]
after_path = sys.argv[3] if len(sys.argv) > 3 else ""
log = open(log_path, "a", buffering=1)
rule = lambda r: r.strip() and set(r.strip()) <= set("─")

def load(path):
    rows = open(path, encoding="utf-8").read().split("\n")[2:42]
    for i in range(len(rows) - 2, 0, -1):
        if rows[i].startswith("❯") and rule(rows[i - 1]) and rule(rows[i + 1]):
            return rows, i
    return rows, None

rows, box = load(screen_path)
buf = ""

def draw():
    shown = list(rows)
    if box is not None:
        shown[box] = "❯ " + buf
    sys.stdout.write("\x1b[H\x1b[2J" + "\r\n".join(r[:120] for r in shown))
    sys.stdout.flush()

def finish(what):
    global rows, box, buf
    line = "─" * 120
    rows = [what, "", "● Carrying on.", "", "✻ Worked for 1s", line, "❯ ", line, "  ? for shortcuts"]
    box, buf = 6, ""
    draw()

fd = sys.stdin.fileno()
tty.setraw(fd)
draw()
log.write("READY\n")
done = False
while True:
    select.select([fd], [], [])
    data = os.read(fd, 4096)
    log.write("RAW " + repr(data) + "\n")
    if done:
        continue
    text = data.decode("utf-8", "replace")
    if box is None:
        log.write("KEY " + repr(text) + "\n")
        if after_path:  # the screen the real CLI showed after this answer
            rows, box = load(after_path)
            after_path = ""
            draw()
        else:
            finish("❯ (answered " + repr(text) + ")")
        continue
    for ch in text:
        if ch == "\r":
            log.write("SUBMIT " + buf + "\n")
            finish("❯ " + buf)
            done = True
            break
        if ch == "\x7f":
            buf = buf[:-1]
        elif ch.isprintable():
            buf += ch
    draw()
"""


@dataclass
class ReplayPane:
    pane_id: str
    log: Path

    def lines(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    def submitted(self) -> list[str]:
        return [line.removeprefix("SUBMIT ") for line in self.lines() if line.startswith("SUBMIT ")]

    def raw(self) -> list[str]:
        return [line for line in self.lines() if line.startswith("RAW ")]


def corpus_screen(version: str, name: str) -> Path:
    return CORPUS / version / f"{name}.txt"


def start_replay(
    server: libtmux.Server, tmp: Path, name: str, screen: Path, after: Path | None = None
) -> ReplayPane:
    """A session ``name`` whose pane shows ``screen`` until a key ends it (see the module)."""
    bindir = tmp / "replay-bin"
    agent = bindir / "claude"
    if not agent.exists():
        bindir.mkdir(parents=True, exist_ok=True)
        agent.write_text(REPLAY.replace("#!PYTHON", f"#!{sys.executable}"))
        agent.chmod(0o755)
    log = tmp / f"{name}.log"
    session = server.new_session(
        session_name=name,
        x=120,
        y=40,
        window_command=f"{agent} {screen} {log}" + (f" {after}" if after else ""),
    )
    server.cmd("set-option", "-t", str(session.session_id), "window-size", "manual")
    pane = session.active_window.active_pane
    assert pane is not None and pane.pane_id is not None
    replay = ReplayPane(pane.pane_id, log)
    assert retry_until(lambda: "READY" in replay.lines(), 10, raises=False), "replay agent did not start"
    return replay
