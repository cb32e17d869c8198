"""The dashboard's runtime started before the app (nbs_tui/runtime/early.py, what the CLI does when
it watches another host): both hosts connect, list and seed with no app yet (the sidecars wait for
the app), and the app that takes the runtime shows what it heard before mounting, then stops it at
exit."""

from __future__ import annotations

from pathlib import Path

from nbs_tui.app import create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.host_spec import HostSpec
from nbs_tui.runtime.contract import RuntimeOptions
from nbs_tui.runtime.early import start_early
from nbs_tui.tmux import ssh
from nbs_tui.tmux.fleet import TmuxFleet
from nbs_tui.tmux.ssh import SshTmuxRunner
from tests.app.helpers import wait_for as pilot_wait
from tests.app.test_actions import SIZE
from tests.remote.conftest import SshLab
from tests.remote.helpers import new_session


async def test_an_app_takes_the_runtime_started_before_it_and_shows_what_it_heard(ssh_lab: SshLab, tmp_path: Path) -> None:
    panes = {
        alias: new_session(ssh_lab.hosts[alias], "work", f"sh -c 'echo early on {alias}; exec sleep 600'")
        for alias in ("hosta", "hostb")
    }
    settings = Settings(
        hosts=tuple(HostSpec(alias, alias, ssh_lab.ssh_options) for alias in ("hosta", "hostb")),
        action_log=tmp_path / "state" / "actions.log",
        hook_spool=tmp_path / "state" / "hooks.jsonl",
        claude_home=tmp_path / "claude-home",
    )
    early = start_early(settings)
    runtime = early.runtime
    try:
        assert early.failed is None and runtime.hosts is not None
        for _host, host_runtime in runtime.hosts.runtimes.values():  # no app yet: connected and seeded
            fleet = host_runtime.fleet
            assert isinstance(fleet, TmuxFleet)
            assert fleet.wait_seeded(30)
        assert early.news.held > 0  # the hosts' news, kept for the app
        assert not runtime.wait_started(0.5)  # seeded, yet the lease and sidecars wait for the app
        other = Settings(hosts=settings.hosts, action_log=settings.action_log, hook_spool=settings.hook_spool,
                         claude_home=settings.claude_home)  # fmt: skip
        assert not early.serves(other, RuntimeOptions())  # only for the very settings it was started with
        assert not early.serves(settings, RuntimeOptions(control_plane=False))  # nor for other backends
        assert create_app(other, early=early).runtime is not runtime
        app = create_app(settings, early=early)
        assert app.runtime is runtime
        assert not early.serves(settings, RuntimeOptions())  # taken once
        async with app.run_test(size=SIZE) as pilot:
            wanted = {f"{alias}:{pane}" for alias, pane in panes.items()}
            await pilot_wait(pilot, lambda: wanted <= set(app.state.pane_by_id), 30, "both hosts' panes listed")
            await pilot_wait(
                pilot, lambda: {s.name: s.connected for s in app.dashboard.news.hosts.values()} == {"hosta": True, "hostb": True},
                30, "both hosts connected",
            )  # fmt: skip
            assert early.news.held == 0
            await pilot_wait(pilot, lambda: runtime.wait_started(0), 30, "the sidecars started once the app mounted")
            app.dashboard.select_pane(f"hostb:{panes['hostb']}")
            fleet = app.fleet
            assert fleet is not None

            def mirrored() -> bool:
                screen = fleet.screen(f"hostb:{panes['hostb']}")
                return screen is not None and "early on hostb" in "\n".join(screen.text_lines())

            await pilot_wait(pilot, mirrored, 30, "hostb's pane mirrored")
            runners = [getattr(rt.fleet, "runner", None) for _h, rt in runtime.hosts.runtimes.values()]
            assert all(isinstance(r, SshTmuxRunner) and r.master_pid() is not None for r in runners)
        assert [r.master_pid() for r in runners if isinstance(r, SshTmuxRunner)] == [None, None]  # stopped with the app
    finally:
        runtime.stop()


def test_preconnect_starts_every_login_before_it_returns(ssh_lab: SshLab) -> None:
    """The CLI imports the dashboard right after `preconnect`: every master's ssh must be running
    by then, not left to threads that would wait for the GIL the import holds."""
    hosts = [HostSpec(alias, alias, ssh_lab.ssh_options) for alias in ("hosta", "hostb")]
    ssh.preconnect(hosts)
    runners = [ssh.runner_for(host) for host in hosts]
    try:
        for runner in runners:
            started = getattr(runner, "_spawned", None) or runner._starting or runner._master
            assert started is not None and started.poll() is None, f"{runner.host.name}: no ssh running yet"
        for runner in runners:
            runner.prepare()  # the login begun by preconnect, not a second one
            assert runner.master_pid() is not None
    finally:
        for runner in runners:
            runner.close()


def test_a_login_begun_and_never_waited_for_ends_with_close(ssh_lab: SshLab) -> None:
    runner = SshTmuxRunner(HostSpec("hosta", "hosta", ssh_lab.ssh_options))
    runner.begin_connect()
    spawned = runner._spawned
    assert spawned is not None and spawned.poll() is None
    runner.close()
    assert spawned.poll() is not None and runner._spawned is None
