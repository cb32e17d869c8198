"""A fleet on a host reached through ssh mirrors its panes exactly as a local fleet does, types
byte-exact, survives the connection being killed, and says in one line why a host is unusable."""

from __future__ import annotations

import os
import shlex
import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest

from nbs_tui.tmux.port import TmuxUnavailable
from nbs_tui.tmux.ssh import SshHost, SshTmuxRunner, local_tmux_version
from tests.remote.conftest import SshLab
from tests.remote.helpers import (
    capture_screen,
    mirror_text,
    new_session,
    remote_fleet,
)
from tests.tmux.fleet_helpers import cell_differences, wait_for
from tests.tmux.test_fleet import TRICKY
from tests.tmux.test_mirror import PAINT


def test_a_fleet_on_each_host_mirrors_that_hosts_panes_cell_for_cell(ssh_lab: SshLab, tmp_path: Path) -> None:
    a, b = ssh_lab.hosts["hosta"], ssh_lab.hosts["hostb"]
    script = tmp_path / "paint.py"
    script.write_text(PAINT)
    go = tmp_path / "go"
    pane_a = new_session(a, "paint", f"{sys.executable} {script} {go}", 100, 30)
    pane_b = new_session(b, "other")
    b.tmux("send-keys", "-t", pane_b, "echo only-on-hostb", "Enter")
    with remote_fleet(ssh_lab, "hosta") as (fleet_a, rec_a), remote_fleet(ssh_lab, "hostb") as (fleet_b, _):
        assert fleet_a.wait_seeded(20) and fleet_b.wait_seeded(20)
        assert [p.session_name for p in fleet_a.panes()] == ["paint"]
        assert [p.session_name for p in fleet_b.panes()] == ["other"]
        assert rec_a.connections[0][0] is True
        go.touch()  # painted live, after the seed: the %output path, not the capture
        wait_for(lambda: any("absolute" in row for row in mirror_text(fleet_a, pane_a)))
        wait_for(lambda: not cell_differences(fleet_a.screen(pane_a), capture_screen(a, pane_a)))  # type: ignore[arg-type]
        wait_for(lambda: any(r.strip() == "only-on-hostb" for r in mirror_text(fleet_b, pane_b)))
        assert fleet_a.capture_text(pane_a).splitlines()[0].startswith("16: 01234567")
    with remote_fleet(ssh_lab, "hosta") as (fresh, _):  # and seeded from tmux's capture
        assert fresh.wait_seeded(20)
        screen = fresh.screen(pane_a)
        assert screen is not None
        assert not cell_differences(screen, capture_screen(a, pane_a))


@pytest.mark.parametrize("text", TRICKY)
def test_text_typed_into_a_remote_pane_arrives_byte_exact(ssh_lab: SshLab, tmp_path: Path, text: str) -> None:
    a = ssh_lab.hosts["hosta"]
    out = tmp_path / "typed.txt"
    pane = new_session(a, "typing", f"sh -c 'stty -echoctl; exec cat > {shlex.quote(str(out))}'", 120, 30)
    with remote_fleet(ssh_lab, "hosta") as (fleet, _):
        assert fleet.wait_seeded(20)
        wait_for(lambda: fleet.panes()[0].current_command == "cat")
        fleet.send_text(pane, text)
        fleet.send_keys(pane, "C-d")
        fleet.send_keys(pane, "C-d")
        wait_for(lambda: out.exists() and out.read_bytes() == text.encode())


WRITER = textwrap.dedent(
    r"""
    import os, sys, time
    report = sys.argv[1]
    worst, last, i = 0.0, time.monotonic(), 0
    while True:
        i += 1
        sys.stdout.write(f"tick {i}\n")
        sys.stdout.flush()  # blocks while tmux does not drain the pane: the freeze we measure
        now = time.monotonic()
        worst, last = max(worst, now - last), now
        if i % 10 == 0:
            with open(report + ".tmp", "w") as fh:
                fh.write(f"{i} {worst:.3f}")
            os.replace(report + ".tmp", report)
        time.sleep(0.01)
    """
)


def _ticks(fleet: object, pane: str) -> int:
    rows = [r for r in mirror_text(fleet, pane) if r.startswith("tick ")]  # type: ignore[arg-type]
    return int(rows[-1].split()[1]) if rows else 0


def _report(path: Path) -> tuple[int, float]:
    ticks, worst = path.read_text().split()[:2]
    return int(ticks), float(worst)


