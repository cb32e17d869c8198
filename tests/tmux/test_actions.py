"""Operator actions against real tmux panes: tricky text arrives byte-exact, keys, broadcast,
force poll, and a pane that died or was replaced gets nothing.

Each text case types into a pane running ``cat > FILE`` (cooked mode), then presses Ctrl-D
twice (flush the partial line, then end of file) and compares FILE's bytes with the text.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

import libtmux
import pytest
from libtmux.test.retry import retry_until

from nbs_tui.core.fleet.model import PaneId, PaneInfo, ServerAddress
from nbs_tui.core.screen.pane_screen import PaneScreen
from nbs_tui.operator.action_log import ActionLog, ActionRecord, Outcome
from nbs_tui.operator.pane_actions import Operator, summarize, tmux_key
from nbs_tui.tmux.commands import Guard, TmuxServerCommands
from nbs_tui.tmux.errors import TmuxCommandError
from nbs_tui.tmux.port import FleetPort, PaneGone


class CliFleet(FleetPort):
    """The smallest FleetPort over the tmux binary, so these tests need only the port's contract."""

    def __init__(self, server: ServerAddress) -> None:
        self.tmux = TmuxServerCommands.for_server(server)

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def panes(self) -> list[PaneInfo]:
        return []

    def screen(self, pane_id: PaneId) -> PaneScreen | None:
        return None

    def capture_text(self, pane_id: PaneId) -> str:
        return self._run("capture-pane", "-p", "-t", pane_id)

    def send_text(self, pane_id: PaneId, text: str, *, guard: Guard | None = None) -> bool:
        assert guard is None, "the operator's actions never guard their keys"
        self._run("send-keys", "-l", "-t", pane_id, "--", text)
        return True

    def send_keys(self, pane_id: PaneId, *keys: str, guard: Guard | None = None) -> bool:
        assert guard is None, "the operator's actions never guard their keys"
        self._run("send-keys", "-t", pane_id, *keys)
        return True

    def _run(self, *args: str) -> str:
        try:
            return self.tmux.run(*args).text
        except TmuxCommandError as error:
            if "can't find pane" in str(error):
                raise PaneGone(str(error)) from None
            raise


def fleet_factories() -> list[tuple[str, Callable[[ServerAddress], FleetPort]]]:
    factories: list[tuple[str, Callable[[ServerAddress], FleetPort]]] = [("cli", CliFleet)]
    try:
        from nbs_tui.tmux.fleet import TmuxFleet  # the real adapter, once it exists
    except ImportError:
        return factories
    factories.append(("tmuxfleet", lambda server: TmuxFleet(server)))
    return factories


@pytest.fixture(params=fleet_factories(), ids=lambda f: f[0])
def fleet(request: pytest.FixtureRequest, server: libtmux.Server) -> FleetPort:
    _, factory = request.param
    address = ServerAddress(socket_name=server.socket_name)
    port = factory(address)
    port.start()
    request.addfinalizer(port.stop)
    return port


def info(pane: libtmux.Pane) -> PaneInfo:
    pane.refresh()
    return PaneInfo(
        pane_id=str(pane.pane_id),
        session_name=str(pane.session.name),
        window_index=int(pane.window.window_index or 0),
        window_name=str(pane.window.window_name),
        pane_index=int(pane.pane_index or 0),
        title=str(pane.pane_title or ""),
        current_command=str(pane.pane_current_command or ""),
        current_path=str(pane.pane_current_path or ""),
        pid=int(pane.pane_pid or 0),
        width=int(pane.pane_width or 80),
        height=int(pane.pane_height or 24),
        is_agent=True,
    )


def cat_pane(fleet: FleetPort, session: libtmux.Session, out: Path, template: str | None = None) -> libtmux.Pane:
    """A pane whose program copies its terminal input to ``out`` and marks ``out.done`` at EOF."""
    window = session.new_window(window_shell=shell_command(template or CAT, out), attach=False)
    pane = window.active_pane
    assert pane is not None
    retry_until(Path(f"{out}.ready").exists)
    wait_known(fleet, str(pane.pane_id))
    return pane


def wait_known(fleet: FleetPort, pane_id: str) -> None:
    """The real fleet acts only on panes it has discovered; wait for its next scan."""
    if not isinstance(fleet, CliFleet):
        retry_until(lambda: any(p.pane_id == pane_id for p in fleet.panes()), 15)


CAT = "stty -echo; touch {out}.ready; cat > {out}; touch {out}.done; exec sleep 600"
RAW = "stty raw -echo; touch {out}.ready; head -c 11 > {out}; touch {out}.done; exec sleep 600"


