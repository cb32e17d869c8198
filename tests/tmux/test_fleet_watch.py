"""Parse only what someone looks at: a pane nobody watches is never parsed (its output only
marks it changed) but its screen can still be read from tmux; watching a pane seeds it and then
mirrors it cell for cell; unwatching drops its model."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import libtmux

from nbs_tui.core.detection.detect import detect_text
from nbs_tui.tmux.fleet import CAPTURE_MAX_AGE, TmuxFleet

from .fleet_helpers import (
    capture_plain,
    capture_screen,
    cell_differences,
    new_session,
    running_fleet,
    tmux,
    wait_for,
)

BUSY = textwrap.dedent(
    r'''
    import os, sys, time
    stop = sys.argv[1]
    n = 0
    while not os.path.exists(stop):
        n += 1
        sys.stdout.write(f"\x1b[3{n % 7 + 1}mline {n}\x1b[0m \x1b[1mbold\x1b[0m \x1b[2mdim\x1b[0m 中文\r\n")
        sys.stdout.flush()
        time.sleep(0.05)
    sys.stdout.write("STOPPED\r\n")
    sys.stdout.flush()
    time.sleep(600)
    '''
)


def _busy(server: libtmux.Server, tmp_path: Path) -> tuple[str, str, Path]:
    """Two panes: a busy one printing coloured lines until ``stop`` exists, and a quiet shell."""
    script = tmp_path / "busy.py"
    script.write_text(BUSY)
    stop = tmp_path / "stop"
    session = new_session(server, "w", 80, 24, window_command=f"{sys.executable} {script} {stop}")
    busy = session.active_pane
    quiet = session.new_window(attach=False).active_pane
    assert busy is not None and quiet is not None
    return str(busy.pane_id), str(quiet.pane_id), stop


def _last_line_number(lines: list[str]) -> int:
    numbers = [int(line.split()[1]) for line in lines if line.startswith("line ")]
    return max(numbers, default=0)


def test_unwatched_busy_pane_is_not_parsed_but_still_reported_and_readable(
    server: libtmux.Server, tmp_path: Path
) -> None:
    busy, quiet, _stop = _busy(server, tmp_path)
    session = server.sessions.get(session_name="w")
    assert session is not None
    looked_at = session.new_window(attach=False).active_pane
    assert looked_at is not None
    # Every session's own client streams (as over ssh): an unwatched pane's output marks it.
    with running_fleet(server, watch_all=False, output_follows_watch=False) as (fleet, recorder):
        assert fleet.wait_seeded(10)
        # Someone looks at another pane of the session: its output streams, the busy pane's too.
        fleet.set_watched("test", [str(looked_at.pane_id)])
        wait_for(lambda: fleet.seeded(str(looked_at.pane_id)))
        assert fleet.screen(busy) is None and fleet.screen(quiet) is None
        wait_for(lambda: fleet.fed(busy)[1] > 20)  # %output lines seen...
        assert fleet.fed(busy)[0] == 0  # ...none of them parsed
        assert fleet.stats()["models"] == 1  # the watched pane's only
        wait_for(lambda: busy in recorder.changed)  # still news for the quiet-time clocks

        first = fleet.captured(busy)
        assert first is not None
        tmux_now = _last_line_number(capture_plain(server, busy))
        seen = _last_line_number(list(first.lines))
        assert 0 < seen <= tmux_now
        assert any("dim" in line for line in first.lines) and "\x1b" not in "".join(first.lines)
        # At most one read per capture_interval: asked again at once, the same capture.
        taken = fleet.stats()["captures"]
        assert fleet.captured(busy) is first
        assert fleet.stats()["captures"] == taken

        # Still printing: a fresh read when the last is CAPTURE_MAX_AGE old, newer lines, a newer
        # version.
        wait_for(lambda: (c := fleet.captured(busy)) is not None and c is not first, 5.0)
        second = fleet.captured(busy)
        assert second is not None and second.version > first.version
        assert _last_line_number(list(second.lines)) > seen

        # A quiet pane is read once and then never again while it prints nothing. (Its shell's
        # prompt may come after a first read, and be read once more: it shows in the read.)
        wait_for(lambda: (c := fleet.captured(quiet)) is not None and any(line.strip() for line in c.lines))
        shell = fleet.captured(quiet)
        taken = fleet.stats()["captures"]
        # Asked for every 0.2 s, longer than any rule waits to read a pane again.
        reads = _reads_over(fleet, quiet, CAPTURE_MAX_AGE + 1.0)
        assert reads[-1] == taken and fleet.captured(quiet) is shell, (taken, reads)
        assert fleet.fed(quiet)[0] == 0 and fleet.fed(busy)[0] == 0


def test_captured_screen_reads_like_a_mirror_for_detection(server: libtmux.Server, tmp_path: Path) -> None:
    """What the sidecar gets for an unwatched pane detects exactly as tmux's own capture does."""
    busy, _quiet, stop = _busy(server, tmp_path)
    stop.touch()
    wait_for(lambda: "STOPPED" in "\n".join(capture_plain(server, busy)))
    with running_fleet(server, watch_all=False) as (fleet, _rec):
        assert fleet.wait_seeded(10)
        captured = fleet.captured(busy)
        assert captured is not None
        assert [line for line in captured.lines] == [line.rstrip() for line in capture_plain(server, busy)]
        raw = tmux(server, "capture-pane", "-p", "-e", "-t", busy)
        assert detect_text(raw) == detect_text(captured.raw)


