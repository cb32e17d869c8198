"""Stuck agents in the dashboard: a demo agent left idle is nudged once by the app's sidecar,
then joins the "needs you" queue as stuck, with a bell; its history shows the cycle."""

from __future__ import annotations

from pathlib import Path

import libtmux
import pytest

from tests.app.helpers import wait_for
from tests.app.test_actions import SIZE, demo_agent, make_app, screen_text

NUDGE = "Keep going."
"""Words the demo agent answers with a short generic turn (no menu, no question)."""


@pytest.mark.slow
async def test_a_stuck_agent_is_nudged_then_waits_in_the_needs_you_queue(
    session: libtmux.Session, tmp_path: Path
) -> None:
    pane = demo_agent(session, tmp_path, "idle", "sleepy")
    app = make_app(
        session.server,
        tmp_path,
        bell=True,
        poll_disabled=True,
        stuck_grace=12.0,
        stuck_nudge=NUDGE,
        stuck_max_nudges=1,
        needs_you_idle=3600.0,
    )
    bells: list[int] = []
    async with app.run_test(size=SIZE) as pilot:
        app.bell = lambda: bells.append(1)  # type: ignore[method-assign]
        await wait_for(pilot, lambda: app.runtime.sidecar is not None and app.runtime.claude is not None, what="backends")
        sidecar = app.runtime.sidecar
        assert sidecar is not None
        await wait_for(pilot, lambda: sidecar.monitor.signals is app.runtime.claude, what="the runner reads Claude's signals")
        await wait_for(pilot, lambda: pane in app.operator.needs_you, timeout=90, what="the stuck agent joins the queue")
        [entry] = app.operator.needs_you.entries()
        assert entry.reason == "stuck (1 nudge)"
        assert bells, "a bell rang when it joined"
        assert screen_text(session, pane).count(NUDGE) >= 1
        history = [h.text for h in app.state.history.get(pane, ())]
        assert any(t.startswith("nudge") and "queued" in t for t in history), history
        assert any(t.startswith("escalate") for t in history), history