def shell_command(template: str, out: Path) -> str:
    return "sh -c " + shlex.quote(template.format(out=shlex.quote(str(out))))


def finish(fleet: FleetPort, pane: libtmux.Pane, out: Path) -> bytes:
    fleet.send_keys(str(pane.pane_id), "C-d")
    fleet.send_keys(str(pane.pane_id), "C-d")
    retry_until(lambda: Path(f"{out}.done").exists())
    return out.read_bytes()


def operator(fleet: FleetPort, server: libtmux.Server, tmp_path: Path, **kw: object) -> Operator:
    return Operator(
        fleet,
        ActionLog(tmp_path / "actions.log"),
        server=ServerAddress(socket_name=server.socket_name),
        enter_delay=0.05,
        **kw,  # type: ignore[arg-type]
    )


TRICKY = {
    "semicolon": "echo a; echo b ;",
    "semicolons-only": ";;",
    "backslash-semicolon": "a\\; b\\;",
    "dollar": "$HOME ${PATH} $(id) `whoami` $",
    "quotes": "\"double\" 'single' \\\"escaped\\\" \\",
    "leading-dash": "-n --help -- -",
    "unicode": "é ü 中文 🙂 ⏎ ─",
    "tabs": "a\tb\t\tc",
    "tmux-words": "Enter C-c Escape #{pane_id} %1 ~ !",
    "multi-line": "first line\n  second; $HOME\n'third' \"q\"\n-dash\ttab 🙂\n",
    "multi-no-final-newline": "one\ntwo",
}


@pytest.mark.parametrize("name", list(TRICKY))
def test_tricky_text_arrives_byte_exact(
    name: str, fleet: FleetPort, server: libtmux.Server, session: libtmux.Session, tmp_path: Path
) -> None:
    out = tmp_path / "out.txt"
    pane = cat_pane(fleet, session, out)
    op = operator(fleet, server, tmp_path)
    text = TRICKY[name]
    result = op.send_text(info(pane), text)
    assert result.ok, result.reason
    assert result.action == ("paste" if "\n" in text else "text")
    assert finish(fleet, pane, out) == text.encode("utf-8")
    (record,) = op.log.tail()
    assert isinstance(record, ActionRecord)
    assert record.sent == text and record.outcome is Outcome.SENT and record.pane_id == pane.pane_id


def test_enter_only_when_asked(
    fleet: FleetPort, server: libtmux.Server, session: libtmux.Session, tmp_path: Path
) -> None:
    out = tmp_path / "out.txt"
    pane = cat_pane(fleet, session, out)
    op = operator(fleet, server, tmp_path)
    assert op.send_text(info(pane), "no enter").ok
    assert op.send_text(info(pane), " then enter", enter=True).ok
    assert op.send_text(info(pane), "", enter=True).ok  # a bare Enter
    assert finish(fleet, pane, out) == b"no enter then enter\n\n"


def test_named_keys(fleet: FleetPort, server: libtmux.Server, session: libtmux.Session, tmp_path: Path) -> None:
    out = tmp_path / "keys.txt"
    # Raw mode, so each key's bytes arrive uninterpreted (Ctrl-C is a byte, not a signal).
    pane = cat_pane(fleet, session, out, RAW)
    op = operator(fleet, server, tmp_path)
    for key in ("Enter", "Esc", "Ctrl-C", "Tab", "Shift-Tab", "Up", "2"):
        result = op.send_key(info(pane), key)
        assert result.ok, result.reason
    retry_until(lambda: Path(f"{out}.done").exists())
    assert out.read_bytes() in (b"\r\x1b\x03\t\x1b[Z\x1b[A2", b"\r\x1b\x03\t\x1b[Z\x1bOA2")
    bad = op.send_key(info(pane), "NoSuchKey")
    assert bad.outcome is Outcome.SKIPPED and "unknown key" in bad.reason
    assert tmux_key("shift-tab") == "BTab" and tmux_key("C-x") == "C-x" and tmux_key("y") == "y"


def test_killed_pane_gets_nothing_and_the_operator_is_told(
    fleet: FleetPort, server: libtmux.Server, session: libtmux.Session, tmp_path: Path
) -> None:
    pane = cat_pane(fleet, session, tmp_path / "out.txt")
    chosen = info(pane)
    pane.kill()
    op = operator(fleet, server, tmp_path)
    result = op.send_text(chosen, "hello", enter=True)
    assert result.outcome is Outcome.SKIPPED
    assert "gone" in result.reason and chosen.pane_id in result.reason
    (record,) = op.log.tail()
    assert isinstance(record, ActionRecord) and record.outcome is Outcome.SKIPPED


