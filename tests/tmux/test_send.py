"""``nbs-tui send`` on real tmux: the CLI as a script runs it, the lease holder a real
``nbs-tui --headless`` process (poll off, so only the send types), fake ``claude`` agents that
log every key (tests/tmux/test_sidecar_runner.py). The text is typed once however many views
watch; refusals type nothing; a second request never overwrites a pending one; a send pasted by
a holder that died is never typed again (the in-flight rule), and its caller hears what became
of it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import libtmux
import pytest
from libtmux.test.retry import retry_until

from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.fleet_api.exit_codes import ExitCode
from nbs_tui.core.sidecar.delivery_rules import (
    SEND_REQUEST_OPTION,
    DeliveryResult,
    Refusal,
    mark_text,
)
from nbs_tui.core.sidecar.lease_rules import (
    INFLIGHT_OPTION,
    LEASE_OPTION,
    PAUSE_OPTION,
    Lease,
    parse_lease,
)
from nbs_tui.sidecar.heartbeat import LeaseHeartbeat
from nbs_tui.sidecar.live_pane import joined
from nbs_tui.sidecar.pane_options import typing_guard
from nbs_tui.sidecar.send_channel import SendChannel
from nbs_tui.tmux.commands import TmuxServerCommands
from tests.headless_proc import Headless
from tests.tmux.test_lease_headless import agent, capture, submits

REPO = Path(__file__).resolve().parents[2]
TEXT = "say 'done' & stop; $HOME \\ `date` \"q\" -- #{pane_id} é"
"""What a shell, tmux's parser, a format or a control client's escaping could change."""


def environment(home: Path, service: str = "off") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "NBS_"))}
    env.update(
        HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_STATE_HOME=str(home / ".state"),
        NBS_POLL_DISABLE="1", NBS_SERVICE=service,
    )  # fmt: skip
    return env


def send(server: libtmux.Server, tmp: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``nbs-tui send ARGV -L SERVER`` as a script runs it (the service off: the views hold the lease)."""
    return subprocess.run(
        [sys.executable, "-m", "nbs_tui", "send", *argv, "-L", str(server.socket_name)],
        capture_output=True, text=True, cwd=REPO, env=environment(tmp / "cli"), timeout=150, check=False,
    )  # fmt: skip


class View(Headless):
    """A view of the server: ``nbs-tui --headless`` with the poll off (it types only sends)."""

    def __init__(self, server: libtmux.Server, home: Path) -> None:
        super().__init__(["-L", str(server.socket_name)], env=environment(home))

    def acting(self) -> bool:
        leases = self.find("lease")
        return bool(leases) and leases[-1]["acting"]

    def sends(self, pane_id: str, result: str, *, relayed: bool = False) -> int:
        return sum(1 for e in self.find("send", pane=pane_id, result=result) if bool(e.get("by")) == relayed)


def published(server: libtmux.Server, pane_id: str) -> str:
    """The pane's state as the holder published it (what the fleet API lists)."""
    out = server.cmd("display-message", "-p", "-t", pane_id, "#{@nbs_state}").stdout
    return out[0] if out else ""


@pytest.fixture
def commands(server: libtmux.Server) -> TmuxServerCommands:
    return TmuxServerCommands.for_server(ServerAddress(socket_name=str(server.socket_name)))


@pytest.fixture
def holder(server: libtmux.Server, tmp_path: Path) -> Iterator[View]:
    with View(server, tmp_path / "holder") as view:
        assert retry_until(view.acting, 30, raises=False), view.events
        yield view
    assert view.returncode == 0, view.stderr


def test_two_views_one_holder_the_text_is_typed_once(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path
) -> None:
    alpha, log = agent(session, tmp_path, "alpha", "idle")
    with View(server, tmp_path / "one") as one, View(server, tmp_path / "two") as two:
        assert retry_until(lambda: one.acting() or two.acting(), 30, raises=False), one.events
        assert retry_until(lambda: one.has("state", pane=alpha) and two.has("state", pane=alpha), 20, raises=False)
        acting, watching = (one, two) if one.acting() else (two, one)
        assert retry_until(lambda: published(server, alpha) == "idle", 20, raises=False)  # listed by the API
        done = send(server, tmp_path, "alpha", TEXT, "--json")
        assert done.returncode == ExitCode.DONE, done.stderr
        out = json.loads(done.stdout)
        assert out["result"] == "submitted" and out["agent"]["pane_id"] == alpha and out["reason"] is None
        assert submits(log) == [f"SUBMIT {TEXT}"]
        time.sleep(3)  # a second typing would come a little later: count again
        assert submits(log) == [f"SUBMIT {TEXT}"]
        assert acting.sends(alpha, "typed") == 1 and watching.sends(alpha, "typed") == 0
        assert retry_until(lambda: watching.sends(alpha, "typed", relayed=True) == 1, 10, raises=False), watching.events
    assert one.returncode == 0 and two.returncode == 0, (one.stderr, two.stderr)


