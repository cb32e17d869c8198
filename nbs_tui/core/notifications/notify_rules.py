"""What is worth telling the operator about, as a notification that leaves the dashboard.

Pure: the caller feeds every agent's state (and the stuck watch's escalations) with the time,
and gets back the notifications due. Writing them (terminal escape sequences, a user command)
is the notify room's (`nbs_tui.notify`).

Rules:
- a pane seen for the first time only seeds its state: a dashboard that starts on a fleet
  already waiting does not fire for every agent at once (the needs-you panel lists them);
- ``needs-input``: the state became a permission prompt, a question, a dialog, or a plan menu
  nobody answers for it (``plan_waits``);
- ``finished``: ``working`` -> ``idle``;
- ``error``: the state became ``error``;
- ``limited``: the state became ``limited`` (a usage limit; matched by name, so this module
  works whether or not detection knows that state yet);
- ``stuck``: the stuck watch escalated the agent (once per escalation);
- ``task-done``, ``task-failed``: a work queue task ended well, or failed (pushes only, decided
  from the queue's records by `nbs_tui.core.notifications.task_notices`, not from states);
- none for the pane the operator is looking at, none of a muted kind (muted here, or for the
  whole server: ``also_muted``), and the same kind for the
  same pane at most once per ``repeat`` seconds (an agent flapping between a prompt and work
  does not ring twenty times).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from nbs_tui.core.fleet.model import PaneId


class NotifyKind(StrEnum):
    NEEDS_INPUT = "needs-input"
    FINISHED = "finished"
    ERROR = "error"
    LIMITED = "limited"
    STUCK = "stuck"
    TASK_DONE = "task-done"
    TASK_FAILED = "task-failed"


TASK_KINDS = frozenset({NotifyKind.TASK_DONE, NotifyKind.TASK_FAILED})
"""The work queue's kinds: each is one task's outcome, said once (no repeat limit applies)."""

KIND_LABELS: Mapping[NotifyKind, str] = {
    NotifyKind.NEEDS_INPUT: "needs input",
    NotifyKind.FINISHED: "finished",
    NotifyKind.ERROR: "error",
    NotifyKind.LIMITED: "usage limit",
    NotifyKind.STUCK: "stuck",
    NotifyKind.TASK_DONE: "task done",
    NotifyKind.TASK_FAILED: "task failed",
}

_NEEDS_INPUT = frozenset({"permission", "question", "dialog"})
LIMITED_STATE = "limited"
"""The usage-limit state's name (`nbs_tui.core.fleet.model.AgentState` may or may not have it yet)."""


class NotifySettingsError(ValueError):
    """A mute list names a kind that does not exist."""


def parse_kinds(names: Iterable[str]) -> frozenset[NotifyKind]:
    """Kinds from their names (``needs-input``, ``finished``, ...); raises on an unknown one."""
    kinds = set()
    for name in names:
        try:
            kinds.add(NotifyKind(name.strip().lower().replace("_", "-")))
        except ValueError:
            known = ", ".join(kind.value for kind in NotifyKind)
            raise NotifySettingsError(f"unknown notification kind {name!r} (known: {known})") from None
    return frozenset(kinds)


def encode_kinds(kinds: Iterable[NotifyKind]) -> str:
    """Kinds as one comma-separated word (a tmux option's value); "" for none."""
    return ",".join(sorted(kind.value for kind in kinds))


def decode_kinds(value: str) -> frozenset[NotifyKind]:
    """`encode_kinds` back; names this version does not know (a newer one wrote them) are left out."""
    known = {kind.value: kind for kind in NotifyKind}
    return frozenset(known[name] for name in (n.strip() for n in value.split(",")) if name in known)


@dataclass(frozen=True, slots=True)
class Notification:
    """One notification due: which pane, what happened, in which state, why."""

    kind: NotifyKind
    pane_id: PaneId
    state: str
    reason: str
    at: float
    also: tuple[PaneId, ...] = ()
    """Other panes folded into this one by `coalesce` (the same kind at the same moment)."""

    @property
    def label(self) -> str:
        return KIND_LABELS[self.kind]


BURST = 3
"""More notifications than this of one kind at once become one (`coalesce`)."""


def coalesce(notes: Iterable[Notification], burst: int = BURST) -> list[Notification]:
    """One notification per kind for a burst: a usage limit hits every agent of the account at
    once, and fifty desktop notifications (or fifty ntfy messages) say less than one."""
    by_kind: dict[NotifyKind, list[Notification]] = {}
    for note in notes:
        by_kind.setdefault(note.kind, []).append(note)
    out: list[Notification] = []
    for group in by_kind.values():
        if len(group) <= burst:
            out += group
            continue
        first = group[0]
        others = tuple(note.pane_id for note in group[1:])
        out.append(Notification(first.kind, first.pane_id, first.state, first.reason, first.at, also=others))
    return out


@dataclass(slots=True)
class _Seen:
    state: str
    stuck: str | None = None


