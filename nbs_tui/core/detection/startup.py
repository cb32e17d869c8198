"""Getting a new (or resumed) agent through Claude Code's startup screens, only as far as asked.

A `StartupGuide` is made per agent nbs-tui starts and is shown the pane's screen and its
detection (`nbs_tui.core.detection.detect`) until it returns `Ready` (the input box is empty and idle:
the prompt may be typed) or `Stop` (the start goes to needs-you with that line). In between it
returns `Wait` or one `PressKey`. Its rules, as the operator asked for them:

* the workspace-trust dialog (``Accessing workspace:`` / the folder / ``Yes, I trust this
  folder``) is answered yes only when the folder it names is the folder the operator named
  (``StartupExpectation.folder``, resolved, or one of its ``aliases``). The folder is read whole
  from the rows below ``Accessing workspace:`` (a long one continues on the next rows at the
  dialog's column); a ``~`` is read with the agent's HOME when it is known; anything cut short
  (``…``), indented otherwise, or not absolute is not read, and then nothing is answered;
* the bypass-permissions confirmation (``WARNING: Claude Code running in Bypass Permissions
  mode`` / ``Yes, I accept``) is accepted only when ``bypassPermissions`` was asked;
* any other dialog, menu, error, usage limit, or Claude Code exiting stops the start with a line
  that says what is on screen; so does no input box within ``timeout``.

Keys are pressed one at a time and each is checked on the next screen: a dialog must be seen
unchanged for ``settle`` seconds before a key (Claude Code's menus drop a key that arrives as
they appear); the mark is moved with ``Down``/``Up`` and confirmed with ``Enter`` (2.1.265+'s
unnumbered dialogs ignore digits; older numbered ones take either); a move that changed nothing
within ``key_timeout`` is pressed once more, an answer never (had it been taken late, a second
``Enter`` would land on the next screen): the start stops instead. A dialog still open
``key_timeout`` after its answer, or back later, stops the start. Pure, with the clock passed in: no tmux, no files.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

from nbs_tui.core.detection.detect import FLAG_EXITED, FLAG_UNNUMBERED
from nbs_tui.core.fleet.model import AgentState, Detection, MenuOption

SETTLE = 0.5
KEY_TIMEOUT = 3.0
START_TIMEOUT = 60.0
KEY_TRIES = 2

WORKSPACE = "Accessing workspace:"
_TRUST_YES = re.compile(r"^Yes,? I trust this folder", re.IGNORECASE)
_BYPASS_YES = re.compile(r"^Yes,? I accept\b", re.IGNORECASE)
_BYPASS_WARNING = re.compile(r"Bypass Permissions mode", re.IGNORECASE)
_CUT = ("…", "...")

_MOVES = ("Down", "Up")

TRUST = "trust dialog"
BYPASS_CONFIRMATION = "bypass-permissions confirmation"


@dataclass(frozen=True, slots=True)
class StartupExpectation:
    """What the operator asked for, as far as the startup screens are concerned."""

    folder: str
    """The folder the operator named, absolute and resolved (symlinks followed)."""
    aliases: tuple[str, ...] = ()
    """The same folder by other absolute names (as typed, before symlinks were followed)."""
    home: str | None = None
    """HOME on the agent's host, to read a folder shown as ``~/...`` (None: such a folder is not read)."""
    bypass: bool = False
    """``bypassPermissions`` was asked: its confirmation may be accepted."""


@dataclass(frozen=True, slots=True)
class PressKey:
    """Press one tmux key in the agent's pane (only this one: the next screen is checked first)."""

    key: str
    dialog: str
    confirms: bool
    """``Enter`` or a digit: this key answers the dialog (a move of the mark does not)."""
    why: str


@dataclass(frozen=True, slots=True)
class Ready:
    """The input box is idle and empty: type the prompt."""

    why: str


@dataclass(frozen=True, slots=True)
class Wait:
    why: str


@dataclass(frozen=True, slots=True)
class Stop:
    """The start stops here and goes to needs-you; ``line`` says what is on screen and what to do."""

    line: str


StartupStep = PressKey | Ready | Wait | Stop

_MENU_STATES = frozenset(
    {AgentState.DIALOG, AgentState.QUESTION, AgentState.PERMISSION, AgentState.PLAN, AgentState.LIMITED}
)