def test_refused_with_input_half_typed_a_poll_in_flight_or_paused_and_nothing_typed(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path, commands: TmuxServerCommands, holder: View
) -> None:
    typed, typed_log = agent(session, tmp_path, "typed", "idle")
    polled, polled_log = agent(session, tmp_path, "polled", "idle")
    server.cmd("send-keys", "-t", typed, "-l", "half a thought")
    assert retry_until(lambda: "half a thought" in capture(commands, typed), 5, raises=False)
    assert retry_until(lambda: published(server, typed) == published(server, polled) == "idle", 20, raises=False)

    half = send(server, tmp_path, "typed", "next task")
    assert half.returncode == ExitCode.REFUSED, half.stderr
    assert f"({Refusal.INPUT.value})" in half.stderr and "half a thought" in half.stderr
    assert "❯ half a thought" in capture(commands, typed) and "next task" not in capture(commands, typed)

    # a poll the holder typed and has not seen submitted, as tmux records it: its own mark
    lease = parse_lease(commands.display("", f"#{{{LEASE_OPTION}}}"))
    assert isinstance(lease, Lease)
    server.cmd("set-option", "-p", "-t", polled, INFLIGHT_OPTION, f"{lease.token} /nbs-poll")
    in_flight = send(server, tmp_path, polled, "next task")
    assert in_flight.returncode == ExitCode.REFUSED, in_flight.stderr
    assert f"({Refusal.POLL_IN_FLIGHT.value})" in in_flight.stderr
    server.cmd("set-option", "-s", PAUSE_OPTION, "on")  # P in any view: the sidecar acts nowhere
    server.cmd("set-option", "-pu", "-t", polled, INFLIGHT_OPTION)
    paused = send(server, tmp_path, polled, "next task")
    assert paused.returncode == ExitCode.REFUSED and f"({Refusal.PAUSED.value})" in paused.stderr, paused.stderr
    time.sleep(2)
    assert submits(typed_log) == [] and submits(polled_log) == []
    assert "next task" not in typed_log.read_text() + polled_log.read_text()


def test_a_permission_prompt_is_refused_unchanged_and_bad_input_or_targets_get_their_codes(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path, commands: TmuxServerCommands, holder: View
) -> None:
    asking, log = agent(session, tmp_path, "asking", "permission")
    assert retry_until(lambda: published(server, asking) == "permission", 20, raises=False)
    before = capture(commands, asking)
    refused = send(server, tmp_path, "asking", "yes, go on")
    assert refused.returncode == ExitCode.REFUSED, refused.stderr
    assert f"refused ({Refusal.PERMISSION.value})" in refused.stderr and refused.stdout == ""
    waited = send(server, tmp_path, "asking", "yes, go on", "--wait-idle", "1.5", "--json")
    assert waited.returncode == ExitCode.TIMEOUT and "not idle within 1.5 s (permission)" in waited.stderr
    assert send(server, tmp_path, "nobody", "hello").returncode == ExitCode.NO_SUCH_AGENT
    assert send(server, tmp_path, "asking", " \n ").returncode == ExitCode.BAD_INPUT
    (tmp_path / "task.md").write_text("a task\n")
    both = send(server, tmp_path, "asking", "text", "--file", str(tmp_path / "task.md"))
    assert both.returncode == ExitCode.BAD_INPUT and "one of them" in both.stderr
    assert send(server, tmp_path, "asking", "stop\x1b[2J").returncode == ExitCode.BAD_INPUT
    assert capture(commands, asking) == before
    assert [line for line in log.read_text().splitlines() if line != "READY"] == []  # not one key


def test_a_second_send_while_one_is_pending_is_refused_and_never_overwrites(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path, commands: TmuxServerCommands
) -> None:
    """No holder runs (the service is off): the first request stays pending. The agent's state
    is published as a holder would have (the fleet API lists what the holder published)."""
    alpha, log = agent(session, tmp_path, "alpha", "idle")
    server.cmd("set-option", "-p", "-t", alpha, "@nbs_state", "idle")
    channel = SendChannel(commands)
    first = channel.post(alpha, "the first text", time.time() + 600)
    assert first is not None
    second = send(server, tmp_path, "alpha", "the second text")
    assert second.returncode == ExitCode.REFUSED and f"({Refusal.PENDING.value})" in second.stderr, second.stderr
    assert commands.display(alpha, f"#{{{SEND_REQUEST_OPTION}}}") == first.render()
    assert channel.text(first) == "the first text\n"
    assert channel.post(alpha, "a third", time.time() + 600) is None  # the check and the set are one step
    assert channel.withdraw(first, alpha) and channel.text(first) is None  # nothing typed: taken back
    assert submits(log) == []