@dataclass
class NotifyDecider:
    """Decides which state changes become notifications (see the module docstring)."""

    muted: frozenset[NotifyKind] = frozenset()
    """This process's own mute (``notify_mute``, then its palette's toggles)."""
    also_muted: frozenset[NotifyKind] = frozenset()
    """Kinds muted for the whole tmux server (``@nbs_mute``, any dashboard's palette): the
    caller keeps this up to date with what the server says."""
    repeat: float = 60.0
    """Seconds within which the same kind for the same pane is not notified again."""
    _seen: dict[PaneId, _Seen] = field(default_factory=dict)
    _last: dict[tuple[PaneId, NotifyKind], float] = field(default_factory=dict)

    def seen(self, pane_id: PaneId) -> str | None:
        """The state last observed for the pane (None: not seen, or forgotten)."""
        seen = self._seen.get(pane_id)
        return seen.state if seen is not None else None

    def toggle_mute(self, kind: NotifyKind) -> bool:
        """Mute ``kind`` if it was not, unmute it if it was; returns whether it is muted now."""
        muted = kind not in self.muted
        self.muted = self.muted | {kind} if muted else self.muted - {kind}
        return muted

    def observe(
        self,
        pane_id: PaneId,
        state: str,
        now: float,
        *,
        reason: str = "",
        plan_waits: bool = False,
        stuck: str | None = None,
        looking_at: PaneId | None = None,
    ) -> list[Notification]:
        """One pane's current state (``state`` is an `AgentState` value or any state name);
        ``stuck``: why the stuck watch escalated it (None: it did not)."""
        seen = self._seen.get(pane_id)
        self._seen[pane_id] = _Seen(state, stuck)
        if seen is None:
            return []
        due: list[tuple[NotifyKind, str]] = []
        if state != seen.state:
            kind = self._kind_of_change(seen.state, state, plan_waits)
            if kind is not None:  # "finished" says so; the idle screen's reason would not
                due.append((kind, reason if reason and kind is not NotifyKind.FINISHED else _default_reason(kind, state)))
        if stuck is not None and seen.stuck is None:
            due.append((NotifyKind.STUCK, stuck))
        return [
            note
            for kind, why in due
            if (note := self._allow(Notification(kind, pane_id, state, why, now), looking_at)) is not None
        ]

    def sync(
        self,
        states: Mapping[PaneId, str],
        now: float,
        *,
        reasons: Mapping[PaneId, str] | None = None,
        plan_waits: frozenset[PaneId] = frozenset(),
        stuck: Mapping[PaneId, str] | None = None,
        looking_at: PaneId | None = None,
    ) -> list[Notification]:
        """The whole fleet at once; panes not in ``states`` are forgotten."""
        for gone in set(self._seen) - set(states):
            self.forget(gone)
        notes: list[Notification] = []
        for pane_id, state in states.items():
            notes += self.observe(
                pane_id, state, now,
                reason=(reasons or {}).get(pane_id, ""), plan_waits=pane_id in plan_waits,
                stuck=(stuck or {}).get(pane_id), looking_at=looking_at,
            )  # fmt: skip
        return notes

    def allow_outcome(self, note: Notification) -> Notification | None:
        """A one-time event's notification (a queue task's outcome): only the mute applies, not
        the repeat limit (two tasks done by one agent within a minute are two pushes)."""
        return None if note.kind in self.muted or note.kind in self.also_muted else note

    def forget(self, pane_id: PaneId) -> None:
        self._seen.pop(pane_id, None)
        for key in [key for key in self._last if key[0] == pane_id]:
            del self._last[key]

    @staticmethod
    def _kind_of_change(before: str, after: str, plan_waits: bool) -> NotifyKind | None:
        if after in _NEEDS_INPUT or (after == "plan" and plan_waits):
            return NotifyKind.NEEDS_INPUT
        if after == "idle" and before == "working":
            return NotifyKind.FINISHED
        if after == "error":
            return NotifyKind.ERROR
        if after == LIMITED_STATE:
            return NotifyKind.LIMITED
        return None

    def _allow(self, note: Notification, looking_at: PaneId | None) -> Notification | None:
        if note.kind in self.muted or note.kind in self.also_muted or note.pane_id == looking_at:
            return None
        key = (note.pane_id, note.kind)
        last = self._last.get(key)
        if last is not None and note.at - last < self.repeat:
            return None
        self._last[key] = note.at
        return note


def _default_reason(kind: NotifyKind, state: str) -> str:
    if kind is NotifyKind.NEEDS_INPUT:
        return {"permission": "permission prompt", "plan": "plan approval"}.get(state, state)
    if kind is NotifyKind.FINISHED:
        return "done: idle at the prompt"
    return KIND_LABELS[kind]


def message(note: Notification, name: str) -> tuple[str, str]:
    """(title, body) for a notification about the pane called ``name`` (and those it folds in)."""
    more = f" and {len(note.also)} more" if note.also else ""
    return f"nbs-tui: {name}{more} {note.label}", note.reason


PUSH_LINE = 120
"""The longest question line a push carries (a phone shows about this much)."""


def question_line(prompt: str) -> str:
    """The question a menu asks, as one short line: the first line of the menu's prompt that
    asks something (``Do you want to proceed?``), else its first line. The rows in between (the
    command asked about, a diff) stay on the screen: they may hold anything."""
    lines = [" ".join(line.split()) for line in prompt.splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        return ""
    asked = next((line for line in lines if line.endswith("?")), lines[0])
    clean = "".join(ch for ch in asked if ch.isprintable())
    return clean if len(clean) <= PUSH_LINE else clean[: PUSH_LINE - 1] + "…"


def push_message(note: Notification, name: str, question: str = "", link: str = "") -> tuple[str, str]:
    """(title, body) of a push: the agent's name and what happened in the title; its state, the
    question's line and the link to its card in the body. Nothing else of the screen."""
    if note.kind in TASK_KINDS:  # the task and how it ended (`task_notices.task_note`)
        return message(note, name or "a new agent")[0], "\n".join(x for x in (note.reason, link) if x)
    title, _ = message(note, name)
    lines = [f"state: {note.state}"]
    if question:
        lines.append(question)
    if link:
        lines.append(link)
    return title, "\n".join(lines)
