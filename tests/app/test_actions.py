"""Operator actions driven through the dashboard (Pilot) against real tmux panes.

Every test runs `NbsApp` on a private tmux server (libtmux's ``session`` fixture). Text
and keys are checked byte for byte where they land: a pane running ``cat > FILE`` (cooked
mode) or ``head -c N > FILE`` (raw mode, for keys). The "needs you" and force-poll tests use
the demo agent (an imitation of Claude Code that libtmux sees as ``claude``).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import libtmux
import pytest
from textual.pilot import Pilot
from textual.widgets import TextArea

from nbs_tui.app import NbsApp, create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import AgentState, ServerAddress
from nbs_tui.operator.action_log import ActionRecord, Outcome
from nbs_tui.widgets.action_log_view import ActionLogScreen
from nbs_tui.widgets.confirm_screen import ConfirmScreen
from nbs_tui.widgets.help_screen import HelpScreen
from nbs_tui.widgets.send_bar import KeyPicker
from tests.app.helpers import wait_for

SIZE = (160, 48)
CAT = "stty -echo; touch {out}.ready; cat > {out}; touch {out}.done; exec sleep 600"
RAW = "stty raw -echo; touch {out}.ready; head -c {n} > {out}; touch {out}.done; exec sleep 600"


def settings(server: libtmux.Server, tmp_path: Path, **changes: object) -> Settings:
    return Settings(
        server=ServerAddress(socket_name=server.socket_name),
        action_log=tmp_path / "state" / "actions.log",
        hook_spool=tmp_path / "state" / "hooks.jsonl",
        claude_home=tmp_path / "claude-home",
        **changes,  # type: ignore[arg-type]
    )


def make_app(server: libtmux.Server, tmp_path: Path, **changes: object) -> NbsApp:
    return create_app(settings(server, tmp_path, **changes), control_plane=False)


def pane_running(session: libtmux.Session, template: str, out: Path, name: str, **fmt: object) -> str:
    script = template.format(out=shlex.quote(str(out)), **fmt)
    window = session.new_window(window_name=name, window_shell="sh -c " + shlex.quote(script), attach=False)
    pane = window.active_pane
    assert pane is not None and pane.pane_id is not None
    import libtmux.test.retry as r

    r.retry_until(Path(f"{out}.ready").exists)
    return str(pane.pane_id)


def finished(server: libtmux.Server, pane_id: str, out: Path) -> Callable[[], bytes | None]:
    """Close ``cat``'s input (Ctrl-D twice) and return a reader for the file once it is complete."""
    server.cmd("send-keys", "-t", pane_id, "C-d")
    server.cmd("send-keys", "-t", pane_id, "C-d")
    return lambda: out.read_bytes() if Path(f"{out}.done").exists() else None


async def select(app: NbsApp, pilot: Pilot[int], pane_id: str) -> None:
    """Move the list's cursor to the pane with j/k, as the operator would."""
    table = app.dashboard.fleet_list
    await wait_for(pilot, lambda: pane_id in set(table.row_keys), what=f"{pane_id} listed")
    order = table.row_keys
    steps = order.index(pane_id) - table.cursor_row
    for _ in range(abs(steps)):
        await pilot.press("j" if steps > 0 else "k")
    await wait_for(pilot, lambda: app.dashboard.selected_id == pane_id, what=f"{pane_id} selected")


def records(app: NbsApp) -> list[ActionRecord]:
    return [r for r in app.operator.action_log.tail() if isinstance(r, ActionRecord)]


TRICKY = "echo a; b ;$HOME \"dq\" 'sq' `x` \\ -dash é 中 🙂\ttab\nsecond line;\n-third\n"


