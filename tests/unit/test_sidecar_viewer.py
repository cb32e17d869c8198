"""A viewer's sidecar (another process holds the lease) detects and reports, never acts."""

from __future__ import annotations

from nbs_tui.core.sidecar.pane_sidecar import (
    InjectPoll,
    PaneSidecar,
    ReportCommand,
    SelectPlanOption,
    SidecarConfig,
    SidecarContext,
    StateChanged,
)
from tests.unit.test_sidecar import idle, kinds, plan, run

VIEWER = SidecarContext(viewer=True)


def test_viewer_detects_and_reports_commands_but_never_polls_or_selects() -> None:
    sidecar = PaneSidecar("%1", SidecarConfig(poll_interval=5))
    out = run(sidecar, 0, 30, idle(body=("\\nbs-set-poll-interval 9", "")), VIEWER)
    assert kinds(out, StateChanged)
    assert kinds(out, ReportCommand)
    assert not kinds(out, InjectPoll)
    assert sidecar.status(30.0, VIEWER).next_poll_in is None
    out = run(sidecar, 31, 60, plan(), VIEWER)
    assert not kinds(out, SelectPlanOption)
    assert kinds(run(sidecar, 61, 70, plan()), SelectPlanOption)  # acting: answers it


def test_becoming_a_viewer_mid_handshake_drops_it_and_acting_again_starts_afresh() -> None:
    sidecar = PaneSidecar("%1", SidecarConfig(poll_interval=5))
    typed = kinds(run(sidecar, 0, 6, idle()), InjectPoll)
    assert typed and sidecar.injecting
    run(sidecar, 7, 8, idle("/nbs-poll"), VIEWER)
    assert not sidecar.injecting
    # the new holder erased the left-over text; acting again, the poll comes after the interval
    out = run(sidecar, 9, 20, idle())
    assert next(t for t, _ in kinds(out, InjectPoll)) >= 9 + 5
