"""`TmuxServerCommands`: every tmux command nbs-tui runs on one tmux server, by one path.

Routes. A command runs *in-band*, as one line on a ready control connection of the server (the
fleet's: ~0.1 ms of tmux's time, no process), when there is one; otherwise as a *process*
through the server's `TmuxRunner` (this machine's ``tmux``, ~5 ms; or an ssh exec over the
host's ControlMaster connection). Always a process: a command fed stdin (``load-buffer -``), an
option of tmux itself (``-V``), and what tmux may finish after the next line (a shell:
``run-shell``, ``if-shell`` without ``-F``; a prompt, a wait, a popup, a menu): its output would
come after `ControlClient.command_line`'s marker; and ``show-buffer`` (a control client gets the
buffer escaped: ``\\$HOME`` for ``$HOME``).

Arguments. Callers give argv words; they are escaped here, once, for the route taken: `quote`
for a control-mode line, `escape_argument` for a process's argv. A tmux command line carried
inside one argument (``if-shell -F COND 'LINE'``) is built by `command_line`.

Errors. One mapping (`TmuxRunner.failure`, `TmuxRunner.refusal`) into the types of
`nbs_tui.tmux.errors`: `ServerGone`, `HostUnreachable`, `PaneNotFound` (a `PaneGone`),
`TmuxTimeout` and `TmuxCommandError` with tmux's own message. A line sent in-band whose answer
never came may have run: one that types (``send-keys``, ``paste-buffer``) is never repeated (it
raises `TmuxTimeout`); any other is asked again as a process.

Replies. `CommandOutput`: the lines a command printed, the same whichever way it ran.

Without waiting. `send_many` writes commands on one given control connection (a session's own
client, its viewer: where a reply must fall in order with that connection's ``%output``) and
returns at once; each command's `Answer` (its raw lines, or its error mapped as above) comes to
its callback on the connection's reader thread. The same argv words, quoted by `quote`.

Keys. `type_text` and `press` are how keys reach a pane for everyone (the operator, the
sidecar). A `Guard` makes them one step inside tmux with a condition and commands run first:
the sidecar lease's fence on its token and its in-flight mark (`nbs_tui.sidecar.pane_options`),
so typing is one code path whether or not a lease is held.

Every call blocks for a round trip: call them from a worker thread, never a UI or reader thread.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from nbs_tui.core.fleet.model import PaneId, ServerAddress
from nbs_tui.tmux.control import CommandLost, ControlClient, ControlError, Reply
from nbs_tui.tmux.errors import (
    PaneGone,
    PaneNotFound,
    TmuxCommandError,
    TmuxError,
    TmuxTimeout,
    TmuxUnavailable,
)
from nbs_tui.tmux.tmux_runner import OwnTmuxRunner, TmuxRunner

COMMAND_TIMEOUT = 10.0
"""Seconds a command may take before it is given up (`TmuxTimeout`)."""

MAX_LINE = 8000
"""Bytes of arguments per tmux command line: a tmux client's whole command must fit one 16 KiB
message to the server, so a long run of commands is split into several lines (`run_batched`)."""

TYPE_CHUNK = 1000
"""Characters typed per ``send-keys -l`` command."""

_TYPING = ("send-keys", "paste-buffer")
"""A line holding these types into a pane: never repeated when its answer was lost."""

_LATER = ("run-shell", "wait-for", "confirm-before", "command-prompt", "display-popup", "display-menu")
"""Commands tmux may finish after the next line (a shell, a wait, a prompt): their output would
come after `ControlClient.command_line`'s marker, so a line that runs one (itself, or inside an
``if-shell``) runs as a process. Their aliases count too (`_LATER_ALIASES`); a shortened name
(tmux takes any unique prefix) does not: nbs-tui writes commands by their names."""

_LATER_ALIASES = ("run", "wait", "confirm", "popup", "menu")

_ESCAPED_IN_BAND = ("show-buffer", "showb", "save-buffer", "saveb")
"""Commands whose output a control client gets escaped (tmux writes a buffer to a control client
with ``$``, ``\\`` and control characters escaped: ``\\$HOME``): their output is read from a process."""

_RAN = "nbs-ran"
"""Printed last inside a `Guard`: its commands ran."""

_buffers = itertools.count(1)

Command = Sequence[str]
"""One tmux command as argv words: ``("set-option", "-p", "-t", "%3", "@x", "1")``."""


def quote(text: str) -> str:
    """Quote ``text`` as one literal argument of a tmux command line (byte-exact).

    Double quotes with escapes: ``\\``, ``"``, ``$`` (no variable expansion), ``#`` and ``~``
    (no format or home expansion), control characters as octal; everything else (unicode
    included) is passed through as UTF-8. The result never contains a newline.
    """
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in '\\"$':
            out.append("\\" + ch)
        elif code < 0x20 or code == 0x7F or ch in "#~":
            out.append(f"\\{code:03o}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def escape_argument(arg: str) -> str:
    """Keep a trailing ``;`` literal in a process's argv: tmux reads an argument ending in ``;``
    as a command separator.

    tmux turns a final ``\\;`` back into ``;`` (and only that), so this is exact for any text,
    including text that itself ends in a backslash and a semicolon.
    """
    return arg[:-1] + "\\;" if arg.endswith(";") else arg


def command_line(commands: Iterable[Command]) -> str:
    """``a ; b``: commands as one tmux command line, every word quoted (`quote`)."""
    return " ; ".join(" ".join(quote(arg) for arg in command) for command in commands)


@dataclass(frozen=True, slots=True)
class CommandOutput:
    """What a tmux command printed: its lines, without their newlines, however it ran."""

    lines: tuple[str, ...] = ()
    in_band: bool = False
    """It ran on a control connection (no process)."""

    @classmethod
    def of_text(cls, text: str) -> CommandOutput:
        """A process's stdout as lines (split on newlines only: tmux's formats may hold any
        other control character, such as discovery's field separator)."""
        if not text:
            return cls(())
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        return cls(tuple(lines))

    @property
    def text(self) -> str:
        """The output as a ``tmux`` process prints it: every line ended by a newline."""
        return "".join(line + "\n" for line in self.lines)

    @property
    def first(self) -> str:
        """The first line ("" when nothing was printed): a ``display-message -p`` answer."""
        return self.lines[0] if self.lines else ""

    def rows(self, separator: str) -> list[list[str]]:
        """Each line split into its fields (a ``list-* -F`` whose fields ``separator`` joins)."""
        return [line.split(separator) for line in self.lines]


