"""Capture the screen corpus tests/corpus/claude/<version>/ from the real Claude Code CLI.

    .venv/bin/python -m tests.realclaude.capture_corpus                      # primary version
    .venv/bin/python -m tests.realclaude.capture_corpus --versions 2.1.100 2.1.150 2.1.197 2.1.265 2.1.332
    .venv/bin/python -m tests.realclaude.capture_corpus --only permission_bash plan_approval

Each recipe starts one agent (own scripted API, HOME and 120x40 pane on a private tmux server),
drives it to a state, waits for that state's text, lets the frame settle and captures the pane
twice: plain (``<name>.txt``) and with escapes (``<name>.ansi``). Each file has two header lines
(``# claude-code <version> · 120x40 · capture-pane -p[e]`` and ``# state: <states> · <what>``)
and then the 40 pane rows. ``labels.tsv`` per version lists every file with its allowed states
(the first is the expected one) and notes (``choice=<words>`` for plan menus).
Versions not yet installed are installed with install-claude-code.sh.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import libtmux

from tests.realclaude.harness import (
    COLS,
    INSTALL_SCRIPT,
    PRIMARY_VERSION,
    ROWS,
    Ask,
    Bash,
    ClaudeAgent,
    ClaudeBinary,
    ClaudeFleet,
    Error,
    Plan,
    Slow,
    ToolUse,
    find_claude,
    looks_idle,
    looks_working,
    usage_limit,
)

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "corpus" / "claude"
SETTLE = 0.8  # seconds to let a frame finish drawing before capture (not an assertion)
NO_RETRY = {"CLAUDE_CODE_MAX_RETRIES": "0"}


@dataclass(frozen=True)
class Recipe:
    """How to reach one state: start options, then a driver that returns when it is on screen."""

    name: str
    states: str  # allowed states, comma-separated, expected first
    what: str
    drive: Callable[[ClaudeAgent], object]
    scenario: Sequence[Any] = ()
    options: dict[str, Any] = field(default_factory=dict)
    notes: str = ""
    # Some screens exist only in some versions: the driver raises Skip when it is not there.


class Skip(Exception):
    """This version does not show the screen the recipe is after."""


def _prompt_then(
    text: str, until: str | Callable[[str], bool], timeout: float = 30
) -> Callable[[ClaudeAgent], object]:
    def drive(agent: ClaudeAgent) -> None:
        agent.submit(text)
        agent.wait_for(until, timeout)

    return drive


LIMIT_RESET = time.time() + 2 * 3600 + 600
"""The usage-limit recipes' reset: two hours and more ahead, so no capture sees it pass."""
LIMIT_OPTIONS: dict[str, Any] = {"oauth": True, "extra_env": NO_RETRY}


def _limit_shown(screen: str) -> bool:
    """The limit line, then either 2.1.1xx's menu or 2.1.2xx-3xx's automatic-continue footer."""
    return "limit" in screen and (
        "What do you want to do?" in screen or "automatically at" in screen
    )


def _drive_limited(agent: ClaudeAgent) -> None:
    agent.submit("hello")
    agent.wait_for(_limit_shown, 30)


def _drive_limited_after_wait(agent: ClaudeAgent) -> None:
    _drive_limited(agent)
    if "What do you want to do?" not in agent.screen():
        raise Skip("no usage-limit menu in this version (it continues by itself)")
    agent.press("Enter")  # 1. Stop and wait for limit to reset
    agent.wait_for(lambda s: "What do you want to do?" not in s and looks_idle(s), 15)


def _drive_idle_typed(agent: ClaudeAgent) -> None:
    agent.type("refactor the parser and add tests")
    agent.wait_for("refactor the parser and add tests")


def _drive_idle_after_reply(agent: ClaudeAgent) -> None:
    agent.submit("say hello")
    agent.wait_for("Hello from the scripted API.")
    agent.wait_idle()


def _drive_working(agent: ClaudeAgent) -> None:
    agent.submit("think it through slowly")
    agent.wait_for(lambda s: looks_working(s) and "tokens" in s, 30)


def _drive_working_typed(agent: ClaudeAgent) -> None:
    _drive_working(agent)
    agent.type("also update the docs")
    agent.wait_for("also update the docs")


