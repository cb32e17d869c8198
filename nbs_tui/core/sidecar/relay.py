"""The holder's actions relayed to every viewer through a tmux pane option (docs/lease.md).

Only the lease holder types ``/nbs-poll``, answers plan menus and nudges; a viewer (another
dashboard on this host or over ssh) must still see those actions in its history. The holder
keeps, on each pane it acted in, the user option `ACTIONS_OPTION`: a JSON list of that pane's
last `RELAY_KEEP` actions, each with a per-pane sequence number. Every view already reads the
pane options once a tick (one ``list-panes``), so the actions travel with that read, over ssh
too, with no port or file.

Sequence numbers go up by one per action *per pane* and survive a change of holder (the new
holder continues from the number it reads), so a viewer shows each action once (`RelayReader`)
and says how many it missed when more than `RELAY_KEEP` happened between two of its reads.
Pure: no tmux, no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nbs_tui.core.screen.text import loads_json

ACTIONS_OPTION = "@nbs_actions"
"""Pane option the holder writes: the pane's last actions (`encode_ring`)."""
RELAY_KEEP = 6
"""Actions kept per pane: a poll is typed, entered and confirmed over about three ticks, and a
viewer reads once a tick, so six leave room for a viewer one or two ticks late."""
LIFECYCLE_OPTION = "@nbs_lifecycle"
"""Server option: the last lifecycle actions on this server (`LIFECYCLE_KINDS`), by any process (a
``nbs-tui stop`` run, any dashboard, holder or viewer): a ring as `encode_ring`, each action's pane
in its data (``pane``, ``target``). Server-wide, not per pane: a stopped agent's pane is gone."""
LIFECYCLE_SEQ_OPTION = "@nbs_lifecycle_seq"
"""Server option: the number of the ring's last action; a writer appends only while it is still the
number it read (one step inside tmux), so two writers never number two actions alike."""
LIFECYCLE_KINDS = frozenset({"stop", "restart"})
"""Actions any process may take on an agent and every view is told of (docs/lifecycle.md)."""
_DATA_KEYS = ("result", "text", "label", "number", "nudge", "attempt", "reason", "pane", "target")
MAX_TEXT = 80
"""Characters kept of each text field: the option is read by every view every tick."""


def _short(value: object) -> object:
    if isinstance(value, str) and len(value) > MAX_TEXT:
        return value[: MAX_TEXT - 1] + "…"
    return value


@dataclass(frozen=True, slots=True)
class RelayedAction:
    """One action of the holder in one pane, as it travels through tmux."""

    seq: int
    at: float
    """The holder's wall time (display only)."""
    kind: str
    by: str
    """Who acted, for people: ``HOST pid PID``."""
    message: str = ""
    data: tuple[tuple[str, Any], ...] = ()


def relay_data(data: Iterable[tuple[str, Any]]) -> tuple[tuple[str, Any], ...]:
    """The fields of a sidecar event worth relaying (scalars, texts shortened)."""
    kept = dict(data)
    return tuple(
        (key, _short(kept[key]))
        for key in _DATA_KEYS
        if key in kept and isinstance(kept[key], str | int | float | bool) and kept[key] != ""
    )


def encode_ring(actions: Sequence[RelayedAction]) -> str:
    """The option's value: ASCII JSON (no tab or newline, so a ``list-panes`` row stays one
    row)."""
    rows = [
        [a.seq, round(a.at, 3), a.kind, a.by, _short(a.message), dict(a.data)]
        for a in actions[-RELAY_KEEP:]
    ]
    return json.dumps(rows, ensure_ascii=True, separators=(",", ":"))


def parse_ring(raw: str) -> tuple[RelayedAction, ...]:
    """The actions in an option's value, oldest first; anything garbled is skipped."""
    raw = raw.strip()
    if not raw:
        return ()
    try:
        rows = loads_json(raw)
    except ValueError:
        return ()
    if not isinstance(rows, list):
        return ()
    out: list[RelayedAction] = []
    for row in rows:
        if not isinstance(row, list) or len(row) < 6:
            continue
        seq, at, kind, by, message, data = row[:6]
        if not isinstance(seq, int) or isinstance(seq, bool) or not isinstance(kind, str):
            continue
        if not isinstance(at, int | float) or not isinstance(data, dict):
            continue
        out.append(
            RelayedAction(
                seq, float(at), kind, str(by), str(message), relay_data(data.items())
            )
        )
    out.sort(key=lambda a: a.seq)
    return tuple(out)


def append_action(
    ring: Sequence[RelayedAction],
    at: float,
    kind: str,
    by: str,
    message: str,
    data: Iterable[tuple[str, Any]],
    *,
    seq: int | None = None,
) -> tuple[RelayedAction, ...]:
    """``ring`` with one more action numbered ``seq``, by default after the last (1 for an empty
    ring), trimmed."""
    if seq is None:
        seq = ring[-1].seq + 1 if ring else 1
    action = RelayedAction(seq, at, kind, by, str(_short(message)), relay_data(data))
    return (*ring, action)[-RELAY_KEEP:]


@dataclass(frozen=True, slots=True)
class RelayNews:
    """What a viewer learns from one read of one pane's ring."""

    actions: tuple[RelayedAction, ...] = ()
    missed: int = 0
    """Actions numbered between the last one seen and the first new one, no longer in the ring."""


class RelayReader:
    """Per pane, the last sequence number seen: each action is shown once, gaps are counted.

    The first read of a pane only sets the mark (what is there happened before this view
    started). A ring whose last number is below the mark was started afresh (the option was
    cleared): all of it is new.
    """

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def read(self, pane_id: str, ring: Sequence[RelayedAction]) -> RelayNews:
        last = self._seen.get(pane_id)
        top = ring[-1].seq if ring else 0
        if last is None:
            self._seen[pane_id] = top
            return RelayNews()
        if not ring:
            return RelayNews()
        if top < last:
            last = 0
        new = tuple(a for a in ring if a.seq > last)
        self._seen[pane_id] = top
        if not new:
            return RelayNews()
        return RelayNews(new, max(0, new[0].seq - last - 1))

    def mark(self, pane_id: str, seq: int) -> None:
        """This process wrote ``seq`` itself (as the holder): not news when it reads it back."""
        self._seen[pane_id] = max(seq, self._seen.get(pane_id, 0))

    def retain(self, pane_ids: Iterable[str]) -> None:
        """Forget panes no longer listed."""
        keep = set(pane_ids)
        for pane_id in [p for p in self._seen if p not in keep]:
            del self._seen[pane_id]


def read_all(reader: RelayReader, rings: Mapping[str, Sequence[RelayedAction]]) -> dict[str, RelayNews]:
    """`RelayReader.read` for every pane listed (and forget the others); only panes with news."""
    reader.retain(rings)
    out: dict[str, RelayNews] = {}
    for pane_id, ring in rings.items():
        news = reader.read(pane_id, ring)
        if news.actions or news.missed:
            out[pane_id] = news
    return out
