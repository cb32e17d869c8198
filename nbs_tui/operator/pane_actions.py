"""The operator's actions on panes: send text and keys, broadcast, force a poll, toggle per-pane controls.

Every action takes the pane *as the operator chose it* (a `PaneInfo` snapshot) and first asks
tmux whether that pane is still the same one: the id still exists, its process has not exited,
and its first process (``pane_pid``) is the one chosen. A pane respawned in place keeps its id
but gets a new pid, so a message meant for the old agent is not typed into the new one. The
foreground command is not compared: it changes under a live agent (a shell runs ``cat``, Claude
Code runs a tool). If the check fails, nothing is sent and the result says why.

Every action, sent or not, becomes one line in the `ActionLog`.

Text delivery:
- one line: ``send-keys -l`` (through `FleetPort.send_text`): literal, no key-name parsing;
- several lines: ``load-buffer`` + ``paste-buffer -p -d`` (`TmuxServerCommands.paste`): a bracketed
  paste, so Claude Code keeps the newlines in its input box instead of submitting at the first
  one. ``\\r\\n`` and lone ``\\r`` are normalised to ``\\n`` first, since tmux turns every LF
  into CR as a terminal paste does and a CR would otherwise arrive doubled.
- Enter, when asked for, is a separate key press after ``enter_delay`` seconds: Claude Code
  holds a paste open for ~100 ms and an Enter inside that window becomes a newline.

All methods block on tmux: call them from a thread worker, never the UI thread.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Protocol

from nbs_tui.core.detection.answer import AnswerCard, choose, recheck
from nbs_tui.core.detection.detect import detect_text
from nbs_tui.core.fleet.model import PaneId, PaneInfo, ServerAddress
from nbs_tui.operator.action_log import ActionLog, ActionRecord, Outcome
from nbs_tui.tmux.commands import PaneIdentity, TmuxServerCommands
from nbs_tui.tmux.port import FleetPort, PaneGone, TmuxCommandError, TmuxUnavailable

NAMED_KEYS: dict[str, str] = {
    "Enter": "Enter",
    "Esc": "Escape",
    "Escape": "Escape",
    "Ctrl-C": "C-c",
    "Ctrl-D": "C-d",
    "Ctrl-U": "C-u",
    "Ctrl-L": "C-l",
    "Up": "Up",
    "Down": "Down",
    "Left": "Left",
    "Right": "Right",
    "Tab": "Tab",
    "Shift-Tab": "BTab",
    "BTab": "BTab",
    "Space": "Space",
    "Backspace": "BSpace",
    "PageUp": "PPage",
    "PageDown": "NPage",
    "Home": "Home",
    "End": "End",
    **{str(digit): str(digit) for digit in range(10)},
}
"""Names an operator types or picks, mapped to tmux key names."""

_TMUX_KEY = re.compile(
    r"^(?:[CMS]-)*(?:[!-~]|F[1-9]|F1[0-2]|Enter|Escape|Tab|BTab|Space|BSpace|Up|Down|Left|Right"
    r"|Home|End|PPage|NPage|PageUp|PageDown|IC|DC|KP[0-9])$"
)


def tmux_key(name: str) -> str:
    """The tmux key name for an operator's key name; raises ``ValueError`` for an unknown one.

    Accepts the friendly names in `NAMED_KEYS` (case-insensitive), tmux's own names (``C-c``,
    ``M-x``, ``F5``, ``BTab``) and any single printable character.
    """
    stripped = name.strip()
    for friendly, key in NAMED_KEYS.items():
        if friendly.lower() == stripped.lower():
            return key
    if _TMUX_KEY.match(stripped):
        return stripped
    raise ValueError(f"unknown key {name!r}: use a tmux key name such as Enter, Escape, C-c, Up, BTab or 1")


class PollInjector(Protocol):
    """The sidecar's way into a pane: inject the poll command only if typing now is safe.

    Returns ``(injected, reason)``; ``reason`` says what was done or why it was skipped.
    """

    def force_poll(self, pane_id: PaneId) -> tuple[bool, str]: ...


class PaneControls(Protocol):
    """Per-pane switches owned by the sidecar: poll injection and plan auto-select, and the
    hands-off a person's typing asks of it."""

    def set_poll_enabled(self, pane_id: PaneId, enabled: bool) -> None: ...

    def set_plan_auto(self, pane_id: PaneId, enabled: bool) -> None: ...

    def note_operator_input(self, pane_id: PaneId) -> None: ...