def _drive_working_tool(agent: ClaudeAgent) -> None:
    agent.submit("wait for the build")
    agent.wait_for(lambda s: looks_working(s) and "time.sleep" in s, 30)
    time.sleep(2)  # let the tool's elapsed-time line appear (not an assertion)


def _drive_thinking(agent: ClaudeAgent) -> None:
    agent.submit("think hard about it")
    agent.wait_for(looks_working, 30)
    time.sleep(3)  # let the thinking stream a few words (not an assertion)
    agent.wait_for(looks_working, 5)


def _drive_queued(agent: ClaudeAgent) -> None:
    _drive_working(agent)
    agent.submit("also update the docs")
    agent.wait_for(lambda s: looks_working(s) and "also update the docs" in s, 10)


def _drive_rejected(agent: ClaudeAgent) -> None:
    agent.submit("make a notes file")
    agent.wait_for("Do you want to proceed?", 30)
    agent.press("Escape")
    agent.wait_idle()


def _drive_long_output(agent: ClaudeAgent) -> None:
    agent.submit("count to 300")
    agent.wait_for("Counted.", 30)
    agent.wait_idle()


def _drive_interrupted(agent: ClaudeAgent) -> None:
    _drive_working(agent)
    agent.press("Escape")
    agent.wait_for("Interrupted", 15)
    agent.wait_idle()


def _drive_plan_mode_idle(agent: ClaudeAgent) -> None:
    agent.wait_for(lambda s: "plan mode on" in s and looks_idle(s), 30)


def _drive_auto_nudge(agent: ClaudeAgent) -> None:
    try:
        agent.wait_for(lambda s: "default permission mode?" in s, 8)
    except TimeoutError as exc:
        raise Skip("no auto-mode nudge in this version") from exc


def _drive_error_retrying(agent: ClaudeAgent) -> None:
    agent.submit("hello")
    try:
        agent.wait_for(lambda s: "retrying in" in s or "Retrying in" in s, 20)
    except TimeoutError as exc:
        raise Skip("this version shows no retry line for a 401") from exc


def _drive_exit(agent: ClaudeAgent) -> None:
    agent.submit("say hello")
    agent.wait_for("Hello from the scripted API.")
    agent.wait_idle()
    agent.exit()


def _shell_back(agent: ClaudeAgent, timeout: float = 20) -> None:
    """Wait until the pane's shell is in front again (the screen alone cannot say)."""
    deadline = time.monotonic() + timeout
    while agent.current_command() != "bash":
        if time.monotonic() > deadline:
            raise TimeoutError(f"{agent.name}: Claude Code did not exit; screen was:\n{agent.screen()}")
        time.sleep(0.1)


def _drive_ctrl_c_exit(agent: ClaudeAgent) -> None:
    """Ctrl-C twice at a fresh start: nothing to resume, so no "claude --resume" line."""
    agent.wait_idle()
    agent.press("C-c")
    with contextlib.suppress(TimeoutError):  # 2.1.3xx may not say it before the second press
        agent.wait_for("again to exit", 5)
    agent.press("C-c")
    _shell_back(agent)


def _drive_error_exit(agent: ClaudeAgent) -> None:
    """An API error ends the only turn, then /exit: the error stays above the shell prompt."""
    agent.submit("hello")
    agent.wait_for(lambda s: "Overloaded" in s and looks_idle(s), 30)
    agent.exit()


def _drive_fresh_exit(agent: ClaudeAgent) -> None:
    agent.wait_idle()
    agent.exit()


SHELL_LINES_REPLY = "\n".join(
    [
        "Here is what the session looked like:",
        "",
        "$ npm test",
        "root@build:~/work# make",
        "bash-5.2$",
        "Resume this session with:",
        "claude --resume 0f8e4c2a-1b3d-4e5f-8a9b-0c1d2e3f4a5b",
        "$",
    ]
)
"""A reply that shows a shell session and an exit message: text inside the conversation,
above a live input box, never a sign that Claude Code exited."""

DEBIAN_PS1 = {"extra_env": {"PS1": r"\u@\h:\w\$ "}}
"""Debian's default prompt (``root@host:/path#``) instead of the harness's ``$ ``."""
BASH_PS1 = {"extra_env": {"PS1": r"\s-\v\$ ", **NO_RETRY}}
"""bash's built-in prompt (``bash-5.2#``), as ``bash --norc`` shows it."""