@dataclass(frozen=True, slots=True)
class Answer:
    """The answer to one command of `TmuxServerCommands.send_many`: the lines it printed as
    tmux sent them (bytes: a capture is fed on as it came, not decoded here), or its error."""

    lines: tuple[bytes, ...] = ()
    error: TmuxError | None = None
    """`TmuxRunner.refusal` of tmux's message (`PaneNotFound`, `ServerGone`...); a command
    skipped because an earlier one of its line failed, or lost with its connection, has one too."""

    @property
    def ok(self) -> bool:
        return self.error is None


Answered = Callable[[Answer], None]
"""Gets a `send_many` command's `Answer`, on the connection's reader thread: it must not block."""


@dataclass(frozen=True, slots=True)
class Guard:
    """Commands run only while a tmux format is true, the check and the run one step inside
    tmux (``if-shell -F``: tmux runs one client's command line to its end before it reads
    another client's, and runs ``-F``'s commands inline)."""

    condition: str
    """A tmux format: the commands run when it expands to something other than "" or "0"."""
    before: tuple[tuple[str, ...], ...] = ()
    """Commands run first, inside the guard (the sidecar's in-flight mark)."""
    target: str = ""
    """The pane whose options ``condition`` reads (``if-shell -t``); "": the server's only."""


@dataclass(frozen=True, slots=True)
class PaneIdentity:
    """What identifies a pane's occupant right now: its id, first process, and whether it died."""

    pane_id: PaneId
    pid: int
    dead: bool
    current_command: str
    session_name: str
    window_index: int
    pane_index: int

    @property
    def target(self) -> str:
        return f"{self.session_name}:{self.window_index}.{self.pane_index}"