@pytest.mark.parametrize("victim", ["master", "client"])
def test_killed_ssh_disconnects_reconnects_and_reseeds_without_freezing_the_host(
    ssh_lab: SshLab, tmp_path: Path, victim: str
) -> None:
    a = ssh_lab.hosts["hosta"]
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    report = tmp_path / "pauses"
    pane = new_session(a, "busy", f"{sys.executable} {script} {report}")
    with remote_fleet(ssh_lab, "hosta") as (fleet, rec):
        assert fleet.wait_seeded(20)
        wait_for(lambda: _ticks(fleet, pane) > 20)
        runner = fleet.runner
        assert isinstance(runner, SshTmuxRunner)
        if victim == "master":
            pid = runner.master_pid()
            assert pid
        else:
            (pid,) = fleet.client_pids()  # the control client's own ssh (a mux client)
        os.kill(pid, signal.SIGKILL)
        killed_at = time.monotonic()
        wait_for(lambda: any(not up for up, _ in rec.connections))
        down = next(msg for up, msg in rec.connections if not up)
        assert down.startswith("hosta:"), down
        wait_for(lambda: rec.connections[-1][0] is True)
        reconnected = time.monotonic() - killed_at
        assert reconnected < 5.0, reconnected
        # Reseeded and live again: ticks written after the kill show in the mirror.
        after = _report(report)[0]
        wait_for(lambda: _ticks(fleet, pane) > after + 20)
        if victim == "master":
            assert runner.master_pid() not in (None, pid)
        # The writer was never blocked for long: no orphan froze the host's panes.
        start = _report(report)[0]
        wait_for(lambda: _report(report)[0] > start + 100)
        assert _report(report)[1] < 1.0, _report(report)
        # ours, attached again; nothing left over. A lingering orphan is reaped once sshd has
        # let it go (the fleet keeps trying for a minute); under load that took over 10 s once.
        wait_for(lambda: len(_remote_client_pids(a)) == 1, 30)
        print(f"reconnected in {reconnected:.2f}s, writer's longest pause {_report(report)[1]:.3f}s")


def _remote_client_pids(host: object) -> list[int]:
    """The host's control clients that get pane output (a fleet's ``no-output`` guard left out)."""
    out = host.tmux("list-clients", "-F", "#{client_pid} #{client_control_mode} #{client_flags}")  # type: ignore[attr-defined]
    return [int(f[0]) for f in (line.split() for line in out.splitlines()) if f[1] == "1" and "no-output" not in f[2]]


def test_an_orphaned_control_client_is_reaped_on_connect(ssh_lab: SshLab) -> None:
    a = ssh_lab.hosts["hosta"]
    new_session(a, "frozen")
    # A control client whose parent is gone (PID 1), as a dead ssh session leaves behind.
    a.tmux("run-shell", "-b", "sleep 600 | tmux -C attach -t frozen >/dev/null 2>&1 &")
    wait_for(lambda: len(_remote_client_pids(a)) == 1)
    (orphan,) = _remote_client_pids(a)
    wait_for(lambda: Path(f"/proc/{orphan}/stat").read_text().rsplit(")", 1)[1].split()[1] == "1")
    with remote_fleet(ssh_lab, "hosta") as (fleet, rec):
        assert fleet.wait_seeded(20)
        assert any(source == "ssh" and "stopped 1 orphaned" in msg for source, msg in rec.problems)
        wait_for(lambda: orphan not in _remote_client_pids(a))
        assert len(_remote_client_pids(a)) == 1  # ours
    assert isinstance(fleet.runner, SshTmuxRunner)
    assert fleet.runner.last_prepare is not None and fleet.runner.last_prepare.reaped == [orphan]


def _fake_tmux(path: Path, version: str) -> str:
    path.write_text(f"#!/bin/sh\n[ \"$1\" = -V ] && echo 'tmux {version}'\nexit 0\n")
    path.chmod(0o755)
    return str(path)


def test_a_host_that_cannot_be_used_says_why_in_one_line(ssh_lab: SshLab, tmp_path: Path) -> None:
    cases = {
        "hostunknown": (SshHost("hostunknown", "hostunknown", ssh_lab.ssh_options), "host key"),
        "hostnokey": (SshHost("hostnokey", "hostnokey", ssh_lab.ssh_options), "wants a password or a key"),
        "hostrefused": (SshHost("hostrefused", "hostrefused", ssh_lab.ssh_options), "connection refused"),
        "notmux": (SshHost("notmux", "hosta", ssh_lab.ssh_options, tmux="tmux-not-here"), "tmux is not installed"),
        "oldtmux": (
            SshHost("oldtmux", "hosta", ssh_lab.ssh_options, tmux=_fake_tmux(tmp_path / "tmux31", "3.1")),
            "tmux 3.1 on hosta is too old",
        ),
    }
    for name, (host, expected) in cases.items():
        runner = SshTmuxRunner(host)
        started = time.monotonic()
        try:
            with pytest.raises(TmuxUnavailable) as caught:
                runner.prepare()
        finally:
            runner.close()
        message = str(caught.value)
        assert message.startswith(f"{name}: ") and expected in message and "\n" not in message, message
        assert time.monotonic() - started < 10.0  # BatchMode: never waits for a prompt
    older = SshTmuxRunner(SshHost("older", "hosta", ssh_lab.ssh_options, tmux=_fake_tmux(tmp_path / "t32", "3.2")))
    try:
        notes = older.prepare()
    finally:
        older.close()
    local = local_tmux_version()
    assert local is not None
    if local > (3, 2):
        assert notes == [f"older: tmux 3.2 on hosta is older than this machine's {local[0]}.{local[1]}"]
    else:
        assert notes == []