async def test_send_bar_types_tricky_text_byte_exact(session: libtmux.Session, tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    pane = pane_running(session, CAT, out, "cat")
    app = make_app(session.server, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await select(app, pilot, pane)
        await pilot.press("i")
        area = app.dashboard.send_bar.query_one(TextArea)
        assert area.has_focus and app.dashboard.send_bar.display
        await pilot.press("o", "k", "semicolon", "space")
        await pilot.press("enter")  # sends "ok; " without Enter
        area.load_text(TRICKY)
        await pilot.press("enter")
        await pilot.press("ctrl+t")  # now also press Enter
        assert app.dashboard.send_bar.enter_after
        area.load_text("last")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(records(app)) == 3, what="three sends logged")
        read = finished(session.server, pane, out)
        await wait_for(pilot, lambda: read() is not None, what="cat finished")
        assert read() == ("ok; " + TRICKY + "last\n").encode()
        kinds = [(r.action, r.outcome) for r in records(app)]
        assert kinds == [("text", Outcome.SENT), ("paste", Outcome.SENT), ("text", Outcome.SENT)]
        await pilot.press("escape")
        assert not app.dashboard.send_bar.display and app.dashboard.fleet_list.has_focus


async def test_named_keys_from_the_picker(session: libtmux.Session, tmp_path: Path) -> None:
    out = tmp_path / "keys.bin"
    pane = pane_running(session, RAW, out, "raw", n=10)
    app = make_app(session.server, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await select(app, pilot, pane)
        for shortcut in ("c", "e", "T", "k", "2"):
            await pilot.press("K")
            await wait_for(pilot, lambda: isinstance(app.screen, KeyPicker), what="key picker")
            await pilot.press(shortcut)
            await wait_for(pilot, lambda: not isinstance(app.screen, KeyPicker), what="picker closed")
        await pilot.press("K")
        await wait_for(pilot, lambda: isinstance(app.screen, KeyPicker), what="key picker")
        await pilot.press("enter")  # the highlighted first entry: Enter
        await wait_for(pilot, lambda: Path(f"{out}.done").exists(), what="all keys arrived")
        assert out.read_bytes() == b"\x03\x1b\x1b[Z\x1b[A2\r"
        assert [r.sent for r in records(app)] == ["C-c", "Escape", "BTab", "Up", "2", "Enter"]


async def test_pass_through_sends_every_key_until_ctrl_bracket(session: libtmux.Session, tmp_path: Path) -> None:
    out = tmp_path / "pass.bin"
    pane = pane_running(session, RAW, out, "raw", n=10)
    app = make_app(session.server, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await select(app, pilot, pane)
        await pilot.press("p")
        assert app.dashboard.pass_through.display and app.dashboard.pass_through.has_focus
        assert app.dashboard.mirror.has_class("passthrough")
        await pilot.press("q", "j", "semicolon", "ctrl+c", "ctrl+p", "tab", "shift+tab", "enter")  # not the app's
        await pilot.press("ctrl+right_square_bracket")
        assert not app.dashboard.pass_through.display and not app.dashboard.mirror.has_class("passthrough")
        assert app.is_running
        await wait_for(pilot, lambda: Path(f"{out}.done").exists(), what="keys arrived")
        assert out.read_bytes() == b"qj;\x03\x10\t\x1b[Z\r"


async def test_broadcast_names_the_panes_and_sends_to_each(session: libtmux.Session, tmp_path: Path) -> None:
    outs = [tmp_path / f"b{n}.txt" for n in range(3)]
    panes = [pane_running(session, CAT, out, f"b{n}") for n, out in enumerate(outs)]
    app = make_app(session.server, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        for pane in (panes[0], panes[2]):
            await select(app, pilot, pane)
            await pilot.press("m")
        assert app.operator.marked == {panes[0], panes[2]}
        await pilot.press("b")
        app.dashboard.send_bar.query_one(TextArea).load_text("all: $HOME; 'go'")
        await pilot.press("ctrl+t", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirmation")
        confirm = app.screen
        assert isinstance(confirm, ConfirmScreen)
        targets = {app.state.pane_by_id[p].target for p in (panes[0], panes[2])}
        assert all(any(t in item for item in confirm.items) for t in targets)
        assert not any(app.state.pane_by_id[panes[1]].target in item for item in confirm.items)
        await pilot.press("n")  # first: cancel; nothing is sent
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="cancelled")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirmation again")
        await pilot.press("y")
        await wait_for(pilot, lambda: len(records(app)) == 2, what="two sends logged")
        for pane, out, expected in zip(panes, outs, (b"all: $HOME; 'go'\n", b"", b"all: $HOME; 'go'\n"), strict=True):
            read = finished(session.server, pane, out)
            await wait_for(pilot, lambda read=read: read() is not None, what="cat finished")  # type: ignore[misc]
            assert read() == expected
        assert {r.why for r in records(app)} == {"broadcast to 2 panes"}


async def test_replaced_pane_gets_nothing_and_the_operator_is_told(session: libtmux.Session, tmp_path: Path) -> None:
    first = tmp_path / "first.txt"
    pane = pane_running(session, CAT, first, "victim")
    app = make_app(session.server, tmp_path)
    notes: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        original_notify = app.notify

        def spy(message: str, **kw: object) -> None:
            notes.append(message)
            original_notify(message, **kw)  # type: ignore[arg-type]

        app.notify = spy  # type: ignore[method-assign]
        await select(app, pilot, pane)
        await pilot.press("i")  # the pane is chosen now
        second = tmp_path / "second.txt"
        script = CAT.format(out=shlex.quote(str(second)))
        session.server.cmd("respawn-pane", "-k", "-t", pane, "sh -c " + shlex.quote(script))
        import libtmux.test.retry as r

        r.retry_until(Path(f"{second}.ready").exists)
        app.dashboard.send_bar.query_one(TextArea).load_text("meant for the old agent")
        await pilot.press("ctrl+t", "enter")
        await wait_for(pilot, lambda: any("replaced" in n for n in notes), what="the operator is told")
        (record,) = records(app)
        assert record.outcome is Outcome.SKIPPED and "replaced" in record.reason
        read = finished(session.server, pane, second)
        await wait_for(pilot, lambda: read() is not None, what="cat finished")
        assert read() == b""


async def test_filter_by_name_and_state(session: libtmux.Session, tmp_path: Path) -> None:
    alpha = pane_running(session, CAT, tmp_path / "a.txt", "alpha")
    beta = pane_running(session, CAT, tmp_path / "b.txt", "beta")
    app = make_app(session.server, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        table = app.dashboard.fleet_list
        await wait_for(pilot, lambda: {alpha, beta} <= set(table.row_keys), what="both listed")
        await pilot.press("slash")
        assert app.dashboard.filter_bar.has_focus
        await pilot.press("b", "e", "t", "a")
        await wait_for(pilot, lambda: table.row_keys == [beta], what="only beta")
        await pilot.press("enter")
        assert table.has_focus and table.row_keys == [beta]
        await pilot.press("slash", "escape")
        await wait_for(pilot, lambda: {alpha, beta} <= set(table.row_keys), what="filter cleared")
        await pilot.press("slash", *"state:idle")
        await wait_for(pilot, lambda: table.row_count == 0, what="no idle agents among shells")


def demo_agent(session: libtmux.Session, tmp_path: Path, script: str, name: str) -> str:
    project = tmp_path / name
    (project / ".nbs").mkdir(parents=True)
    argv = [sys.executable, "-m", "nbs_tui.demo.agent", "--proc-name", "claude", "--script", script, "--name", name]
    window = session.new_window(
        window_name=name, window_shell=" ".join(shlex.quote(a) for a in argv), start_directory=str(project), attach=False
    )
    pane = window.active_pane
    assert pane is not None and pane.pane_id is not None
    return str(pane.pane_id)


def screen_text(session: libtmux.Session, pane_id: str) -> str:
    return "\n".join(session.server.cmd("capture-pane", "-p", "-t", pane_id).stdout)


@pytest.mark.slow
async def test_needs_you_queue_rings_and_a_key_answers_the_prompt(session: libtmux.Session, tmp_path: Path) -> None:
    waiting = demo_agent(session, tmp_path, "permission", "asker")
    app = make_app(session.server, tmp_path, bell=True)
    bells: list[int] = []
    async with app.run_test(size=SIZE) as pilot:
        app.bell = lambda: bells.append(1)  # type: ignore[method-assign]
        await wait_for(pilot, lambda: waiting in app.operator.needs_you, timeout=30, what="the agent joins the queue")
        assert bells, "a bell rang when it joined"
        assert app.dashboard.needs_panel.display and app.operator.needs_you.entries()[0].state is AgentState.PERMISSION
        await pilot.press("n")
        assert app.dashboard.selected_id == waiting
        await pilot.press("K")
        await wait_for(pilot, lambda: isinstance(app.screen, KeyPicker), what="key picker")
        await pilot.press("1")
        await wait_for(pilot, lambda: waiting not in app.operator.needs_you, timeout=30, what="the agent leaves the queue")
        assert not app.dashboard.needs_panel.display
        (record,) = [r for r in records(app) if r.action == "key"]
        assert record.pane_id == waiting and record.sent == "1" and record.outcome is Outcome.SENT


@pytest.mark.slow
async def test_force_poll_injects_into_an_idle_agent_and_reports_skips(session: libtmux.Session, tmp_path: Path) -> None:
    idle = demo_agent(session, tmp_path, "idle", "quiet")
    shell = pane_running(session, CAT, tmp_path / "shell.txt", "shell")
    app = make_app(session.server, tmp_path, poll_interval=3600.0)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(
            pilot,
            lambda: (s := app.state.statuses.get(idle)) is not None and s.state is AgentState.IDLE,
            timeout=30,
            what="the demo agent is idle",
        )
        await select(app, pilot, shell)
        await pilot.press("r")
        await wait_for(pilot, lambda: any(r.pane_id == shell for r in records(app)), what="skip recorded")
        await select(app, pilot, idle)
        await pilot.press("r")
        await wait_for(pilot, lambda: any(r.pane_id == idle and r.action == "poll" for r in records(app)), what="poll")
        record = next(r for r in records(app) if r.pane_id == idle)
        assert record.outcome is Outcome.SENT, record.reason
        await wait_for(pilot, lambda: "/nbs-poll" in screen_text(session, idle), timeout=20, what="/nbs-poll typed")
        skipped = next(r for r in records(app) if r.pane_id == shell)
        assert skipped.outcome is Outcome.SKIPPED and skipped.reason
        await pilot.press("R")  # every idle agent: the shell is not an agent, the agent is busy or idle
        await wait_for(pilot, lambda: sum(r.why == "force poll (all idle)" for r in records(app)) >= 1, what="poll all")


async def test_toggles_log_and_help(session: libtmux.Session, tmp_path: Path) -> None:
    pane = pane_running(session, CAT, tmp_path / "t.txt", "shell")
    app = make_app(session.server, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await select(app, pilot, pane)
        await pilot.press("t")
        await wait_for(pilot, lambda: any(r.action == "toggle" for r in records(app)), what="toggle logged")
        (toggle,) = [r for r in records(app) if r.action == "toggle"]
        if toggle.outcome is Outcome.SENT:  # the sidecar watches this pane: its row says so
            assert toggle.sent == "poll injection off"
            await wait_for(pilot, lambda: "⊘p" in str(app.dashboard.fleet_list.get_cell(pane, "target")), what="⊘p")
            await pilot.press("t")
            await wait_for(pilot, lambda: len(records(app)) == 2, what="second toggle")
            assert records(app)[1].sent == "poll injection on"
            await wait_for(pilot, lambda: "⊘p" not in str(app.dashboard.fleet_list.get_cell(pane, "target")), what="no ⊘p")
        else:  # a pane the sidecar does not watch: nothing changes, and the reason is told
            assert toggle.outcome is Outcome.SKIPPED and toggle.reason
        await pilot.press("g")  # headless: cannot suspend, says how to attach instead
        await wait_for(pilot, lambda: any(r.action == "jump" for r in records(app)), what="jump logged")
        (jump,) = [r for r in records(app) if r.action == "jump"]
        assert jump.outcome is Outcome.SKIPPED and "attach-session -t " + pane in jump.reason
        await pilot.press("L")
        await wait_for(pilot, lambda: isinstance(app.screen, ActionLogScreen), what="log viewer")
        screen = app.screen
        assert isinstance(screen, ActionLogScreen)
        assert len(screen.view.lines) == len(records(app))
        await pilot.press("escape")
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        ids = {ident for _, _, ident in help_screen.rows}
        for ident in ("pane.jump", "send.text", "send.key", "send.passthrough", "send.broadcast", "poll.now",
                      "poll.idle", "needs.next", "fleet.filter", "pane.toggle_poll", "pane.toggle_plan",
                      "app.action_log", "pane.mark"):
            assert ident in ids, ident


async def test_dollar_lifts_the_selected_agents_budget_cap_through_its_servers_lease_and_logs_it(
    session: libtmux.Session, tmp_path: Path
) -> None:
    """``$`` (issue 37: the operator lifts a per-agent cap for one agent): the pane option the
    lease holder reads is set on that agent's pane only, and the lift is logged; on a shell the
    key says what to select and sets nothing."""
    idle = demo_agent(session, tmp_path, "idle", "spender")
    shell = pane_running(session, CAT, tmp_path / "shell.txt", "shell")
    app = make_app(session.server, tmp_path, poll_interval=3600.0)

    def lifted(pane_id: str) -> str:
        out = session.server.cmd("show-options", "-pqv", "-t", pane_id, "@nbs_budget_lift").stdout
        return out[0] if out else ""

    async with app.run_test(size=SIZE) as pilot:
        await wait_for(
            pilot, lambda: (s := app.state.statuses.get(idle)) is not None and s.state is AgentState.IDLE, timeout=30, what="the agent"
        )
        await wait_for(pilot, lambda: app.runtime.lease_of("") is not None, what="the server's lease")
        await select(app, pilot, shell)
        await pilot.press("$")
        await pilot.pause(0.2)
        assert lifted(shell) == "" and not any(r.action == "budget lift" for r in records(app))
        await select(app, pilot, idle)
        await pilot.press("$")
        await wait_for(pilot, lambda: any(r.action == "budget lift" for r in records(app)), what="the lift logged")
        (record,) = [r for r in records(app) if r.action == "budget lift"]
        assert (record.pane_id, record.outcome) == (idle, Outcome.SENT)
        assert lifted(idle) == "dashboard" and lifted(shell) == ""
