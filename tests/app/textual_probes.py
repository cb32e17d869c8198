"""Textual private parts the tests use to look inside the app (never the product: that goes
through `nbs_tui.widgets.textual_internals`). Each says what it relies on; each is checked in
tests/app/test_textual_internals.py, so a Textual release that changes one fails there first."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from rich.console import RenderableType
from textual import events
from textual.app import App
from textual.geometry import Region
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widget import Widget


async def wheel_up(pilot: Pilot[Any], widget: Widget, offset: tuple[int, int]) -> None:
    """Turn the mouse wheel up over ``widget`` (Pilot has clicks and hovers, not the wheel).
    Relies on ``Pilot._post_mouse_events``, which its own ``click`` and ``hover`` call."""
    await pilot._post_mouse_events([events.MouseScrollUp], widget=widget, offset=offset)


def regions_to_repaint(widget: Widget) -> Collection[Region]:
    """The regions of the widget its next repaint will redraw (what a refresh asked for).
    Relies on ``Widget._repaint_regions``, filled by ``refresh(region)``."""
    regions: Collection[Region] = widget._repaint_regions
    return regions


def full_repaint(screen: Screen[Any]) -> RenderableType | None:
    """What the driver would be given for a full repaint of the screen now.
    Relies on ``Screen._compositor.render_update(full=True)``."""
    return screen._compositor.render_update(full=True)


def notifications_kept(app: App[Any]) -> int:
    """How many notifications the app holds to show as toasts (they are kept whether or not the
    test shows them). Relies on ``App._notifications``, which ``App.notify`` adds to."""
    return len(app._notifications)
