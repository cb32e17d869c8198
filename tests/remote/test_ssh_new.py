"""``nbs-tui new --host`` through the ssh lab, with the real Claude Code CLI (issue 29, item 1):
the folder and Claude Code are checked on the host, the window is made on the host's own tmux
server, its trust dialog answered and its prompt submitted once (still once a reply later), all
through the host's ssh connection. Claude Code's status files are in a folder only the host sees
(`Host.private_folder`), so the session id ``--json`` names was read there, not here. A host that cannot be reached, or a folder missing there, exits 4 and makes nothing."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from nbs_tui.core.fleet.fleet_memory import (
    FleetMemory,
    RememberedAgent,
    RememberedPane,
    RememberedWindow,
    ServerInstance,
)
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.review.agent_base import BASE_OPTION
from nbs_tui.files.fleet_store import FleetStore
from tests.realclaude.conftest import claude_binary, claude_fleet  # noqa: F401  (fixtures)
from tests.realclaude.harness import ClaudeFleet, Text
from tests.realclaude.new_world import REPO, NewAgentWorld, make_world, prompted_once, wait_until
from tests.realclaude.test_diff_e2e import repository
from tests.remote.conftest import SshLab

NBS_TUI = Path(sys.executable).with_name("nbs-tui")


def new_on(lab: SshLab, world: NewAgentWorld, *args: str) -> subprocess.CompletedProcess[str]:
    config = world.config.with_name("hosts.toml")
    config.write_text(
        world.config.read_text()
        + "".join(
            f'\n[[hosts]]\nname = "{alias}"\nssh = "{alias}"\nssh_options = ["-F", "{lab.config}"]\n'
            for alias in ("hosta", "hostrefused")
        )
    )
    return subprocess.run(
        [sys.executable, "-m", "nbs_tui", "--config", str(config), "new", *args],
        capture_output=True, text=True, timeout=150, env=world.env(), cwd=REPO, check=False,
    )  # fmt: skip


def test_new_on_a_host_starts_there_trusts_the_folder_and_submits_once(
    ssh_lab: SshLab, claude_fleet: ClaudeFleet, tmp_path: Path  # noqa: F811
) -> None:
    a = ssh_lab.hosts["hosta"]
    world = make_world(claude_fleet, tmp_path, "far", [Text("Done there."), Text("Nothing more.")])
    here = world.home / ".claude" / "sessions"
    there = a.private_folder(here)  # Claude Code's status files: seen on hosta only
    base = repository(world.workdir)
    done = new_on(ssh_lab, world, str(world.workdir), "--host", "hosta", "--name", "far", "--prompt", "build it there", "--json")
    assert done.returncode == 0, done.stderr
    line = json.loads(done.stdout)
    assert a.tmux("show-options", "-pqv", "-t", line["pane_id"], BASE_OPTION).strip() == f"{base} main"  # git run there
    assert line["name"] == "far" and line["target"].startswith("agents:")
    prompted_once(world, a.tmux, line["pane_id"], lambda p: p == "build it there")
    statuses = [json.loads(p.read_text()) for p in there.glob("*.json")]
    assert line["session_id"] in [s["sessionId"] for s in statuses]  # read on the host, over ssh
    assert list(here.iterdir()) == []  # a read made here would have found nothing
    assert a.tmux("list-windows", "-a", "-F", "#{window_name} #{pane_current_path}").split("\n")[0] == f"far {world.workdir}"


def test_an_unreachable_host_or_a_folder_missing_there_makes_nothing(
    ssh_lab: SshLab, claude_fleet: ClaudeFleet, tmp_path: Path  # noqa: F811
) -> None:
    a = ssh_lab.hosts["hosta"]
    world = make_world(claude_fleet, tmp_path, "far", [])
    refused = new_on(ssh_lab, world, str(world.workdir), "--host", "hostrefused", "--prompt", "x")
    assert refused.returncode == 4 and "--host hostrefused: " in refused.stderr and "connection refused" in refused.stderr
    missing = new_on(ssh_lab, world, str(tmp_path / "nowhere"), "--host", "hosta", "--prompt", "x")
    assert missing.returncode == 4, missing.stderr
    assert f"DIR {tmp_path / 'nowhere'} does not exist on hosta" in missing.stderr
    assert a.tmux("list-windows", "-a", check=False) == ""


def test_restore_on_a_host_runs_there_and_resumes_the_conversation(
    ssh_lab: SshLab, claude_fleet: ClaudeFleet, tmp_path: Path  # noqa: F811
) -> None:
    """The agent is started on hosta by ``new --host``; its fleet is remembered on hosta (written
    here as hosta's service would: same file system in the lab); hosta's tmux server is lost;
    ``restore --host hosta`` runs hosta's nbs-tui, which resumes the conversation there."""
    a = ssh_lab.hosts["hosta"]
    world = make_world(claude_fleet, tmp_path, "far", [])
    done = new_on(ssh_lab, world, str(world.workdir), "--host", "hosta", "--name", "far", "--prompt", "remember the word medlar")
    assert done.returncode == 0, done.stderr
    (pane,) = a.tmux("list-panes", "-a", "-F", "#{pane_id}").split()
    prompted_once(world, a.tmux, pane, lambda p: "medlar" in p)
    wait_until(lambda: bool(list((world.home / ".claude" / "sessions").glob("*.json"))), 20, "a status file")
    statuses = list((world.home / ".claude" / "sessions").glob("*.json"))
    session_id = json.loads(statuses[0].read_text())["sessionId"]
    far_state = tmp_path / "far-state"
    agent = RememberedAgent("far", session_id, config_dir=str(world.home / ".claude"))
    window = RememberedWindow("agents", 0, "far", "", (RememberedPane(0, str(world.workdir), "%0", agent),))
    store = FleetStore.for_server("local", ServerAddress(), far_state / "nbs-tui")
    assert store.update(FleetMemory("local", ServerAddress(), ServerInstance(1, 1), (window,)))
    a.tmux("kill-server", check=False)

    nbs_tui = f"XDG_STATE_HOME={shlex.quote(str(far_state))} {shlex.quote(str(NBS_TUI))} --config {shlex.quote(str(world.config))}"
    config = world.config.with_name("restore-hosts.toml")
    config.write_text(f'[[hosts]]\nname = "hosta"\nssh = "hosta"\nssh_options = ["-F", "{ssh_lab.config}"]\nnbs_tui = {json.dumps(nbs_tui)}\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "CLAUDE", "NBS_"))}
    env.update(XDG_STATE_HOME=str(tmp_path / "here-state"), NBS_SERVICE="off")
    restored = subprocess.run(
        [sys.executable, "-m", "nbs_tui", "--config", str(config), "restore", "--host", "hosta", "--json"],
        capture_output=True, text=True, timeout=200, env=env, cwd=REPO, check=False,
    )  # fmt: skip
    assert restored.returncode == 0, (restored.stdout, restored.stderr)
    (back,) = json.loads(restored.stdout)["restored"]
    assert back["name"] == "far" and back["session_id"] == session_id and back["stopped"] is None
    a.tmux("send-keys", "-t", back["pane_id"], "-l", "which word?")
    wait_until(lambda: "which word?" in a.tmux("capture-pane", "-p", "-t", back["pane_id"]), 10)
    a.tmux("send-keys", "-t", back["pane_id"], "Enter")
    wait_until(lambda: world.api.count_prompts("which word?") == 1, 30)
    asked = next(r.all_text() for r in world.api.main_requests() if r.last_user_text() == "which word?")
    assert "medlar" in asked


def test_restore_on_a_host_without_nbs_tui_set_says_so(ssh_lab: SshLab, claude_fleet: ClaudeFleet, tmp_path: Path) -> None:  # noqa: F811
    world = make_world(claude_fleet, tmp_path, "far", [])
    config = world.config.with_name("bare-hosts.toml")
    config.write_text(f'[[hosts]]\nname = "hosta"\nssh = "hosta"\nssh_options = ["-F", "{ssh_lab.config}"]\n')
    done = subprocess.run(
        [sys.executable, "-m", "nbs_tui", "--config", str(config), "restore", "--host", "hosta"],
        capture_output=True, text=True, timeout=60, cwd=REPO, check=False,
    )  # fmt: skip
    assert done.returncode == 4 and "set nbs_tui for it" in done.stderr, done.stderr


def test_new_on_a_host_reads_its_session_id_there_and_announces_the_worker_on_the_hosts_bus(
    ssh_lab: SshLab, claude_fleet: ClaudeFleet, tmp_path: Path  # noqa: F811
) -> None:
    """``new --host hosta --worker parser`` in a project with ``.nbs/events`` on hosta: ``--json``
    names the Claude Code session (the status file read there, through the ssh connection),
    ``worker-spawned`` lands in hosta's bus; hosta's own nbs-tui (a ``--headless`` run on hosta's
    server, as its service would be) announces ``worker-died`` there once the pane closes."""
    from tests.headless_proc import Headless

    a = ssh_lab.hosts["hosta"]
    world = make_world(claude_fleet, tmp_path, "far", [Text("Parsing."), Text("Still parsing.")])
    here = world.home / ".claude" / "sessions"
    there = a.private_folder(here)  # Claude Code's status files: seen on hosta only
    (world.workdir / ".nbs" / "workers").mkdir(parents=True)
    (world.workdir / ".nbs" / "workers" / "parser.md").write_text("parse the logs\n")
    events = world.workdir / ".nbs" / "events"
    events.mkdir()
    host_env = {k: v for k, v in a.env().items() if not k.startswith(("CLAUDE", "NBS_"))}
    host_env.update(XDG_STATE_HOME=str(tmp_path / "hosta-state"), XDG_CONFIG_HOME=str(tmp_path / "hosta-config"))
    # the host's server runs before its service watches it (started over ssh: in the host's mounts)
    assert ssh_lab.ssh("hosta", "tmux new-session -d -s keep").returncode == 0
    with Headless(["--config", str(world.config), "--poll-interval", "600"], env=host_env, prefix=a.enter()) as service:
        wait_until(lambda: any(e["event"] == "lease" and e.get("acting") for e in list(service.events)), 30, "hosta's service acts")
        done = new_on(ssh_lab, world, str(world.workdir), "--host", "hosta", "--worker", "parser", "--json")
        assert done.returncode == 0, done.stderr
        line = json.loads(done.stdout)
        prompted_once(world, a.tmux, line["pane_id"], lambda p: p == "parse the logs")
        statuses = [json.loads(p.read_text()) for p in there.glob("*.json")]
        assert line["session_id"] is not None and line["session_id"] in [s["sessionId"] for s in statuses]
        assert list(here.iterdir()) == []  # a read made here would have found nothing
        spawned = [p.read_text() for p in events.glob("*.event") if "worker-spawned" in p.name]
        assert len(spawned) == 1 and "source: parser" in spawned[0] and line["session_id"] in spawned[0]
        a.tmux("kill-window", "-t", line["pane_id"])
        wait_until(lambda: any("worker-died" in p.name for p in events.glob("*.event")), 30, "worker-died on hosta's bus")
    (died,) = [p.read_text() for p in events.glob("*.event") if "worker-died" in p.name]
    assert "source: parser" in died and "its tmux pane closed" in died


def test_new_on_a_host_starts_the_hosts_service_there_once_or_says_it_cannot(
    ssh_lab: SshLab, claude_fleet: ClaudeFleet, tmp_path: Path  # noqa: F811
) -> None:
    """``service = "auto"``: ``new --host hosta`` starts hosta's service with hosta's own nbs-tui
    (issue 36, item 4), a second ``new`` finds it running; a host with no ``nbs_tui`` set gets
    its agent and a line saying it is served only while a dashboard watches it."""
    from nbs_tui.runtime.service import _is_service

    world = make_world(claude_fleet, tmp_path, "far", [], trust=True)
    far_state = tmp_path / "far-state"
    nbs_tui = f"XDG_STATE_HOME={shlex.quote(str(far_state))} {shlex.quote(str(NBS_TUI))}"
    hosts = f'[[hosts]]\nname = "hosta"\nssh = "hosta"\nssh_options = ["-F", "{ssh_lab.config}"]\n'
    config, bare = world.config.with_name("served-hosts.toml"), world.config.with_name("bare-hosts.toml")
    config.write_text(world.config.read_text() + hosts + f"nbs_tui = {json.dumps(nbs_tui)}\n")
    bare.write_text(world.config.read_text() + hosts)
    env = {**world.env(), "NBS_SERVICE": "auto"}

    def new(config: Path, name: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "nbs_tui", "--config", str(config), "new", str(world.workdir), "--host", "hosta",
             "--name", name, "--prompt", f"hello {name}", "--json"],
            capture_output=True, text=True, timeout=150, env=env, cwd=REPO, check=False,
        )  # fmt: skip

    pid_file = far_state / "nbs-tui" / "service-default.pid"
    try:
        first = new(bare, "bare")
        assert first.returncode == 0, first.stderr
        assert "no nbs_tui set for it in [[hosts]]" in first.stderr and "served only while a dashboard" in first.stderr
        assert not pid_file.exists()
        done = new(config, "one")
        assert done.returncode == 0, done.stderr
        json.loads(done.stdout)  # stdout stays one JSON document; the service is said on stderr
        assert "nbs-tui: on hosta: service started for the default tmux server" in done.stderr, done.stderr
        pid = int(pid_file.read_text())
        assert _is_service(pid)
        again = new(config, "two")
        assert again.returncode == 0 and "service started" not in again.stderr, again.stderr
        assert int(pid_file.read_text()) == pid
    finally:
        if pid_file.exists() and _is_service(started := int(pid_file.read_text())):
            os.kill(started, 15)
            wait_until(lambda: not _is_service(started), 20, "hosta's service stopped")
