"""Run the real Claude Code CLI in tmux panes against a scripted local Messages API.

API summary (fixtures come from tests/realclaude/conftest.py)::

    claude_binary -> ClaudeBinary(path, version)       # skips the test when not installed
    claude_fleet  -> ClaudeFleet                       # on libtmux's private ``server``

    fleet.start(scenario=(), *, name=None, trust=True, approve_key=True, onboarded=True,
                permission_mode="default", settings=None, config=None, extra_env=None,
                args=(), wait=True) -> ClaudeAgent
    fleet.start_many(*scenarios, wait=True, **options) -> list[ClaudeAgent]   # concurrently
    fleet.agents                                       # every agent started, in order

    agent.pane, agent.pane_id, agent.server            # libtmux Pane, "%3", libtmux Server
    agent.api                                          # its FakeAPI: .prompts(), .requests, .add()
    agent.home, agent.workdir                          # throw-away HOME and work folder (Paths)
    agent.screen(escapes=False) -> str                 # capture-pane text (-e with escapes)
    agent.wait_for(text_or_predicate, timeout=20) -> str   # bounded poll; returns the screen
    agent.wait_idle(timeout=20) -> str                 # the prompt is back and nothing runs
    agent.wait_working(timeout=20) -> str              # "esc to interrupt" in the footer
    agent.type(text) / agent.press(*keys)              # literal text / tmux key names, paced
    agent.submit(text)                                 # type, Enter, wait until it was taken
    agent.session_status() -> dict | None              # ~/.claude/sessions/<pid>.json
    agent.exit()                                       # /exit; waits for the pane's shell
    agent.current_command() -> str                     # #{pane_current_command}: claude / bash

``permission_mode="default"`` makes every version ask before tools (2.1.3xx would otherwise start
in auto mode); ``"plan"`` starts in plan mode; ``None`` keeps the version's own default.
Scenario steps (``Text``, ``Slow``, ``Bash``, ``ToolUse``, ``Plan``, ``Ask``, ``Error``) are
re-exported from :mod:`tests.realclaude.fakeapi`. Full guide: tests/realclaude/README.md. Each pane is its own tmux session of 120x40;
the agent runs through ``<home>/launch.sh`` (which sets HOME and the offline env explicitly,
since a tmux server started earlier would hand new panes its own environment) and leaves an
interactive shell behind when Claude Code exits.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import libtmux

from tests.realclaude.fakeapi import (
    Ask,
    Bash,
    Error,
    FakeAPI,
    Plan,
    Scenario,
    Slow,
    Step,
    Text,
    ToolUse,
    Usage,
    usage_limit,
)

__all__ = [
    "COLS",
    "PRIMARY_VERSION",
    "ROWS",
    "Ask",
    "Bash",
    "ClaudeAgent",
    "ClaudeBinary",
    "ClaudeFleet",
    "Error",
    "FakeAPI",
    "Plan",
    "Scenario",
    "Slow",
    "Step",
    "Text",
    "ToolUse",
    "Usage",
    "find_claude",
    "input_text",
    "looks_idle",
    "looks_working",
    "usage_limit",
]

HERE = Path(__file__).resolve().parent
INSTALL_SCRIPT = HERE / "install-claude-code.sh"
COLS, ROWS = 120, 40
KEY_GAP = 0.2  # seconds before each key press (pacing, not an assertion)


def _primary_version() -> str:
    """The version pinned in install-claude-code.sh (one source of truth)."""
    match = re.search(r"^PRIMARY_VERSION=(\S+)", INSTALL_SCRIPT.read_text(), re.M)
    return match.group(1) if match else "2.1.332"


PRIMARY_VERSION = _primary_version()

# Variables from the surrounding process that would change how the agent behaves (e.g. when the
# tests run inside a Claude Code session): launch.sh unsets them before setting its own.
_SCRUB_PREFIXES = ("CLAUDE", "ANTHROPIC", "OTEL_", "AWS_", "VERTEX_", "GOOGLE_", "MCP_", "NBS_")

OFFLINE_ENV = {
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
}

NBS_POLL_COMMAND = """\
---
description: nbs-tui poll (injected by the dashboard when the agent is idle)
---
Check your inbox and the registry for new work. If there is nothing to do, reply "idle".
"""


# --- finding the binary ------------------------------------------------------------------------


@dataclass(frozen=True)
class ClaudeBinary:
    path: Path
    version: str


def cache_root() -> Path:
    env = os.environ.get("NBS_CLAUDE_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "nbs-tui" / "claude-code"


def find_claude(version: str | None = None) -> ClaudeBinary | str:
    """The installed binary for ``version`` (default: $NBS_CLAUDE_VERSION or the pinned
    primary), or a reason string saying why there is none. $NBS_CLAUDE_BIN points at any binary
    (its version is then asked from it)."""
    explicit = os.environ.get("NBS_CLAUDE_BIN")
    if explicit and version is None:
        path = Path(explicit)
        if not os.access(path, os.X_OK):
            return f"NBS_CLAUDE_BIN={explicit} is not executable"
        return ClaudeBinary(path, _ask_version(path) or "unknown")
    version = version or os.environ.get("NBS_CLAUDE_VERSION") or PRIMARY_VERSION
    # node_modules/.bin/claude links bin/claude.exe (native) or, up to ~2.1.100, cli.js (node).
    link = cache_root() / version / "node_modules" / ".bin" / "claude"
    path = link.resolve()
    if not link.exists() or not os.access(path, os.X_OK):
        return (
            f"Claude Code {version} is not installed in {cache_root() / version}: "
            f"run `bash tests/realclaude/install-claude-code.sh {version}` (needs npm)"
        )
    return ClaudeBinary(path, version)


def _ask_version(path: Path) -> str | None:
    try:
        out = subprocess.run(
            [str(path), "--version"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.match(r"(\d+\.\d+\.\d+)", out.strip())
    return match.group(1) if match else None


# --- screen heuristics for the harness's own waits (the product's detector lives elsewhere) ---


def looks_working(screen: str) -> bool:
    """A turn is in progress: the footer offers to interrupt."""
    return "esc to interrupt" in screen.lower()


def looks_idle(screen: str) -> bool:
    """The input prompt is on screen and no turn, menu or dialog is open.

    Deliberately simple: enough for the harness to know when to send the next key.
    """
    lower = screen.lower()
    if looks_working(screen) or "do you want" in lower or "would you like" in lower:
        return False
    if "enter to select" in lower or "esc to cancel" in lower:
        return False
    return any(line.lstrip().startswith("❯") for line in screen.splitlines()) and (
        "for shortcuts" in lower or "─" in screen
    )


def _is_rule(line: str) -> bool:
    body = line.strip()
    return len(body) >= 20 and set(body) <= {"─"}


def input_text(screen: str) -> str | None:
    """The first line of the text in the input box (between two ``────`` rules, after ``❯``),
    ``""`` for an empty box, ``None`` when no input box is on screen."""
    lines = screen.splitlines()
    for i in range(len(lines) - 1, 0, -1):
        line = lines[i].replace("\xa0", " ")
        if line.startswith("❯") and _is_rule(lines[i - 1]):
            return line[1:].strip()
    return None


# --- one agent ---------------------------------------------------------------------------------


@dataclass
class ClaudeAgent:
    """One Claude Code process in its own tmux pane (120x40), with its own API and HOME."""

    name: str
    pane: libtmux.Pane
    server: libtmux.Server
    api: FakeAPI
    home: Path
    workdir: Path
    api_key: str
    binary: ClaudeBinary

    @property
    def pane_id(self) -> str:
        return str(self.pane.pane_id)

    @property
    def version(self) -> str:
        return self.binary.version

    # looking

    def screen(self, escapes: bool = False) -> str:
        """The visible pane (``escapes``: with SGR sequences, as ``capture-pane -e``)."""
        args = ["capture-pane", "-p", "-t", self.pane_id]
        if escapes:
            args.insert(1, "-e")
        return "\n".join(self.server.cmd(*args).stdout)

    def wait_for(
        self,
        what: str | re.Pattern[str] | Callable[[str], bool],
        timeout: float = 20.0,
        *,
        interval: float = 0.1,
    ) -> str:
        """Poll the screen until ``what`` (a substring, a regex, or a predicate of the screen
        text) holds; return that screen. On timeout raise ``TimeoutError`` showing the screen."""
        check: Callable[[str], bool]
        if isinstance(what, str):
            needle = what
            check = lambda s: needle in s  # noqa: E731
        elif isinstance(what, re.Pattern):
            pattern = what
            check = lambda s: pattern.search(s) is not None  # noqa: E731
        else:
            check = what
        deadline = time.monotonic() + timeout
        screen = ""
        while True:
            screen = self.screen()
            if check(screen):
                return screen
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"{self.name}: waited {timeout:.0f}s for {what!r}; screen was:\n{screen}"
                )
            time.sleep(interval)

    def wait_idle(self, timeout: float = 20.0) -> str:
        return self.wait_for(looks_idle, timeout)

    def wait_working(self, timeout: float = 20.0) -> str:
        return self.wait_for(looks_working, timeout)

    # typing

    def type(self, text: str) -> None:
        """Type ``text`` literally (no Enter)."""
        self.server.cmd("send-keys", "-t", self.pane_id, "-l", text)

    def press(self, *keys: str) -> None:
        """Press tmux key names, e.g. ``press("Escape")``, ``press("Down", "Enter")``.

        Keys are paced (0.2 s before each) as a person's would be: Ink menus take a moment
        after they appear before they listen, and two keys in one read can be taken as one.
        """
        for key in keys:
            time.sleep(KEY_GAP)
            self.server.cmd("send-keys", "-t", self.pane_id, key)

    def press_until(
        self, key: str, done: str | re.Pattern[str] | Callable[[str], bool], *, tries: int = 3, each: float = 3.0
    ) -> str:
        """Press ``key`` until the screen shows ``done``; return that screen.

        An Ink menu ignores keys for a moment after it appears and nothing on screen says when
        it starts listening: instead of a fixed sleep, a key that changed nothing within ``each``
        seconds is pressed again (a taken key changes the screen within milliseconds)."""
        for attempt in range(1, tries + 1):
            self.press(key)
            try:
                return self.wait_for(done, each)
            except TimeoutError:
                if attempt == tries:
                    raise
        raise AssertionError("unreachable")

    def submit(self, text: str, timeout: float = 10.0) -> None:
        """Type ``text`` and press Enter. When the text showed in the input box, also wait until
        the box no longer holds it, so a wait that follows cannot see the pre-Enter screen.
        (Typed into a menu or dialog instead, it just presses Enter.)"""
        self.type(text)
        head = text.strip().splitlines()[0][:60] if text.strip() else ""

        def in_box(s: str) -> bool:
            return head in (input_text(s) or "")

        seen = False
        if head:
            try:
                self.wait_for(in_box, 3)
                seen = True
            except TimeoutError:
                pass
        self.press("Enter")
        if seen:
            self.wait_for(lambda s: not in_box(s), timeout)

    def current_command(self) -> str:
        """tmux's ``#{pane_current_command}``: ``claude`` while it runs, ``bash`` after."""
        out = self.server.cmd("display-message", "-p", "-t", self.pane_id, "#{pane_current_command}")
        return out.stdout[0] if out.stdout else ""

    def exit(self, timeout: float = 30.0) -> str:
        """Quit Claude Code with /exit, wait until the pane's shell is back in front, and return
        the screen. (The screen alone cannot tell: inline versions leave their last frame.)

        If the CLI still sits at an empty prompt a while after Enter (keys lost on a loaded
        machine), /exit is typed once more.
        """
        deadline = time.monotonic() + timeout

        def shell_back() -> bool:
            return self.current_command() == "bash"

        for attempt in (1, 2):
            self.type("/exit")
            with contextlib.suppress(TimeoutError):
                self.wait_for(lambda s: "/exit" in (input_text(s) or ""), 5)
            self.press("Enter")
            wait = max(1.0, deadline - time.monotonic()) if attempt == 2 else 10.0
            end = time.monotonic() + wait
            while time.monotonic() < end:
                if shell_back():
                    return self.screen()
                time.sleep(0.1)
            screen = self.screen()
            if not (looks_idle(screen) and input_text(screen) == ""):
                break  # not ignored, just slow: keep waiting below
        end = deadline
        while time.monotonic() < end:
            if shell_back():
                return self.screen()
            time.sleep(0.1)
        raise TimeoutError(f"{self.name}: Claude Code did not exit; screen was:\n{self.screen()}")

    # exact signals

    def session_status(self) -> dict[str, Any] | None:
        """The newest ``~/.claude/sessions/<pid>.json`` of this agent (status idle|busy|waiting)."""
        folder = self.home / ".claude" / "sessions"
        files = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime) if folder.is_dir() else []
        for path in reversed(files):
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(data, dict):
                return data
        return None


