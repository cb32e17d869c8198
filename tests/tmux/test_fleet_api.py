"""``nbs-tui agents`` and ``nbs-tui read`` (the fleet API's read side) as a script runs them:
a process against a private tmux server, its exit code, its stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import libtmux
import pytest
from libtmux.test.retry import retry_until

from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.fleet_api.exit_codes import ExitCode
from nbs_tui.fleet_api.agent_listing import read_menus
from nbs_tui.tmux.commands import TmuxServerCommands
from tests.tmux.test_lease_headless import agent

REPO = Path(__file__).resolve().parents[2]


def nbs(server: libtmux.Server, tmp: Path, *argv: str, service: str = "auto") -> subprocess.CompletedProcess[str]:
    home = tmp / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "NBS_"))}
    env.update(
        HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_STATE_HOME=str(home / ".state"),
        NBS_POLL_DISABLE="1", NBS_SERVICE=service,
    )  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "nbs_tui", *argv, "-L", str(server.socket_name)],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=90, check=False,
    )  # fmt: skip


@pytest.fixture
def fleet(session: libtmux.Session, server: libtmux.Server, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Two fake agents (one idle, one at a permission prompt) and a plain shell; the service
    the commands start is stopped after the test."""
    idle, _ = agent(session, tmp_path, "alpha", "idle")
    asking, _ = agent(session, tmp_path, "beta", "permission")
    yield idle, asking
    nbs(server, tmp_path, "service", "stop")


@pytest.mark.service_auto
def test_agents_starts_the_service_and_lists_each_agent_from_its_published_state(
    fleet: tuple[str, str], server: libtmux.Server, tmp_path: Path
) -> None:
    idle, asking = fleet
    assert nbs(server, tmp_path, "service", "status").returncode != 0  # no service yet
    done = nbs(server, tmp_path, "agents", "--json")
    assert done.returncode == ExitCode.DONE, done.stderr
    assert nbs(server, tmp_path, "service", "status").returncode == 0  # the command started it

    def listed() -> dict[str, dict[str, object]]:
        run = nbs(server, tmp_path, "agents", "--json")
        assert run.returncode == 0, run.stderr
        return {a["window_name"]: a for a in json.loads(run.stdout)["agents"]}

    assert retry_until(lambda: {"alpha", "beta"} <= listed().keys(), 20, raises=False), done.stdout
    agents = listed()
    assert set(agents) == {"alpha", "beta"}  # the session's first window is a shell: not an agent
    alpha, beta = agents["alpha"], agents["beta"]
    key = f"L-{server.socket_name}"
    assert alpha["target"] == f"local/{key}/{idle}" and alpha["pane_id"] == idle
    assert alpha["state"] == "idle" and alpha["needs"] is None and isinstance(alpha["since"], int)
    assert isinstance(alpha["quiet_seconds"], int) and str(alpha["address"]).endswith(".0")
    assert beta["pane_id"] == asking and beta["state"] == "permission" and beta["needs"] == "permission"
    assert beta["needs_line"] == "Bash command"  # the question's first line, from beta's screen alone

    table = nbs(server, tmp_path, "agents")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].startswith("TARGET") and len(lines) == 3
    assert any(f"local/{key}/{asking}" in line and line.endswith("Bash command") for line in lines)


def test_agents_reads_the_published_options_not_the_screens(server: libtmux.Server, session: libtmux.Session, tmp_path: Path) -> None:
    """With the service off, a plain pane the holder had published as a working NBS worker
    is listed as such: what tmux holds, not a detection of its screen (numbers)."""
    window = session.new_window(window_name="shell", window_shell="seq 1 200; exec cat", attach=False)
    pane = window.active_pane
    assert pane is not None and pane.pane_id is not None
    assert retry_until(lambda: "200" in pane.capture_pane(), 10, raises=False)
    server.cmd("set-option", "-p", "-t", pane.pane_id, "@nbs_state", "working")
    server.cmd("set-option", "-p", "-t", pane.pane_id, "@nbs_since", "1700000000")
    server.cmd("set-option", "-p", "-t", pane.pane_id, "@nbs_worker", "parser-7")
    done = nbs(server, tmp_path, "agents", "--json", service="off")
    assert done.returncode == 0, done.stderr
    (only,) = json.loads(done.stdout)["agents"]
    assert (only["pane_id"], only["state"], only["worker"], only["since"]) == (pane.pane_id, "working", "parser-7", 1700000000)
    assert nbs(server, tmp_path, "service", "status").returncode != 0  # "off" starts none
    by_worker = nbs(server, tmp_path, "read", "parser-7", "--json", service="off")
    assert by_worker.returncode == 0, by_worker.stderr
    assert json.loads(by_worker.stdout)["agent"]["pane_id"] == pane.pane_id
    screen = json.loads(by_worker.stdout)["text"]
    history = json.loads(nbs(server, tmp_path, "read", "parser-7", "--lines", "300", "--json", service="off").stdout)
    assert "\n50\n" in history["text"] and "\n50\n" not in screen  # the history above the screen too
    server.cmd("kill-server")
    gone = nbs(server, tmp_path, "agents", service="off")  # no server to ask: no agent to name
    assert gone.returncode == ExitCode.NO_SUCH_AGENT and gone.stdout == "" and "tmux on" in gone.stderr