def test_a_fleet_on_an_unusable_host_reports_it_and_backs_off(ssh_lab: SshLab) -> None:
    with remote_fleet(ssh_lab, "hostrefused", reconnect_interval=0.2) as (fleet, rec):
        wait_for(lambda: bool(rec.connections))
        assert rec.connections[0] == (False, "hostrefused: connection refused: no ssh server listening at hostrefused")
        assert fleet.runner.max_backoff is not None
        assert [fleet._supervisor.retry_delay(n) for n in (1, 2, 3, 4)] == [0.2, 0.4, 0.8, 1.6]


def test_stop_leaves_no_ssh_and_no_remote_client(ssh_lab: SshLab) -> None:
    a = ssh_lab.hosts["hosta"]
    new_session(a, "tidy")
    with remote_fleet(ssh_lab, "hosta") as (fleet, _):
        assert fleet.wait_seeded(20)
        runner = fleet.runner
        assert isinstance(runner, SshTmuxRunner)
        master = runner.master_pid()
        assert master and _remote_client_pids(a)
        control_dir = runner.control_dir
    wait_for(lambda: not _remote_client_pids(a))
    wait_for(lambda: not Path(f"/proc/{master}").exists())
    assert not Path(control_dir).exists()


FLOODER = textwrap.dedent(
    r"""
    import os, sys, time
    report, reset = sys.argv[1], sys.argv[2]
    line = ("x" * 2000 + "\n").encode()
    worst, last, i, was_reset = 0.0, time.monotonic(), 0, False
    while True:
        i += 1
        os.write(1, line)  # blocks while tmux does not drain the pane
        now = time.monotonic()
        worst, last = max(worst, now - last), now
        if not was_reset and os.path.exists(reset):
            worst, was_reset = 0.0, True
        if i % 20 == 0:
            with open(report + ".tmp", "w") as fh:
                fh.write(f"{i} {worst:.3f} {time.time():.3f}")
            os.replace(report + ".tmp", report)
        time.sleep(0.0005)
    """
)


def _written(pid: int) -> int:
    fields = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    return int(fields["wchar"])


def _stopped_writing(pid: int) -> bool:
    before = _written(pid)
    time.sleep(0.3)  # a sample window for the condition, not a wait for an event
    return _written(pid) == before


def test_a_connection_killed_while_stalled_leaves_no_frozen_pane(ssh_lab: SshLab, tmp_path: Path) -> None:
    """The hazard of the note: the reader stalls (tmux queues output), then the connection
    dies; the remote control client may be orphaned and hold the host's panes. The fleet
    reconnects, the old client is gone (reaped when orphaned), the pane writes freely again."""
    a = ssh_lab.hosts["hosta"]
    script = tmp_path / "flooder.py"
    script.write_text(FLOODER)
    report, reset = tmp_path / "pauses", tmp_path / "reset"
    new_session(a, "flood", f"{sys.executable} {script} {report} {reset}")
    with remote_fleet(ssh_lab, "hosta") as (fleet, rec):
        assert fleet.wait_seeded(20)
        assert isinstance(fleet.runner, SshTmuxRunner)
        pid = fleet.runner.master_pid()
        assert pid
        wait_for(lambda: report.exists())
        (remote_client,) = _remote_client_pids(a)
        # The connection stalls (the master ssh hands the stream straight to the control
        # client's pipe, so the master is what reads it): ssh and tmux buffers fill.
        os.kill(pid, signal.SIGSTOP)
        try:
            # until the remote control client can write no more to its ssh session
            wait_for(lambda: _stopped_writing(remote_client), 30)
        finally:
            os.kill(pid, signal.SIGKILL)
        wait_for(lambda: any(not up for up, _ in rec.connections))
        wait_for(lambda: rec.connections[-1][0] is True)
        # The old remote client is gone: it ended by itself, or it was orphaned and reaped.
        wait_for(lambda: not Path(f"/proc/{remote_client}").exists())
        start = _report(report)[0]
        wait_for(lambda: _report(report)[0] > start + 20, 10)  # it writes again
        reset.touch()
        wait_for(lambda: _report(report)[0] > start + 2000, 30)  # a couple of seconds of writing
        worst = _report(report)[1]
        if fleet.runner.reaped:  # (whether sshd left it orphaned is a race)
            assert fleet.runner.reaped == [remote_client]
            assert any("orphaned" in message for _, message in rec.problems)
        assert worst < 1.0, worst
        assert len(_remote_client_pids(a)) == 1


