"""The one problem route with several hosts (the ssh lab): a host that cannot be reached and
another host's control plane that cannot read a project's registry there each reach
``--headless``'s ``error`` lines, the dashboard's problems screen (``E``) and the log file, named
by their host and in the same words everywhere (a host's runtime hands its problems to the
dashboard's: `nbs_tui.runtime.contract.RuntimeOptions.problems`)."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from libtmux.test.retry import retry_until

from nbs_tui.app import create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.host_spec import HostSpec
from nbs_tui.housekeeping import logs
from nbs_tui.widgets.problems_screen import ProblemsScreen
from tests.app.helpers import wait_for as pilot_wait
from tests.headless_proc import Headless
from tests.remote.conftest import SshLab

NBS_TUI = Path(sys.executable).with_name("nbs-tui")
SIZE = (160, 48)


def far_project(lab: SshLab, tmp_path: Path) -> Path:
    """A project on hosta whose registry is a folder (unreadable, also for root), with a pane in it."""
    project = tmp_path / "far-project"
    (project / ".nbs" / "control-registry").mkdir(parents=True)
    lab.hosts["hosta"].tmux("new-session", "-d", "-s", "proj", "-c", str(project), "exec sleep 600")
    return project


def hosta_nbs_tui(tmp_path: Path) -> str:
    """hosta's nbs-tui, as the host's setting names it (a shell command there)."""
    return f"XDG_STATE_HOME={shlex.quote(str(tmp_path / 'far-state'))} {shlex.quote(str(NBS_TUI))}"


def expected(project: Path) -> list[tuple[str, str]]:
    return [
        ("tmux", "hostrefused: connection refused"),
        ("control plane", f"hosta: cannot read {project}/.nbs/control-registry: not a regular file"),
    ]


def errors(events: list[dict[str, Any]], source: str, needle: str) -> list[dict[str, Any]]:
    """The error lines from ``source`` (any: "") whose message holds ``needle``."""
    return [
        e for e in list(events)
        if e.get("event") == "error" and source in ("", e.get("source")) and needle in e["message"]
    ]  # fmt: skip


def test_headless_says_each_hosts_problem_in_an_error_line_and_the_log(ssh_lab: SshLab, tmp_path: Path) -> None:
    project = far_project(ssh_lab, tmp_path)
    config = tmp_path / "nbs-tui.toml"
    config.write_text(
        f'poll_disabled = true\nhook_spool = "{tmp_path / "hooks.jsonl"}"\n'
        f'action_log = "{tmp_path / "actions.log"}"\nclaude_home = "{tmp_path / "claude-home"}"\n\n'
        f'[[hosts]]\nname = "hosta"\nssh = "hosta"\nssh_options = ["-F", "{ssh_lab.config}"]\n'
        f"nbs_tui = {hosta_nbs_tui(tmp_path)!r}\n\n"
        f'[[hosts]]\nname = "hostrefused"\nssh = "hostrefused"\nssh_options = ["-F", "{ssh_lab.config}"]\n'
    )
    state = tmp_path / "xdg-state"
    env = {**os.environ, "XDG_STATE_HOME": str(state), "XDG_CONFIG_HOME": str(tmp_path / "xdg-config")}
    with Headless(["--config", str(config)], env=env) as run:
        for source, needle in expected(project):
            said = retry_until(lambda s=source, n=needle: bool(errors(run.events, s, n)), 45, raises=False)  # type: ignore[misc]
            assert said, (source, needle, [e for e in run.events if e.get("event") == "error"])
    assert run.returncode == 0, run.stderr
    log = (state / "nbs-tui" / "nbs-tui.log").read_text()
    for line in errors(run.events, "", ""):  # every one, the hosts' lease trouble too: the same words
        assert f"{line['source']}: {line['message']}" in log, (line, log)
        assert not line["message"].startswith(("hosta: hosta:", "hostrefused: hostrefused:")), line


@pytest.fixture
def log_file(tmp_path: Path) -> Iterator[Path]:
    path = logs.install(tmp_path / "xdg-state" / "nbs-tui" / "nbs-tui.log")
    yield path
    logs.uninstall()


async def test_the_dashboard_lists_each_hosts_problem_and_logs_it(ssh_lab: SshLab, tmp_path: Path, log_file: Path) -> None:
    project = far_project(ssh_lab, tmp_path)
    settings = Settings(
        hosts=(
            HostSpec("hosta", "hosta", ssh_lab.ssh_options, nbs_tui=hosta_nbs_tui(tmp_path)),
            HostSpec("hostrefused", "hostrefused", ssh_lab.ssh_options),
        ),
        poll_disabled=True, action_log=tmp_path / "actions.log", hook_spool=tmp_path / "hooks.jsonl",
        claude_home=tmp_path / "claude-home",
    )  # fmt: skip
    app = create_app(settings)
    async with app.run_test(size=SIZE) as pilot:
        for source, needle in expected(project):
            await pilot_wait(
                pilot, lambda s=source, n=needle: any(p.source == s and n in p.message for p in app.problems.entries()),  # type: ignore[misc]
                45, f"{source}: {needle}",
            )  # fmt: skip
        await pilot.press("E")
        screen = app.screen
        assert isinstance(screen, ProblemsScreen)
        listed = screen.text().splitlines()
        for source, needle in expected(project):
            assert any(line.startswith(f"{source}: ") and needle in line for line in listed), (source, needle, listed)
        shown = list(app.problems.entries())
    text = log_file.read_text()
    for problem in shown:
        assert f"{problem.source}: {problem.message}" in text, (problem, text)
