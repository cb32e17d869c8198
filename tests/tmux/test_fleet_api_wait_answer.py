"""``nbs-tui wait`` and ``nbs-tui answer`` on a private tmux server with no service: the states a
lease holder would publish are set by hand (``@nbs_state``...), so each step of a wait is the
test's to choose, and the fake agent logs every byte a key sends it. The same commands on the
real Claude Code CLI: tests/realclaude/test_wait_answer_e2e.py."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import libtmux
from libtmux.test.retry import retry_until

from nbs_tui.core.fleet_api.exit_codes import ExitCode
from tests.tmux.test_fleet_api import REPO, nbs
from tests.tmux.test_lease_headless import agent

RENEWALS = itertools.count()


def publish(server: libtmux.Server, pane_id: str, state: str, needs: str = "") -> None:
    """What the lease holder publishes for a pane ("" unsets), and its lease renewed (a wait
    counts ``working`` once the holder that published it renews after the look)."""
    server.cmd("set-option", "-s", "@nbs_sidecar", f"nbs1 test {os.getpid()} 0123abcd {next(RENEWALS)} 8 0")
    for name, value in (("@nbs_state", state), ("@nbs_needs", needs)):
        if value:
            server.cmd("set-option", "-p", "-t", pane_id, name, value)
        else:
            server.cmd("set-option", "-pu", "-t", pane_id, name)


def start_wait(server: libtmux.Server, tmp: Path, *argv: str) -> subprocess.Popen[str]:
    """``nbs-tui wait ARGV --json`` in the background, in `nbs`'s environment, no service."""
    home = tmp / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "NBS_"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_STATE_HOME=str(home / ".state"), NBS_SERVICE="off")
    return subprocess.Popen(
        [sys.executable, "-m", "nbs_tui", "wait", *argv, "--json", "-L", str(server.socket_name)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=env,
    )  # fmt: skip


def looking(wait: subprocess.Popen[str]) -> None:
    """Return once the wait is between two looks (asleep in ``time.sleep``: Python's start-up and
    the first listing, which never sleep, are over), so the states the test changes next are
    seen; a wait that began later would miss a step on a loaded machine."""
    wchan = Path(f"/proc/{wait.pid}/wchan")
    assert retry_until(lambda: wchan.exists() and wchan.read_text() == "hrtimer_nanosleep", 60, raises=False)


def ended(wait: subprocess.Popen[str]) -> tuple[int, dict[str, object], str]:
    out, err = wait.communicate(timeout=60)
    return wait.returncode, json.loads(out) if out else {}, err


def test_wait_until_done_follows_the_published_states_and_all_targets_must_get_there(
    server: libtmux.Server, session: libtmux.Session, tmp_path: Path
) -> None:
    alpha, _ = agent(session, tmp_path, "alpha", "idle")
    beta, _ = agent(session, tmp_path, "beta", "idle")
    publish(server, alpha, "idle")
    publish(server, beta, "idle")
    both = start_wait(server, tmp_path, "alpha", "beta", "--until", "done", "--timeout", "60")
    one = start_wait(server, tmp_path, "alpha", "beta", "--until", "done", "--any", "--timeout", "60")
    looking(both)
    looking(one)
    time.sleep(1.0)  # idle all along: neither is done
    assert both.poll() is None and one.poll() is None
    publish(server, alpha, "working")
    time.sleep(1.0)  # the wait looks every 0.5 s (the holder publishes once a second)
    publish(server, alpha, "working")  # renewed after the wait saw it working
    time.sleep(1.0)
    publish(server, alpha, "permission", "permission")
    time.sleep(1.0)
    assert both.poll() is None and one.poll() is None  # waiting on a person is not done
    publish(server, alpha, "idle")
    code, doc, err = ended(one)
    assert code == ExitCode.DONE, err
    reached = {a["pane_id"]: a["reached"] for a in doc["agents"]}  # type: ignore[attr-defined]
    assert reached == {alpha: True, beta: False}
    time.sleep(1.0)
    assert both.poll() is None  # beta has not worked yet
    publish(server, beta, "working")
    time.sleep(1.0)
    publish(server, beta, "idle")  # renewed, and idle: the working was live, the turn over
    code, doc, err = ended(both)
    assert code == ExitCode.DONE, err
    assert all(a["reached"] and a["seen_working"] for a in doc["agents"])  # type: ignore[attr-defined]


def test_wait_until_gone_and_a_gone_target_ends_a_wait_for_another_state(
    server: libtmux.Server, session: libtmux.Session, tmp_path: Path
) -> None:
    alpha, _ = agent(session, tmp_path, "alpha", "idle")
    beta, _ = agent(session, tmp_path, "beta", "idle")
    publish(server, alpha, "working")
    publish(server, beta, "working")
    gone = start_wait(server, tmp_path, alpha, "--until", "gone", "--timeout", "60")
    done = start_wait(server, tmp_path, beta, "--until", "done", "--timeout", "60")
    looking(gone)
    looking(done)
    publish(server, alpha, "")  # unpublished: gone only after the grace (a holder taking over)
    unpublished = time.monotonic()
    code, doc, err = ended(gone)
    assert code == ExitCode.DONE, err
    assert time.monotonic() - unpublished >= 3.0
    assert doc["agents"][0]["gone"] == "its agent is gone (the lease holder publishes no state for it)"  # type: ignore[index]
    server.cmd("kill-pane", "-t", beta)
    code, doc, err = ended(done)
    assert code == ExitCode.NO_SUCH_AGENT and "gone before done" in err and "the pane is gone" in err


def test_answer_is_pressed_only_while_no_poll_is_in_flight_nor_a_start_claimed(
    server: libtmux.Server, session: libtmux.Session, tmp_path: Path
) -> None:
    asking, log = agent(session, tmp_path, "beta", "permission")
    publish(server, asking, "permission", "permission")
    read = nbs(server, tmp_path, "read", "beta", "--json", service="off")
    assert read.returncode == 0, read.stderr
    menu = json.loads(read.stdout)["menu"]
    listed = json.loads(nbs(server, tmp_path, "agents", "--json", service="off").stdout)["agents"]
    assert [a["menu"] for a in listed] == [menu] and len(menu) == 12

    def keys() -> list[str]:
        return [line for line in log.read_text().splitlines() if line.startswith("RAW")]

    for option, value in (("@nbs_inflight", "0123abcd /nbs-poll"), ("@nbs_starting", "0123abcd 9999999999")):
        server.cmd("set-option", "-p", "-t", asking, option, value)
        refused = nbs(server, tmp_path, "answer", "beta", "1", "--menu", menu, service="off")
        assert refused.returncode == ExitCode.REFUSED and "not pressed" in refused.stderr, option
        server.cmd("set-option", "-pu", "-t", asking, option)
    time.sleep(0.5)
    assert keys() == []
    answered = nbs(server, tmp_path, "answer", "beta", "1", "--menu", menu, "--json", service="off")
    assert answered.returncode == ExitCode.DONE, answered.stderr
    assert retry_until(lambda: keys() == ["RAW b'1'"], 5, raises=False), keys()
    time.sleep(0.5)
    assert keys() == ["RAW b'1'"]  # one key, once
    idle, _ = agent(session, tmp_path, "alpha", "idle")
    publish(server, idle, "idle")
    none = nbs(server, tmp_path, "answer", "alpha", "1", service="off")
    assert none.returncode == ExitCode.REFUSED and "shows no menu" in none.stderr
    assert nbs(server, tmp_path, "answer", "beta", " ", service="off").returncode == ExitCode.BAD_INPUT