@pytest.mark.parametrize("entered", [False, True], ids=["pasted", "entered"])
def test_a_send_a_dead_holder_pasted_is_never_typed_again_and_its_caller_hears_why(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path, commands: TmuxServerCommands, entered: bool
) -> None:
    """A holder pastes a send as its sidecar does (fenced, marked in flight, ``typed`` written
    in the same step), presses Enter or not, and dies. The next holder recovers the pane by the
    in-flight rule and answers the request; it never pastes the text again."""
    alpha, log = agent(session, tmp_path, "alpha", "idle")
    channel = SendChannel(commands)
    text = "write the report"
    request = channel.post(alpha, text, time.time() + 600)
    assert request is not None
    dead = LeaseHeartbeat(commands)
    dead.tick()
    assert dead.holding
    fence = joined(typing_guard(dead.token, alpha, mark_text(text)), channel.typing_fence(request, alpha, dead.token))
    assert commands.paste(alpha, text, guard=fence)
    assert retry_until(lambda: f"❯ {text}" in capture(commands, alpha), 5, raises=False)
    if entered:
        assert commands.press(alpha, "Enter")
        assert retry_until(lambda: len(submits(log)) == 1, 5, raises=False)
    dead.stop(release=False)  # dies: no answer, no release
    typed = channel.answer(alpha, request)
    assert typed is not None and not typed.final and typed.token == dead.token

    with View(server, tmp_path / "next") as view:
        assert retry_until(lambda: (a := channel.answer(alpha, request)) is not None and a.final, 40, raises=False)
        answer = channel.answer(alpha, request)
        assert answer is not None and answer.delivery is not None
        if entered:  # submitted before it died: the box was empty, the mark dropped
            assert answer.delivery.result is DeliveryResult.FAILED, answer
            assert "may have been" in answer.delivery.message
        else:  # erased by the in-flight rule: nothing submitted
            assert answer.delivery.result is DeliveryResult.REFUSED, answer
            assert answer.delivery.reason == Refusal.STOPPED.value and "erased" in answer.delivery.message
            assert retry_until(lambda: f"❯ {text}" not in capture(commands, alpha), 5, raises=False)
        assert commands.display(alpha, f"#{{{SEND_REQUEST_OPTION}}}") == ""
        time.sleep(3)
    assert view.returncode == 0, view.stderr
    assert submits(log) == ([f"SUBMIT {text}"] if entered else [])
    assert view.find("send", pane=alpha, result="typed") == []


def test_a_holder_sigkilled_mid_send_never_types_it_twice_and_the_caller_hears_what_became_of_it(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path, commands: TmuxServerCommands
) -> None:
    """The holder is SIGKILLed the moment tmux says it pasted the text (``typed``, written in
    the paste's own step), most likely before its Enter (a tick later). The other view takes the
    lease over a ttl later, recovers the pane by the in-flight rule and answers the waiting
    caller: erased and nothing submitted, or (killed after Enter) submitted once and said so."""
    alpha, log = agent(session, tmp_path, "alpha", "idle")
    with View(server, tmp_path / "one") as one, View(server, tmp_path / "two") as two:
        assert retry_until(lambda: one.acting() or two.acting(), 30, raises=False)
        assert retry_until(lambda: published(server, alpha) == "idle", 20, raises=False)
        holder, other = (one, two) if one.acting() else (two, one)
        caller = subprocess.Popen(
            [sys.executable, "-m", "nbs_tui", "send", "alpha", "write the report", "-L", str(server.socket_name)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=environment(tmp_path / "cli"),
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while " typed " not in commands.display(alpha, "#{@nbs_send_ack}") and time.monotonic() < deadline:
            time.sleep(0.01)
        holder.proc.kill()  # SIGKILL: no answer, no release, no withdrawal
        out, err = caller.communicate(timeout=120)
        assert retry_until(other.acting, 5, raises=False)
        time.sleep(3)  # a second typing would come a little later
        done = submits(log)
        if caller.returncode == ExitCode.REFUSED and "erased" in err:
            assert done == [] and "(stopped)" in err, (done, err)
            assert "write the report" not in capture(commands, alpha)
        else:  # killed after its Enter: submitted once, and the caller told it may have been
            assert caller.returncode == ExitCode.REFUSED and "may have been" in err, (caller.returncode, out, err)
            assert done == ["SUBMIT write the report"]
        assert other.sends(alpha, "typed") == 0  # the new holder typed nothing (it heard the dead one's typing)
    assert other.returncode == 0, other.stderr


def test_with_no_sidecar_at_all_the_request_is_taken_back_and_refused(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path, commands: TmuxServerCommands
) -> None:
    """The service off and no view: nobody would ever answer, so the command does not wait its
    whole minute: it takes its request back (nothing typed) and says who is missing."""
    alpha, log = agent(session, tmp_path, "alpha", "idle")
    server.cmd("set-option", "-p", "-t", alpha, "@nbs_state", "idle")  # as a holder had published
    done = send(server, tmp_path, "alpha", "hello")
    assert done.returncode == ExitCode.REFUSED, done.stderr  # not 124: it did not wait for an answer
    assert f"({Refusal.NOT_HOLDER.value})" in done.stderr and "nothing typed" in done.stderr
    assert commands.display(alpha, f"#{{{SEND_REQUEST_OPTION}}}") == ""
    assert submits(log) == []
