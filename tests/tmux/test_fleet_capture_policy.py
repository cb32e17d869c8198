"""The capture policy of unwatched panes (issue 13): a pane that keeps printing (a working
agent's spinner) is read only every `CAPTURE_MAX_AGE` seconds, a pane that goes quiet is read on
the next tick, showing its final text. Both fleets the sidecar reads from are checked on the
same pane: one whose sessions' own clients stream ``%output`` (as over ssh) and a ``no-output``
one (the service's, and the dashboard's for every pane it does not show, which knows a pane's
last output only to the second), read on the sidecar runner's own tick schedule."""

from __future__ import annotations

import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import libtmux

from nbs_tui.sidecar.sidecar_runner import next_tick
from nbs_tui.tmux.fleet import CAPTURE_MAX_AGE, CAPTURE_SLACK, TmuxFleet

from .fleet_helpers import capture_plain, new_session, running_fleet, wait_for

LOOP = textwrap.dedent(
    r"""
    import os, sys, time
    stop = sys.argv[1]
    n = 0
    while not os.path.exists(stop):
        n += 1
        sys.stdout.write(f"tick {n}\r\n")
        sys.stdout.flush()
        time.sleep(0.05)
    sys.stdout.write("FINISHED\r\n")
    sys.stdout.flush()
    time.sleep(600)
    """
)

STOPPED_SEEN_IN_TICKS = 2
"""A pane whose final line tmux holds is read within this many sidecar ticks (once a second): the
no-output fleet knows the last output only to the second, so the quiet rule may need the tick
after the next; a streaming one needs the next. The max age alone would take 3."""


def _ticks() -> Iterator[float]:
    """Yield at the times the sidecar runner ticks (once a second, `TICK_PHASE` past the second)."""
    while True:
        started = time.monotonic()
        yield started
        time.sleep(max(0.0, next_tick(started, time.time(), 1.0) - time.monotonic()))


def _first_read(fleet: TmuxFleet, pane: str) -> None:
    wait_for(lambda: fleet.captured(pane) is not None)


def _tick(fleets: dict[str, TmuxFleet], pane: str, reads: dict[str, list[float]]) -> None:
    """What the sidecar's tick does for the pane: prefetch, then read; note each capture taken."""
    for name, fleet in fleets.items():
        taken = fleet.captures
        fleet.prefetch([pane])
        fleet.captured(pane)
        if fleet.captures > taken:
            reads[name].append(time.monotonic())


def test_a_printing_pane_is_read_every_few_seconds_and_one_gone_quiet_at_once(
    server: libtmux.Server, tmp_path: Path
) -> None:
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    stop = tmp_path / "stop"
    session = new_session(server, "cp", 80, 24, window_command=f"{sys.executable} {script} {stop}")
    assert session.active_pane is not None
    pane = str(session.active_pane.pane_id)
    wait_for(lambda: any(line.startswith("tick ") for line in capture_plain(server, pane)))
    with (
        running_fleet(server, watch_all=False, output_follows_watch=False) as (streaming, _rec),
        running_fleet(server, watch_all=False, stream_output=False) as (no_output, _rec2),
    ):
        fleets = {"streaming": streaming, "no-output": no_output}
        reads: dict[str, list[float]] = {}
        for name, fleet in fleets.items():
            _first_read(fleet, pane)
            reads[name] = [time.monotonic()]
        firsts = {name: fleet.captured(pane) for name, fleet in fleets.items()}

        # Printing every 50 ms: after the first read the next comes only when that one is
        # CAPTURE_MAX_AGE old (it came every tick before), with newer text.
        ticks = _ticks()
        began = next(ticks)
        _tick(fleets, pane, reads)
        while not all(len(times) >= 2 for times in reads.values()):
            assert next(ticks) - began < CAPTURE_MAX_AGE + 3.0, reads
            _tick(fleets, pane, reads)
        for name, fleet in fleets.items():
            gaps = [b - a for a, b in zip(reads[name], reads[name][1:], strict=False)]
            assert min(gaps) >= CAPTURE_MAX_AGE - CAPTURE_SLACK - 0.05, (name, gaps)
            seen = fleet.captured(pane)
            assert seen is not None and seen is not firsts[name] and "FINISHED" not in seen.raw

        # It stops: once tmux holds its final line, the next tick or the one after reads it (the
        # quiet rule), before the max age's third. Counted in ticks, not seconds: under load the
        # final line reaches tmux late and each tick comes late (a run at load 10 read it 2.0 s
        # after the stop file, on the second tick, within the rule).
        stop.touch()
        wait_for(lambda: any("FINISHED" in line for line in capture_plain(server, pane)))
        found: dict[str, int] = {}
        ticks_since = 0
        while len(found) < len(fleets):
            ticks_since += 1
            assert ticks_since <= STOPPED_SEEN_IN_TICKS + 2, (found, reads)
            next(ticks)
            _tick(fleets, pane, reads)
            for name, fleet in fleets.items():
                seen = fleet.captured(pane)
                if name not in found and seen is not None and "FINISHED" in seen.raw:
                    found[name] = ticks_since
        assert all(after <= STOPPED_SEEN_IN_TICKS for after in found.values()), found