def test_dead_pane_gets_nothing(
    fleet: FleetPort, server: libtmux.Server, session: libtmux.Session, tmp_path: Path
) -> None:
    server.cmd("set-option", "-g", "-w", "remain-on-exit", "on")  # before the window, so no race
    window = session.new_window(window_shell="sh -c 'sleep 0.2'", attach=False)
    pane = window.active_pane
    assert pane is not None
    wait_known(fleet, str(pane.pane_id))
    chosen = info(pane)
    retry_until(lambda: pane.cmd("display-message", "-p", "#{pane_dead}").stdout[0] == "1")
    result = operator(fleet, server, tmp_path).send_key(chosen, "Enter")
    assert result.outcome is Outcome.SKIPPED and "exited" in result.reason


def test_replaced_pane_gets_nothing(
    fleet: FleetPort, server: libtmux.Server, session: libtmux.Session, tmp_path: Path
) -> None:
    first = tmp_path / "first.txt"
    pane = cat_pane(fleet, session, first)
    chosen = info(pane)
    second = tmp_path / "second.txt"
    pane.cmd("respawn-pane", "-k", shell_command(CAT, second))
    retry_until(Path(f"{second}.ready").exists)
    wait_known(fleet, str(pane.pane_id))
    op = operator(fleet, server, tmp_path)
    result = op.send_text(chosen, "meant for the old agent", enter=True)
    assert result.outcome is Outcome.SKIPPED and "replaced" in result.reason
    assert finish(fleet, pane, second) == b""
    # The same pane, chosen afresh, is reachable again.
    assert op.send_text(info(pane), "fresh").ok


def test_broadcast_reports_each_pane(
    fleet: FleetPort, server: libtmux.Server, session: libtmux.Session, tmp_path: Path
) -> None:
    outs = [tmp_path / f"b{n}.txt" for n in range(3)]
    panes = [cat_pane(fleet, session, out) for out in outs]
    chosen = [info(p) for p in panes]
    panes[1].kill()
    op = operator(fleet, server, tmp_path)
    text = "status? $HOME; 'q' 🙂"
    results = op.broadcast(chosen, text=text, enter=True)
    assert [r.outcome for r in results] == [Outcome.SENT, Outcome.SKIPPED, Outcome.SENT]
    assert "2 of 3 done" in summarize(results) and chosen[1].pane_id in summarize(results)
    for pane, out in ((panes[0], outs[0]), (panes[2], outs[2])):
        assert finish(fleet, pane, out) == (text + "\n").encode()
    records = [r for r in op.log.tail() if isinstance(r, ActionRecord)]
    assert len(records) == 3 and all(r.why == "broadcast to 3 panes" for r in records)
    with pytest.raises(ValueError):
        op.broadcast(chosen, text="x", key="Enter")


class FakePoller:
    def __init__(self, safe: set[str]) -> None:
        self.safe = safe
        self.asked: list[str] = []

    def force_poll(self, pane_id: PaneId) -> tuple[bool, str]:
        self.asked.append(pane_id)
        if pane_id in self.safe:
            return True, "injected /nbs-poll"
        return False, "input box not empty"


def test_force_poll_checks_pane_and_reports_skips(
    fleet: FleetPort, server: libtmux.Server, session: libtmux.Session, tmp_path: Path
) -> None:
    panes = [cat_pane(fleet, session, tmp_path / f"p{n}.txt") for n in range(4)]
    chosen = [info(p) for p in panes]
    panes[3].kill()
    poller = FakePoller(safe={chosen[0].pane_id, chosen[3].pane_id})
    op = operator(fleet, server, tmp_path, poller=poller)
    idle = {chosen[0].pane_id, chosen[1].pane_id, chosen[3].pane_id}
    results = op.force_poll_all(chosen, lambda p: p.pane_id in idle)
    by_pane = {r.pane_id: r for r in results}
    assert by_pane[chosen[0].pane_id].ok
    assert by_pane[chosen[1].pane_id].reason == "input box not empty"
    assert by_pane[chosen[2].pane_id].reason == "not idle"
    assert "gone" in by_pane[chosen[3].pane_id].reason
    # never asked for dead or busy panes (the idle ones are asked all at once, in any order)
    assert sorted(poller.asked) == sorted([chosen[0].pane_id, chosen[1].pane_id])
    no_sidecar = operator(fleet, server, tmp_path).force_poll(chosen[0])
    assert no_sidecar.outcome is Outcome.SKIPPED and "sidecar" in no_sidecar.reason
