"""The control plane's snapshots and history as JSON, for the ssh stdio channel (docs/remote.md).

`encode_snapshot`/`encode_entries` on the host (``nbs-tui serve-stdio``); `decode_snapshot`/
`decode_entries` in the dashboard, which names every path and pane by its host (``hosta:/path``,
``hosta:%3``) so a remote project is never mistaken for a folder of this machine.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from nbs_tui.core.control.chat import ChatMessage, ChatSummary, ReaderState
from nbs_tui.core.control.control_commands import Outcome
from nbs_tui.files.control_events import (
    ChannelSnapshot,
    EntryStatus,
    HistoryEntry,
    PlaneSnapshot,
    ProjectSnapshot,
)

Qualify = Callable[[str], str]


def _same(text: str) -> str:
    return text


def encode_snapshot(snapshot: PlaneSnapshot) -> dict[str, Any]:
    return dataclasses.asdict(snapshot)


def encode_entries(entries: Sequence[HistoryEntry]) -> list[list[Any]]:
    return [[e.seen, e.project, e.source, e.channel, e.line, e.outcome.value, e.why] for e in entries]


def encode_history(entries: Sequence[HistoryEntry]) -> dict[str, Any]:
    """A ``history`` record. Each entry's ``seq`` rides in a list of its own, ``seqs``, so a viewer
    can tell a replayed entry from a new one that says the same, and an older viewer (which
    reads seven fields an entry) still reads it."""
    return {"t": "history", "entries": encode_entries(entries), "seqs": [e.seq for e in entries]}


def history_seqs(record: dict[str, Any]) -> tuple[int | None, ...]:
    """The host's ``seq`` of each entry of a ``history`` record (None from a host that does not
    send them)."""
    entries, seqs = record.get("entries", ()), record.get("seqs")
    if not isinstance(seqs, list) or len(seqs) != len(entries):
        return (None,) * len(entries)
    return tuple(int(seq) for seq in seqs)


def _chat(raw: dict[str, Any], q: Qualify) -> ChatSummary:
    newest = raw.get("newest")
    return ChatSummary(
        path=q(raw["path"]),
        exists=bool(raw["exists"]),
        archive=bool(raw["archive"]),
        total=int(raw.get("total", 0)),
        readers=tuple(ReaderState(**r) for r in raw.get("readers", ())),
        newest=ChatMessage(**newest) if newest else None,
        consistent=bool(raw.get("consistent", True)),
        error=str(raw.get("error", "")),
        archives=tuple(q(a) for a in raw.get("archives", ())),
    )


def _channel(raw: dict[str, Any], q: Qualify) -> ChannelSnapshot:
    return ChannelSnapshot(
        handle=raw["handle"],
        inbox=q(raw["inbox"]),
        registry=q(raw["registry"]),
        entries=tuple(
            EntryStatus(e["kind"], e["path"], q(e["absolute"]), bool(e["exists"])) for e in raw.get("entries", ())
        ),
        unparsed=tuple(raw.get("unparsed", ())),
        lines_read=int(raw.get("lines_read", 0)),
        poll_interval=raw.get("poll_interval"),
    )


def decode_snapshot(raw: dict[str, Any], q: Qualify = _same, pane: Qualify = _same) -> PlaneSnapshot:
    """The snapshot a host sent, its paths passed through ``q`` and its pane ids through ``pane``."""
    projects = tuple(
        ProjectSnapshot(
            root=q(p["root"]),
            has_nbs=bool(p["has_nbs"]),
            channels=tuple(_channel(c, q) for c in p.get("channels", ())),
            chats=tuple(_chat(c, q) for c in p.get("chats", ())),
            paused=bool(p.get("paused", False)),
            poll_interval=p.get("poll_interval"),
            panes=tuple(pane(x) for x in p.get("panes", ())),
            error=str(p.get("error", "")),
            unregistered_chats=tuple(p.get("unregistered_chats", ())),
        )
        for p in raw.get("projects", ())
    )
    return PlaneSnapshot(projects, int(raw.get("history_total", 0)))


def decode_entries(raw: Sequence[Sequence[Any]], q: Qualify = _same) -> tuple[HistoryEntry, ...]:
    """History entries a host sent; ``seq`` 0: the panel's skip-by-seq is for local entries."""
    return tuple(
        HistoryEntry(float(seen), q(project), source, channel, line, Outcome(outcome), why, 0)
        for seen, project, source, channel, line, outcome, why in raw
    )
