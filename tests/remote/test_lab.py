"""The ssh lab itself: both hosts answer with key login, each has its own tmux server."""

from __future__ import annotations

from tests.remote.conftest import SshLab


def test_hosts_answer_and_have_their_own_tmux_server(ssh_lab: SshLab) -> None:
    for alias in ("hosta", "hostb"):
        ssh_lab.hosts[alias].tmux("new-session", "-d", "-s", f"s-{alias}")
    for alias in ("hosta", "hostb"):
        done = ssh_lab.ssh(alias, "echo $HOME; command -v tmux; tmux list-sessions -F '#{session_name}'")
        assert done.returncode == 0, done.stderr
        home, tmux, *sessions = done.stdout.decode().split()
        assert home and tmux.endswith("tmux")
        assert sessions == [f"s-{alias}"]


def test_unknown_host_key_and_unaccepted_key_are_refused(ssh_lab: SshLab) -> None:
    unknown = ssh_lab.ssh("hostunknown", "true")
    assert unknown.returncode == 255 and b"Host key verification failed" in unknown.stderr
    nokey = ssh_lab.ssh("hostnokey", "true")
    assert nokey.returncode == 255 and b"Permission denied" in nokey.stderr
