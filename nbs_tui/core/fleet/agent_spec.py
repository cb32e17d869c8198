"""A new agent as the operator asks for it, checked, and the Claude Code command line that starts it.

`NewAgent` is what ``nbs-tui new`` (and the dashboard's "new agent" form) collects; `problems`
names everything wrong with it in the words the command line prints, and `checked` fills in the
defaults (the name) or raises `SpecError`. What needs the file system (the folder exists, the
prompt file reads, ``.nbs/workers/NAME.md`` is there) is `nbs_tui.files.agent_input`; what needs
tmux (the name is free on that server, Claude Code is installed there) is the wiring's.

`claude_argv` builds the command from the configured ``claude_command`` (default ``claude``;
several words are split as a shell would, without running one) and a `ClaudeLaunch`. What the
installed Claude Code accepts is read from its ``--help`` by `ClaudeFlags.from_help`; checked on
2.1.100, 2.1.120, 2.1.150, 2.1.197, 2.1.265 and 2.1.332 (docs/lifecycle.md):

* ``-n/--name``, ``--model``, ``--permission-mode``, ``-w/--worktree [name]`` and
  ``-r/--resume [id]`` exist in all of them;
* the permission modes are ``acceptEdits auto bypassPermissions default dontAsk plan`` up to
  2.1.197; 2.1.265 lists ``manual`` instead of ``default`` but still takes ``default`` (it is no
  longer listed): ``manual`` and ``default`` are the same mode here, and the one the installed
  version lists is sent;
* ``--bg`` from 2.1.197, ``attach``/``logs``/``respawn``/``stop`` listed from 2.1.265, ``agents --json``
  from 2.1.150 (Claude Code's own background sessions, issue 29 item 5: ``attach`` answers from
  2.1.150 though not listed; what the dashboard uses is read by `nbs_tui.core.fleet.background`).

A version without ``-n`` still gets its agent named (the tmux window carries the name); a version
without ``-w`` or without the mode asked cannot start the agent as asked: `LaunchError` says so.

Pure: no files, no processes, no tmux.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from nbs_tui.core.fleet.model import ServerAddress

PERMISSION_MODES = ("acceptEdits", "auto", "bypassPermissions", "default", "manual", "dontAsk", "plan")
"""Every mode some supported Claude Code version takes (``manual`` is 2.1.265+'s ``default``)."""
BYPASS = "bypassPermissions"
_SAME_MODE = {"manual": "default", "default": "manual"}

NAME_LIMIT = 64
WORKER_LIMIT = 128
"""An NBS handle's longest form (``BUS_MAX_HANDLE``): the worker's name is its bus events' source."""
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]*$")
_WORKER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_SESSION_BAD = re.compile(r"[:.\s]")


class SpecError(ValueError):
    """Input nbs-tui cannot start an agent from. ``problems`` are the lines the CLI prints."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(self.problems))


class LaunchError(SpecError):
    """The installed Claude Code cannot do what was asked (a flag or mode it lacks)."""


@dataclass(frozen=True, slots=True)
class NewAgent:
    """One agent to start: ``nbs-tui new DIR [...]`` or the dashboard's form."""

    directory: str
    """The folder the agent works in, as the operator named it (resolved by the files layer)."""
    name: str = ""
    """The tmux window's name and Claude Code's ``-n``; empty: the worker's name, else the folder's."""
    prompt: str | None = None
    prompt_file: str | None = None
    worker: str | None = None
    """An NBS worker: its task file ``DIR/.nbs/workers/<worker>.md`` is the prompt, whole."""
    model: str | None = None
    permission_mode: str | None = None
    worktree: bool = False
    """Start in a new git worktree (Claude Code's ``-w``: it makes it, nbs-tui never runs git)."""
    worktree_name: str | None = None
    session: str | None = None
    """The tmux session to open the window in (created when missing); None: the wiring's default."""
    server: ServerAddress = field(default_factory=ServerAddress)
    host: str | None = None
    """A watched host's name or an ssh destination; None: this machine."""
    account: str | None = None
    """``--account NAME|auto`` as asked (nbs_tui/core/fleet/accounts.py); the wiring resolves it
    to ``config_dir`` before the start."""
    config_dir: str | None = None
    """The account's Claude Code configuration: the agent runs with ``CLAUDE_CONFIG_DIR`` set to
    it. None: whatever the pane's environment says (``~/.claude`` by default)."""


