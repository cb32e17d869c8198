"""``nbs-tui restore``'s refusals and reasons on a real tmux server (no Claude Code needed: the
real restore of real agents is tests/realclaude/test_restore_e2e.py)."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

from nbs_tui.core.fleet.fleet_memory import (
    FleetMemory,
    RememberedAgent,
    RememberedPane,
    RememberedWindow,
    ServerInstance,
)
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.files.fleet_store import FleetStore
from tests.tmux.cli_process import run_nbs_tui

REPO = Path(__file__).resolve().parents[2]


def restore(tmp: Path, socket: str, *args: str) -> subprocess.CompletedProcess[str]:
    # a stand-in that answers --help as Claude Code 2.1.332 does (restore reads its flags there)
    fake = tmp / "claude-help"
    fake.write_text(f"#!/bin/sh\ncat {REPO / 'tests/corpus/claude/2.1.332/help.txt'}\n")
    fake.chmod(0o755)
    return run_nbs_tui(tmp, socket, "restore", *args, config=f'claude_command = "{fake}"\nrestore_stagger = 0.1\n')


def remembered(tmp: Path, socket: str) -> None:
    config = tmp / "claude-config"
    (config / "projects" / "-x").mkdir(parents=True)
    (config / "projects" / "-x" / "s-kept.jsonl").write_text("{}\n")
    panes = (
        RememberedPane(0, str(tmp), "%1", RememberedAgent("kept", "s-kept", config_dir=str(config))),
        RememberedPane(1, str(tmp / "gone"), "%2", RememberedAgent("homeless", "s-2", config_dir=str(config))),
    )
    window = RememberedWindow("crew", 3, "api", "", panes)
    lost = RememberedWindow("crew", 4, "db", "", (RememberedPane(0, str(tmp), "%3", RememberedAgent("forgetful", "s-lost", config_dir=str(config))),))
    memory = FleetMemory("local", ServerAddress(socket_name=socket), ServerInstance(1, 1), (window, lost))
    store = FleetStore.for_server("local", ServerAddress(socket_name=socket), tmp / "state" / "nbs-tui")
    assert store.update(memory)


def test_nothing_remembered_is_said_and_no_server_started(tmp_path: Path) -> None:
    socket = f"nbs-restore-{uuid.uuid4().hex[:8]}"
    done = restore(tmp_path, socket)
    assert done.returncode == 1 and f"no remembered fleet for tmux server -L {socket}" in done.stderr, done.stderr
    assert subprocess.run(["tmux", "-L", socket, "has-session"], capture_output=True, check=False).returncode != 0


def test_the_plan_says_why_each_agent_is_left_out_and_an_unknown_name_is_refused(tmp_path: Path) -> None:
    socket = f"nbs-restore-{uuid.uuid4().hex[:8]}"
    remembered(tmp_path, socket)
    dry = restore(tmp_path, socket, "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)
    reasons = {item["name"]: item["reason"] for item in plan["not_restored"]}
    assert reasons["homeless"] == f"its folder {tmp_path / 'gone'} is gone"
    assert reasons["forgetful"].startswith("its conversation s-lost is gone")
    assert len(plan["windows"]) == 1, plan
    (window,) = plan["windows"]
    assert window["panes"][0]["argv"][:3] == [str(tmp_path / "claude-help"), "--resume", "s-kept"]
    unknown = restore(tmp_path, socket, "nobody")
    assert unknown.returncode == 4 and "no remembered agent or window named 'nobody'" in unknown.stderr
    assert subprocess.run(["tmux", "-L", socket, "has-session"], capture_output=True, check=False).returncode != 0
