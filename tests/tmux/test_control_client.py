"""The control-mode client on its own: quoting is byte-exact, replies match commands in order,
a failed command in a group fails the rest of its group, and close() leaves no process."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import libtmux
import pytest

from nbs_tui.tmux.commands import quote
from nbs_tui.tmux.control import ControlClient, ControlError, Reply, decode_output

from .fleet_helpers import address, new_session, wait_for

ODD = [
    "plain",
    "semi;colon ; and ;",
    "$HOME ${X} $(x) `x`",
    "\"double\" 'single' \\back\\slash\\",
    "#{pane_id} #[fg=red] ## #",
    "~ ~user {braces} }",
    "-leading dash",
    "tab\there",
    "ünïcödé 日本語 😀",
    "\x01\x02 control \x7f",
]


@pytest.fixture
def client(server: libtmux.Server):  # type: ignore[no-untyped-def]
    session = new_session(server, "ctl", 80, 24)
    outputs: list[tuple[str, bytes]] = []
    lock = threading.Lock()

    def on_output(pane: str, data: bytes) -> None:
        with lock:
            outputs.append((pane, data))

    c = ControlClient(
        address(server),
        str(session.session_id),
        on_output=on_output,
        on_notification=lambda _line: None,
        on_exit=lambda _reason: None,
    )
    c.start()
    c.outputs = outputs  # type: ignore[attr-defined]
    yield c
    c.close()


@pytest.mark.parametrize("text", ODD)
def test_quote_round_trips_through_tmux(client: ControlClient, text: str, tmp_path: Path) -> None:
    # set-buffer stores its argument verbatim; save-buffer writes those bytes back out
    out = tmp_path / "buffer"
    assert client.command_line(f"set-buffer -b probe -- {quote(text)}").ok
    assert client.command_line(f"save-buffer -b probe {quote(str(out))}").ok  # written a bit later
    wait_for(lambda: out.exists() and out.read_bytes() == text.encode("utf-8"))


def test_replies_arrive_in_order_and_errors_skip_the_rest_of_a_group(client: ControlClient) -> None:
    got: list[tuple[str, Reply]] = []
    done = threading.Event()

    def cb(name: str):  # type: ignore[no-untyped-def]
        def inner(reply: Reply) -> None:
            got.append((name, reply))
            if name == "last":
                done.set()

        return inner

    client.send_group([("display-message -p one", cb("one")), ("display-message -p two", cb("two"))])
    client.send_group([("capture-pane -p -t %9999", cb("bad")), ("display-message -p skipped", cb("skipped"))])
    client.send("display-message -p last", cb("last"))
    assert done.wait(10)
    assert [(n, r.ok, r.text()) for n, r in got[:2]] == [("one", True, ["one"]), ("two", True, ["two"])]
    assert [(n, r.ok) for n, r in got[2:]] == [("bad", False), ("skipped", False), ("last", True)]
    failed = client.command_line("capture-pane -p -t %9999")
    assert not failed.ok and b"can't find pane" in b" ".join(failed.errors)


def test_output_is_decoded_to_the_bytes_the_pane_wrote(client: ControlClient, server: libtmux.Server) -> None:
    session = server.sessions.get(session_name="ctl")
    assert session is not None
    pane = session.active_pane
    assert pane is not None
    pane.send_keys("printf 'a\\\\b\\tc\\001\\n'", enter=True)

    def seen() -> bool:
        return b"a\\b\tc\x01\r\n" in b"".join(d for _p, d in client.outputs)  # type: ignore[attr-defined]

    wait_for(seen)
    assert decode_output(b"x\\134y\\015\\012") == b"x\\y\r\n"


def test_close_ends_the_subprocess(client: ControlClient) -> None:
    pid = client.pid
    assert pid is not None and client.alive
    client.close()
    wait_for(lambda: not client.alive)
    with pytest.raises(ControlError):
        client.send("display-message -p x")


def test_a_client_that_died_on_its_own_reports_its_exit_even_if_closed_after(server: libtmux.Server) -> None:
    """The fleet's supervisor closes a client it finds dead; that late close must not hide the
    death from the exit handler (which is how the operator hears the client was lost).

    A command left unanswered holds the dying client's reader (its callback runs first, and
    waits here until close() has begun), which makes the race certain instead of rare."""
    session = new_session(server, "died", 80, 24)
    exits: list[str] = []
    c = ControlClient(
        address(server), str(session.session_id),
        on_output=lambda _pane, _data: None, on_notification=lambda _line: None, on_exit=exits.append,
    )
    c.start()
    assert c.pid is not None
    closing = threading.Event()

    def held(reply: Reply) -> None:
        assert not reply.ok
        closing.wait(5)

    os.kill(c.pid, signal.SIGSTOP)  # it reads no command, so answers none
    c.send("display-message -p never", held)
    os.kill(c.pid, signal.SIGKILL)
    wait_for(lambda: not c.alive)
    closer = threading.Thread(target=c.close)
    closer.start()  # as the supervisor does when it finds the client dead
    wait_for(lambda: c._closing)  # the moment the race is about
    closing.set()
    closer.join(5)
    wait_for(lambda: bool(exits))
    assert len(exits) == 1, exits


def test_a_client_we_close_reports_no_exit(server: libtmux.Server) -> None:
    session = new_session(server, "closed", 80, 24)
    exits: list[str] = []
    c = ControlClient(
        address(server), str(session.session_id),
        on_output=lambda _pane, _data: None, on_notification=lambda _line: None, on_exit=exits.append,
    )
    c.start()
    c.close()
    assert not c.alive
    assert exits == []
