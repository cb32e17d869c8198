"""Filter the fleet by name, session, project or state: a small query language, pure.

A query is words separated by spaces; every word must match (AND), case-insensitively.
``session:api`` (``s:``), ``project:web`` (``p:``), ``name:review`` (``n:``; the pane title,
window name or ``session:window.pane``), ``state:idle`` (``st:``; ``state:needs`` matches every
state that waits on a person), ``host:hosta`` (``h:``; the watched host, with several). A bare word matches any of those fields. A word with an unknown
``key:`` is matched as a bare word, so ``%12`` or ``a:1.0`` still find a pane.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from nbs_tui.core.fleet.model import AgentState, PaneInfo

KEYS = {
    "session": "session",
    "s": "session",
    "project": "project",
    "p": "project",
    "name": "name",
    "n": "name",
    "state": "state",
    "st": "state",
    "host": "host",
    "h": "host",
}


@dataclass(frozen=True, slots=True)
class Term:
    field: str | None
    """``session``, ``project``, ``name``, ``state``, ``host``, or None for any."""
    value: str


@dataclass(frozen=True, slots=True)
class FleetFilter:
    terms: tuple[Term, ...] = ()

    @classmethod
    def parse(cls, query: str) -> FleetFilter:
        terms: list[Term] = []
        for word in query.split():
            key, sep, value = word.partition(":")
            field = KEYS.get(key.lower()) if sep else None
            if field is not None and value:
                terms.append(Term(field, value.lower()))
            elif field is None:
                terms.append(Term(None, word.lower()))
        return cls(tuple(terms))

    def __bool__(self) -> bool:
        return bool(self.terms)

    def matches(self, pane: PaneInfo, state: AgentState | None = None) -> bool:
        return all(_term_matches(term, pane, state) for term in self.terms)

    def describe(self) -> str:
        return " ".join(f"{t.field}:{t.value}" if t.field else t.value for t in self.terms)


def _project(pane: PaneInfo) -> str:
    return os.path.basename(pane.current_path.rstrip("/")) or pane.current_path


def _fields(pane: PaneInfo, state: AgentState | None) -> dict[str, list[str]]:
    return {
        "session": [pane.session_name],
        "project": [_project(pane), pane.current_path],
        "name": [pane.title, pane.window_name, pane.target, pane.pane_id],
        "state": [state.value] if state is not None else [],
        "host": [pane.host] if pane.host else [],
    }


def _term_matches(term: Term, pane: PaneInfo, state: AgentState | None) -> bool:
    if term.field == "state":
        if state is None:
            return False
        if term.value in ("needs", "needs-you", "needsyou"):
            return state.needs_person
        return state.value.startswith(term.value)
    fields = _fields(pane, state)
    haystacks = fields[term.field] if term.field else [v for values in fields.values() for v in values]
    return any(term.value in value.lower() for value in haystacks)