def _drive_trust_moved(agent: ClaudeAgent) -> None:
    agent.wait_for("trust this folder", 30)
    before = agent.screen()
    agent.press("Down")
    agent.wait_for(lambda s: s != before and "trust this folder" in s, 10)


PLAN_OPTS: dict[str, Any] = {"permission_mode": "plan"}
BYPASS_OPTS: dict[str, Any] = {
    "permission_mode": "plan",
    "args": ["--allow-dangerously-skip-permissions"],
    "extra_env": {"IS_SANDBOX": "1"},  # root may use bypass mode only in a sandbox
    "config": {"bypassPermissionsModeAccepted": True},
}

LONG_FOLDER = "projects/" + "a-project-folder-whose-name-is-long-enough-that-the-trust-dialog-wraps-its-path" + "/work"
"""The work folder of ``dialog_trust_long``, inside the agent's HOME: the dialog shows the whole
path (never ``~``), wrapped onto a second row."""

RECIPES: list[Recipe] = [
    Recipe("idle_empty", "idle", "fresh start, empty prompt", lambda a: a.wait_idle()),
    Recipe("idle_typed", "idle", "text typed in the prompt, not sent", _drive_idle_typed),
    Recipe(
        "idle_after_reply",
        "idle",
        "a finished turn (past-tense spinner line) and an empty prompt",
        _drive_idle_after_reply,
        ["Hello from the scripted API."],
    ),
    Recipe(
        "idle_default_mode",
        "idle",
        "idle in the version's own default permission mode (auto mode from 2.1.3xx)",
        lambda a: a.wait_idle(),
        (),
        {"permission_mode": None},
    ),
    Recipe(
        "working_default_mode",
        "working",
        "streaming in the version's own default permission mode",
        _drive_working,
        [Slow(60)],
        {"permission_mode": None},
    ),
    Recipe(
        "working_streaming",
        "working",
        "a reply streaming: spinner line with elapsed time and tokens",
        _drive_working,
        [Slow(60)],
    ),
    Recipe(
        "working_typed",
        "working",
        "working, with the next message typed in the prompt",
        _drive_working_typed,
        [Slow(60)],
    ),
    Recipe(
        "working_tool",
        "working",
        "an allowed Bash command running for 30 s",
        _drive_working_tool,
        # Newer versions block a bare `sleep N`; a python sleep is just a slow command.
        [Bash("python3 -c 'import time; time.sleep(30)' && echo built", "Wait for the build")],
        {"settings": {"permissions": {"allow": ["Bash"]}}},
    ),
    Recipe(
        "working_thinking",
        "working",
        "extended thinking being streamed",
        _drive_thinking,
        [Slow(60, "Let me weigh the options one by one before I answer.", thinking=True)],
    ),
    Recipe(
        "working_queued",
        "working",
        "working, with a second message sent and queued",
        _drive_queued,
        [Slow(60)],
    ),
    Recipe(
        "permission_bash",
        "permission",
        "Bash tool permission prompt (command outside the work folder)",
        _prompt_then("list the root folder", "Do you want to proceed?"),
        [Bash("ls -la /", "List the root folder")],
    ),
    Recipe(
        "permission_bash_workdir",
        "permission",
        "Bash permission prompt for a command inside the work folder",
        _prompt_then("make a notes file", "Do you want to proceed?"),
        [Bash("touch notes.txt && echo created", "Create notes file")],
    ),
    Recipe(
        "permission_write",
        "permission",
        "file-creation permission prompt (Write tool)",
        _prompt_then("write a notes file", lambda s: "Do you want to" in s),
        [ToolUse("Write", {"file_path": "{workdir}/notes.md", "content": "# Notes\n\nhello\n"})],
    ),
    Recipe(
        "question",
        "question",
        "AskUserQuestion menu",
        _prompt_then("ask me something", "Enter to select"),
        [Ask("Which colour should the button be?", ["Red", "Blue"], header="Colour")],
    ),
    Recipe(
        "plan_mode_idle",
        "idle",
        "idle in plan mode (footer: plan mode on)",
        _drive_plan_mode_idle,
        (),
        PLAN_OPTS,
    ),
    Recipe(
        "plan_approval",
        "plan",
        "ExitPlanMode approval menu (plan mode, default permissions)",
        _prompt_then("plan the change", "Would you like to proceed?"),
        [Plan()],
        PLAN_OPTS,
    ),
    Recipe(
        "plan_approval_bypass",
        "plan",
        "ExitPlanMode approval menu when bypass mode is allowed",
        _prompt_then("plan the change", "Would you like to proceed?"),
        [Plan()],
        BYPASS_OPTS,
    ),
    Recipe(
        "interrupted",
        "idle",
        "after Esc interrupted a streaming reply",
        _drive_interrupted,
        [Slow(60)],
    ),
    Recipe(
        "idle_after_rejection",
        "idle",
        "after Esc refused a Bash permission prompt",
        _drive_rejected,
        [Bash("touch notes.txt && echo created", "Create notes file")],
    ),
    Recipe(
        "idle_long_output",
        "idle",
        "after an allowed command printed 300 lines (collapsed output)",
        _drive_long_output,
        [Bash("seq 1 300", "Count to 300"), "Counted."],
        {"settings": {"permissions": {"allow": ["Bash"]}}},
    ),
    Recipe(
        "dialog_trust",
        "dialog",
        "startup: workspace trust dialog",
        lambda a: a.wait_for(lambda s: "trust" in s.lower() and "1." in s, 30),
        (),
        {"trust": False, "wait": False},
    ),
    Recipe(
        "dialog_trust_moved",
        "dialog",
        "startup: workspace trust dialog after one Down (the mark on the second option)",
        _drive_trust_moved,
        (),
        {"trust": False, "wait": False},
    ),
    Recipe(
        "dialog_trust_long",
        "dialog",
        "startup: workspace trust dialog for a folder inside HOME whose path wraps in 120 columns",
        lambda a: a.wait_for("trust this folder", 30),
        (),
        {"trust": False, "wait": False, "workdir_in_home": LONG_FOLDER},
    ),
    Recipe(
        "dialog_bypass",
        "dialog",
        "startup with --permission-mode bypassPermissions: the confirmation (No, exit selected)",
        lambda a: a.wait_for("Yes, I accept", 30),
        (),
        {
            "args": ["--permission-mode", "bypassPermissions"],
            "extra_env": {"IS_SANDBOX": "1"},  # root may use bypass mode only in a sandbox
            "wait": False,
        },
    ),
    Recipe(
        "dialog_api_key",
        "dialog",
        "startup: custom API key approval",
        lambda a: a.wait_for("use this API key?", 30),
        (),
        {"approve_key": False, "wait": False},
    ),
    Recipe(
        "dialog_auto_mode_nudge",
        "dialog",
        'startup in plan mode: "Make auto mode your default permission mode?"',
        _drive_auto_nudge,
        (),
        {"permission_mode": "plan", "config": {"hasSeenAutoDefaultNudge": False}, "wait": False},
    ),
    # The API-error screens are `error` only: the turn ended in the error, and its line is the
    # latest thing above the input box (each recipe waits for that line before it captures).
    # `idle` is for a later turn that ended well under an old error; a capture showing just an
    # idle prompt would be a miscapture to redo, never a second acceptable label.
    Recipe(
        "error_overloaded",
        "error",
        "API error 529 after the turn ended (retries off)",
        _prompt_then("hello", lambda s: "Overloaded" in s and looks_idle(s)),
        [Error(529, times=None)],
        {"extra_env": NO_RETRY},
    ),
    Recipe(
        "error_auth",
        "error",
        "API error 401 invalid key after the turn ended (retries off)",
        _prompt_then("hello", lambda s: ("API key" in s or "401" in s) and looks_idle(s)),
        [Error(401, times=None)],
        {"extra_env": NO_RETRY},
    ),
    Recipe(
        "error_server_500",
        "error",
        "API error 500 after the turn ended (retries off)",
        _prompt_then("hello", lambda s: "Internal server error" in s and looks_idle(s)),
        [Error(500, times=None)],
        {"extra_env": NO_RETRY},
    ),
    Recipe(
        "error_rate_limit",
        "error",
        "API error 429 rate limit after the turn ended (retries off)",
        _prompt_then("hello", lambda s: "429" in s and "hello" in s and looks_idle(s)),
        [Error(429, times=None)],
        {"extra_env": NO_RETRY},
    ),
    # Usage limits need subscription auth (an OAuth token; with an API key a 429 is a plain API
    # error, above) and a 429 with the unified rate-limit headers.
    Recipe(
        "limited_session",
        "limited",
        "session (5-hour) usage limit hit: 2.1.1xx's menu, or 2.1.2xx+'s automatic continue",
        _drive_limited,
        [usage_limit(LIMIT_RESET, "five_hour", times=None)],
        LIMIT_OPTIONS,
    ),
    Recipe(
        "limited_weekly",
        "limited",
        "weekly usage limit hit: 2.1.1xx's menu, or 2.1.2xx+'s automatic continue",
        _drive_limited,
        [usage_limit(LIMIT_RESET, "seven_day", times=None)],
        LIMIT_OPTIONS,
    ),
    Recipe(
        "limited_after_wait",
        "limited",
        "2.1.1xx: 'Stop and wait for limit to reset' chosen; an idle-looking box under the limit",
        _drive_limited_after_wait,
        [usage_limit(LIMIT_RESET, "five_hour", times=None)],
        LIMIT_OPTIONS,
    ),
    Recipe(
        "working_retrying",
        "working,error",
        "a 401 being retried (retry line, still interruptible)",
        _drive_error_retrying,
        [Error(401, times=None)],
    ),
    Recipe(
        "shell_after_exit",
        "unknown",
        "Claude Code exited (/exit); a shell prompt is left",
        _drive_exit,
        ["Hello from the scripted API."],
    ),
    Recipe(
        "shell_after_ctrl_c",
        "unknown",
        "Claude Code left with Ctrl-C twice at a fresh start (nothing to resume); a Debian shell prompt",
        _drive_ctrl_c_exit,
        (),
        DEBIAN_PS1,
    ),
    Recipe(
        "shell_after_error_exit",
        "unknown",
        "an API error (529) ended the only turn, then /exit; bash's own prompt",
        _drive_error_exit,
        [Error(529, times=None)],
        BASH_PS1,
    ),
    Recipe(
        "shell_after_fresh_exit",
        "unknown",
        "/exit at a fresh start (nothing to resume); a shell prompt is left",
        _drive_fresh_exit,
    ),
    Recipe(
        "idle_shell_lines_in_reply",
        "idle",
        "a finished reply that shows shell prompts and Claude Code's exit message, above the live input box",
        _prompt_then("show me the session", lambda s: "claude --resume 0f8e4c2a" in s and looks_idle(s)),
        [SHELL_LINES_REPLY],
    ),
]