_MENU_WORDS = {
    AgentState.DIALOG: "dialog",
    AgentState.QUESTION: "question",
    AgentState.PERMISSION: "permission prompt",
    AgentState.PLAN: "plan approval",
    AgentState.LIMITED: "usage-limit menu",
}


def trust_folder(lines: Sequence[str], home: str | None = None) -> str | None:
    """The folder the trust dialog on screen names, read whole, or None when it cannot be."""
    rows = [line.replace("\u00a0", " ").rstrip() for line in lines]
    start = next((i for i in range(len(rows) - 1, -1, -1) if rows[i].strip() == WORKSPACE), None)
    if start is None:
        return None
    indent = len(rows[start]) - len(rows[start].lstrip())
    at = start + 1
    while at < len(rows) and not rows[at].strip():
        at += 1
    parts: list[str] = []
    while at < len(rows) and rows[at].strip() and not rows[at].lstrip().startswith("Quick safety check"):
        row = rows[at]
        if len(row) - len(row.lstrip()) != indent:
            return None  # not the dialog's column: a border, a wrapped word, something else
        parts.append(row[indent:])
        at += 1
    folder = "".join(parts)
    if not folder or any(cut in folder for cut in _CUT):
        return None
    if folder.startswith("~"):
        if home is None or not (folder == "~" or folder.startswith("~/")) or not home.startswith("/"):
            return None
        folder = home.rstrip("/") + folder[1:]
    return folder if folder.startswith("/") else None


def _same_folder(shown: str, expect: StartupExpectation) -> bool:
    wanted = {posixpath.normpath(f) for f in (expect.folder, *expect.aliases) if f.startswith("/")}
    return posixpath.normpath(shown) in wanted


def _first_line(text: str) -> str:
    """What a dialog asks, in one line: its question, else its first row (below its top rule)."""
    rows = [" ".join(line.split()) for line in text.splitlines()]
    rules = [i for i, row in enumerate(rows) if row and set(row) <= set("─━═-")]
    rows = [row for row in rows[rules[-1] + 1 if rules else 0 :] if row]
    question = next((row for row in reversed(rows) if row.endswith("?")), None)
    return (question or (rows[0] if rows else ""))[:120]


def _exit_words(lines: Sequence[str]) -> str:
    """The last rows above the shell prompt Claude Code left (its error, or its goodbye)."""
    rows = [" ".join(line.split()) for line in lines if line.strip()]
    above = rows[-4:-1] if len(rows) > 1 else []
    return " / ".join(above)[-200:] or "no output"


@dataclass(slots=True)
class _Key:
    signature: tuple[object, ...]
    key: str
    at: float
    tries: int
    confirms: bool


