"""What the dashboard does on its way to the first full frame, counted (never timed): a burst of
news is drawn once, the footer is not rebuilt for nothing."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from functools import partial
from typing import Any

from textual.widgets import Footer

from nbs_tui.app import NbsApp, create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import AgentState
from nbs_tui.dashboard.messages import PaneStatus, PaneStatusChanged
from nbs_tui.tmux.port import FleetListener
from nbs_tui.widgets.fleet_list import FleetList
from nbs_tui.widgets.textual_internals import FooterKey
from tests.app.fakes import FakeFleet, pane_info
from tests.app.helpers import wait_for

PANES = [pane_info(f"%{i}", i) for i in range(50)]


def _app() -> NbsApp:
    def factory(listener: FleetListener) -> FakeFleet:
        return FakeFleet(listener, PANES)

    return create_app(Settings(), factory, control_plane=False, sidecar=False, claude=False)


def _count(obj: Any, name: str, only: Callable[..., bool] | None = None) -> list[int]:
    """Count the calls of ``obj.name`` (the original still runs); ``only``: those it is true of
    (called with the same arguments)."""
    calls: list[int] = []
    original = getattr(obj, name)

    def counting(*args: Any, **kwargs: Any) -> Any:
        if only is None or only(*args, **kwargs):
            calls.append(1)
        return original(*args, **kwargs)

    setattr(obj, name, counting)
    return calls


def _for_panes(statuses: object, last_change: object, now: float, pane_ids: object = None) -> bool:
    """A call of `FleetList.refresh_cells` for given panes' rows (not the clock's, for all)."""
    return pane_ids is not None


async def test_a_burst_of_statuses_redraws_the_bar_and_the_list_once() -> None:
    """The sidecar's first tick posts a status per pane: the status bar and the list's rows are
    redrawn once for the batch, not once per message (50 times at 50 agents)."""
    app = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: "50 panes" in str(app.dashboard.status_bar.render()), what="the fleet listed")
        redraws = _count(app.dashboard.status_bar, "_redraw")
        # The rows of given panes (the statuses' path); the clock's tick, once a second, refreshes
        # every row's clock cells as well, and under load it came in the middle of the burst
        # ("2 list refreshes for one burst").
        refreshes = _count(app.query_one(FleetList), "refresh_cells", only=_for_panes)
        for i, pane in enumerate(PANES):  # every message changes the counts
            state = AgentState.WORKING if i % 2 else AgentState.IDLE
            app.post_message(PaneStatusChanged(pane.pane_id, PaneStatus(pane.pane_id, state, reason="screen")))
        await wait_for(pilot, lambda: "25 idle" in str(app.dashboard.status_bar.render()), what="the counts")
        await pilot.pause()
        assert "25 working" in str(app.dashboard.status_bar.render())
        assert len(redraws) == 1, f"{len(redraws)} status-bar redraws for one burst"
        assert len(refreshes) == 1, f"{len(refreshes)} list refreshes for one burst"
        assert "working" in str(app.query_one(FleetList).get_cell("%49", "state"))


async def test_the_footer_is_rebuilt_only_when_its_keys_change() -> None:
    """Textual's footer recomposes on every focus change; ours only when a shown key changes."""
    app = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        footer = app.query_one(Footer)
        await wait_for(pilot, lambda: footer.query(FooterKey), what="the footer's keys")
        await pilot.pause()
        composed = _count(footer, "compose")
        app.dashboard.mirror.focus()
        await pilot.pause()
        app.dashboard.fleet_list.focus()
        await pilot.pause()
        app.refresh_bindings()
        await pilot.pause()
        assert composed == [], "the same keys were composed again"
        assert "Next" in _footer_text(footer)
        app.dashboard.action_show_view("control")  # the pane keys do nothing there: the footer drops them
        await wait_for(pilot, lambda: "Next" not in _footer_text(footer), what="the pane keys gone")
        assert len(composed) == 1