def plan_choice(screen: str) -> str:
    """The option a no-prompt policy should pick on a plan menu: bypass, else auto."""
    lines = [ln.lower() for ln in screen.splitlines() if "Yes" in ln]
    for words in ("bypass permissions", "auto mode", "auto-accept edits"):
        if any(words in ln for ln in lines):
            return words
    return ""


# --- running -----------------------------------------------------------------------------------


def capture(server: libtmux.Server, pane_id: str, escapes: bool) -> str:
    """Exactly the pane's rows (``tmux capture-pane -p [-e]``), trailing blank rows kept."""
    cmd = ["tmux", "-L", str(server.socket_name), "capture-pane", "-p", "-t", pane_id]
    if escapes:
        cmd.insert(4, "-e")
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rows = out.split("\n")
    if rows and rows[-1] == "":
        rows.pop()
    return "\n".join(rows) + "\n"


def _fill(value: Any, agent_dirs: dict[str, str]) -> Any:
    if isinstance(value, str):
        return value.format(**agent_dirs)
    if isinstance(value, dict):
        return {k: _fill(v, agent_dirs) for k, v in value.items()}
    return value


def run_recipe(
    fleet: ClaudeFleet, recipe: Recipe, out: Path, version: str
) -> tuple[str, str, str] | None:
    options = dict(recipe.options)
    workdir = fleet.base / recipe.name / "work"
    steps = []
    for step in recipe.scenario:
        if isinstance(step, ToolUse):
            step = ToolUse(step.name, _fill(step.input, {"workdir": str(workdir)}), step.text)
        steps.append(step)
    agent = fleet.start(steps, name=recipe.name, **options)
    try:
        recipe.drive(agent)
    except Skip as why:
        print(f"  {version} {recipe.name}: skipped ({why})", file=sys.stderr)
        return None
    time.sleep(SETTLE)
    plain = capture(fleet.server, agent.pane_id, escapes=False)
    ansi = capture(fleet.server, agent.pane_id, escapes=True)
    notes = recipe.notes
    states = recipe.states
    if states.startswith("plan"):
        choice = plan_choice(plain)
        notes = f"choice={choice}" + (f" {notes}" if notes else "")
    header = f"# state: {states} · {recipe.what}\n"
    for suffix, text, how in ((".txt", plain, "-p"), (".ansi", ansi, "-p -e")):
        (out / f"{recipe.name}{suffix}").write_text(
            f"# claude-code {version} · {COLS}x{ROWS} · tmux capture-pane {how}\n" + header + text
        )
    print(f"  {version} {recipe.name}: {states}", file=sys.stderr)
    return recipe.name, states, notes