def test_watching_seeds_then_mirrors_cell_for_cell_and_unwatching_drops_the_model(
    server: libtmux.Server, tmp_path: Path
) -> None:
    busy, quiet, stop = _busy(server, tmp_path)
    with running_fleet(server, watch_all=False) as (fleet, _rec):
        assert fleet.wait_seeded(10)
        fleet.set_watched("mirror", [busy])
        assert fleet.watched() == {busy}
        screen = fleet.screen(busy)
        assert screen is not None and fleet.screen(quiet) is None
        assert fleet.captured(busy) is None  # watched: read the model
        wait_for(lambda: fleet.seeded(busy))
        wait_for(lambda: fleet.fed(busy)[0] > 0)  # then fed live, byte by byte
        unparsed = fleet.fed(busy)[1]
        stop.touch()
        wait_for(lambda: "STOPPED" in "\n".join(screen.text_lines()))
        wait_for(lambda: screen.text_lines() == capture_plain(server, busy))
        assert cell_differences(screen, capture_screen(server, busy)) == []
        assert fleet.fed(busy)[1] == unparsed  # nothing left unparsed while watched

        # Another consumer watching the same pane keeps it when the first lets go.
        fleet.set_watched("grid", [busy, quiet])
        fleet.set_watched("mirror", [])
        assert fleet.screen(busy) is screen and fleet.screen(quiet) is not None
        fleet.set_watched("grid", [])
        assert fleet.screen(busy) is None and fleet.screen(quiet) is None
        assert fleet.watched() == frozenset() and fleet.stats()["models"] == 0
        captured = fleet.captured(busy)
        assert captured is not None and "STOPPED" in "\n".join(captured.lines)

        # Watched again: a new model, seeded from tmux.
        fleet.set_watched("mirror", [busy])
        again = fleet.screen(busy)
        assert again is not None and again is not screen
        wait_for(lambda: again.text_lines() == capture_plain(server, busy))
        assert cell_differences(again, capture_screen(server, busy)) == []


def test_watched_pane_that_does_not_exist_yet_is_mirrored_when_it_appears(server: libtmux.Server) -> None:
    session = new_session(server, "w", 80, 24)
    with running_fleet(server, watch_all=False) as (fleet, _rec):
        assert fleet.wait_seeded(10)
        pane = session.new_window(attach=False).active_pane
        assert pane is not None
        fleet.set_watched("mirror", [str(pane.pane_id)])
        pane.send_keys("echo appeared-$((6*7))", enter=True)
        wait_for(lambda: (s := fleet.screen(str(pane.pane_id))) is not None and "appeared-42" in "\n".join(s.text_lines()))