_IDENTITY = "\t".join(
    (
        "#{pane_id}",
        "#{pane_pid}",
        "#{pane_dead}",
        "#{pane_current_command}",
        "#{session_name}",
        "#{window_index}",
        "#{pane_index}",
    )
)


Connections = Callable[[], Iterable[ControlClient]]
"""The server's ready control connections, best first (the fleet's; none while it has none)."""


class TmuxServerCommands:
    """Run tmux commands on one tmux server, in-band when a connection is ready (module doc)."""

    def __init__(self, runner: TmuxRunner, connections: Connections | None = None) -> None:
        self.runner = runner
        """Where tmux runs: this machine, or a host through ssh (`nbs_tui.tmux.ssh`)."""
        self._connections: Connections = connections or tuple
        self.in_band_runs = 0
        """Command lines run on a control connection (for tests and benches)."""
        self.process_runs = 0
        """Command lines run as a process (for tests and benches)."""

    @classmethod
    def for_server(cls, server: ServerAddress, tmux: str = "tmux") -> TmuxServerCommands:
        """Commands on a server of this machine, each as a process (no fleet, no connection)."""
        return cls(TmuxRunner(server, tmux))

    @classmethod
    def own(cls, environ: Mapping[str, str]) -> TmuxServerCommands:
        """Commands on the tmux this process runs inside (``$TMUX`` of ``environ``), as processes."""
        return cls(OwnTmuxRunner(environ))

    def with_own_counts(self) -> TmuxServerCommands:
        """The same server and connections, with run counters of its own: a test or bench
        counts one caller's runs while the fleet's threads (rescans) use the shared ones."""
        return TmuxServerCommands(self.runner, self._connections)

    @property
    def server(self) -> ServerAddress:
        return self.runner.server

    def describe(self) -> str:
        return self.runner.describe()

    # -- running ---------------------------------------------------------------------------

    def run(self, *args: str, stdin: bytes | None = None, timeout: float = COMMAND_TIMEOUT) -> CommandOutput:
        """Run one tmux command (``args`` as argv words, unescaped); raises a `TmuxError`."""
        return self.run_many([args], stdin=stdin, timeout=timeout)

    def run_many(
        self, commands: Sequence[Command], *, stdin: bytes | None = None, timeout: float = COMMAND_TIMEOUT
    ) -> CommandOutput:
        """Run several commands as one tmux command line (``a ; b ; c``): one round trip, and
        tmux runs them back to back with no other client's command in between. A failing
        command skips the rest (``set-option -q`` does not fail on a missing target)."""
        if not commands:
            return CommandOutput()
        if stdin is None and _may_run_in_band(commands):
            found = self._in_band(commands, timeout)
            if found is not None:
                return found
        words: list[str] = []
        for i, command in enumerate(commands):
            if i:
                words.append(";")
            words.extend(escape_argument(arg) for arg in command)
        self.process_runs += 1
        return CommandOutput.of_text(self.runner.run(*words, timeout=timeout, stdin=stdin))

    def run_batched(self, commands: Sequence[Command]) -> int:
        """Run ``commands`` as few command lines as fit `MAX_LINE`; the number of lines run."""
        runs = 0
        batch: list[Command] = []
        size = 0
        for command in commands:
            length = sum(len(arg.encode()) + 1 for arg in command) + 2
            if batch and size + length > MAX_LINE:
                self.run_many(batch)
                runs += 1
                batch, size = [], 0
            batch.append(command)
            size += length
        if batch:
            self.run_many(batch)
            runs += 1
        return runs

    def send_many(
        self, connection: ControlClient, commands: Sequence[tuple[Command, Answered | None]], *, one_line: bool = False
    ) -> None:
        """Write ``commands`` (argv words, unescaped, each with the callback of its `Answer`,
        or None) on this connection in one write, and return without waiting. Each on a line of
        its own (one failing skips nothing), or with ``one_line`` as one command line (tmux runs
        them back to back with no ``%output`` between their replies; one failing skips the
        rest). Raises `TmuxUnavailable` when the connection is closed: nothing was sent."""
        lines = [(" ".join(quote(arg) for arg in command), self._answer(then)) for command, then in commands]
        try:
            if one_line:
                connection.send_group(lines)
            else:
                connection.send_lines(lines)
        except ControlError as error:
            raise TmuxUnavailable(f"{self.describe()}: {error}") from None

    def _answer(self, then: Answered | None) -> Callable[[Reply], None] | None:
        """A connection's reply callback that hands ``then`` the reply as an `Answer`."""
        if then is None:
            return None
        refusal = self.runner.refusal

        def got(reply: Reply) -> None:
            if reply.ok:
                then(Answer(tuple(reply.lines)))
            else:
                message = b"\n".join(reply.lines).decode("utf-8", "replace").strip() or "failed"
                then(Answer(error=refusal(message)))

        return got

    def run_guarded(self, guard: Guard, commands: Sequence[Command]) -> bool:
        """Run ``guard.before`` and ``commands`` only while ``guard.condition`` holds, as one
        step inside tmux; True if they ran."""
        inner = command_line([*guard.before, *commands, ("display-message", "-p", _RAN)])
        where = ("-t", guard.target) if guard.target else ()
        out = self.run_many([("if-shell", "-F", *where, guard.condition, inner)])
        return out.lines[-1:] == (_RAN,)

    def _in_band(self, commands: Sequence[Command], timeout: float) -> CommandOutput | None:
        """The line's output from a ready control connection; None: run it as a process."""
        line = command_line(commands)
        for client in self._connections():
            try:
                reply = client.command_line(line, timeout)
            except CommandLost as error:
                if any(word in line for word in _TYPING):  # it may have typed: never twice
                    raise TmuxTimeout(f"tmux {commands[0][0]}: {error}") from None
                return None  # a read, or a set that means the same twice: ask a process
            except ControlError:
                continue  # closed under us before it was sent: the next one, or a process
            self.in_band_runs += 1
            if not reply.ok:
                message = b"\n".join(reply.errors).decode("utf-8", "replace").strip() or "failed"
                raise self.runner.refusal(message)
            return CommandOutput(tuple(reply.text()), in_band=True)
        return None

    # -- what many ask ---------------------------------------------------------------------

    def display(self, target: str, fmt: str, *, timeout: float = COMMAND_TIMEOUT) -> str:
        """``display-message -p -t TARGET FMT``: one format expanded for a pane, window or
        session (with target "", for the current one: the server's options, say)."""
        args = ("display-message", "-p", "-t", target, fmt) if target else ("display-message", "-p", fmt)
        return self.run(*args, timeout=timeout).first

    def version(self) -> str:
        """``tmux -V`` of the tmux that runs the server (over ssh, the far host's)."""
        return self.run("-V").first

    def pane_identity(self, pane_id: PaneId) -> PaneIdentity | None:
        """The pane as tmux sees it now, or None when no pane has that id any more."""
        try:
            fields = self.display(pane_id, _IDENTITY).split("\t")
        except TmuxCommandError:
            return None
        if len(fields) != 7 or fields[0] != pane_id:
            return None
        try:
            return PaneIdentity(
                pane_id=fields[0],
                pid=int(fields[1] or 0),
                dead=fields[2] == "1",
                current_command=fields[3],
                session_name=fields[4],
                window_index=int(fields[5]),
                pane_index=int(fields[6]),
            )
        except ValueError:
            return None

    # -- keys into a pane ------------------------------------------------------------------

    def type_text(self, pane_id: PaneId, text: str, *, guard: Guard | None = None) -> bool:
        """Type ``text`` literally (``send-keys -l``, byte-exact: quotes, ``;``, ``$``, ``#{}``,
        a leading ``-``, unicode, newlines), no Enter. True once typed; False when ``guard``
        refused (nothing typed)."""
        commands = [
            ("send-keys", "-l", "-t", pane_id, "--", text[start : start + TYPE_CHUNK])
            for start in range(0, len(text), TYPE_CHUNK)
        ]
        return self._keys(commands, guard)

    def press(self, pane_id: PaneId, *keys: str, guard: Guard | None = None) -> bool:
        """Press named tmux keys (``Enter``, ``Escape``, ``C-c``, ``Up``, ``1``) in order; True
        once pressed, False when ``guard`` refused."""
        return self._keys([("send-keys", "-t", pane_id, "--", *keys)] if keys else [], guard)

    def _keys(self, commands: Sequence[Command], guard: Guard | None) -> bool:
        if guard is not None:
            return self.run_guarded(guard, commands)
        self.run_batched(commands)
        return True

    def paste(self, pane_id: PaneId, text: str, *, bracketed: bool = True, guard: Guard | None = None) -> bool:
        """Paste ``text`` into the pane as a terminal paste would; True once pasted, False when
        ``guard`` refused (nothing pasted).

        ``load-buffer`` reads the bytes from stdin (no quoting, no key-name parsing, no length
        limit of a command line); ``paste-buffer -p`` wraps them in bracketed-paste markers when
        the pane's program asked for them (Claude Code does), so newlines inside stay newlines and
        do not submit; ``-d`` deletes the private buffer. As a terminal does, tmux turns each LF
        into CR on the way in; a program in cooked mode (a shell's ``cat``) turns it back.
        """
        name = f"nbs-tui-{os.getpid()}-{next(_buffers)}"
        self.run("load-buffer", "-b", name, "-", stdin=text.encode("utf-8"))
        args = ["paste-buffer", "-d", "-b", name, "-t", pane_id]
        if bracketed:
            args.insert(1, "-p")
        try:
            pasted = self._keys([tuple(args)], guard)
        except TmuxCommandError as error:
            with contextlib.suppress(TmuxError):  # the paste error is what matters
                self.run("delete-buffer", "-b", name)
            if isinstance(error, PaneNotFound):
                raise PaneGone(f"pane {pane_id} is gone") from None
            raise
        if not pasted:  # the guard refused: the buffer was not pasted, so not deleted either
            with contextlib.suppress(TmuxError):
                self.run("delete-buffer", "-b", name)
        return pasted