class StartupGuide:
    """One agent's way through its startup screens (module docstring). Not thread-safe."""

    def __init__(
        self,
        expect: StartupExpectation,
        started_at: float,
        *,
        timeout: float = START_TIMEOUT,
        settle: float = SETTLE,
        key_timeout: float = KEY_TIMEOUT,
    ) -> None:
        self.expect = expect
        self.started_at = started_at
        self.timeout = timeout
        self.settle = settle
        self.key_timeout = key_timeout
        self.answered: list[str] = []
        """The dialogs confirmed so far, in order (for the action log)."""
        self._seen: tuple[object, ...] | None = None
        self._seen_since = 0.0
        self._key: _Key | None = None
        self._open_after_answer: set[str] = set()
        self._final: Ready | Stop | None = None

    def step(self, lines: Sequence[str], detection: Detection, now: float) -> StartupStep:
        """What to do about this screen (``lines`` are its rows as text, ``detection`` read from them)."""
        if self._final is not None:
            return self._final
        step = self._decide(lines, detection, now)
        if isinstance(step, Wait) and now - self.started_at > self.timeout:
            step = Stop(f"no Claude Code input box {self.timeout:.0f} s after the start ({step.why}): look at the pane")
        if isinstance(step, (Ready, Stop)):
            self._final = step
        return step

    def _decide(self, lines: Sequence[str], detection: Detection, now: float) -> StartupStep:
        state = detection.state
        if state in _MENU_STATES and detection.options:
            return self._menu(lines, detection, now)
        self._seen = None
        self._key = None
        self._open_after_answer.clear()  # whatever was answered is gone now
        if state is AgentState.IDLE:
            if detection.input_text is None:
                return Wait(detection.reason)
            if detection.input_text:
                shown = detection.input_text[:60]
                return Stop(f"the input box already holds text ({shown!r}): nbs-tui types the prompt only into an empty box")
            if detection.safe_to_inject:
                return Ready(detection.reason)
            return Wait(detection.reason)
        if state is AgentState.WORKING:
            return Wait(detection.reason)
        if state is AgentState.ERROR:
            return Stop(f"Claude Code shows an error while starting ({detection.reason}): look at the pane")
        if state is AgentState.LIMITED:
            return Stop(f"Claude Code is at a usage limit while starting ({detection.reason})")
        if FLAG_EXITED in detection.flags:
            return Stop(f"Claude Code exited while starting: {_exit_words(lines)}")
        return Wait(detection.reason)

    def _menu(self, lines: Sequence[str], detection: Detection, now: float) -> StartupStep:
        options = detection.options
        trust = next((o for o in options if _TRUST_YES.match(o.label)), None)
        accept = next((o for o in options if _BYPASS_YES.match(o.label)), None)
        if trust is not None:
            dialog, target = TRUST, trust
            folder = trust_folder(lines, self.expect.home)
            if folder is None:
                return Stop("Claude Code asks whether to trust a folder it does not show whole: answer it in the pane")
            if not _same_folder(folder, self.expect):
                return Stop(
                    f"Claude Code asks to trust {folder}, not {self.expect.folder} that this agent was started "
                    "in: answer it in the pane"
                )
        elif accept is not None and _BYPASS_WARNING.search(detection.prompt):
            dialog, target = BYPASS_CONFIRMATION, accept
            if not self.expect.bypass:
                return Stop(
                    "Claude Code asks to confirm bypass-permissions mode, which was not asked for this agent: "
                    "answer it in the pane"
                )
        else:
            what = _first_line(detection.prompt) or detection.reason
            kind = _MENU_WORDS.get(detection.state, detection.state.value)
            return Stop(f"Claude Code stopped at a {kind} while starting ({what}): answer it in the pane")
        if dialog in self.answered and dialog not in self._open_after_answer:
            return Stop(f"the {dialog} came back after nbs-tui answered it: look at the pane")
        signature: tuple[object, ...] = (dialog, tuple((o.label, o.selected) for o in options))
        if signature != self._seen:
            self._seen, self._seen_since = signature, now
        key = self._key
        if key is not None and (key.signature == signature or dialog in self._open_after_answer):
            if now - key.at < self.key_timeout:
                return Wait(f"waiting for Claude Code to take {key.key} on the {dialog}")
            if key.confirms or key.signature != signature or key.tries >= KEY_TRIES:
                # An answer is never pressed twice: had Claude Code taken it late, the second key
                # would land on whatever came next (the bypass confirmation's "No, exit").
                return Stop(f"the {dialog} is still open after nbs-tui pressed {key.key}: answer it in the pane")
            key.tries += 1
            key.at = now
            return self._press(key.key, dialog, target)
        if now - self._seen_since < self.settle:
            return Wait(f"letting the {dialog} settle")
        chosen = self._key_for(target, options, detection)
        if chosen is None:
            return Stop(f"cannot tell which option of the {dialog} is selected: answer it in the pane")
        self._key = _Key(signature, chosen, now, 1, chosen not in _MOVES)
        return self._press(chosen, dialog, target)

    def _key_for(self, target: MenuOption, options: Sequence[MenuOption], detection: Detection) -> str | None:
        selected = next((i for i, o in enumerate(options) if o.selected), None)
        wanted = options.index(target)
        if selected == wanted:
            return "Enter"
        if selected is None:
            return None if FLAG_UNNUMBERED in detection.flags else str(target.number)
        return "Down" if wanted > selected else "Up"

    def _press(self, key: str, dialog: str, target: MenuOption) -> PressKey:
        confirms = key not in _MOVES
        if confirms:
            if dialog not in self.answered:
                self.answered.append(dialog)
            self._open_after_answer.add(dialog)
            why = f"answer the {dialog}: {target.label}"
        else:
            why = f"move the {dialog}'s mark towards {target.label!r}"
        return PressKey(key, dialog, confirms, why)