@dataclass(frozen=True, slots=True)
class ActionResult:
    """What one action did to one pane, as recorded in the log."""

    pane_id: PaneId
    target: str
    action: str
    sent: str
    outcome: Outcome
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.SENT

    def describe(self) -> str:
        if self.ok:
            return f"{self.target}: {self.action} sent" + (f" ({self.reason})" if self.reason else "")
        return f"{self.target}: {self.outcome} — {self.reason}"


def summarize(results: Sequence[ActionResult]) -> str:
    """One line for a notification: how many were done, and each skip with its reason."""
    sent = [r for r in results if r.ok]
    others = [r for r in results if not r.ok]
    head = f"{len(sent)} of {len(results)} done"
    if not others:
        return head
    return head + "; " + "; ".join(r.describe() for r in others)


Probe = Callable[[PaneId], "PaneIdentity | None"]


class PaneCommands(Protocol):
    """The tmux commands the actions need besides the fleet's typing: the server's own
    (`TmuxServerCommands`), or each pane's host's (`nbs_tui.runtime.hosts.HostsTmux`)."""

    def pane_identity(self, pane_id: PaneId) -> PaneIdentity | None: ...

    def paste(self, pane_id: PaneId, text: str, *, bracketed: bool = True) -> bool: ...


class Operator:
    """Steer panes on behalf of the one person at the dashboard, logging every action."""

    def __init__(
        self,
        fleet: FleetPort,
        log: ActionLog,
        *,
        server: ServerAddress | None = None,
        tmux: PaneCommands | None = None,
        poller: PollInjector | None = None,
        controls: PaneControls | None = None,
        enter_delay: float = 0.5,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.fleet = fleet
        self.log = log
        self.tmux: PaneCommands = tmux or fleet.commands or TmuxServerCommands.for_server(server or ServerAddress())
        self.poller = poller
        self.controls = controls
        self.enter_delay = enter_delay
        self._clock = clock
        self._sleep = sleep

    # -- checks --------------------------------------------------------------------------

    def check_pane(self, pane: PaneInfo) -> str | None:
        """None when ``pane`` is still the pane chosen; otherwise why nothing may be sent to it."""
        identity = self.tmux.pane_identity(pane.pane_id)
        if identity is None:
            return f"pane {pane.pane_id} ({pane.target}) is gone"
        if identity.dead:
            return f"pane {pane.pane_id} ({pane.target}): its program has exited"
        if pane.pid and identity.pid != pane.pid:
            return (
                f"pane {pane.pane_id} ({pane.target}) was replaced: "
                f"process {pane.pid} is now {identity.pid}"
            )
        return None

    def _record(
        self, pane: PaneInfo, action: str, sent: str, why: str, outcome: Outcome, reason: str = ""
    ) -> ActionResult:
        result = ActionResult(pane.pane_id, pane.target, action, sent, outcome, reason)
        self.log.append(
            ActionRecord(
                time=self._clock(),
                action=action,
                pane_id=pane.pane_id,
                target=pane.target,
                sent=sent,
                why=why,
                outcome=outcome,
                reason=reason,
            )
        )
        return result

    def _deliver(self, pane: PaneInfo, action: str, sent: str, why: str, act: Callable[[], str]) -> ActionResult:
        """Check the pane, run ``act`` (which returns a detail), and record what happened."""
        try:
            gone = self.check_pane(pane)
            if gone:
                return self._record(pane, action, sent, why, Outcome.SKIPPED, gone)
            self._hands_off(pane.pane_id)
            detail = act()
        except PaneGone as error:
            return self._record(pane, action, sent, why, Outcome.SKIPPED, str(error) or "pane is gone")
        except (TmuxCommandError, TmuxUnavailable) as error:
            return self._record(pane, action, sent, why, Outcome.FAILED, str(error))
        return self._record(pane, action, sent, why, Outcome.SENT, detail)

    def _hands_off(self, pane_id: PaneId) -> None:
        """Tell the sidecar a person is typing here, so it does not type over them."""
        if self.controls is not None:
            self.controls.note_operator_input(pane_id)

    # -- text and keys -------------------------------------------------------------------

    def send_text(self, pane: PaneInfo, text: str, *, enter: bool = False, why: str = "operator") -> ActionResult:
        """Type ``text`` exactly as given into ``pane``; press Enter afterwards only if ``enter``."""
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        multi = "\n" in text
        action = "paste" if multi else "text"
        shown = text + ("⏎" if enter else "")

        def act() -> str:
            if multi:
                self.tmux.paste(pane.pane_id, text)
            elif text:
                self.fleet.send_text(pane.pane_id, text)
            if enter:
                if text and self.enter_delay > 0:
                    self._sleep(self.enter_delay)
                self.fleet.send_keys(pane.pane_id, "Enter")
            return "bracketed paste" if multi else ""

        if not text and not enter:
            return self._record(pane, action, shown, why, Outcome.SKIPPED, "nothing to send")
        return self._deliver(pane, action, shown, why, act)

    def send_key(self, pane: PaneInfo, key: str, *, why: str = "operator") -> ActionResult:
        """Press one named key (see `tmux_key`) in ``pane``."""
        try:
            name = tmux_key(key)
        except ValueError as error:
            return self._record(pane, "key", key, why, Outcome.SKIPPED, str(error))

        def act() -> str:
            self.fleet.send_keys(pane.pane_id, name)
            return ""

        return self._deliver(pane, "key", name, why, act)

    def send_keys(self, pane: PaneInfo, keys: Sequence[str], *, why: str = "pass-through") -> ActionResult:
        """Press several tmux keys in one go (pass-through typing); keys are already tmux names."""
        if not keys:
            return self._record(pane, "keys", "", why, Outcome.SKIPPED, "nothing to send")

        def act() -> str:
            self.fleet.send_keys(pane.pane_id, *keys)
            return ""

        return self._deliver(pane, "keys", " ".join(keys), why, act)

    def type_keys(
        self, pane: PaneInfo, keys: Sequence[tuple[bool, str]], *, why: str = "pass-through"
    ) -> ActionResult:
        """Replay keystrokes in order: ``(True, text)`` typed literally, ``(False, name)`` pressed.

        One pane check and one log record per call, so pass-through typing is batched by the caller.
        """
        groups: list[tuple[bool, str]] = []
        for literal, value in keys:
            if literal and groups and groups[-1][0]:
                groups[-1] = (True, groups[-1][1] + value)
            else:
                groups.append((literal, value))
        shown = "".join(value if literal else f"<{value}>" for literal, value in groups)
        if not groups:
            return self._record(pane, "keys", "", why, Outcome.SKIPPED, "nothing to send")

        def act() -> str:
            for literal, value in groups:
                if literal:
                    self.fleet.send_text(pane.pane_id, value)
                else:
                    self.fleet.send_keys(pane.pane_id, value)
            return ""

        return self._deliver(pane, "keys", shown, why, act)

    def broadcast(
        self,
        panes: Iterable[PaneInfo],
        *,
        text: str | None = None,
        key: str | None = None,
        enter: bool = False,
        why: str | None = None,
    ) -> list[ActionResult]:
        """Send the same text (and optional Enter) or the same key to each pane; one result each."""
        chosen = list(panes)
        if (text is None) == (key is None):
            raise ValueError("broadcast needs exactly one of text or key")
        reason = why or f"broadcast to {len(chosen)} pane{'s' if len(chosen) != 1 else ''}"
        results: list[ActionResult] = []
        for pane in chosen:
            if key is not None:
                results.append(self.send_key(pane, key, why=reason))
            else:
                results.append(self.send_text(pane, text or "", enter=enter, why=reason))
        return results

    # -- answers from the needs-you card -------------------------------------------------

    def answer(self, pane: PaneInfo, card: AnswerCard, key: str, *, why: str = "answer card") -> ActionResult:
        """Answer the menu on ``card`` with ``key`` (a digit, ``y``, ``n``, ``escape``), only if the
        live pane still shows that very menu in the same process (`nbs_tui.core.detection.answer.recheck`):
        the pane is captured again just before the key is pressed; otherwise nothing is sent."""
        choice = choose(card, key)
        if isinstance(choice, str):
            return self._record(pane, "answer", key, why, Outcome.SKIPPED, choice)
        same = replace(pane, pid=card.pid)  # the process the operator read the card from
        try:
            gone = self.check_pane(same)
            if gone:
                return self._record(pane, "answer", choice.key, why, Outcome.SKIPPED, gone)
            live = detect_text(self.fleet.capture_text(pane.pane_id))
            changed = recheck(card, live)
            if changed:
                return self._record(pane, "answer", choice.key, why, Outcome.SKIPPED, changed)
            self._hands_off(pane.pane_id)
            self.fleet.send_keys(pane.pane_id, choice.key)
        except PaneGone as error:
            return self._record(pane, "answer", choice.key, why, Outcome.SKIPPED, str(error) or "pane is gone")
        except (TmuxCommandError, TmuxUnavailable) as error:
            return self._record(pane, "answer", choice.key, why, Outcome.FAILED, str(error))
        return self._record(pane, "answer", choice.key, why, Outcome.SENT, choice.said)

    # -- polls ---------------------------------------------------------------------------

    def force_poll(self, pane: PaneInfo, *, why: str = "force poll") -> ActionResult:
        """Ask the sidecar to inject the poll command into ``pane`` now, if that is safe."""
        sent, outcome, reason = self._ask_poll(pane)
        return self._record(pane, "poll", sent, why, outcome, reason)

    def _ask_poll(self, pane: PaneInfo) -> tuple[str, Outcome, str]:
        """(sent, outcome, reason) of one poll request; blocks for the sidecar's answer."""
        if self.poller is None:
            return "", Outcome.SKIPPED, "no sidecar is running to inject polls"
        try:
            gone = self.check_pane(pane)
            if gone:
                return "", Outcome.SKIPPED, gone
            injected, reason = self.poller.force_poll(pane.pane_id)
        except PaneGone as error:
            return "", Outcome.SKIPPED, str(error) or "pane is gone"
        except (TmuxCommandError, TmuxUnavailable) as error:
            return "", Outcome.FAILED, str(error)
        return "poll", Outcome.SENT if injected else Outcome.SKIPPED, reason

    def force_poll_all(
        self, panes: Iterable[PaneInfo], is_idle: Callable[[PaneInfo], bool]
    ) -> list[ActionResult]:
        """Force a poll in every agent pane ``is_idle`` accepts; the others are reported as skipped."""
        why = "force poll (all idle)"
        agents = [pane for pane in panes if pane.is_agent]
        idle = [pane for pane in agents if is_idle(pane)]
        # asked all at once: a viewer's request waits about a tick for the holder's answer
        with ThreadPoolExecutor(max_workers=min(16, len(idle) or 1), thread_name_prefix="nbs-poll-all") as pool:
            answers = dict(zip((p.pane_id for p in idle), pool.map(self._ask_poll, idle), strict=True))
        results: list[ActionResult] = []
        for pane in agents:
            sent, outcome, reason = answers.get(pane.pane_id, ("", Outcome.SKIPPED, "not idle"))
            results.append(self._record(pane, "poll", sent, why, outcome, reason))
        return results

    # -- per-pane controls ---------------------------------------------------------------

    def set_poll_enabled(self, pane: PaneInfo, enabled: bool) -> ActionResult:
        return self._toggle(pane, "poll injection", enabled, "set_poll_enabled")

    def set_plan_auto(self, pane: PaneInfo, enabled: bool) -> ActionResult:
        return self._toggle(pane, "plan auto-select", enabled, "set_plan_auto")

    def _toggle(self, pane: PaneInfo, what: str, enabled: bool, method: str) -> ActionResult:
        sent = f"{what} {'on' if enabled else 'off'}"
        if self.controls is None:
            return self._record(pane, "toggle", sent, "operator", Outcome.SKIPPED, "no sidecar is running")
        try:
            getattr(self.controls, method)(pane.pane_id, enabled)
        except (KeyError, ValueError) as error:
            reason = str(error.args[0]) if error.args else str(error)
            return self._record(pane, "toggle", sent, "operator", Outcome.SKIPPED, reason)
        return self._record(pane, "toggle", sent, "operator", Outcome.SENT)

    # -- jumps (recorded here so the log holds every action) -----------------------------

    def record_jump(self, pane: PaneInfo, how: str, outcome: Outcome, reason: str = "") -> ActionResult:
        return self._record(pane, "jump", how, "operator", outcome, reason)