def _may_run_in_band(commands: Sequence[Command]) -> bool:
    """Whether tmux finishes these commands before it reads the next line of a control client
    (module docstring): not an option of tmux itself (``-V``), not a command of `_LATER`, not
    ``if-shell`` without ``-F`` (a shell runs it, later), nor one whose own commands are any of
    these. A nested command line that cannot be read for sure runs as a process."""
    for command in commands:
        if not command:
            continue
        name = command[0]
        if not name or name.startswith("-") or _finishes_later(name) or name in _ESCAPED_IN_BAND:
            return False
        if name in ("if-shell", "if"):
            flags, positional = _if_shell_arguments(command[1:])
            if "F" not in flags:
                return False
            for nested in positional[1:]:
                parsed = _parse_line(nested)
                if parsed is None or not _may_run_in_band(parsed):
                    return False
    return True


def _finishes_later(name: str) -> bool:
    return name in _LATER or name in _LATER_ALIASES


def _if_shell_arguments(args: Sequence[str]) -> tuple[set[str], list[str]]:
    """``if-shell [-bF] [-t target] condition command [command]``: its flags and positional
    arguments (the condition, then the commands it runs)."""
    flags: set[str] = set()
    positional: list[str] = []
    words = list(args)
    while words:
        word = words.pop(0)
        if positional or word == "-" or not word.startswith("-"):
            positional.append(word)
        elif word == "--":
            positional.extend(words)
            break
        else:
            letters = word[1:]
            for at, letter in enumerate(letters):
                flags.add(letter)
                if letter == "t":  # takes a value: the rest of this word, or the next
                    if at == len(letters) - 1 and words:
                        words.pop(0)
                    break
    return flags, positional


def _parse_line(line: str) -> list[list[str]] | None:
    """A tmux command line as commands of words (quotes and escapes read as a shell would,
    enough to find command names; an escaped ``;`` is read as a separator, which errs on the
    side of a process); None when it holds a ``{ }`` block or a line break (tmux ends a command
    there too) or cannot be read."""
    if "\n" in line:
        return None
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        words = list(lexer)
    except ValueError:
        return None
    if "{" in words or "}" in words:
        return None
    commands: list[list[str]] = [[]]
    for word in words:
        if word and set(word) == {";"}:
            commands.append([])
        else:
            commands[-1].append(word)
    return [command for command in commands if command]