def ensure_installed(version: str) -> ClaudeBinary:
    found = find_claude(version)
    if isinstance(found, str):
        subprocess.run(["bash", str(INSTALL_SCRIPT), version], check=True, stdout=sys.stderr)
        found = find_claude(version)
    if isinstance(found, str):
        raise SystemExit(found)
    return found


def capture_version(version: str, only: Sequence[str], jobs: int) -> None:
    binary = ensure_installed(version)
    out = CORPUS / version
    out.mkdir(parents=True, exist_ok=True)
    recipes = [r for r in RECIPES if not only or r.name in only]
    # A stable, short base path so the folder shown on screen is the same at every capture.
    base = Path(tempfile.gettempdir()) / f"nbs-corpus-{version}"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    server = libtmux.Server(socket_name=f"nbs-corpus-{version}")
    fleet = ClaudeFleet(server, base, binary)
    rows: dict[str, tuple[str, str, str]] = {}
    failures: list[str] = []
    try:

        def one(recipe: Recipe) -> None:
            try:
                row = run_recipe(fleet, recipe, out, version)
            except Exception as exc:  # report every failed recipe, keep capturing the rest
                failures.append(f"{recipe.name}: {exc}")
                print(f"  {version} {recipe.name}: FAILED {exc}", file=sys.stderr)
                return
            if row is not None:
                rows[recipe.name] = row

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(one, recipes))
    finally:
        fleet.close()
        if server.is_alive():
            server.kill()
        # tmux leaves its socket file behind
        tmpdir = os.environ.get("TMUX_TMPDIR", "/tmp")
        (Path(tmpdir) / f"tmux-{os.getuid()}" / str(server.socket_name)).unlink(missing_ok=True)
    _write_labels(out, version, rows)
    if failures:
        raise SystemExit(f"{version}: {len(failures)} recipe(s) failed:\n" + "\n".join(failures))


