"""Several hosts in one dashboard (issue 12): a runtime per host behind qualified pane ids
(``hosta:%3``). Both hosts mirrored and steered from one app, each host's sidecar acting under its
own server's lease, and a host that is unreachable or dies never holding up the other."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import time
from pathlib import Path

import libtmux
from textual.pilot import Pilot
from textual.widgets import TextArea

from nbs_tui.app import NbsApp, create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.fleet_filter import FleetFilter
from nbs_tui.core.fleet.host_spec import HostSpec, HostState
from nbs_tui.core.sidecar.lease_rules import LEASE_OPTION
from nbs_tui.runtime.contract import RuntimeListener, RuntimeOptions
from nbs_tui.runtime.runtime import Runtime
from tests.app.helpers import wait_for as pilot_wait
from tests.app.test_actions import SIZE, records
from tests.headless_proc import Headless
from tests.remote.conftest import SshLab
from tests.remote.helpers import ProblemRecorder, new_session
from tests.tmux.fleet_helpers import wait_for
from tests.tmux.test_sidecar_runner import write_fake_claude

REPO = Path(__file__).resolve().parents[2]
CAT = "stty -echo; touch {out}.ready; cat > {out}; touch {out}.done; exec sleep 600"


def _cat(lab: SshLab, alias: str, out: Path) -> str:
    return new_session(lab.hosts[alias], "work", "sh -c " + shlex.quote(CAT.format(out=shlex.quote(str(out)))))


async def _choose(app: NbsApp, pilot: Pilot[int], pane: str) -> None:
    """Select ``pane`` and see the selection hold: a highlight still queued from an earlier fleet
    update (the hosts' lists arrive apart) would otherwise move it back before the send."""
    await pilot_wait(pilot, lambda: pane in app.state.pane_by_id, 30, f"{pane} listed")
    app.dashboard.fleet_list.focus()
    deadline = time.monotonic() + 15
    held = 0
    while held < 3:
        assert time.monotonic() < deadline, f"{pane} never stayed selected ({app.dashboard.selected_id})"
        if app.dashboard.selected_id != pane:
            app.dashboard.select_pane(pane)
            held = 0
        await pilot.pause(0.05)  # lets queued messages in (a pause for CPU idle may never come)
        held += app.dashboard.selected_id == pane


def _mirrored(app: NbsApp, pane: str) -> str:
    screen = app.fleet.screen(pane) if app.fleet is not None else None
    return "\n".join(screen.text_lines()) if screen is not None else ""


async def _send(app: NbsApp, pilot: Pilot[int], pane: str, text: str) -> None:
    await _choose(app, pilot, pane)
    await pilot.press("i")
    assert app.dashboard.send_bar.target == app.state.pane_by_id[pane].target  # the bar names the pane it sends to
    app.dashboard.send_bar.query_one(TextArea).load_text(text)  # a newline: pasted over that host's ssh
    await pilot.press("enter")
    await pilot.press("escape")  # the send bar stays open after a send


async def test_two_hosts_in_one_dashboard_mirrored_steered_and_filtered(ssh_lab: SshLab, tmp_path: Path) -> None:
    out_a, out_b = tmp_path / "a.txt", tmp_path / "b.txt"
    pane_a, pane_b = _cat(ssh_lab, "hosta", out_a), _cat(ssh_lab, "hostb", out_b)
    assert pane_a == pane_b  # two servers number their panes alike: only the host tells them apart
    settings = Settings(
        hosts=(HostSpec("hosta", "hosta", ssh_lab.ssh_options), HostSpec("hostb", "hostb", ssh_lab.ssh_options)),
        action_log=tmp_path / "state" / "actions.log",
        hook_spool=tmp_path / "state" / "hooks.jsonl",
        claude_home=tmp_path / "claude-home",
    )
    app = create_app(settings, control_plane=False)
    async with app.run_test(size=SIZE) as pilot:
        qa, qb = f"hosta:{pane_a}", f"hostb:{pane_b}"
        await pilot_wait(pilot, lambda: {qa, qb} <= set(app.state.pane_by_id), 30, "both hosts' panes listed")
        assert app.state.pane_by_id[qa].host == "hosta" and app.state.pane_by_id[qa].target.startswith("hosta:work:")
        await pilot_wait(pilot, lambda: {s.name: s.connected for s in app.dashboard.news.hosts.values()} == {"hosta": True, "hostb": True},
                         30, "both hosts connected")  # fmt: skip
        for alias, pane in (("hosta", qa), ("hostb", qb)):  # a jump attaches over that host's ssh
            argv = app.operator.attach_argv(app.state.pane_by_id[pane])
            assert argv[argv.index("-t") + 1] == alias and argv[-1].endswith(f"attach-session -t {pane_a}"), argv
        bar = str(app.dashboard.status_bar.render())
        assert "● hosta" in bar and "● hostb" in bar, bar
        for pane, out, text in ((qa, out_a, "to a\n"), (qb, out_b, "to b\n")):

            def ready(out: Path = out) -> bool:
                return Path(f"{out}.ready").exists()

            await pilot_wait(pilot, ready, what="cat ready")
            await _send(app, pilot, pane, text)
        await pilot_wait(pilot, lambda: len(records(app)) == 2, what="two sends logged")
        app.operator.broadcast([app.state.pane_by_id[qa], app.state.pane_by_id[qb]], text="both\n")  # across hosts
        await pilot_wait(pilot, lambda: len(records(app)) == 4, what="the broadcast logged")
        for alias, pane, out in (("hosta", pane_a, out_a), ("hostb", pane_b, out_b)):
            ssh_lab.hosts[alias].tmux("send-keys", "-t", pane, "C-d")

            def got_text(out: Path = out) -> bool:
                return out.read_text() != ""

            await pilot_wait(pilot, got_text, what=f"{alias} got its text {records(app)} {out_a.read_text()!r}")
        assert (out_a.read_text(), out_b.read_text()) == ("to a\nboth\n", "to b\nboth\n"), records(app)
        # each host's pane mirrored when selected: the same pane id, each its own screen
        shown = {alias: new_session(ssh_lab.hosts[alias], "shown", f"sh -c 'echo hello from {alias}; exec sleep 600'")
                 for alias in ("hosta", "hostb")}  # fmt: skip
        assert shown["hosta"] == shown["hostb"]
        for alias, pane in shown.items():
            await _choose(app, pilot, f"{alias}:{pane}")

            def mirrored(q: str = f"{alias}:{pane}", alias: str = alias) -> bool:
                return f"hello from {alias}" in _mirrored(app, q)

            await pilot_wait(pilot, mirrored, what=f"{alias}'s pane mirrored")
        # host: filter
        app.dashboard.fleet_list.set_filter(FleetFilter.parse("host:hostb"))
        await pilot.pause()
        rows = app.dashboard.fleet_list.row_keys
        assert rows[0] == "# host hostb"  # its header (grouped by host), hosta's hidden with its panes
        assert sorted(rows[1:]) == sorted([qb, f"hostb:{shown['hostb']}"])
        app.dashboard.fleet_list.set_filter(FleetFilter.parse(""))
        await pilot.pause()

        # hostb dies for good: it is marked offline with its last view; hosta still takes keys
        hostb_fleet = app.runtime.hosts.runtimes["hostb"][1].fleet if app.runtime.hosts else None
        master = getattr(getattr(hostb_fleet, "runner", None), "master_pid", lambda: None)()
        ssh_lab.hosts["hostb"].kill_sshd()
        if master is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(master, signal.SIGKILL)
        await pilot_wait(pilot, lambda: app.dashboard.news.hosts["hostb"].connected is False, 30, "hostb offline")
        assert qb in app.state.pane_by_id and app.dashboard.news.hosts["hosta"].connected is True
        assert "✖ hostb offline" in str(app.dashboard.status_bar.render())
        await pilot_wait(pilot, lambda: str(app.dashboard.fleet_list.get_cell(qb, "target")).endswith("✖"), what="hostb's rows marked")
        out_a2 = tmp_path / "a2.txt"
        pane_a2 = new_session(ssh_lab.hosts["hosta"], "more", "sh -c " + shlex.quote(CAT.format(out=shlex.quote(str(out_a2)))))
        await pilot_wait(pilot, lambda: Path(f"{out_a2}.ready").exists(), what="cat ready")
        await _send(app, pilot, f"hosta:{pane_a2}", "still here\n")
        await pilot_wait(pilot, lambda: len(records(app)) == 5, what="the send after hostb died logged")
        ssh_lab.hosts["hosta"].tmux("send-keys", "-t", pane_a2, "C-d")
        await pilot_wait(pilot, lambda: out_a2.read_text() == "still here\n", what=f"hosta still steered {records(app)[-1]} {out_a2.read_text()!r}")
        ssh_lab.hosts["hostb"].launch_sshd()  # for the lab's own teardown


def test_headless_on_two_hosts_and_a_dead_one_acts_on_both(ssh_lab: SshLab, tmp_path: Path) -> None:
    fake = write_fake_claude(tmp_path / "bin" / "claude")
    logs = {alias: tmp_path / f"{alias}.log" for alias in ("hosta", "hostb")}
    panes = {alias: new_session(ssh_lab.hosts[alias], "agents", f"{fake} idle {logs[alias]}", 120, 40) for alias in logs}
    config = tmp_path / "nbs-tui.toml"
    config.write_text(
        "".join(
            f'[[hosts]]\nname = "{alias}"\nssh = "{alias}"\nssh_options = ["-F", "{ssh_lab.config}"]\n\n'
            for alias in ("hosta", "hostb", "hostrefused")
        )
    )
    state = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    with Headless(["--config", str(config), "--poll-interval", "2"], env=state) as run:
        events = run.events
        for alias, pane in panes.items():
            qualified = f"{alias}:{pane}"

            def submitted(q: str = qualified) -> bool:
                return any(e.get("event") == "poll" and e.get("pane") == q and e.get("result") == "submitted" for e in events)

            wait_for(submitted, 45)
        assert events[0]["event"] == "start" and events[0]["hosts"] == ["hosta", "hostb", "hostrefused"], events[0]
        hosts = {e["host"]: e for e in events if e["event"] == "host"}
        assert hosts["hosta"]["connected"] is True and hosts["hostb"]["connected"] is True, hosts
        assert hosts["hosta"]["acting"] is True and hosts["hostb"]["acting"] is True, hosts
        assert hosts["hostrefused"]["connected"] is False, hosts
        assert "connection refused" in hosts["hostrefused"]["message"], hosts
        for alias in panes:  # each host's sidecar holds that host's own lease
            assert ssh_lab.hosts[alias].tmux("show-options", "-sqv", LEASE_OPTION).strip()
    assert run.returncode == 0, run.stderr
    for log in logs.values():
        assert "SUBMIT /nbs-poll" in log.read_text()
    for alias in panes:  # released on exit

        def released(alias: str = alias) -> bool:
            return not ssh_lab.hosts[alias].tmux("show-options", "-sqv", LEASE_OPTION).strip()

        wait_for(released)


def test_headless_on_this_machine_and_a_remote_host_keeps_local_ids(
    ssh_lab: SshLab, server: libtmux.Server, tmp_path: Path
) -> None:
    """``--host local --host hosta``: this machine's pane keeps its plain id (hooks and status
    files name it so), hosta's is qualified, and each server's own sidecar lease is held."""
    fake = write_fake_claude(tmp_path / "bin" / "claude")
    logs = {name: tmp_path / f"{name}.log" for name in ("local", "hosta")}
    local = server.cmd(
        "new-session", "-d", "-P", "-F", "#{pane_id}", "-s", "agents", "-x", "120", "-y", "40", f"{fake} idle {logs['local']}"
    ).stdout[0].strip()
    far = new_session(ssh_lab.hosts["hosta"], "agents", f"{fake} idle {logs['hosta']}", 120, 40)
    config = tmp_path / "nbs-tui.toml"
    # -L picks this machine's server; hosta names its own (the default one there)
    socket = ssh_lab.hosts["hosta"].tmux_tmpdir / f"tmux-{os.getuid()}" / "default"
    config.write_text(
        f'[[hosts]]\nname = "hosta"\nssh = "hosta"\nssh_options = ["-F", "{ssh_lab.config}"]\n'
        f'tmux_socket_path = "{socket}"\n'
    )
    args = ["--config", str(config), "-L", str(server.socket_name), "--host", "local", "--host", "hosta"]
    state = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    with Headless([*args, "--poll-interval", "2"], env=state) as run:
        events = run.events
        for pane in (local, f"hosta:{far}"):

            def submitted(q: str = pane) -> bool:
                return any(e.get("event") == "poll" and e.get("pane") == q and e.get("result") == "submitted" for e in events)

            wait_for(submitted, 45)
        hosts = {e["host"]: e for e in events if e["event"] == "host"}
        assert hosts["local"]["acting"] is True and hosts["hosta"]["acting"] is True, hosts
        assert server.cmd("show-options", "-sqv", LEASE_OPTION).stdout  # this machine's server's own lease
        assert ssh_lab.hosts["hosta"].tmux("show-options", "-sqv", LEASE_OPTION).strip()
    assert run.returncode == 0, run.stderr
    assert all("SUBMIT /nbs-poll" in log.read_text() for log in logs.values())


class _HostsRecorder(ProblemRecorder, RuntimeListener):
    """A runtime listener that keeps the fleets and every host's states."""

    def __init__(self) -> None:
        super().__init__()
        self.states: dict[str, HostState] = {}

    def claude_facts_changed(self, facts: object) -> None:
        pass

    def sidecar_event(self, event: object) -> None:
        pass

    def control_event(self, event: object) -> None:
        pass

    def hosts_changed(self, states: tuple[HostState, ...]) -> None:
        with self.lock:
            self.states = {s.name: s for s in states}


def test_a_host_that_hangs_while_connecting_holds_up_no_other(ssh_lab: SshLab, tmp_path: Path) -> None:
    """hostb's sshd is stopped (its port accepts, nothing answers: ssh waits for ConnectTimeout),
    yet hosta is listed and mirrored at once; hostb joins when its sshd runs again."""
    pane_a = new_session(ssh_lab.hosts["hosta"], "work", "sh -c 'echo on hosta; exec sleep 600'")
    pane_b = new_session(ssh_lab.hosts["hostb"], "work", "sh -c 'echo on hostb; exec sleep 600'")
    sshd_b = ssh_lab.hosts["hostb"].sshd
    assert sshd_b is not None
    os.kill(sshd_b.pid, signal.SIGSTOP)
    settings = Settings(
        hosts=(HostSpec("hosta", "hosta", ssh_lab.ssh_options), HostSpec("hostb", "hostb", ssh_lab.ssh_options)),
        action_log=tmp_path / "state" / "actions.log",
        hook_spool=tmp_path / "state" / "hooks.jsonl",
        claude_home=tmp_path / "claude-home",
    )
    recorder = _HostsRecorder()
    runtime = Runtime(settings, recorder, RuntimeOptions(control_plane=False, claude=False, sidecar=False))
    started = time.monotonic()
    try:
        runtime.start()
        assert time.monotonic() - started < 1.0  # start returns at once, whatever the hosts do

        def hosta_mirrored() -> bool:
            fleet = runtime.fleet
            screen = fleet.screen(f"hosta:{pane_a}") if fleet is not None else None
            return screen is not None and "on hosta" in "\n".join(screen.text_lines())

        def hosta_listed() -> bool:
            return any(p.pane_id == f"hosta:{pane_a}" for p in recorder.last_fleet)

        wait_for(hosta_listed, 8)  # well inside hostb's 10 s ConnectTimeout
        assert runtime.fleet is not None
        runtime.fleet.set_watched("test", [f"hosta:{pane_a}", f"hostb:{pane_b}"])
        wait_for(hosta_mirrored, 8)
        with recorder.lock:
            assert recorder.states["hosta"].connected is True and recorder.states["hostb"].connected is not True
        assert time.monotonic() - started < 9.0, "hosta waited for hostb"
    finally:
        os.kill(sshd_b.pid, signal.SIGCONT)

    def hostb_listed() -> bool:
        return any(p.pane_id == f"hostb:{pane_b}" for p in recorder.last_fleet)

    try:
        wait_for(hostb_listed, 60)  # after its connect timed out and the backoff
        assert {p.host for p in recorder.last_fleet} == {"hosta", "hostb"}
    finally:
        runtime.stop()