def test_agents_on_a_host_are_found_in_its_own_process_tree(ssh_lab: SshLab, tmp_path: Path) -> None:
    a = ssh_lab.hosts["hosta"]
    cli = tmp_path / "node_modules" / "@anthropic-ai" / "claude-code" / "cli.js"
    cli.parent.mkdir(parents=True)
    cli.write_text("import time\ntime.sleep(600)\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "claude").symlink_to("/bin/sleep")
    # Neither shows itself in its command or title: only the process tree tells.
    agent = new_session(a, "agent", f"sh -c '{sys.executable} {cli}; exit'")
    native = new_session(a, "native", f"sh -c '{bindir / 'claude'} 600; exit'")
    shell = new_session(a, "shell", "cat")
    with remote_fleet(ssh_lab, "hosta") as (fleet, _):
        assert fleet.wait_seeded(20)
        wait_for(lambda: {p.pane_id for p in fleet.panes() if p.is_agent} == {agent, native})
        assert shell in {p.pane_id for p in fleet.panes()}


def test_an_agent_a_wrapper_starts_later_on_a_host_is_found(ssh_lab: SshLab, tmp_path: Path) -> None:
    """A wrapper without job control (``sh -c``, a script) starts the agent after the fleet's
    first look at the pane: tmux's current command stays ``sh`` throughout (the wrapper leads the
    foreground group), so the host's "no agent" from that first look must not be kept for good
    (the remote half of test_fleet's test_an_agent_started_later_below_a_wrapper_is_found)."""
    a = ssh_lab.hosts["hosta"]
    gate = tmp_path / "go"
    agent = shlex.join([sys.executable, "-m", "nbs_tui.demo.agent", "--script", "idle", "--project", str(tmp_path)])
    inner = f"until [ -e {shlex.quote(str(gate))} ]; do sleep 0.05; done; {agent}; exec sleep 600"
    wrapped = new_session(a, "wrapped", f"sh -c {shlex.quote(inner)}")
    with remote_fleet(ssh_lab, "hosta") as (fleet, _):
        assert fleet.wait_seeded(20)
        [before] = [p for p in fleet.panes() if p.pane_id == wrapped]
        assert before.is_agent is False and before.current_command == "sh", before
        gate.touch()  # the wrapper now starts the agent below itself
        wait_for(lambda: a.tmux("display-message", "-p", "-t", wrapped, "#{pane_title}").startswith("\u2733"))
        wait_for(lambda: any(p.pane_id == wrapped and p.is_agent for p in fleet.panes()))
        [after] = [p for p in fleet.panes() if p.pane_id == wrapped]
        assert after.current_command == "sh", after


def test_agent_detection_script_works_without_ps(tmp_path: Path) -> None:
    """Minimal hosts have no ``ps``: the script then reads /proc itself (sed, tr, awk only)."""
    import shutil
    import subprocess

    from nbs_tui.tmux.host_scripts import AGENTS, parse_agents

    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("sh", "sed", "tr", "awk"):
        found = shutil.which(tool)
        assert found
        (bindir / tool).symlink_to(found)
    (tmp_path / "claude").symlink_to("/bin/sleep")
    agent = subprocess.Popen(["sh", "-c", f"{tmp_path / 'claude'} 30; exit"], start_new_session=True)
    other = subprocess.Popen(["sleep", "30"])
    try:
        children = Path(f"/proc/{agent.pid}/task/{agent.pid}/children")
        wait_for(lambda: any(Path(f"/proc/{k}/comm").read_text().strip() == "claude" for k in children.read_text().split()))
        script = AGENTS.format(pids=shlex.quote(f"{agent.pid} {other.pid} 999999999"))
        done = subprocess.run([str(bindir / "sh"), "-c", script], env={"PATH": str(bindir)},
                              capture_output=True, text=True, timeout=30, check=True)  # fmt: skip
        assert parse_agents(done.stdout) == {agent.pid: True, other.pid: False}, done.stdout
        assert "999999999 gone" in done.stdout
    finally:
        os.killpg(agent.pid, signal.SIGKILL)  # the shell and its "claude"
        other.kill()
        agent.wait()
        other.wait()
