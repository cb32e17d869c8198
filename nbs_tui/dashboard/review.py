"""The dashboard's side of the review (``v``): the review screen opened for the selected agent,
and what it asks for done off the UI thread (`nbs_tui.operator.review_actions.ReviewActions`
on the operator's action thread: git, the delivery), its answers shown on the screen.

``--open-review TARGET --card-only`` (a push's one-time link, `nbs_tui.core.fleet.card_target`)
opens that agent's review alone over the card cover, and quits when it closes, as the answer
card's link does (`nbs_tui.dashboard.answering.CardOnlyFlow`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

from textual.app import App

from nbs_tui.core.fleet.card_target import CardTargetError, parse_card_target
from nbs_tui.core.fleet.host_spec import HostSpec
from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.core.review.unified_diff import ParsedDiff
from nbs_tui.operator.operator_controller import OperatorController
from nbs_tui.operator.review_actions import ReviewLoad, Said

if TYPE_CHECKING:  # opened on demand: not imported for the first frame
    from nbs_tui.widgets.card_cover import CardCover
    from nbs_tui.widgets.review_screen import ReviewScreen

OPEN_REVIEW_SOURCE = "open review"
REVIEW_ONLY_CLOSE_SECONDS = 3.0
"""How long a review-only dashboard says the review closed (or why none opened) before it quits."""


class ReviewFlow:
    """Opens the review screen and carries out what it asks (UI thread; the work on the operator's thread)."""

    def __init__(
        self, app: App[Any], operator: OperatorController, selected: Callable[[], PaneInfo | None],
        *, card_only: bool = False,
    ) -> None:  # fmt: skip
        self._app = app
        self._operator = operator
        self._selected = selected
        self._loads: dict[int, ReviewLoad] = {}
        """Each open review screen's load (by the screen's id()): what merge and discard act on."""
        self._start_target = ""
        self._card_only = card_only
        """``--open-review --card-only``: that review over a cover, and quit when it closes."""
        self._cover: CardCover | None = None

    def open(self, pane: PaneInfo | None = None) -> None:
        """The review of ``pane`` (default: the selected agent; never another in a review-only dashboard)."""
        from nbs_tui.widgets.review_screen import ReviewScreen

        if self._card_only and pane is None:
            return
        pane = pane or self._selected()
        if pane is None:
            self._app.notify("No pane selected.", severity="warning", timeout=5)
            return
        screen = ReviewScreen(pane.target)
        self._app.push_screen(screen, lambda _: self._forget(screen))
        self._load(screen, pane)

    def mounted(self) -> None:
        """The app is up: a review-only dashboard covers the fleet at once."""
        if self._card_only:
            from nbs_tui.widgets.card_cover import CardCover

            self._cover = CardCover(f"Opening the review of {self._start_target or 'no agent'}…")
            self._app.push_screen(self._cover)
            if not self._start_target:
                self._no_review("No agent named (--card-only goes with --open-review).")

    def _forget(self, screen: ReviewScreen) -> None:
        self._loads.pop(id(screen), None)
        if self._cover is not None:  # the link's review closed: its grant ends with this dashboard
            self._cover.say("The review is closed: you may close this page.")
            self._app.set_timer(REVIEW_ONLY_CLOSE_SECONDS, self._app.exit)

    def _no_review(self, said: str) -> None:
        if self._cover is not None:
            self._cover.say(f"{said}\nNo review to show here: you may close this page.")
        else:
            self._app.notify(said, title="Review", severity="information")

    def _load(self, screen: ReviewScreen, pane: PaneInfo, *, again: bool = False, done: str = "") -> None:
        """``done``: what a merge or discard just said, said again once the changes are read
        (the reading's own "No changes against the base." would otherwise replace it, and with
        it a discard's backup ref)."""
        review = self._operator.review

        def loaded(result: object) -> None:
            assert isinstance(result, ReviewLoad)
            self._loads[id(screen)] = result
            facts = result.facts
            heading = f"{facts.branch or 'detached'} → {facts.base}" if facts else ""
            if facts is not None and not facts.own_worktree:
                heading += " (not its own worktree: no merge or discard)"
            screen.loaded(heading, result.files, own_worktree=result.own_worktree, message=result.message)
            if again and not result.message:
                screen.tell(f"read again: {len(result.files)} file(s) changed", ok=True)
            elif done and not result.message:
                screen.tell(done, ok=True)

        self._operator.run_off_ui(lambda: review.load(pane), loaded)

    def file_wanted(self, message: ReviewScreen.FileWanted) -> None:
        load = self._loads.get(id(message.screen))
        changed = next((f for f in load.files if f.path == message.path), None) if load else None
        if load is None or changed is None:
            return
        review, screen = self._operator.review, message.screen

        def shown(result: object) -> None:
            assert isinstance(result, ParsedDiff)
            screen.show_diff(result)

        self._operator.run_off_ui(lambda: review.file_diff(load, changed), shown)

    def send_wanted(self, message: ReviewScreen.SendWanted) -> None:
        load = self._loads.get(id(message.screen))
        if load is None:
            return
        review, screen = self._operator.review, message.screen

        def said(result: object) -> None:
            assert isinstance(result, Said)
            screen.tell(result.text, ok=result.ok)
            if result.ok:
                screen.comments_sent()

        self._operator.run_off_ui(lambda: review.send_comments(load.pane, message.comments), said)

    def reload_wanted(self, message: ReviewScreen.ReloadWanted) -> None:
        load = self._loads.get(id(message.screen))
        if load is not None:
            self._load(message.screen, load.pane, again=True)

    def merge_wanted(self, message: ReviewScreen.MergeWanted) -> None:
        self._worktree_action(message.screen, merge=True)

    def discard_wanted(self, message: ReviewScreen.DiscardWanted) -> None:
        self._worktree_action(message.screen, merge=False)

    def _worktree_action(self, screen: ReviewScreen, *, merge: bool) -> None:
        load = self._loads.get(id(screen))
        if load is None:
            return
        review = self._operator.review

        def said(result: object) -> None:
            assert isinstance(result, Said)
            screen.tell(result.text, ok=result.ok)
            if result.ok:
                self._load(screen, load.pane, done=result.text)  # what is left to review now

        self._operator.run_off_ui(lambda: review.merge(load) if merge else review.discard(load), said)

    # -- a push's link: --open-review TARGET ----------------------------------------------------

    def open_at_start(self, target: str) -> None:
        self._start_target = target

    def fleet_seen(
        self, hosts: Sequence[HostSpec], panes: Collection[PaneInfo], problem: Callable[[str, str], None]
    ) -> None:
        """The fleet was listed: the first time, open ``--open-review``'s agent's review; a
        target naming no pane here is one problem line."""
        if not self._start_target or not panes:
            return
        text, self._start_target = self._start_target, ""
        try:
            pane_id: PaneId | None = parse_card_target(text).dashboard_pane_id(hosts)
        except CardTargetError as error:
            problem(OPEN_REVIEW_SOURCE, f"--open-review: {error}")
            self._no_review(str(error))
            return
        pane = next((p for p in panes if p.pane_id == pane_id), None)
        if pane is None:
            problem(OPEN_REVIEW_SOURCE, f"--open-review {text}: no such pane here")
            self._no_review(f"{text} is not an agent here (any more).")
            return
        self.open(pane)
