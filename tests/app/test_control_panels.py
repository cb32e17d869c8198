"""Pilot tests of the control widgets over a real ControlPlane on a temporary project."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Button, Input

from nbs_tui.config import Settings
from nbs_tui.core.control.chat import render_chat
from nbs_tui.core.control.control_commands import Outcome
from nbs_tui.files.chat_io import post_message, read_chat
from nbs_tui.files.control_plane import ControlPlane
from nbs_tui.widgets.chat_editor import ChatEditor
from nbs_tui.widgets.chat_view import ChatView
from nbs_tui.widgets.control_view import ControlView
from tests.app.helpers import wait_for
from tests.helpers import b64, write_chat
from tests.unprivileged import PRELOAD_UI

WAIT = 10.0
"""Seconds a wait here may take before the test fails."""


class ControlApp(App[None]):
    """Test-only app: the Control view over a real plane, as the real app mounts it."""

    def __init__(self, project: Path) -> None:
        super().__init__()
        self.view = ControlView(id="control-view")
        self.plane = ControlPlane(Settings(projects=(project,)), self.view.plane_listener, rescan_interval=30.0)
        self.view.attach(self.plane)

    def compose(self) -> ComposeResult:
        yield self.view

    def on_mount(self) -> None:
        self.plane.start()

    def on_unmount(self) -> None:
        self.plane.stop()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    write_chat(root / ".nbs" / "chat" / "team.chat", [b64("alice|1700000000: hello from alice")])
    (root / ".nbs" / "chat" / "team.chat.cursors").write_text("# cursors\nbob=-1\n")
    return root


def registry_paths(app: ControlApp) -> list[str]:
    snapshot = app.view.registry_panel.snapshot
    return [e.path for p in snapshot.projects for c in p.channels for e in c.entries]


async def test_line_appended_by_another_process_appears_in_the_panels(project: Path) -> None:
    app = ControlApp(project)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for(pilot, lambda: ".nbs/chat/team.chat" in registry_paths(app), WAIT, "seeded registry")
        write_chat(project / ".nbs" / "chat" / "ops.chat", [])
        inbox = project / ".nbs" / "control-inbox"
        subprocess.run(
            ["sh", "-c", f"printf '# from an agent\\nregister-chat .nbs/chat/ops.chat\\nbogus-verb x\\n' >> '{inbox}'"],
            check=True,
        )
        panel = app.view.inbox_panel
        await wait_for(pilot, lambda: panel.row_count == 3, WAIT, "three history rows")
        lines = [entry.line for entry in panel.entries]
        assert lines == ["# from an agent", "register-chat .nbs/chat/ops.chat", "bogus-verb x"]
        assert [entry.outcome for entry in panel.entries] == [Outcome.COMMENT, Outcome.APPLIED, Outcome.ERROR]
        row = panel.get_row_at(1)
        assert str(row[3]) == "applied" and "register-chat .nbs/chat/ops.chat" in str(row[4])
        await wait_for(pilot, lambda: ".nbs/chat/ops.chat" in registry_paths(app), WAIT, "registry panel entry")
        # the error-only filter
        panel.focus()
        await pilot.press("e")
        assert panel.row_count == 1


async def test_chat_view_shows_messages_and_unread(project: Path) -> None:
    app = ControlApp(project)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for(pilot, lambda: registry_paths(app), WAIT, "registry")
        registry = app.view.registry_panel
        registry.focus()
        chat_index = next(
            i for i in range(registry.option_count) if (registry.get_option_at_index(i).id or "").startswith("chat\t")
        )
        registry.highlighted = chat_index
        chat = app.view.chat_view
        await wait_for(pilot, lambda: chat.chat is not None, WAIT, "chat loaded")
        assert chat.chat is not None and [m.text for m in chat.chat.messages] == ["hello from alice"]
        assert "bob 1 unread" in (chat.border_subtitle or "")
        # a new message by another writer reaches the view
        write_chat(
            project / ".nbs" / "chat" / "team.chat",
            [b64("alice|1700000000: hello from alice"), b64("carol|1700000500: second")],
        )
        await wait_for(pilot, lambda: chat.chat is not None and len(chat.chat.messages) == 2, WAIT, "new message shown")
        # pause toggle from the registry panel
        await pilot.press("p")
        await wait_for(pilot, lambda: (project / ".nbs" / "control-pause").exists(), WAIT, "pause file")
        await wait_for(pilot, lambda: registry.snapshot.projects[0].paused, WAIT, "paused shown")


def log_texts(view: ChatView) -> list[str]:
    return [strip.text.rstrip() for strip in view.lines]


async def test_chat_view_appends_posts_and_redraws_an_archive_split(project: Path) -> None:
    team = project / ".nbs" / "chat" / "team.chat"
    app = ControlApp(project)
    async with app.run_test(size=(160, 50)) as pilot:
        chat = app.view.chat_view
        chat.show_chat(str(team))
        await wait_for(pilot, lambda: chat.chat is not None and chat.chat.total == 1, WAIT, "chat loaded")
        first = chat.lines[0]
        posted = []
        for burst in ([0], [1], [2, 3, 4], [5]):  # one at a time, and several between two reads
            for n in burst:
                await asyncio.to_thread(post_message, team, "carol", f"post {n}")
                posted.append(f"carol: post {n}")
            await wait_for(pilot, lambda: any(t.endswith(posted[-1]) for t in log_texts(chat)), WAIT, posted[-1])
        await wait_for(pilot, lambda: (chat.border_subtitle or "").startswith("7 messages"), WAIT, "count")
        texts = log_texts(chat)
        assert [t.split(" ", 2)[2] for t in texts] == ["alice: hello from alice", *posted]  # each once, in order
        assert chat.lines[0] is first  # appended: what was shown is not drawn again
        assert chat.border_subtitle == "7 messages  bob 7 unread"
        assert chat.chat is not None and [m.index for m in chat.chat.messages] == list(range(7))

        # NBS archives: the chat is replaced by its newer half (the older one goes to an archive)
        messages = read_chat(team).messages
        split = team.with_name("team.chat.tmp")
        split.write_bytes(render_chat([(m.handle, m.timestamp, m.text) for m in messages[3:]], "carol", time.time()))
        os.replace(split, team)
        await wait_for(pilot, lambda: (chat.border_subtitle or "").startswith("4 messages"), WAIT, "split shown")
        assert chat.border_subtitle == "4 messages  bob 4 unread"
        assert [t.split(" ", 2)[2] for t in log_texts(chat)] == posted[2:]
        assert chat.lines[0] is not first
        await asyncio.to_thread(post_message, team, "alice", "after the split")
        await wait_for(pilot, lambda: log_texts(chat)[-1].endswith("alice: after the split"), WAIT, "post after split")
        assert [t.split(" ", 2)[2] for t in log_texts(chat)] == [*posted[2:], "alice: after the split"]
        assert chat.border_subtitle == "5 messages  bob 5 unread"


async def test_chat_editor_edits_reach_the_files(project: Path) -> None:
    app = ControlApp(project)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for(pilot, lambda: registry_paths(app), WAIT, "registry")
        app.view.registry_panel.focus()
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ChatEditor), WAIT, "editor open")
        editor = app.screen
        assert isinstance(editor, ChatEditor)
        path_input = editor.query_one("#editor-path", Input)

        # create a new chat (it is registered through the inbox)
        path_input.value = ".nbs/chat/new room.chat"
        await pilot.pause()
        await pilot.click("#editor-create")
        inbox = project / ".nbs" / "control-inbox"
        await wait_for(pilot, lambda: inbox.exists() and "register-chat .nbs/chat/new room.chat" in inbox.read_text(), WAIT, "inbox line")
        assert read_chat(project / ".nbs" / "chat" / "new room.chat").consistent
        await wait_for(pilot, lambda: ".nbs/chat/new room.chat" in registry_paths(app), WAIT, "registered")

        # a bad path is refused before anything is written
        path_input.value = ".nbs/chat/nothing-here.txt"
        await pilot.pause()
        editor.query_one("#editor-register", Button).press()
        status = editor.query_one("#editor-status")
        await wait_for(pilot, lambda: "no such file" in str(status.render()), WAIT, "refusal shown")
        assert inbox.read_text().count("\n") == 1

        # post a message as the operator
        path_input.value = ".nbs/chat/team.chat"
        editor.query_one("#editor-message", Input).value = "hello from the dashboard"
        await pilot.pause()
        editor.query_one("#editor-post", Button).press()
        team = project / ".nbs" / "chat" / "team.chat"
        await wait_for(pilot, lambda: len(read_chat(team).messages) == 2, WAIT, "message posted")
        last = read_chat(team).messages[-1]
        assert (last.handle, last.text, last.form) == ("operator", "hello from the dashboard", "current")
        assert (project / ".nbs" / "chat" / "team.chat.cursors").read_text() == "# cursors\nbob=-1\n"

        # unregister through the editor
        path_input.value = ".nbs/chat/new room.chat"
        await pilot.pause()
        editor.query_one("#editor-unregister", Button).press()
        await wait_for(pilot, lambda: "unregister-chat .nbs/chat/new room.chat" in inbox.read_text(), WAIT, "unregister line")
        await wait_for(pilot, lambda: ".nbs/chat/new room.chat" not in registry_paths(app), WAIT, "unregistered")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ChatEditor), WAIT, "editor closed")
        sources = [e.source for e in app.view.inbox_panel.entries]
        assert sources == ["control-inbox:1 (nbs-tui)", "control-inbox:2 (nbs-tui)"]


async def test_register_an_offered_chat_from_the_panel(project: Path) -> None:
    app = ControlApp(project)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for(pilot, lambda: registry_paths(app), WAIT, "registry")
        write_chat(project / ".nbs" / "chat" / "later.chat", [])
        registry = app.view.registry_panel
        await wait_for(
            pilot,
            lambda: any((registry.get_option_at_index(i).id or "").startswith("unregistered\t") for i in range(registry.option_count)),
            WAIT,
            "offered chat row",
        )
        registry.focus()
        registry.highlighted = next(
            i for i in range(registry.option_count) if (registry.get_option_at_index(i).id or "").startswith("unregistered\t")
        )
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ChatEditor), WAIT, "editor open")
        editor = app.screen
        assert isinstance(editor, ChatEditor)
        assert editor.query_one("#editor-path", Input).value == ".nbs/chat/later.chat"
        editor.query_one("#editor-register", Button).press()
        await wait_for(pilot, lambda: ".nbs/chat/later.chat" in registry_paths(app), WAIT, "registered from the panel")
        assert (project / ".nbs" / "control-inbox").read_text() == "register-chat .nbs/chat/later.chat\n"


async def test_editor_targets_a_per_agent_registry(project: Path) -> None:
    (project / ".nbs" / "control-inbox-alice").write_text("register-hub .nbs/alice-hub\n")
    app = ControlApp(project)
    async with app.run_test(size=(160, 50)) as pilot:
        registry = app.view.registry_panel

        def alice_row() -> int | None:
            for i in range(registry.option_count):
                parts = (registry.get_option_at_index(i).id or "").split("\t")
                if parts[0] == "hub" and parts[3] == "alice":
                    return i
            return None

        await wait_for(pilot, lambda: alice_row() is not None, WAIT, "alice's registry shown")
        registry.focus()
        registry.highlighted = alice_row()
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ChatEditor), WAIT, "editor open")
        editor = app.screen
        assert isinstance(editor, ChatEditor) and editor.channel == "alice"
        editor.query_one("#editor-path", Input).value = ".nbs/chat/alice-room.chat"
        await pilot.pause()
        editor.query_one("#editor-create", Button).press()
        alice_inbox = project / ".nbs" / "control-inbox-alice"
        await wait_for(pilot, lambda: "register-chat .nbs/chat/alice-room.chat" in alice_inbox.read_text(), WAIT, "alice's inbox")
        registry_file = project / ".nbs" / "control-registry-alice"
        await wait_for(pilot, lambda: "chat:.nbs/chat/alice-room.chat" in registry_file.read_text(), WAIT, "alice's registry")
        assert not (project / ".nbs" / "control-inbox").exists()


EDITOR_UNSAVED_SETUP = PRELOAD_UI + """
import asyncio
import os
import sys
from pathlib import Path
from textual.widgets import Button, Input
from nbs_tui.files.control_plane import NOT_SAVED
from nbs_tui.widgets.chat_editor import ChatEditor
from nbs_tui.widgets.chat_view import ChatView
from tests.app.helpers import wait_for
from tests.app.test_control_panels import ControlApp, registry_paths
from tests.helpers import write_chat
import watchfiles  # imported late by the plane's watcher: import it while the checkout is readable
import concurrent.futures.thread  # the loop's default executor (thread workers)
from textual.app import App