@pytest.mark.service_auto
def test_read_prints_the_screen_with_its_state_and_refuses_bad_targets(
    fleet: tuple[str, str], server: libtmux.Server, session: libtmux.Session, tmp_path: Path
) -> None:
    idle, asking = fleet
    assert retry_until(lambda: nbs(server, tmp_path, "read", "alpha").returncode == 0, 20, raises=False)
    for target in ("alpha", idle, f"local/L-{server.socket_name}/{idle}", f"{session.session_name}:1.0"):
        done = nbs(server, tmp_path, "read", target, "--json")
        assert done.returncode == ExitCode.DONE, (target, done.stderr)
        out = json.loads(done.stdout)
        assert out["agent"]["pane_id"] == idle and out["state"] == "idle", target
        assert "Ready when you are." in out["text"]
    plain = nbs(server, tmp_path, "read", "beta")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.startswith(f"# local/L-{server.socket_name}/{asking}") and ": permission (" in plain.stdout
    assert "Do you want to proceed?" in plain.stdout

    missing = nbs(server, tmp_path, "read", "nobody")
    assert missing.returncode == ExitCode.NO_SUCH_AGENT and "no such agent: nobody" in missing.stderr
    assert missing.stdout == ""
    assert nbs(server, tmp_path, "read", "%999").returncode == ExitCode.NO_SUCH_AGENT
    bad = nbs(server, tmp_path, "read", "local/x/3")
    assert bad.returncode == ExitCode.BAD_INPUT and "not a tmux pane id" in bad.stderr
    assert nbs(server, tmp_path, "read", "alpha", "--lines", "-1").returncode == ExitCode.BAD_INPUT
    assert nbs(server, tmp_path, "read").returncode == ExitCode.BAD_INPUT  # no TARGET: a usage error

    # the same window name in two sessions: ambiguous, every candidate listed
    other = server.new_session(session_name="other", attach=False)
    twin, _ = agent(other, tmp_path, "alpha", "idle")
    assert retry_until(lambda: nbs(server, tmp_path, "read", twin).returncode == 0, 20, raises=False)
    ambiguous = nbs(server, tmp_path, "read", "alpha")
    assert ambiguous.returncode == ExitCode.BAD_INPUT
    assert idle in ambiguous.stderr and twin in ambiguous.stderr and "2 agents match" in ambiguous.stderr


def test_menus_are_read_in_one_batch_and_a_gone_pane_costs_only_its_own_screen(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path
) -> None:
    asking, _ = agent(session, tmp_path, "beta", "permission")
    commands = TmuxServerCommands.for_server(ServerAddress(socket_name=server.socket_name))

    def questions(pane_ids: list[str]) -> dict[str, str]:
        return {p: d.prompt.strip().splitlines()[0] if d.prompt.strip() else "" for p, d in read_menus(commands, pane_ids).items()}

    assert retry_until(lambda: questions([asking]) == {asking: "Bash command"}, 10, raises=False)
    before = commands.process_runs
    menus = read_menus(commands, [asking, asking])
    assert commands.process_runs == before + 1  # both screens in one tmux command line
    assert list(menus) == [asking] and [o.label for o in menus[asking].options][:1] == ["Yes"]
    assert questions(["%999", asking]) == {"%999": "", asking: "Bash command"}
