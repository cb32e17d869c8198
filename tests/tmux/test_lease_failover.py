"""SIGKILL the acting ``--headless`` between typing a poll and pressing Enter, again and again:
afterwards every agent's box is empty or its poll submitted, no poll was ever doubled, and
polling goes on (a short lease ttl keeps the test quick)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import libtmux
import pytest
from libtmux.test.retry import retry_until

from nbs_tui.core.detection.detect import detect_text
from tests.tmux.test_lease_headless import agent, submits

REPO = Path(__file__).resolve().parents[2]
TTL = 2.0


class Watcher:
    def __init__(self, server: libtmux.Server, home: Path) -> None:
        env = {
            **os.environ,
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_STATE_HOME": str(home / ".state"),
            "NBS_LEASE_TTL": str(TTL),
            "NBS_POLL_INTERVAL": "2",
        }
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "nbs_tui", "-L", str(server.socket_name), "--headless"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO, env=env,
        )
        self.events: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.events.append(json.loads(line))

    def acting(self) -> bool:
        leases = [e for e in list(self.events) if e["event"] == "lease"]
        return bool(leases) and leases[-1]["acting"]

    def polls(self) -> list[dict[str, Any]]:
        """This process's own poll steps (a view also hears of the holder's, marked ``by``)."""
        return [e for e in list(self.events) if e["event"] == "poll" and "by" not in e]


@pytest.mark.slow
def test_sigkill_between_typing_and_enter_never_leaves_or_doubles_a_poll(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path
) -> None:
    agents = [agent(session, tmp_path, f"a{i}") for i in range(2)]
    watchers = [Watcher(server, tmp_path / f"w{i}") for i in range(2)]
    everyone = list(watchers)
    mid_injection = 0
    rounds = 6
    try:
        for n in range(rounds):
            assert retry_until(lambda: any(w.acting() for w in watchers), 4 * TTL, raises=False)
            (holder,) = [w for w in watchers if w.acting()]
            typed_before = sum(1 for e in holder.polls() if e.get("result") == "typed")

            def typed_again(h: Watcher = holder, before: int = typed_before) -> bool:
                return sum(1 for e in h.polls() if e.get("result") == "typed") > before

            assert retry_until(typed_again, 30, raises=False), holder.events
            holder.proc.send_signal(signal.SIGKILL)  # at once: Enter comes a tick after the typing
            holder.proc.wait(10)
            if holder.polls()[-1].get("result") == "typed":
                mid_injection += 1
            watchers.remove(holder)
            watchers.append(Watcher(server, tmp_path / f"r{n}"))
            everyone.append(watchers[-1])
        # polling goes on after the last kill
        counts = [len(submits(log)) for _, log in agents]
        assert retry_until(
            lambda: any(len(submits(log)) > c for (_, log), c in zip(agents, counts, strict=True)),
            30, raises=False,
        )

        # every box is empty (between polls: a poll in flight is typed and submitted in ~2 s)
        def boxes_empty() -> bool:
            for pane_id, _ in agents:
                text = "\n".join(server.cmd("capture-pane", "-p", "-t", pane_id).stdout)
                if detect_text(text).input_text != "":
                    return False
            return True

        assert retry_until(boxes_empty, 15, raises=False)
    finally:
        for w in watchers:
            w.proc.send_signal(signal.SIGTERM)
        for w in watchers:
            w.proc.wait(20)
    assert mid_injection >= rounds // 2, f"only {mid_injection} of {rounds} kills landed between typing and Enter"
    recovered = [e for w in everyone for e in w.polls() if e.get("result") == "recovered"]
    if mid_injection >= 2:
        assert recovered, "no left-over poll was erased"
    print(f"{rounds} kills, {mid_injection} between typing and Enter, {len(recovered)} left-over polls erased")
    for _, log in agents:
        assert set(submits(log)) <= {"SUBMIT /nbs-poll"}, submits(log)  # never doubled or half
