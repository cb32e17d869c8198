"""``nbs-tui agents --host`` and ``read --host`` through the ssh lab: the host's own nbs-tui
lists its agents (its service, started there by that command; its status files, in a folder only
the host's agent names) and captures the screen; here they are named after the host."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from nbs_tui.core.fleet_api.exit_codes import ExitCode
from tests.remote.conftest import SshLab
from tests.remote.helpers import far_agent_at_a_prompt, far_nbs_tui, new_session
from tests.tmux.fleet_helpers import wait_for
from tests.tmux.test_sidecar_runner import write_fake_claude


@pytest.mark.service_auto
def test_agents_and_read_on_another_host(ssh_lab: SshLab, tmp_path: Path) -> None:
    a = ssh_lab.hosts["hosta"]
    pane = far_agent_at_a_prompt(a, tmp_path)  # its session and version are known only on hosta
    there = far_nbs_tui(ssh_lab, tmp_path)

    def nbs(*argv: str) -> subprocess.CompletedProcess[str]:
        return there.run(*argv)

    try:
        listed: list[dict[str, object]] = []

        def seen() -> bool:
            done = nbs("agents", "--json")
            assert done.returncode == 0, done.stderr
            listed[:] = json.loads(done.stdout)["agents"]
            return bool(listed)

        wait_for(seen, 45)
        (agent,) = listed
        assert agent["target"] == f"hosta/default/{pane}" and agent["host"] == "hosta"
        assert agent["state"] == "permission" and agent["needs_line"] == "Bash command"
        assert (agent["session_id"], agent["version"]) == ("s-far", "9.9.9")  # read on hosta
        read = nbs("read", f"hosta/default/{pane}", "--json")
        assert read.returncode == 0, read.stderr
        out = json.loads(read.stdout)
        assert out["state"] == "permission" and "Do you want to proceed?" in out["text"]
        assert out["agent"]["target"] == f"hosta/default/{pane}"
        missing = nbs("read", "hosta/default/%999")
        assert missing.returncode == ExitCode.NO_SUCH_AGENT and "no such agent" in missing.stderr
    finally:
        there.stop_service()


@pytest.mark.service_auto
def test_diff_on_another_host_is_that_hosts_git_named_as_here(ssh_lab: SshLab, tmp_path: Path) -> None:
    """Issue 38: ``diff --host``: the host's own nbs-tui runs git there and reads its hook spool;
    the agents it names (``by``) are named after the host here."""
    from nbs_tui.config import SPOOL_NAME
    from tests.files.test_git_changes import make_repo

    a = ssh_lab.hosts["hosta"]
    repo = tmp_path / "repo"
    make_repo(repo)
    fake = write_fake_claude(tmp_path / "bin" / "claude")
    pane = new_session(a, "agents", f"cd {shlex.quote(str(repo))} && exec {fake} idle {tmp_path / 'agent.log'}", 120, 40)
    (repo / "f.txt").write_text("a\nb\nc\nd\n")
    (repo / "bash.txt").write_text("by no hook\n")
    spool = tmp_path / "far-state" / "nbs-tui" / SPOOL_NAME
    spool.parent.mkdir(parents=True)
    socket = a.tmux("display-message", "-p", "#{socket_path}").strip()
    payload = {"hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_input": {"file_path": str(repo / "f.txt")}}
    spool.write_text(json.dumps({"nbs_pane": pane, "nbs_tmux": socket, "nbs_time": 1.0, "payload": payload}) + "\n")
    there = far_nbs_tui(ssh_lab, tmp_path)

    def nbs(*argv: str) -> subprocess.CompletedProcess[str]:
        return there.run(*argv)

    try:
        wait_for(lambda: f"hosta/default/{pane}" in nbs("agents").stdout, 45)
        done = nbs("diff", f"hosta/default/{pane}", "--json")
        assert done.returncode == 0, done.stderr
        document = json.loads(done.stdout)
        target = f"hosta/default/{pane}"
        assert document["target"] == target and document["repository"] == str(repo)
        assert {f["path"]: (f["added"], f["by"]) for f in document["files"]} == {"f.txt": (1, target), "bash.txt": (1, None)}
        stat = nbs("diff", target, "--stat")
        assert stat.returncode == 0 and "2 files changed, +2 -0" in stat.stdout, stat.stderr
    finally:
        there.stop_service()