def test_a_fleet_without_output_gets_none_yet_reads_what_printed(server: libtmux.Server, tmp_path: Path) -> None:
    """``stream_output=False`` (headless, the service): tmux sends no %output at all; a read
    takes a fresh capture when the pane's window showed activity since the last one (at most
    once per interval; while it keeps printing, when the last is CAPTURE_MAX_AGE old), the same
    object while the text is unchanged; nothing can be watched."""
    busy, quiet, stop = _busy(server, tmp_path)
    with running_fleet(server, watch_all=False, stream_output=False) as (fleet, _rec):
        assert fleet.wait_seeded(10)
        first = fleet.captured(busy)
        assert first is not None and fleet.captured(busy) is first  # within the interval
        wait_for(lambda: (c := fleet.captured(busy)) is not None and c is not first, 5.0)
        assert fleet.fed(busy) == (0, 0) and fleet.fed(quiet) == (0, 0)
        try:
            fleet.set_watched("mirror", [busy])
        except ValueError:
            pass
        else:
            raise AssertionError("a fleet without output accepted a watch")
        fleet.set_watched("mirror", [])  # letting go of nothing is fine

        # A pane that prints nothing is read once or twice (activity in the second of a read
        # counts), then no more: its window's activity says so.
        assert fleet.captured(quiet) is not None
        reads = _reads_over(fleet, quiet, 3.5)
        assert reads[-1] - reads[0] <= 2 and reads[-1] == reads[-8], reads

        stop.touch()
        wait_for(lambda: (c := fleet.captured(busy)) is not None and "STOPPED" in "\n".join(c.lines), 5.0)
        still = fleet.captured(busy)
        reads = _reads_over(fleet, busy, 3.5)
        assert reads[-1] - reads[0] <= 2 and reads[-1] == reads[-8], reads
        assert fleet.captured(busy) is still  # same text: the same object, nothing to detect again
        assert fleet.stats()["activity_reads"] > 0


def _reads_over(fleet: TmuxFleet, pane_id: str, seconds: float) -> list[int]:
    """Ask for the pane every 0.2 s (as often as any reader would) and count the reads taken."""
    counts = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        fleet.captured(pane_id)
        counts.append(fleet.stats()["captures"])
        time.sleep(0.2)
    return counts


def test_prefetch_reads_every_due_pane_at_once_and_captured_answers_from_it(server: libtmux.Server) -> None:
    session = new_session(server, "pf", 80, 24, window_command="cat")
    ids = [str(session.active_pane.pane_id)]  # type: ignore[union-attr]
    for _ in range(2):
        pane = session.new_window(attach=False, window_shell="cat").active_pane
        assert pane is not None
        ids.append(str(pane.pane_id))
    # Every session's own client streams (as over ssh), so output marks exactly the panes that
    # printed (without it, window activity to the second would: see the test above).
    with running_fleet(server, watch_all=False, capture_interval=0.2, output_follows_watch=False) as (fleet, _rec):
        wait_for(lambda: set(ids) <= {p.pane_id for p in fleet.panes()} and fleet.prefetch(ids) == 3)
        read = fleet.captures
        firsts = [fleet.captured(i) for i in ids]
        assert fleet.captures == read and all(f is not None for f in firsts)  # answered from the prefetch
        assert fleet.prefetch(ids) == 0  # nothing due yet: read less than an interval ago
        tmux(server, "send-keys", "-t", ids[1], "-l", "second pane speaks")
        wait_for(lambda: fleet.prefetch(ids) == 1)  # only the pane that printed is read again
        second = fleet.captured(ids[1])
        assert second is not None and any("second pane speaks" in line for line in second.lines)
        assert fleet.captured(ids[0]) is firsts[0] and fleet.captured(ids[2]) is firsts[2]


def _control_clients(server: libtmux.Server) -> list[tuple[str, bool]]:
    """tmux's own list of our control clients: (session name, streams output) each."""
    listing = tmux(server, "list-clients", "-F", "#{client_session} #{client_flags}")
    clients = []
    for line in listing.splitlines():
        name, _, flags = line.partition(" ")
        if "control-mode" in flags.split(","):
            clients.append((name, "no-output" not in flags.split(",")))
    return sorted(clients)