# --- the fleet ---------------------------------------------------------------------------------


def _auth_env(key: str, oauth: bool, account_dir: Path | None, oauth_token: str | None) -> dict[str, str]:
    if account_dir is not None:
        found = {"CLAUDE_CONFIG_DIR": str(account_dir)}
        return found if oauth_token is not None else {**found, "ANTHROPIC_API_KEY": key}
    return {"CLAUDE_CODE_OAUTH_TOKEN": key} if oauth else {"ANTHROPIC_API_KEY": key}


class ClaudeFleet:
    """Starts agents on one private tmux server; stops their APIs at ``close()``."""

    def __init__(self, server: libtmux.Server, base: Path, binary: ClaudeBinary) -> None:
        self.server = server
        self.base = base
        self.binary = binary
        self.agents: list[ClaudeAgent] = []
        self._apis: list[FakeAPI] = []

    def start(
        self,
        scenario: Scenario = (),
        *,
        name: str | None = None,
        trust: bool = True,
        approve_key: bool = True,
        onboarded: bool = True,
        permission_mode: str | None = "default",
        settings: Mapping[str, Any] | None = None,
        config: Mapping[str, Any] | None = None,
        extra_env: Mapping[str, str] | None = None,
        args: Sequence[str] = (),
        wait: bool = True,
        oauth: bool = False,
        workdir_in_home: str | None = None,
        account_dir: Path | None = None,
        oauth_token: str | None = None,
    ) -> ClaudeAgent:
        """Start one agent with its own scenario, API server, HOME and work folder.

        ``trust``/``approve_key``/``onboarded`` False leave that part of ``~/.claude.json`` out
        (to reach the trust dialog, the API-key question, onboarding). ``permission_mode`` goes
        into the settings as ``permissions.defaultMode`` ("default" asks before tools, as the
        tests expect; newer versions otherwise start in "auto"; "plan" starts in plan mode;
        ``None`` keeps the version's own default). ``settings`` is written to
        ``~/.claude/settings.json``; ``config`` is merged over the top level of
        ``~/.claude.json`` (e.g. ``{"hasSeenAutoDefaultNudge": False}``); ``extra_env`` overrides the environment; ``args`` go on the
        command line (e.g. ``["--permission-mode", "plan"]``). ``wait``: return once the idle
        prompt shows (only when no dialog is expected; otherwise return at once). ``oauth``:
        authenticate as a subscription (``CLAUDE_CODE_OAUTH_TOKEN``, no API key), as the
        usage-limit screens need. ``workdir_in_home``: the work folder is this path inside the
        agent's HOME instead of ``<tmp>/<name>/work`` (Claude Code then shows it as ``~/...``).
        ``account_dir``: run under this ``CLAUDE_CONFIG_DIR`` (an account, shared by the agents
        given the same folder): ``.claude.json`` and ``settings.json`` are written there, and with
        ``oauth_token`` an OAuth login (``.credentials.json``) and no key in the environment, so
        the token reaches the API as ``Bearer`` (notes: "Usage in the status line").
        """
        name = name or f"agent{len(self.agents) + 1}"
        if any(a.name == name for a in self.agents):
            raise ValueError(f"agent name {name!r} already used")
        api = FakeAPI(scenario, name=name).start()
        self._apis.append(api)
        root = self.base / name
        home = root / "home"
        workdir = home / workdir_in_home if workdir_in_home else root / "work"
        home.mkdir(parents=True)
        workdir.mkdir(parents=True)
        home, workdir = home.resolve(), workdir.resolve()
        key = f"sk-ant-api03-nbs-tui-test-{name}-" + "x" * 24
        merged: dict[str, Any] = dict(settings or {})
        if permission_mode is not None:
            perms = dict(merged.get("permissions") or {})
            perms.setdefault("defaultMode", permission_mode)
            merged["permissions"] = perms
        self._write_config(home, workdir, key, trust, approve_key, onboarded, merged, config)
        if account_dir is not None:
            self._write_account(account_dir, home, workdir, oauth_token)
        commands = workdir / ".claude" / "commands"
        commands.mkdir(parents=True)
        (commands / "nbs-poll.md").write_text(NBS_POLL_COMMAND)

        env = {
            "HOME": str(home),
            "PATH": f"{home / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "TERM": "tmux-256color",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "SHELL": "/bin/bash",
            "PS1": "$ ",
            "ANTHROPIC_BASE_URL": api.base_url,
            **_auth_env(key, oauth, account_dir, oauth_token),
            **OFFLINE_ENV,
            **(extra_env or {}),
        }
        launcher = self._write_launcher(home, workdir, env, args)
        session = self.server.new_session(
            session_name=f"claude-{name}",
            window_name=name,
            start_directory=str(workdir),
            x=COLS,
            y=ROWS,
            environment={"HOME": str(home), **env},
            window_command=f"exec bash {shlex.quote(str(launcher))}",
        )
        # Keep the size fixed even if a client attaches later.
        self.server.cmd("set-option", "-t", str(session.session_id), "window-size", "manual")
        pane = session.active_window.active_pane
        assert pane is not None
        agent = ClaudeAgent(name, pane, self.server, api, home, workdir, key, self.binary)
        self.agents.append(agent)
        if wait and trust and approve_key and onboarded:
            agent.wait_idle(timeout=30)
        return agent

    def start_many(
        self, *scenarios: Scenario, wait: bool = True, **options: Any
    ) -> list[ClaudeAgent]:
        """Start one agent per scenario at once and wait for all of them together."""
        agents = [self.start(sc, wait=False, **options) for sc in scenarios]
        if wait:
            with ThreadPoolExecutor(max_workers=len(agents) or 1) as pool:
                list(pool.map(lambda a: a.wait_idle(timeout=45), agents))
        return agents

    def close(self) -> None:
        for api in self._apis:
            api.stop()

    # files

    def _write_config(
        self,
        home: Path,
        workdir: Path,
        key: str,
        trust: bool,
        approve_key: bool,
        onboarded: bool,
        settings: Mapping[str, Any] | None,
        extra_config: Mapping[str, Any] | None,
    ) -> None:
        config: dict[str, Any] = {
            "numStartups": 5,
            "theme": "dark",
            "autoUpdates": False,
            "hasSeenTasksHint": True,
            "tipsHistory": {},
            "lastReleaseNotesSeen": self.binary.version,
            "lastOnboardingVersion": self.binary.version,
            # 2.1.3xx asks once "Make auto mode your default permission mode?" when a session
            # starts outside auto mode (plan mode) or the mode is cycled.
            "hasSeenAutoDefaultNudge": True,
        }
        if onboarded:
            config["hasCompletedOnboarding"] = True
        config.update(extra_config or {})
        if approve_key:
            config["customApiKeyResponses"] = {"approved": [key[-20:]], "rejected": []}
        project: dict[str, Any] = {"allowedTools": [], "hasCompletedProjectOnboarding": True}
        if trust:
            project["hasTrustDialogAccepted"] = True
        config["projects"] = {str(workdir): project}
        (home / ".claude.json").write_text(json.dumps(config, indent=2))
        claude_dir = home / ".claude"
        claude_dir.mkdir()
        if settings:
            (claude_dir / "settings.json").write_text(json.dumps(dict(settings), indent=2))
        bindir = home / "bin"
        bindir.mkdir()
        # Named "claude" so the pane's current command reads as it does for a real install.
        (bindir / "claude").symlink_to(self.binary.path)

    def _write_account(self, account_dir: Path, home: Path, workdir: Path, oauth_token: str | None) -> None:
        """A ``CLAUDE_CONFIG_DIR`` for the agent: the HOME's ``.claude.json`` (merged with what
        another agent of the account left: its project too) and ``settings.json``, and the login."""
        account_dir.mkdir(parents=True, exist_ok=True)
        config = json.loads((home / ".claude.json").read_text())
        existing = account_dir / ".claude.json"
        if existing.exists():
            old = json.loads(existing.read_text())
            config["projects"] = {**old.get("projects", {}), **config["projects"]}
        existing.write_text(json.dumps(config, indent=2))
        settings = home / ".claude" / "settings.json"
        if settings.exists() and not (account_dir / "settings.json").exists():
            (account_dir / "settings.json").write_text(settings.read_text())
        if oauth_token is not None:
            login = {
                "claudeAiOauth": {
                    "accessToken": oauth_token,
                    "refreshToken": f"refresh-{oauth_token}",
                    "expiresAt": int((time.time() + 86400 * 30) * 1000),
                    "scopes": ["user:inference", "user:profile"],
                    "subscriptionType": "max",
                }
            }
            credentials = account_dir / ".credentials.json"
            credentials.write_text(json.dumps(login))
            credentials.chmod(0o600)

    def _write_launcher(
        self, home: Path, workdir: Path, env: Mapping[str, str], args: Iterable[str]
    ) -> Path:
        lines = [
            "# Generated by tests/realclaude/harness.py: a clean environment, then Claude Code,",
            "# then an interactive shell (the state after exit).",
            "# Job control: Claude Code gets its own foreground process group, so tmux's",
            "# pane_current_command reads `claude` as it does under an interactive shell.",
            "set -m",
            "for v in $(compgen -e); do",
            "  case $v in " + "|".join(p + "*" for p in _SCRUB_PREFIXES) + ") unset \"$v\";; esac",
            "done",
        ]
        lines += [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
        lines.append(f"cd {shlex.quote(str(workdir))}")
        lines.append(" ".join(["claude", *map(shlex.quote, args)]))
        lines.append("exec bash --noprofile --norc -i")
        path = home / "launch.sh"
        path.write_text("\n".join(lines) + "\n")
        return path