def _name_problem(what: str, value: str, limit: int = NAME_LIMIT, pattern: re.Pattern[str] = _NAME) -> str | None:
    if not value:
        return f"{what} is empty"
    if len(value) > limit:
        return f"{what} {value!r} is longer than {limit} characters"
    if not pattern.match(value):
        allowed = "letters, digits, '-' and '_'" + (" and '.'" if pattern is _WORKER else "")
        return f"{what} {value!r} may hold only {allowed}, and may not start with '-'"
    if value.isdigit():
        return f"{what} {value!r} is all digits: tmux would read it as a window number"
    return None


def worker_problem(worker: str) -> str | None:
    """Why ``worker`` cannot name an NBS worker (its task file and its bus events' source), or None."""
    return _name_problem("--worker", worker, WORKER_LIMIT, _WORKER)


def default_name(spec: NewAgent) -> str:
    """The worker's name, else the folder's last part made a valid name (``my.app`` -> ``my-app``)."""
    if spec.worker:
        return re.sub(r"[^A-Za-z0-9_-]", "-", spec.worker).lstrip("-")[:NAME_LIMIT] or "agent"
    base = posixpath.basename(posixpath.normpath(spec.directory)) if spec.directory else ""
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", base).strip("-")[:NAME_LIMIT]
    if not name:
        return "agent"
    return f"agent-{name}"[:NAME_LIMIT] if name.isdigit() else name


def problems(spec: NewAgent) -> list[str]:
    """Everything wrong with ``spec`` that can be told without files or tmux, one line each."""
    found: list[str] = []
    if not spec.directory.strip():
        found.append("DIR is empty: name the folder the agent works in")
    if spec.name:
        bad = _name_problem("--name", spec.name)
        if bad:
            found.append(bad)
    prompts = [flag for flag, value in (("--prompt", spec.prompt), ("--prompt-file", spec.prompt_file)) if value is not None]
    if len(prompts) > 1:
        found.append("give --prompt or --prompt-file, not both")
    if spec.worker is not None:
        if prompts:
            found.append(f"--worker's task file is the prompt: give --worker or {prompts[0]}, not both")
        bad = worker_problem(spec.worker)
        if bad:
            found.append(bad)
    if spec.prompt is not None and not spec.prompt.strip():
        found.append("--prompt is empty")
    if spec.prompt_file is not None and not spec.prompt_file.strip():
        found.append("--prompt-file names no file")
    if spec.model is not None and (not spec.model.strip() or spec.model.startswith("-") or any(c.isspace() for c in spec.model)):
        found.append(f"--model {spec.model!r} is not a model name (an alias such as 'opus' or a full model id)")
    if spec.permission_mode is not None and spec.permission_mode not in PERMISSION_MODES:
        found.append(f"--permission-mode {spec.permission_mode!r} is not one of {', '.join(PERMISSION_MODES)}")
    if spec.worktree_name is not None:
        if not spec.worktree:
            found.append("a worktree name needs --worktree")
        else:
            bad = _name_problem("--worktree", spec.worktree_name)
            if bad:
                found.append(bad)
    if spec.session is not None:
        if not spec.session:
            found.append("--session is empty")
        elif _SESSION_BAD.search(spec.session) or spec.session.startswith("-"):
            found.append(f"--session {spec.session!r} may not hold ':', '.' or spaces, nor start with '-'")
    if spec.server.socket_name is not None and spec.server.socket_path is not None:
        found.append("give -L or -S, not both")
    if spec.account is not None and not spec.account.strip():
        found.append("--account is empty: name an [accounts.NAME] entry, or 'auto'")
    if spec.config_dir is not None and not posixpath.isabs(spec.config_dir):
        found.append(f"the account's config_dir {spec.config_dir!r} is not an absolute path")
    if spec.host is not None and (not spec.host.strip() or any(c.isspace() for c in spec.host)):
        found.append(f"--host {spec.host!r}: give an ssh destination, a [[hosts]] name or 'local'")
    return found


def checked(spec: NewAgent) -> NewAgent:
    """``spec`` with its name filled in; raises `SpecError` listing every problem."""
    found = problems(spec)
    if found:
        raise SpecError(found)
    return spec if spec.name else replace(spec, name=default_name(spec))


# -- the command line --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClaudeLaunch:
    """The Claude Code options nbs-tui sets for an agent (everything else is ``claude_command``'s)."""

    name: str | None = None
    model: str | None = None
    permission_mode: str | None = None
    worktree: bool = False
    worktree_name: str | None = None
    resume: str | None = None
    """A session id to resume (restore, restart); never with ``worktree``: the resumed agent starts
    in the worktree's folder instead."""