def test_output_streams_only_for_the_session_someone_looks_at(server: libtmux.Server, tmp_path: Path) -> None:
    """The dashboard's fleet: every session's own client is ``no-output``; a session holding a
    watched pane gets one more client that streams its output, and loses it when no pane of it
    is watched any more. An unwatched session's busy pane is never streamed, yet read."""
    busy, _quiet, _stop = _busy(server, tmp_path)  # session "w"
    other = new_session(server, "v", 80, 24)
    looked_at = str(other.active_pane.pane_id)  # type: ignore[union-attr]
    with running_fleet(server, watch_all=False) as (fleet, _rec):
        assert fleet.wait_seeded(10)
        wait_for(lambda: _control_clients(server) == [("v", False), ("w", False)])
        assert fleet.viewed_sessions() == set()
        time.sleep(0.5)  # the busy pane prints ten lines meanwhile; none of them reach us
        assert fleet.fed(busy) == (0, 0)
        first = fleet.captured(busy)  # read all the same (window activity says it printed)
        assert first is not None and _last_line_number(list(first.lines)) > 0

        # Watch a pane of the other session: that session streams, the busy one still does not.
        fleet.set_watched("mirror", [looked_at])
        wait_for(lambda: fleet.seeded(looked_at), 5.0)
        assert fleet.viewed_sessions() == {other.session_id}
        assert _control_clients(server) == [("v", False), ("v", True), ("w", False)]
        time.sleep(0.5)
        assert fleet.fed(busy) == (0, 0)

        # Watch the busy pane instead: its session's output streams (and is parsed for it), the
        # other session's viewer is detached.
        fleet.set_watched("mirror", [busy])
        wait_for(lambda: fleet.seeded(busy) and fleet.fed(busy)[0] > 0, 5.0)
        wait_for(lambda: _control_clients(server) == [("v", False), ("w", False), ("w", True)])
        assert fleet.viewed_sessions() == {server.sessions.get(session_name="w").session_id}  # type: ignore[union-attr]
        screen = fleet.screen(busy)
        assert screen is not None
        wait_for(lambda: _last_line_number(screen.text_lines()) >= _last_line_number(capture_plain(server, busy)) - 2)

        # The output client dies under us: another takes its place and the pane is seeded again.
        listing = tmux(server, "list-clients", "-F", "#{client_pid} #{client_flags}").splitlines()
        (viewer_pid,) = [int(line.split()[0]) for line in listing if "no-output" not in line]
        os.kill(viewer_pid, signal.SIGTERM)
        wait_for(lambda: viewer_pid not in fleet.client_pids(), 5.0)
        wait_for(lambda: _control_clients(server) == [("v", False), ("w", False), ("w", True)], 5.0)
        printed = _last_line_number(capture_plain(server, busy))
        wait_for(lambda: (s := fleet.screen(busy)) is not None and _last_line_number(s.text_lines()) > printed, 5.0)

        # Nobody looks: no output at all again.
        fleet.set_watched("mirror", [])
        wait_for(lambda: _control_clients(server) == [("v", False), ("w", False)])
        assert fleet.viewed_sessions() == set() and fleet.screen(busy) is None


def test_a_viewer_carries_only_the_watched_panes_of_its_session(server: libtmux.Server, tmp_path: Path) -> None:
    """Two busy panes in one session: the one watched streams and is mirrored, the other is
    paused on the viewer (tmux sends none of its output) yet read from its window's activity;
    swapping the watch swaps them, and a pane split off later is paused too."""
    script = tmp_path / "busy.py"
    script.write_text(BUSY)
    stops = [tmp_path / "stop-a", tmp_path / "stop-b", tmp_path / "stop-c"]
    session = new_session(server, "w", 80, 24, window_command=f"{sys.executable} {script} {stops[0]}")
    a = str(session.active_pane.pane_id)  # type: ignore[union-attr]
    b = str(session.new_window(attach=False, window_shell=f"{sys.executable} {script} {stops[1]}").active_pane.pane_id)  # type: ignore[union-attr]

    def arriving(pane_id: str, seconds: float = 0.6) -> int:
        """``%output`` lines of an unwatched pane that reached the fleet over ``seconds``."""
        before = fleet.fed(pane_id)[1]
        time.sleep(seconds)
        return fleet.fed(pane_id)[1] - before

    def mirrored(pane_id: str) -> None:
        screen = fleet.screen(pane_id)
        assert screen is not None
        wait_for(lambda: _last_line_number(screen.text_lines()) >= _last_line_number(capture_plain(server, pane_id)) - 2)

    def read_anew(pane_id: str) -> None:
        """Unwatched, it is still read: a capture a little later shows newer lines."""
        first = fleet.captured(pane_id)
        assert first is not None
        wait_for(lambda: _last_line_number(list((fleet.captured(pane_id) or first).lines)) > _last_line_number(list(first.lines)), 8.0)

    try:
        with running_fleet(server, watch_all=False) as (fleet, _rec):
            assert fleet.wait_seeded(10)
            fleet.set_watched("mirror", [a])
            wait_for(lambda: fleet.seeded(a) and fleet.fed(a)[0] > 0, 5.0)
            assert fleet.viewed_sessions() == {session.session_id}
            mirrored(a)
            time.sleep(0.3)  # output of b sent before its pause reached tmux is still on its way
            assert arriving(b) == 0  # b prints 12 lines meanwhile; tmux sends none of them
            read_anew(b)

            # The watch moves to b: b continues (seeded, then live), a is paused.
            fed_a = fleet.fed(a)[0]
            fleet.set_watched("mirror", [b])
            wait_for(lambda: fleet.seeded(b) and fleet.fed(b)[0] > 0, 5.0)
            mirrored(b)
            assert fleet.screen(a) is None and fleet.fed(a)[0] == fed_a
            time.sleep(0.3)
            assert arriving(a) == 0
            read_anew(a)

            # A busy pane split off later streams until the fleet sees it, then is paused too.
            c = str(session.windows[0].split(shell=f"{sys.executable} {script} {stops[2]}").pane_id)
            wait_for(lambda: c in {p.pane_id for p in fleet.panes()}, 5.0)
            time.sleep(0.5)
            assert arriving(c) == 0
            assert fleet.screen(b) is not None and arriving(b) == 0  # watched: parsed, never "unwatched"
            mirrored(b)
    finally:
        for stop in stops:
            stop.touch()


