"""Sidecar state and the viewers' wishes, carried in tmux user options (docs/lease.md).

The holder publishes ``@nbs_state``, ``@nbs_needs`` and ``@nbs_since`` on each agent pane
(`PaneOptionsPublisher`): only what changed, as one tmux command line for many panes, so
``tmux list-panes -F '#{pane_id} #{@nbs_state}'``, a status line or a script can read them.
The holder also keeps each pane's last actions in ``@nbs_actions`` (`nbs_tui.core.sidecar.relay`),
read by every view in the same ``list-panes``. Every view (holder or not) writes the per-pane switches, poll requests and the pause into
options too (`SidecarSwitches`), and the holder reads them all with one ``list-panes`` a tick:
no port, no file, and the same over ssh. All calls block for one tmux round trip.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nbs_tui.core.fleet.model import PaneId
from nbs_tui.core.notifications.notify_rules import NotifyKind, decode_kinds, encode_kinds
from nbs_tui.core.sidecar.delivery_rules import SEND_ANSWER_OPTION, SEND_REQUEST_OPTION
from nbs_tui.core.sidecar.lease_rules import (
    INFLIGHT_OPTION,
    MUTE_OPTION,
    PAUSE_OPTION,
    PLAN_SWITCH_OPTION,
    POLL_ANSWER_OPTION,
    POLL_REQUEST_OPTION,
    POLL_SWITCH_OPTION,
    PUBLISHED_OPTIONS,
    START_CLAIM_OPTION,
    PaneSwitches,
    parse_inflight,
    parse_start_claim,
    parse_switch,
)
from nbs_tui.core.sidecar.meters import Meters
from nbs_tui.core.sidecar.meters_relay import METERS_OPTION, parse_meters
from nbs_tui.core.sidecar.relay import (
    ACTIONS_OPTION,
    LIFECYCLE_OPTION,
    LIFECYCLE_SEQ_OPTION,
    RelayedAction,
    append_action,
    encode_ring,
    parse_ring,
)
from nbs_tui.sidecar.heartbeat import LeaseClient, fence
from nbs_tui.tmux.commands import Guard, TmuxServerCommands


@dataclass(frozen=True, slots=True)
class PublishedState:
    """What the holder says about one agent pane."""

    state: str
    needs: str = ""
    """Why the pane needs a person (``plan``, ``question``, ``error``, ``stuck``...) or empty."""
    since: int = 0
    """Wall time (the holder's clock) the state began, in seconds."""
    meters: str = ""
    """The agent's meters, encoded (`nbs_tui.core.sidecar.meters_relay.encode_meters`)."""

    def options(self) -> tuple[str, ...]:
        """Values in the order of `PUBLISHED_OPTIONS`."""
        return (self.state, self.needs, str(self.since) if self.since else "", self.meters)


def option_command(pane_id: PaneId, name: str, value: str) -> tuple[str, ...]:
    """Set (or, for an empty value, unset) one pane option; ``-q``: a pane that died meanwhile
    is not an error, so the rest of the line still runs."""
    if value == "":
        return ("set-option", "-pqu", "-t", pane_id, name)
    return ("set-option", "-pq", "-t", pane_id, name, value)


class PaneOptionsPublisher:
    """The holder's published pane state: sends only changes, remembers what it set."""

    def __init__(self, commands: TmuxServerCommands) -> None:
        self.commands = commands
        self._last: dict[PaneId, tuple[str, ...]] = {}
        self.runs = 0
        """tmux command lines run so far (for the benchmark)."""

    def publish(self, states: Mapping[PaneId, PublishedState]) -> int:
        """Bring the panes' options to ``states``; panes no longer listed are cleared.

        Returns the number of options changed (0: no tmux command was run).
        """
        lines: list[tuple[str, ...]] = []
        for pane_id, state in states.items():
            new = state.options()
            old = self._last.get(pane_id, ("",) * len(PUBLISHED_OPTIONS))
            for name, before, after in zip(PUBLISHED_OPTIONS, old, new, strict=True):
                if before != after:
                    lines.append(option_command(pane_id, name, after))
        for pane_id in set(self._last) - set(states):
            for name, before in zip(PUBLISHED_OPTIONS, self._last[pane_id], strict=True):
                if before:
                    lines.append(option_command(pane_id, name, ""))
        if lines:
            self.runs += self.commands.run_batched(lines)
        self._last = {pane_id: state.options() for pane_id, state in states.items()}
        return len(lines)

    def clear_stale(self) -> int:
        """Unset every published option on every pane (left by an earlier holder); the next
        `publish` then sets everything afresh. Returns the number of options cleared."""
        fmt = "\t".join(["#{pane_id}", *(f"#{{{name}}}" for name in PUBLISHED_OPTIONS)])
        out = self.commands.run("list-panes", "-a", "-F", fmt)
        self.runs += 1
        lines: list[tuple[str, ...]] = []
        for pane_id, *values in out.rows("\t"):
            for name, value in zip(PUBLISHED_OPTIONS, values, strict=False):
                if value:
                    lines.append(option_command(pane_id, name, ""))
        if lines:
            self.runs += self.commands.run_batched(lines)
        self._last = {}
        return len(lines)

    def clear_mine(self) -> None:
        """Unset what this publisher set (a holder that lets go cleanly)."""
        self.publish({})

    def forget(self) -> None:
        """Drop the memory of what was set, touching nothing (the lease was lost: the next
        holder clears them)."""
        self._last = {}


_SWITCH_FIELDS = (
    "#{pane_id}",
    f"#{{{POLL_SWITCH_OPTION}}}",
    f"#{{{PLAN_SWITCH_OPTION}}}",
    f"#{{{POLL_REQUEST_OPTION}}}",
    f"#{{{POLL_ANSWER_OPTION}}}",
    f"#{{{ACTIONS_OPTION}}}",  # ASCII JSON: never a tab
    f"#{{{METERS_OPTION}}}",  # ASCII JSON too
    f"#{{{START_CLAIM_OPTION}}}",  # TOKEN DEADLINE
    f"#{{{SEND_REQUEST_OPTION}}}",  # ID DEADLINE
    f"#{{{SEND_ANSWER_OPTION}}}",  # one line, no tab (render_answer)
    f"#{{{INFLIGHT_OPTION}}}",  # last: the only field whose text is not ours to choose
)


class SidecarSwitches:
    """What any view writes and the holder reads: per-pane switches, poll requests, pause."""

    def __init__(self, commands: TmuxServerCommands) -> None:
        self.commands = commands
        self.lease = LeaseClient(commands)
        self._parsed: dict[PaneId, tuple[str, Meters | None]] = {}
        self._rows: dict[PaneId, tuple[str, PaneSwitches]] = {}
        """Each pane's row as last read, and its switches: a row read again is not parsed again
        (1,000 idle panes: 1,000 rows a second, in the dashboard and the service; issue 35)."""
        """Each pane's meters value read last and its parse: most do not change between reads."""
        self.lifecycle: tuple[RelayedAction, ...] = ()
        """The server's last lifecycle actions (`LIFECYCLE_OPTION`), as of the last `read`."""
        self._lifecycle_raw = ""
        self.muted: frozenset[NotifyKind] = frozenset()
        """The notification kinds muted server-wide (`MUTE_OPTION`), as of the last `read`."""

    # -- any view --------------------------------------------------------------------------------

    def set_switch(self, pane_id: PaneId, which: str, enabled: bool | None) -> None:
        """``which`` is ``poll`` or ``plan``; None drops the override (back to the default)."""
        name = {"poll": POLL_SWITCH_OPTION, "plan": PLAN_SWITCH_OPTION}[which]
        value = "" if enabled is None else "on" if enabled else "off"
        self.commands.run_many([option_command(pane_id, name, value)])

    def request_poll(self, pane_id: PaneId) -> str:
        """Ask the holder for a poll in this pane now; the request id to look for in the answer."""
        request = secrets.token_hex(4)
        self.commands.run_many([option_command(pane_id, POLL_REQUEST_OPTION, request)])
        return request

    def set_paused(self, paused: bool) -> None:
        if paused:
            self.commands.run("set-option", "-s", PAUSE_OPTION, "on")
        else:
            self.commands.run("set-option", "-su", PAUSE_OPTION)

    def set_muted(self, kinds: frozenset[NotifyKind]) -> None:
        if kinds:
            self.commands.run("set-option", "-s", MUTE_OPTION, encode_kinds(kinds))
        else:
            self.commands.run("set-option", "-su", MUTE_OPTION)

    # -- the holder (and any view, to show them) -----------------------------------------------

    def read(self) -> tuple[bool, dict[PaneId, PaneSwitches]]:
        """The pause and every pane's switches (and the mute, kept in `muted`), in one tmux
        command line (in-band on the fleet's control connection when one is ready, here or on
        another host)."""
        server = (  # kind names and ASCII JSON: no tab in any
            "display-message", "-p", f"#{{{PAUSE_OPTION}}}\t#{{{MUTE_OPTION}}}\t#{{{LIFECYCLE_OPTION}}}",
        )  # fmt: skip
        listing = ("list-panes", "-a", "-F", "\t".join(_SWITCH_FIELDS))
        out = self.commands.run_many([server, listing])
        first, _, rest_of_line = out.first.partition("\t")
        muted, _, lifecycle = rest_of_line.partition("\t")
        self.muted = decode_kinds(muted)
        rest = out.lines[1:]
        if lifecycle != self._lifecycle_raw:  # parsed again only when it changed
            self._lifecycle_raw, self.lifecycle = lifecycle, parse_ring(lifecycle)
        panes: dict[PaneId, PaneSwitches] = {}
        for row in rest:
            listed = row.partition("\t")[0]
            seen = self._rows.get(listed)
            if seen is not None and seen[0] == row:  # as last read (every idle pane, each tick)
                panes[listed] = seen[1]
                continue
            fields = row.split("\t", len(_SWITCH_FIELDS) - 1)
            if len(fields) != len(_SWITCH_FIELDS):
                continue
            pane_id, poll, plan, request, answer, actions, meters, claim, send_req, send_ack, inflight = fields
            switches = panes[pane_id] = PaneSwitches(
                poll=parse_switch(poll),
                plan=parse_switch(plan),
                poll_request=request,
                poll_answer=answer,
                inflight=parse_inflight(inflight),
                actions=parse_ring(actions),
                meters=self._meters(pane_id, meters),
                start_claim=parse_start_claim(claim),
                send_request=send_req,
                send_answer=send_ack,
            )
            self._rows[pane_id] = (row, switches)
        for gone in self._parsed.keys() - panes.keys():
            del self._parsed[gone]
        for gone in self._rows.keys() - panes.keys():
            del self._rows[gone]
        return parse_switch(first) is True, panes

    def _meters(self, pane_id: PaneId, raw: str) -> Meters | None:
        """Parsed again only when the pane's value changed: one entry a pane, not one a value."""
        last = self._parsed.get(pane_id)
        if last is None or last[0] != raw:
            last = self._parsed[pane_id] = (raw, parse_meters(raw))
        return last[1]

    def answer_poll(self, pane_id: PaneId, request: str, ok: bool, why: str = "") -> None:
        answer = f"{request} {'ok' if ok else 'no'}" + (f" {why}" if why else "")
        self.commands.run_many([option_command(pane_id, POLL_ANSWER_OPTION, answer)])

    def write_actions(self, rings: Mapping[PaneId, Sequence[RelayedAction]]) -> int:
        """The holder's relayed actions (`nbs_tui.core.sidecar.relay`), all panes in as few tmux runs as
        fit; the number of runs."""
        lines = [option_command(p, ACTIONS_OPTION, encode_ring(ring)) for p, ring in rings.items()]
        return self.commands.run_batched(lines) if lines else 0

    # -- the in-flight mark, fenced on the holder's token ---------------------------------------

    def drop_start_claim(self, token: str, pane_id: PaneId, claim: str) -> bool:
        """Unset a start claim whose deadline passed (its ``nbs-tui new`` died or gave up), only
        while ``token`` holds the lease and the claim is still that one."""
        guard = Guard(
            f"#{{&&:{fence(token).condition},#{{==:#{{{START_CLAIM_OPTION}}},{claim}}}}}", target=pane_id
        )
        return self.commands.run_guarded(guard, [option_command(pane_id, START_CLAIM_OPTION, "")])

    def clear_inflight(self, pane_id: PaneId) -> None:
        self.commands.run_many([option_command(pane_id, INFLIGHT_OPTION, "")])

    def erase_inflight(self, token: str, pane_id: PaneId, count: int) -> bool:
        """Erase ``count`` characters a dead holder typed (`inflight_erase_count`) and drop its
        mark, only while ``token`` holds the lease."""
        commands: list[tuple[str, ...]] = []
        if count > 0:
            commands.append(("send-keys", "-t", pane_id, "-N", str(count), "BSpace"))
        commands.append(option_command(pane_id, INFLIGHT_OPTION, ""))
        return self.commands.run_guarded(fence(token), commands)


LIFECYCLE_TRIES = 5
"""Times `announce_lifecycle` tries when other writers keep appending between its read and write."""


def announce_lifecycle(
    commands: TmuxServerCommands, at: float, kind: str, by: str, message: str, data: Sequence[tuple[str, object]]
) -> bool:
    """Append one lifecycle action (``stop``, ``restart``: `nbs_tui.core.sidecar.relay.LIFECYCLE_KINDS`) to
    the server's ring, which every view reads with its switches: numbered after the last, written
    only while no other writer appended meanwhile (a compare-and-set on `LIFECYCLE_SEQ_OPTION`,
    one step inside tmux); False when that lost `LIFECYCLE_TRIES` times. Raises tmux's errors."""
    for _ in range(LIFECYCLE_TRIES):
        seq, _, raw = commands.run(
            "display-message", "-p", f"#{{{LIFECYCLE_SEQ_OPTION}}}\t#{{{LIFECYCLE_OPTION}}}"
        ).first.partition("\t")
        last = int(seq) if seq.isdigit() else 0
        ring = append_action([a for a in parse_ring(raw) if a.seq <= last], at, kind, by, message, data, seq=last + 1)
        guard = Guard(f"#{{==:#{{{LIFECYCLE_SEQ_OPTION}}},{seq}}}")
        written = commands.run_guarded(
            guard,
            [
                ("set-option", "-s", LIFECYCLE_OPTION, encode_ring(ring)),
                ("set-option", "-s", LIFECYCLE_SEQ_OPTION, str(last + 1)),
            ],
        )
        if written:
            return True
    return False


def typing_guard(token: str, pane_id: PaneId, text: str) -> Guard:
    """The sidecar's keys go into a pane only while ``token`` holds the lease, and text it types
    is marked in flight in the same step (``@nbs_inflight``: a holder that dies before it
    submits leaves the mark, and the next one erases what it typed). Never while ``nbs-tui new``
    claims the pane (``@nbs_starting``): its first prompt and the sidecar's poll cannot mix."""
    return Guard(
        f"#{{&&:{fence(token).condition},#{{==:#{{{START_CLAIM_OPTION}}},}}}}",
        (option_command(pane_id, INFLIGHT_OPTION, f"{token} {text}"),),
        target=pane_id,
    )
