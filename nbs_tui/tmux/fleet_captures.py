"""Reading the panes nobody watches: `TmuxFleet.captured` and `TmuxFleet.prefetch`.

A pane with no live model (nobody watches it) is read with an in-band ``capture-pane -p -e`` on
its session's own control client, returned as a `CapturedScreen` (rows of text and faint rows,
no terminal model): when it printed since the last read (or changed size, or was reconnected),
at most once per ``capture_interval``. A pane that printed is read once it has gone quiet
(`CAPTURE_QUIET`), or every `CAPTURE_MAX_AGE` seconds while it keeps printing. How "printed" is
known: a fleet whose sessions' own clients stream output times the pane's last ``%output``
(`PaneTable.output_filter`); a no-output fleet (or one whose output follows the watch) asks
tmux for every window's ``window_activity`` with one in-band ``list-panes`` a capture interval
(on this machine only: another host's clock is not ours; there a pane is read every interval).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Collection, Iterable

from nbs_tui.core.fleet.model import PaneId
from nbs_tui.core.screen.screen_rows import CapturedScreen
from nbs_tui.tmux.commands import Answer, Answered, Command, TmuxServerCommands
from nbs_tui.tmux.control import ControlClient
from nbs_tui.tmux.errors import TmuxError
from nbs_tui.tmux.fleet_clients import SessionClients
from nbs_tui.tmux.fleet_panes import FleetPane, PaneTable

CAPTURE_SLACK = 0.1
"""A capture is due ``capture_interval`` less this after the last: a once-a-second reader
whose ticks jitter by a few ms still gets a fresh one every tick."""

CAPTURE_QUIET = 0.2
"""A changed pane is read once it has printed nothing for this long (a fleet that streams output
times its last ``%output``; a no-output fleet knows its window's last activity to the second, so
it waits for that second to be over by this much): a pane that goes quiet is read at once."""

CAPTURE_MAX_AGE = 3.0
"""A changed pane that is still printing is read when its last read is this old, not every
``capture_interval``. Why that is safe: every screen the sidecar acts on or reports as waiting
(idle prompt, permission, plan approval, question, startup dialog) is a still one (Claude Code
stops its spinner when it waits), so it is read within about a tick of appearing; only a screen
that keeps changing (a working agent's spinner, a build's output) is seen every 3 s instead of
every second. The sidecar passes the panes it last saw still as ``eager`` to `prefetch`: those
are read on the tick they change, so a turn shorter than 3 s is still seen working. Every key
the sidecar types is decided on a fresh ``capture-pane`` taken just before
(`nbs_tui.sidecar.live_pane.LivePane.read`), never on a read's age. Reading a spinning pane every second was
most of the service's cost (bench/README.md, bench_headless.py)."""