async def test_the_footer_keys_are_not_restyled_as_they_mount() -> None:
    """Each key is bound to the footer's `compact`, its own default the opposite: mounting, a key
    took the class and lost it again, and was restyled twice (~50 ms under cProfile for 18 keys,
    right after the first frame)."""
    app = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        footer = app.query_one(Footer)
        await wait_for(pilot, lambda: footer.query(FooterKey), what="the footer's keys")
        await pilot.pause()
        restyled: list[FooterKey] = []
        update_styles = app.update_styles

        def counting(node: Any, **kwargs: Any) -> None:
            if isinstance(node, FooterKey) and not node.has_class("-command-palette"):  # not bound
                restyled.append(node)
            update_styles(node, **kwargs)

        app.update_styles = counting  # type: ignore[method-assign,assignment]
        app.dashboard.action_show_view("control")  # new keys
        await wait_for(pilot, lambda: "Next" not in _footer_text(footer), what="the footer rebuilt")
        await pilot.pause()
        assert footer.query(FooterKey) and restyled == []


def _footer_text(footer: Footer) -> str:
    return " ".join(str(key.description) for key in footer.query(FooterKey))


def test_the_dashboard_is_imported_without_collections_and_then_frozen() -> None:
    """The collector stays off while the dashboard's modules load (it ran over and over while
    ~100,000 objects piled up), and what they made is frozen out of later collections; the
    collector is on again afterwards. In a fresh interpreter: this one imported the app long ago."""
    code = (
        "import gc, sys\n"
        "from nbs_tui import cli\n"
        "assert 'nbs_tui.app' not in sys.modules and gc.isenabled()\n"
        "runs = []\n"
        "gc.callbacks.append(lambda phase, info: runs.append(info['generation']) if phase == 'start' else None)\n"
        "frozen = gc.get_freeze_count()\n"
        "run_app = cli._load_app()\n"
        "print(run_app.func.__module__, len(runs), gc.get_freeze_count() - frozen, gc.isenabled())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    module, collections, frozen, enabled = out.stdout.split()
    assert module == "nbs_tui.app"
    assert collections == "0", f"{collections} collections while importing the app"
    assert int(frozen) > 10_000, "the import's objects are frozen"
    assert enabled == "True"


ON_DEMAND = (
    "nbs_tui.widgets.action_log_view",
    "nbs_tui.widgets.answer_card",
    "nbs_tui.widgets.chat_editor",
    "nbs_tui.widgets.confirm_screen",
    "nbs_tui.widgets.help_screen",
    "nbs_tui.widgets.problems_screen",
)


def test_the_screens_opened_on_demand_are_not_imported_with_the_app() -> None:
    """The first frame draws none of them: each is imported when first opened."""
    code = f"import sys, nbs_tui.app\nprint(' '.join(m for m in {ON_DEMAND!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == []


async def test_each_screen_opened_on_demand_opens() -> None:
    """Imported late, each still opens from its key (the answer card and the chat editor need
    an agent waiting and a control plane: tests/app/test_actions.py and test_control_panels.py)."""
    app = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: "50 panes" in str(app.dashboard.status_bar.render()), what="the fleet listed")
        for key, screen in (("question_mark", "HelpScreen"), ("E", "ProblemsScreen"), ("L", "ActionLogScreen")):
            await pilot.press(key)
            await wait_for(pilot, partial(_showing, app, screen), what=screen)
            await pilot.press("escape")
            await wait_for(pilot, lambda: len(app.screen_stack) == 1, what=f"{screen} closed")
        await pilot.press("m", "b")  # mark one pane, broadcast to it: the confirmation asks first
        await pilot.press(*"hi", "enter")
        await wait_for(pilot, partial(_showing, app, "ConfirmScreen"), what="the confirmation")


def _showing(app: NbsApp, name: str) -> bool:
    return type(app.screen).__name__ == name
