"""The dashboard as a viewer: another process holds the server's sidecar lease, the status bar
names it; once it lets go, the dashboard (service = "off") holds it and says so."""

from __future__ import annotations

import os
import socket

import libtmux

from nbs_tui.app import create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.sidecar.lease_rules import clean_host
from nbs_tui.sidecar.heartbeat import LeaseHeartbeat
from nbs_tui.tmux.commands import TmuxServerCommands
from nbs_tui.widgets.status_bar import StatusBar
from tests.app.helpers import wait_for, widget_text

SIZE = (160, 48)


async def test_status_bar_names_the_holder_and_the_dashboard_takes_over_when_it_lets_go(
    session: libtmux.Session,
) -> None:
    address = ServerAddress(socket_name=session.server.socket_name)
    other = LeaseHeartbeat(TmuxServerCommands.for_server(address), pid=os.getpid() + 1)
    other.tick()
    assert other.holding
    app = create_app(Settings(server=address, service="off", lease_ttl=2.0))
    async with app.run_test(size=SIZE) as pilot:
        bar = app.query_one(StatusBar)
        holder = f"sidecar: {clean_host(socket.gethostname())} pid {os.getpid() + 1} since"
        await wait_for(pilot, lambda: holder in widget_text(bar), what="the holder in the status bar")
        assert app.runtime.lease is not None and not app.runtime.lease.acting()
        other.stop(release=True)
        await wait_for(pilot, lambda: "sidecar: here" in widget_text(bar), what="this dashboard holding")
        assert app.runtime.lease.acting()


async def test_pause_key_sets_the_server_option_from_any_view_and_every_view_shows_it(
    session: libtmux.Session,
) -> None:
    """``P`` (sidecar.pause) writes ``@nbs_pause`` into tmux from the Control view; the status
    bar says so; a pause lifted elsewhere (another view, a script) leaves the bar too."""
    address = ServerAddress(socket_name=session.server.socket_name)
    server = session.server

    def pause_option() -> str:
        out = server.cmd("show-options", "-sqv", "@nbs_pause").stdout
        return out[0] if out else ""

    app = create_app(Settings(server=address, service="off", lease_ttl=2.0))
    async with app.run_test(size=SIZE) as pilot:
        bar = app.query_one(StatusBar)
        await wait_for(pilot, lambda: app.runtime.lease is not None and app.runtime.lease.acting(), what="holding")
        assert "sidecar paused" not in widget_text(bar)
        await pilot.press("3")  # the Control view: the key is the app's, not a pane's
        await pilot.press("P")
        await wait_for(pilot, lambda: pause_option() == "on", what="@nbs_pause set in tmux")
        await wait_for(pilot, lambda: "sidecar paused" in widget_text(bar), what="paused in the status bar")
        await pilot.press("1")
        assert "sidecar paused" in widget_text(bar)
        server.cmd("set-option", "-su", "@nbs_pause")  # lifted by another view or by hand
        await wait_for(pilot, lambda: "sidecar paused" not in widget_text(bar), what="pause lifted in the bar")
        await pilot.press("P")
        await wait_for(pilot, lambda: pause_option() == "on", what="paused again from the list view")


async def test_a_viewing_dashboard_shows_the_holders_actions_in_the_pane_history(
    session: libtmux.Session,
) -> None:
    """The holder (another process) types a poll; the dashboard, a viewer, lists it in the
    pane's history and details marked with the holder (relayed through ``@nbs_actions``)."""
    from nbs_tui.sidecar.events import PollStep
    from nbs_tui.sidecar.sidecar_lease import SidecarLease
    from nbs_tui.widgets.detail_panel import DetailPanel

    address = ServerAddress(socket_name=session.server.socket_name)
    commands = TmuxServerCommands.for_server(address)
    other = LeaseHeartbeat(commands, pid=os.getpid() + 1)
    other.tick()
    holder = SidecarLease(commands, other)
    pane_id = session.active_window.active_pane.pane_id  # type: ignore[union-attr]
    assert pane_id is not None
    app = create_app(Settings(server=address, service="off", lease_ttl=8.0), claude=False)
    async with app.run_test(size=SIZE) as pilot:
        runner = app.runtime.sidecar
        await wait_for(pilot, lambda: runner is not None and runner.ticks >= 2, what="two viewer ticks")
        other.tick()  # renewed: the holder may act
        assert holder.sync() and holder.acting()
        holder.record(PollStep(pane_id, 1.0, result="typed", text="/nbs-poll"))
        holder.flush_actions()
        line = f"poll typed /nbs-poll (by sidecar {other.host} pid {os.getpid() + 1})"
        await wait_for(
            pilot, lambda: any(line in h.text for h in app.state.history.get(pane_id, ())), what="the relayed poll"
        )
        await wait_for(pilot, lambda: line in widget_text(app.query_one(DetailPanel)), what="in the details")
        assert app.runtime.lease is not None and not app.runtime.lease.acting()
    other.stop(release=True)