def test_pausing_and_continuing_flooding_panes_keeps_tmux_up(server: libtmux.Server) -> None:
    """What the viewer relies on (module docstring of `nbs_tui.tmux.fleet`): toggling a pane's
    output with ``refresh-client -A '%N:pause'`` / ``'%N:continue'`` while it floods, with
    output queued for a slow client and a stalled one, never takes the server down (``off`` and
    ``on`` instead kill tmux 3.3a within a second), and a continued pane streams again."""
    new_session(server, "flood", 120, 40, window_command="while :; do cat /etc/services; done")
    for _ in range(3):
        tmux(server, "split-window", "-t", "flood", "while :; do seq 1 100000; done")
        tmux(server, "select-layout", "-t", "flood", "tiled")
    panes = tmux(server, "list-panes", "-s", "-t", "flood", "-F", "#{pane_id}").split()
    assert len(panes) == 4
    argv = ["tmux", "-L", str(server.socket_name), "-C", "attach", "-f", "ignore-size", "-t", "flood"]
    draining, slow, stalled = (
        subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0) for _ in range(3)
    )
    # The fleet's own no-output client: without one, the stalled client would hold a pane
    # back (tmux stops reading it), which is what the guard is for, not what this checks.
    guard = subprocess.Popen([*argv[:-4], "-f", "ignore-size,no-output", "-t", "flood"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    received = {"draining": b"", "slow": b""}

    def drain(name: str, client: subprocess.Popen[bytes], size: int, pause: float) -> None:
        assert client.stdout is not None
        while chunk := client.stdout.read(size):
            received[name] = (received[name] + chunk)[-(1 << 20) :]
            time.sleep(pause)

    readers = [
        threading.Thread(target=drain, args=("draining", draining, 1 << 16, 0.0), daemon=True),
        threading.Thread(target=drain, args=("slow", slow, 512, 0.05), daemon=True),
    ]
    for reader in readers:
        reader.start()
    clients = (draining, slow, stalled)
    for client in clients:
        assert client.stdin is not None
        os.set_blocking(client.stdin.fileno(), False)
    rng = random.Random(7)
    toggles = 0
    try:
        deadline = time.monotonic() + 60.0  # a count, not a rate: a loaded machine writes slower
        while toggles < 1500 and time.monotonic() < deadline:
            for client in clients:
                line = f"refresh-client -A '{rng.choice(panes)}:{rng.choice(('pause', 'continue'))}'\n"
                with contextlib.suppress(BlockingIOError):  # the stalled client stops reading
                    client.stdin.write(line.encode())  # type: ignore[union-attr]
                    toggles += 1
            time.sleep(rng.random() * 0.003)
        assert toggles >= 1500, toggles
        assert tmux(server, "display-message", "-p", "#{session_name}").strip() == "flood"  # still up
        draining.stdin.write(("refresh-client " + " ".join(f"-A '{p}:continue'" for p in panes) + "\n").encode())  # type: ignore[union-attr]
        time.sleep(0.3)
        received["draining"] = b""
        wait_for(lambda: all(f"%output {p} ".encode() in received["draining"] for p in panes), 5.0)
    finally:
        for client in (*clients, guard):
            client.kill()
            client.wait()
    # tmux is still up, the session too, once every client is gone (a field of libtmux's
    # Session object, asked before, could not say so)
    assert tmux(server, "display-message", "-p", "-t", "flood", "#{session_name}").strip() == "flood"