def _write_labels(out: Path, version: str, new_rows: dict[str, tuple[str, str, str]]) -> None:
    """Merge into labels.tsv (a partial --only run keeps the other rows)."""
    path = out / "labels.tsv"
    old: dict[str, str] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            if line and not line.startswith("#"):
                old[line.split("\t", 1)[0]] = line
    for name, states, notes in new_rows.values():
        for suffix in (".txt", ".ansi"):
            old[name + suffix] = f"{name}{suffix}\t{states}\t{notes}".rstrip("\t")
    order = {r.name: i for i, r in enumerate(RECIPES)}

    def key(fname: str) -> tuple[int, str]:
        stem = fname.rsplit(".", 1)[0]
        return order.get(stem, len(order)), fname

    header = (
        f"# Claude Code {version}, pane {COLS}x{ROWS}, captured by "
        "tests/realclaude/capture_corpus.py\n# file\tallowed states (comma, expected first)\tnotes\n"
    )
    path.write_text(header + "".join(old[f] + "\n" for f in sorted(old, key=key)))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--versions", nargs="+", default=[PRIMARY_VERSION])
    parser.add_argument("--only", nargs="+", default=[], help="recipe names")
    parser.add_argument("--jobs", type=int, default=3, help="agents driven at once")
    parser.add_argument("--list", action="store_true", help="list the recipes and exit")
    args = parser.parse_args(argv)
    if args.list:
        for r in RECIPES:
            print(f"{r.name}\t{r.states}\t{r.what}")
        return
    unknown = set(args.only) - {r.name for r in RECIPES}
    if unknown:
        parser.error(f"unknown recipes: {', '.join(sorted(unknown))}")
    for version in args.versions:
        start = time.monotonic()
        capture_version(version, args.only, args.jobs)
        print(f"== {version}: {time.monotonic() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
