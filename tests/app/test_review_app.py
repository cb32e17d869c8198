"""The review screen's behaviour (Pilot, real tmux, real git; tests/app/test_snapshots_review.py's
fleet and worktree): a review link's dashboard (``--open-review TARGET --card-only``) shows that
review alone over a cover and quits when it closes; comments are refused, and kept, while the
agent works; merge and discard are asked first and refused while it works, each an action-log line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import libtmux
import pytest

from nbs_tui.app import NbsApp, create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.operator.action_log import ActionRecord, Outcome
from nbs_tui.widgets.card_cover import CardCover
from nbs_tui.widgets.confirm_screen import ConfirmScreen
from nbs_tui.widgets.review_screen import ReviewScreen
from tests.app.helpers import wait_for, widget_text
from tests.app.snapfleet import StableFleet, mirror_in_reviewed_worktree, start_snapshot_fleet
from tests.gitrepo import AgentRepo


@pytest.fixture
def repo(server: libtmux.Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[AgentRepo]:
    """The snapshot fleet, its first (working) agent in the reviewed worktree."""
    repo = mirror_in_reviewed_worktree(monkeypatch, tmp_path)
    start_snapshot_fleet(server)
    yield repo


def make_app(server: libtmux.Server, tmp_path: Path, **more: object) -> NbsApp:
    address = ServerAddress(socket_name=server.socket_name)
    settings = Settings(
        server=address, poll_disabled=True, plan_policy="off", bell=False, action_log=tmp_path / "actions.log",
        **more,  # type: ignore[arg-type]
    )  # fmt: skip
    return create_app(settings, lambda listener: StableFleet(address, listener), control_plane=False, claude=False)


def records(app: NbsApp) -> list[ActionRecord]:
    return [r for r in app.operator.action_log.tail() if isinstance(r, ActionRecord)]


def mirror_pane(server: libtmux.Server) -> str:
    window = next(w for s in server.sessions for w in s.windows if w.window_name == "mirror")
    assert window.active_pane is not None
    return str(window.active_pane.pane_id)


async def test_a_review_link_shows_that_review_alone_and_quits_when_it_closes(
    server: libtmux.Server, repo: AgentRepo, tmp_path: Path
) -> None:
    target = f"local/L-{server.socket_name}/{mirror_pane(server)}"
    app = make_app(server, tmp_path, open_review=target, card_only=True)
    async with app.run_test(size=(50, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen), timeout=20, what="the review")
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        await wait_for(pilot, lambda: screen.has_class("-narrow"), what="the phone's layout")
        assert [type(s) for s in app.screen_stack[1:]] == [CardCover, ReviewScreen]  # the fleet covered
        await wait_for(pilot, lambda: bool(screen.files), what="the files")
        assert [f.path for f in screen.files] == ["NOTES.md", "mirror.py", "test_mirror.py"]
        await pilot.press("v", "A", "1")  # no other agent's review, no card, no view
        assert app.screen is screen
        await pilot.press("X")  # discard, asked first: on a phone, buttons
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirmation")
        await pilot.click("#confirm-no")
        await wait_for(pilot, lambda: app.screen is screen, what="back to the review, nothing done")
        assert (repo.worktree / "test_mirror.py").exists()
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, CardCover), what="the review closed")
        assert "closed" in str(app.screen.query_one("#cover-text").render())
        await wait_for(pilot, lambda: not app.is_running, timeout=10, what="the dashboard quit")


async def test_while_the_agent_works_sending_merge_and_discard_are_refused_and_logged(
    server: libtmux.Server, repo: AgentRepo, tmp_path: Path
) -> None:
    app = make_app(server, tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        pane = mirror_pane(server)
        await wait_for(pilot, lambda: app.state.agent_states().get(pane) is not None, timeout=20, what="the agent's state")
        app.dashboard.select_pane(pane)
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen), what="the review")
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        await wait_for(pilot, lambda: "only the rows" in widget_text(screen.diff_view), what="NOTES.md's diff")
        await pilot.press("c", *"say why", "enter", "s")
        await wait_for(pilot, lambda: "not sent" in str(screen.said.render()), what="the refusal")
        assert "working" in str(screen.said.render())
        assert len(screen.comments) == 1  # kept for a later send
        head = repo.worktree.joinpath(".git").read_text()
        for key in ("M", "X"):
            await pilot.press(key)
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirmation")
            await pilot.press("y")
            await wait_for(pilot, lambda: "waits until the agent is idle" in str(screen.said.render()), what="refused")
            screen.said.update("")
        assert repo.worktree.joinpath(".git").read_text() == head and (repo.worktree / "test_mirror.py").exists()
        assert [(r.action, r.outcome) for r in records(app)] == [
            ("review-comments", Outcome.SKIPPED), ("merge", Outcome.SKIPPED), ("discard", Outcome.SKIPPED),
        ]  # fmt: skip


async def test_r_reads_the_changes_again_keeping_the_file_chosen(
    server: libtmux.Server, repo: AgentRepo, tmp_path: Path
) -> None:
    app = make_app(server, tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        pane = mirror_pane(server)
        await wait_for(pilot, lambda: any(p.pane_id == pane for p in app.state.panes), timeout=20, what="the fleet")
        app.dashboard.select_pane(pane)
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen), what="the review")
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        await wait_for(pilot, lambda: "only the rows" in widget_text(screen.diff_view), what="NOTES.md's diff")
        await pilot.press("right_square_bracket")
        await wait_for(pilot, lambda: "self.dirty" in widget_text(screen.diff_view), what="mirror.py's diff")
        (repo.worktree / "later.txt").write_text("one\n")  # the agent's next turn
        (repo.worktree / "mirror.py").write_text((repo.worktree / "mirror.py").read_text() + "# more\n")
        await pilot.press("r")
        await wait_for(pilot, lambda: "later.txt" in [f.path for f in screen.files], what="the new file listed")
        assert screen.current_path == "mirror.py"
        await wait_for(pilot, lambda: "# more" in "\n".join(
            (r.line.text if r.line else "") for r in screen.diff_view.rows), what="mirror.py's diff read again")
        assert "read again: 4 file(s) changed" in str(screen.said.render())