def launch_for(spec: NewAgent) -> ClaudeLaunch:
    return ClaudeLaunch(
        name=spec.name or default_name(spec),
        model=spec.model,
        permission_mode=spec.permission_mode,
        worktree=spec.worktree,
        worktree_name=spec.worktree_name,
    )


OLD_MODES = frozenset({"acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "plan"})


@dataclass(frozen=True, slots=True)
class ClaudeFlags:
    """What one installed Claude Code accepts, read from its ``--help`` (and ``agents --help``)."""

    version: str | None = None
    name: bool = True
    worktree: bool = True
    resume: bool = True
    permission_modes: frozenset[str] = OLD_MODES
    background: bool = False
    """``--bg``: start a session in the background (2.1.197+)."""
    attach: bool = False
    """``claude attach <id>`` opens a background session in a terminal (2.1.265+)."""
    agents_json: bool = False
    """``claude agents --json`` lists the live sessions (2.1.150+; known only from ``agents --help``)."""

    @classmethod
    def from_help(cls, help_text: str, agents_help: str = "", version: str | None = None) -> ClaudeFlags:
        flat = " ".join(help_text.split())
        modes = OLD_MODES
        found = re.search(r"--permission-mode <mode>.*?\(choices: ([^)]*)\)", flat)
        if found:
            modes = frozenset(re.findall(r'"([A-Za-z]+)"', found.group(1))) or OLD_MODES
        return cls(
            version=version,
            name=bool(re.search(r"(?:^|\s)(?:-n, )?--name\b", flat)),
            worktree=bool(re.search(r"(?:^|\s)(?:-w, )?--worktree\b", flat)),
            resume=bool(re.search(r"(?:^|\s)(?:-r, )?--resume\b", flat)),
            permission_modes=modes,
            background=bool(re.search(r"(?:^|\s)--bg\b", flat)),
            attach=bool(re.search(r"^\s+attach\b", help_text, re.MULTILINE)),
            agents_json=bool(re.search(r"(?:^|\s)--json\b", " ".join(agents_help.split()))),
        )


ASSUMED_FLAGS = ClaudeFlags()
"""When the installed Claude Code's help cannot be read: what every supported version has."""


def command_words(claude_command: str) -> list[str]:
    """``claude_command`` split as a shell splits words (no shell runs); raises `SpecError`."""
    try:
        words = shlex.split(claude_command)
    except ValueError as error:
        raise SpecError([f"claude_command {claude_command!r} cannot be split into words: {error}"]) from None
    if not words:
        raise SpecError(["claude_command is empty: set it to the Claude Code command (default 'claude')"])
    return words


def mode_argument(mode: str, flags: ClaudeFlags = ASSUMED_FLAGS) -> str:
    """The ``--permission-mode`` value the installed version takes for ``mode``."""
    if mode in flags.permission_modes:
        return mode
    other = _SAME_MODE.get(mode)
    if other is not None and other in flags.permission_modes:
        return other
    version = f"Claude Code {flags.version}" if flags.version else "the installed Claude Code"
    offered = ", ".join(sorted(flags.permission_modes))
    raise LaunchError([f"{version} has no permission mode {mode!r} (it offers {offered})"])


def claude_argv(claude_command: str, launch: ClaudeLaunch, flags: ClaudeFlags = ASSUMED_FLAGS) -> list[str]:
    """The agent's command: ``claude_command``'s words, then nbs-tui's options."""
    argv = command_words(claude_command)
    version = f"Claude Code {flags.version}" if flags.version else "the installed Claude Code"
    if launch.resume is not None:
        if not flags.resume:
            raise LaunchError([f"{version} has no --resume: it cannot bring a conversation back"])
        if launch.worktree:
            raise LaunchError(["a resumed agent starts in its worktree's folder: give no --worktree with --resume"])
        argv += ["--resume", launch.resume]
    if launch.name and flags.name:  # without -n the tmux window still carries the name
        argv += ["-n", launch.name]
    if launch.model:
        argv += ["--model", launch.model]
    if launch.permission_mode:
        argv += ["--permission-mode", mode_argument(launch.permission_mode, flags)]
    if launch.worktree:
        if not flags.worktree:
            raise LaunchError([f"{version} has no -w/--worktree: upgrade it, or start without --worktree"])
        argv += ["-w", launch.worktree_name] if launch.worktree_name else ["-w"]
    return argv


def shell_command(argv: Sequence[str]) -> str:
    """``argv`` as one shell line (tmux runs a window's command through the shell)."""
    return shlex.join(argv)


CLAUDE_SESSION_ENV = (
    "CLAUDECODE",
    "CLAUDE_CODE_CHILD_SESSION",
    "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_CODE_SESSION_ATTENDED",
    "CLAUDE_CODE_LAUNCHED_BY_SESSION_IDS",
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_CODE_SSE_PORT",
    "CLAUDE_PID",
    "CLAUDE_EFFORT",
)
"""What a running Claude Code hands its commands (2.1.332's shell environment; ``SSE_PORT`` an
IDE's terminal): an agent nbs-tui starts from inside a Claude Code session must not inherit
them, or it reads as nested (``CLAUDECODE``, ``CLAUDE_CODE_CHILD_SESSION``), as another kind of
entry point, or as that session's child."""


def agent_command(argv: Sequence[str], config_dir: str | None = None) -> str:
    """The shell line that starts ``argv`` (Claude Code) in a pane, without `CLAUDE_SESSION_ENV`,
    under the account ``config_dir`` when one is given (``CLAUDE_CONFIG_DIR``)."""
    unset = [word for name in CLAUDE_SESSION_ENV for word in ("-u", name)]
    account = [f"CLAUDE_CONFIG_DIR={config_dir}"] if config_dir else []
    return shell_command(["env", *unset, *account, *argv])


def server_env_unsets() -> list[tuple[str, ...]]:
    """tmux commands that drop `CLAUDE_SESSION_ENV` from a server's global environment (one
    nbs-tui started hands them to every later pane otherwise)."""
    return [("set-environment", "-g", "-u", name) for name in CLAUDE_SESSION_ENV]


# -- reading a running agent's command line back --------------------------------------------------

_VALUE_FLAGS = {
    "-n": "name", "--name": "name", "--model": "model", "--permission-mode": "permission_mode",
    "--session-id": "session_id",
}  # fmt: skip
_OPTIONAL_VALUE_FLAGS = {"-w": "worktree", "--worktree": "worktree", "-r": "resume", "--resume": "resume"}


def start_command_words(start_command: str) -> tuple[str, ...]:
    """A pane's start command (tmux's ``#{pane_start_command}``) as words: where Claude Code on
    node (2.1.1xx) has set its process title, ``/proc/PID/cmdline`` keeps only ``claude``, and
    what `new` or `restore` ran is the one record of its options left. Words before Claude
    Code's own options (``env -u CLAUDECODE claude ...``) are passed over by `launch_from_args`."""
    try:
        words = shlex.split(start_command)
        if len(words) == 1 and " " in words[0]:  # tmux shows a command given as one string quoted
            words = shlex.split(words[0])
    except ValueError:
        return ()
    return tuple(words)


def launch_from_args(args: Sequence[str]) -> ClaudeLaunch:
    """What a running Claude Code was started with, from its arguments (after the program name):
    the name, model, mode, worktree and resumed session, as `claude_argv` would have put them.

    Options nbs-tui does not set are passed over; like Claude Code's parser, an optional value
    (``-w [name]``, ``--resume [id]``) is the next word unless that starts with ``-``.
    ``--dangerously-skip-permissions`` reads as ``bypassPermissions``."""
    values: dict[str, str | None] = {}
    worktree = False
    i = 0
    while i < len(args):
        word = args[i]
        flag, eq, inline = word.partition("=") if word.startswith("--") else (word, "", "")
        if flag in _VALUE_FLAGS:
            if eq:
                values[_VALUE_FLAGS[flag]] = inline
            elif i + 1 < len(args):
                values[_VALUE_FLAGS[flag]] = args[i + 1]
                i += 1
        elif flag in _OPTIONAL_VALUE_FLAGS:
            key = _OPTIONAL_VALUE_FLAGS[flag]
            value: str | None = inline if eq else None
            if not eq and i + 1 < len(args) and not args[i + 1].startswith("-"):
                value = args[i + 1]
                i += 1
            if key == "worktree":
                worktree = True
            values[key] = value
        elif word == "--dangerously-skip-permissions":
            values.setdefault("permission_mode", BYPASS)
        elif word == "--":
            break
        i += 1
    return ClaudeLaunch(
        name=values.get("name"),
        model=values.get("model"),
        permission_mode=values.get("permission_mode"),
        worktree=worktree,
        worktree_name=values.get("worktree"),
        resume=values.get("resume") or values.get("session_id"),
    )