async def _warm() -> None:  # Textual imports more on first run: do it while /root is readable
    async with App().run_test() as pilot:
        await pilot.pause()


asyncio.run(_warm())
"""

EDITOR_UNSAVED_BODY = """
root = Path(sys.argv[1])
nbs = root / ".nbs"


async def main() -> None:
    app = ControlApp(root)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for(pilot, lambda: registry_paths(app), 10, "registry")
        nbs.chmod(0o555)  # the inbox takes the line, the folder not the new registry
        write_chat(nbs / "chat" / "late.chat")
        app.view.registry_panel.focus()
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ChatEditor), 10, "editor open")
        editor = app.screen
        editor.query_one("#editor-path", Input).value = ".nbs/chat/late.chat"
        await pilot.pause()
        editor.query_one("#editor-register", Button).press()
        status = editor.query_one("#editor-status")
        await wait_for(pilot, lambda: "appended to" in str(status.render()), 10, "the answer shown")
        shown = status.render()
        assert NOT_SAVED in str(shown) and "retried" in str(shown), shown
        styles = " ".join(str(span.style) for span in shown.spans)
        assert "yellow" in styles and "green" not in styles, styles  # a warning, not a green "done"
        nbs.chmod(0o755)
        await wait_for(pilot, lambda: ".nbs/chat/late.chat" in registry_paths(app), 10, "saved by the retry")


asyncio.run(main())
print("ok")
"""


def test_chat_editor_says_when_the_registry_is_not_saved_yet(tmp_path: Path) -> None:
    """The operator's register in a .nbs/ whose registry cannot be replaced (read-only for
    ``nobody``, whom the test drops to under root): the editor says not saved yet, not done."""
    from tests.unprivileged import give_away, reachable_dir, run_unprivileged

    with reachable_dir() as base:
        root = base / "proj"
        write_chat(root / ".nbs" / "chat" / "team.chat")
        (root / ".nbs" / "control-registry").write_text("chat:.nbs/chat/team.chat\n")
        (root / ".nbs" / "control-inbox").write_text("")
        give_away(base)
        result = run_unprivileged(EDITOR_UNSAVED_SETUP, EDITOR_UNSAVED_BODY, str(root))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("ok"), result.stdout
