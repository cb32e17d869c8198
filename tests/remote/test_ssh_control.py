"""Another host's control plane in the dashboard: its files stay there, read by its own nbs-tui
over ssh (``nbs-tui serve-stdio``, `nbs_tui.runtime.remote_plane`). The lab's hosts share this
machine's file system, so the test checks the host's files on disk here."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from textual.widgets import Input

from nbs_tui.app import create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.host_spec import HostSpec
from nbs_tui.files.chat_io import create_chat, post_message
from nbs_tui.runtime.remote_plane import RemoteControlPlane
from nbs_tui.widgets.chat_editor import ChatEditor
from tests.app.helpers import wait_for as pilot_wait
from tests.app.test_actions import SIZE
from tests.remote.conftest import SshLab

NBS_TUI = Path(sys.executable).with_name("nbs-tui")
WAIT = 30.0


async def test_a_remote_hosts_project_shows_and_is_edited_on_that_host(ssh_lab: SshLab, tmp_path: Path) -> None:
    project = tmp_path / "far-project"
    (project / ".nbs" / "chat").mkdir(parents=True)
    create_chat(str(project / ".nbs" / "chat" / "team.chat"))
    create_chat(str(project / ".nbs" / "chat" / "ops.chat"))
    post_message(str(project / ".nbs" / "chat" / "team.chat"), "alice", "hello from hosta")
    registry = project / ".nbs" / "control-registry"
    registry.write_text("chat:.nbs/chat/team.chat\n")
    inbox = project / ".nbs" / "control-inbox"
    inbox.write_text("")
    ssh_lab.hosts["hosta"].tmux("new-session", "-d", "-s", "proj", "-c", str(project), "exec sleep 600")
    state = tmp_path / "far-state"
    command = f"XDG_STATE_HOME={shlex.quote(str(state))} {shlex.quote(str(NBS_TUI))}"  # a shell command, as configured
    settings = Settings(
        hosts=(HostSpec("hosta", "hosta", ssh_lab.ssh_options, nbs_tui=command), HostSpec("hostb", "hostb", ssh_lab.ssh_options, nbs_tui="/no/such/nbs-tui")),
        action_log=tmp_path / "state" / "actions.log",
        hook_spool=tmp_path / "state" / "hooks.jsonl",
        claude_home=tmp_path / "claude-home",
    )
    root = f"hosta:{project.resolve()}"
    app = create_app(settings, sidecar=False)
    async with app.run_test(size=SIZE) as pilot:
        app.dashboard.action_show_view("control")
        panel = app.control_view.registry_panel

        def paths() -> list[str]:
            found = panel.snapshot.project(root)
            return [e.path for c in found.channels for e in c.entries] if found else []

        await pilot_wait(pilot, lambda: paths() == [".nbs/chat/team.chat"], WAIT, f"hosta's registry shown {panel.snapshot}")
        # hostb has no nbs-tui where its setting says: its Control view says so in one line
        await pilot_wait(pilot, lambda: bool((n := panel.snapshot.project("hostb:")) and "nbs-tui is not installed" in n.error),
                         WAIT, f"hostb's line {panel.snapshot.project('hostb:')}")  # fmt: skip
        ids = [panel.get_option_at_index(i).id or "" for i in range(panel.option_count)]
        assert f"project\t{root}" in ids and "error\thostb:" in ids, ids

        # the chat view reads hosta's chat there, over the channel
        team = f"{root}/.nbs/chat/team.chat"
        chat_row = next(i for i, o in enumerate(ids) if o.startswith(f"chat\t{root}\t{team}\t"))
        panel.focus()
        panel.highlighted = chat_row
        view = app.control_view.chat_view
        await pilot_wait(pilot, lambda: view.path == team and view.chat is not None, WAIT, "hosta's chat read")
        assert view.chat is not None and [m.text for m in view.chat.messages] == ["hello from hosta"]

        # an append made on the host appears
        appended = ssh_lab.ssh("hosta", f"printf 'chat:.nbs/chat/more.chat\\n' >> {shlex.quote(str(registry))}")
        assert appended.returncode == 0, appended
        await pilot_wait(pilot, lambda: paths() == [".nbs/chat/team.chat", ".nbs/chat/more.chat"], WAIT, "the append shown")

        # the channel drops (its ssh killed): it is opened again and the host's news still arrive
        remote = app.runtime.hosts.runtimes["hosta"][1].control_plane if app.runtime.hosts else None
        assert isinstance(remote, RemoteControlPlane) and remote._proc is not None
        dropped = remote._proc
        dropped.kill()
        await pilot_wait(pilot, lambda: remote._proc is not None and remote._proc is not dropped, WAIT, "channel reopened")
        ssh_lab.ssh("hosta", f"printf 'chat:.nbs/chat/third.chat\n' >> {shlex.quote(str(registry))}")
        await pilot_wait(pilot, lambda: paths()[-1:] == [".nbs/chat/third.chat"], WAIT, "news after the reconnect")

        # the chat editor's edit lands in hosta's inbox (the host's service applies it, not us)
        panel.focus()
        panel.highlighted = ids.index(f"project\t{root}")
        await pilot.press("c")
        await pilot_wait(pilot, lambda: isinstance(app.screen, ChatEditor), WAIT, "editor open")
        editor = app.screen
        assert isinstance(editor, ChatEditor) and editor.project == root
        editor.query_one("#editor-path", Input).value = ".nbs/chat/ops.chat"
        await pilot.pause()
        await pilot.click("#editor-register")
        await pilot_wait(pilot, lambda: inbox.read_text() == "register-chat .nbs/chat/ops.chat\n", WAIT, "hosta's inbox line")
        status = editor.query_one("#editor-status")
        await pilot_wait(pilot, lambda: "appended to control-inbox" in str(status.render()), WAIT, f"done said {status.render()}")
        await pilot.press("escape")

        # pause from the panel: the host's pause file
        panel.focus()
        await pilot.press("p")
        await pilot_wait(pilot, lambda: (project / ".nbs" / "control-pause").exists(), WAIT, "hosta's pause file")
        await pilot_wait(pilot, lambda: bool((p := panel.snapshot.project(root)) and p.paused), WAIT, "paused shown")


async def test_one_remote_host_reads_its_projects_there_not_here(ssh_lab: SshLab, tmp_path: Path) -> None:
    """With a single --host the control plane is the host's too: it used to read the panes'
    folders on this machine (a local ControlPlane), and Claude Code's local files with them."""
    project = tmp_path / "far-project"
    (project / ".nbs" / "chat").mkdir(parents=True)
    (project / ".nbs" / "control-registry").write_text("chat:.nbs/chat/team.chat\n")
    (project / ".nbs" / "control-inbox").write_text("")
    ssh_lab.hosts["hosta"].tmux("new-session", "-d", "-s", "proj", "-c", str(project), "exec sleep 600")
    command = f"XDG_STATE_HOME={shlex.quote(str(tmp_path / 'far-state'))} {shlex.quote(str(NBS_TUI))}"
    settings = Settings(
        hosts=(HostSpec("hosta", "hosta", ssh_lab.ssh_options, nbs_tui=command),),
        action_log=tmp_path / "state" / "actions.log",
        hook_spool=tmp_path / "state" / "hooks.jsonl",
        claude_home=tmp_path / "claude-home",
    )
    root = f"hosta:{project.resolve()}"
    app = create_app(settings, sidecar=False)
    async with app.run_test(size=SIZE) as pilot:
        assert isinstance(app.runtime.control_plane, RemoteControlPlane)
        assert app.runtime.claude is None
        app.dashboard.action_show_view("control")
        panel = app.control_view.registry_panel

        def paths() -> list[str]:
            found = panel.snapshot.project(root)
            return [e.path for c in found.channels for e in c.entries] if found else []

        await pilot_wait(pilot, lambda: paths() == [".nbs/chat/team.chat"], WAIT, f"hosta's registry shown {panel.snapshot}")
        assert panel.snapshot.project(str(project.resolve())) is None  # not read here as a local project