class Captures:
    """The reads of unwatched panes (module docstring)."""

    def __init__(
        self,
        table: PaneTable,
        clients: SessionClients,
        commands: TmuxServerCommands,
        *,
        capture_interval: float,
        capture_quiet: float,
        capture_max_age: float,
    ) -> None:
        self.table = table
        self.clients = clients
        self.commands = commands
        self.capture_interval = capture_interval
        """The shortest time between two reads of one unwatched pane from tmux."""
        self.capture_quiet = capture_quiet
        """A changed pane is read once it printed nothing for this long (`CAPTURE_QUIET`)."""
        self.capture_max_age = capture_max_age
        """A pane still printing is read when its last read is this old (`CAPTURE_MAX_AGE`)."""
        self.captures = 0
        """In-band captures taken (for benches)."""
        self.activity_reads = 0
        """In-band ``list-panes`` reads of window activity (no-output fleets; for benches)."""
        self._activity: dict[PaneId, int] = {}
        self._activity_at = float("-inf")
        self._activity_wall = 0.0
        """Wall-clock time just before ``_activity`` was asked for."""

    def captured(self, pane_id: PaneId, timeout: float) -> CapturedScreen | None:
        """`TmuxFleet.captured`."""
        pane = self.table.panes.get(pane_id)
        if pane is None or pane.screen is not None:
            return None
        now = time.monotonic()
        if not self._due(pane, now):
            return pane.capture
        return self._read([pane], now, timeout).get(pane_id, pane.capture)

    def prefetch(self, pane_ids: Iterable[PaneId], timeout: float, eager: Collection[PaneId]) -> int:
        """`TmuxFleet.prefetch`."""
        now = time.monotonic()
        due = []
        for pane_id in pane_ids:
            pane = self.table.panes.get(pane_id)
            if pane is not None and pane.screen is None and self._due(pane, now, pane_id in eager):
                due.append(pane)
        return len(self._read(due, now, timeout)) if due else 0

    def _due(self, pane: FleetPane, now: float, eager: bool = False) -> bool:
        """First read at once; then at most once per ``capture_interval``: at once after a
        resize or reconnection, else when the pane changed and has gone quiet, or changed and
        its last read is ``capture_max_age`` old (it keeps printing: see `CAPTURE_MAX_AGE`)."""
        if pane.capture is None:
            return True
        age = now - pane.capture_at
        if age < self.capture_interval - CAPTURE_SLACK:
            return False
        if pane.reread:
            return True
        if self.clients.own_clients_stream:
            if not pane.unseen:
                return False
            printing = now - pane.printed_at < self.capture_quiet
        else:
            activity = self._window_activity(pane, now)
            if activity is None:
                return True  # unknown (remote, or not listed yet): read, as every interval
            if activity < pane.capture_second:
                return False  # its window printed nothing since the read
            # Active in second S: it may have printed until S + 1; quiet once that is past.
            printing = activity + 1 + self.capture_quiet > self._activity_wall
        return eager or not printing or age >= self.capture_max_age - CAPTURE_SLACK

    def _read(self, panes: list[FleetPane], now: float, timeout: float) -> dict[PaneId, CapturedScreen]:
        """Capture these panes in-band (lines per connection in one write) and keep what is new;
        the panes read successfully, with their screens (the same object when unchanged)."""
        by_client: dict[ControlClient, list[FleetPane]] = {}
        for pane in panes:
            # On the session's own client: when it streams, its replies arrive in order with the
            # pane's %output; a viewer never carries an unwatched pane's output (it pauses them).
            client = self.clients.own_client(pane.session_id)
            if client is not None:
                by_client.setdefault(client, []).append(pane)
        done = threading.Event()
        lock = threading.Lock()
        replies: dict[PaneId, Answer] = {}
        expected = [0]
        second = int(time.time())

        def on_reply(pane: FleetPane, generation: int) -> Answered:
            def got(reply: Answer) -> None:
                # On the reader thread, in order with %output: output after this is unseen.
                # (With no %output at all, tmux's window activity tells: `_window_activity`.)
                if reply.ok and pane.generation == generation:
                    pane.unseen = pane.reread = False
                with lock:
                    replies[pane.info.pane_id] = reply
                    if len(replies) >= expected[0]:
                        done.set()

            return got

        sent: list[FleetPane] = []
        for client, group in by_client.items():
            lines: list[tuple[Command, Answered | None]] = []
            for pane in group:
                pane.capture_at = now
                pane.capture_second = second
                lines.append((("capture-pane", "-p", "-e", "-t", pane.info.pane_id), on_reply(pane, pane.generation)))
            with lock:
                expected[0] += len(lines)
            try:
                self.commands.send_many(client, lines)
            except TmuxError:
                with lock:
                    expected[0] -= len(lines)
                continue
            sent.extend(group)
        with lock:
            if len(replies) >= expected[0]:
                done.set()
        if sent:
            done.wait(timeout)
        found: dict[PaneId, CapturedScreen] = {}
        for pane in sent:
            pane_id = pane.info.pane_id
            with lock:
                reply = replies.get(pane_id)
            if reply is None or not reply.ok:
                pane.unseen = pane.reread = True
                continue
            self.captures += 1
            last = pane.capture
            raw = b"\n".join(reply.lines).decode("utf-8", "replace")
            if last is not None and last.raw == raw:
                found[pane_id] = last
                continue
            fresh = CapturedScreen.parse(raw, last.version + 1 if last is not None else 1)
            if pane.screen is None:  # not watched meanwhile (a watched pane keeps no capture)
                pane.capture = fresh
            found[pane_id] = fresh
        return found

    def _window_activity(self, pane: FleetPane, now: float) -> int | None:
        """Without %output: the wall-clock second of the pane's window's last activity.

        One in-band ``list-panes -a`` a capture interval gives every window's last activity
        (whole seconds, updated by any output): a window active in or after the second of the
        last read may have printed since. Only on this machine (tmux's clock is ours); None
        (read again) when unsure."""
        if self.commands.runner.remote:
            return None
        if now - self._activity_at >= self.capture_interval - CAPTURE_SLACK:
            self._activity_at = now
            self._activity_wall = time.time()
            self._activity = self._list_activity()
        return self._activity.get(pane.info.pane_id)

    def _list_activity(self) -> dict[PaneId, int]:
        if not self.clients.ready_clients():
            return {}  # in-band only: not a process a second
        try:
            reply = self.commands.run("list-panes", "-a", "-F", "#{pane_id} #{window_activity}", timeout=5.0)
        except TmuxError:
            return {}
        self.activity_reads += 1
        found: dict[PaneId, int] = {}
        for line in reply.lines:
            pane_id, _, when = line.partition(" ")
            if when.isdigit():
                found[pane_id] = int(when)
        return found
