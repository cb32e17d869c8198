"""Every use nbs-tui makes of Textual's private parts, in one place.

Textual is pinned to ``>=8.0,<9`` (pyproject.toml), but a minor release may rename or change
anything whose name starts with an underscore. So nothing else in `nbs_tui` touches one: it
calls the functions here, each of which says why it is needed and what exactly it relies on.
`tests/app/test_textual_internals.py` checks each of those reliances on the installed Textual
(and that no other module reaches into Textual's private names), so an upgrade that breaks one
fails there, by name, instead of as a garbled frame or a mirror that stops. The versions it
has passed on are listed in docs/textual.md.

What is used, and for what:
- the terminal driver (`terminal_driver`): terminal notifications and the direct painter write
  into the dashboard's own output stream, in order with Textual's frames;
- the app's exception handler (`report_exception`): the frame scheduler's callback runs on the
  loop, not as a message handler, and a failure in it must end the app as a handler's does;
- the compositor's map and the screen's pending updates, the app's batch and sync state, the
  widget's line cache (`visible_widgets`, `update_pending`, `in_batch_update`,
  `synchronized_output`, `forget_rendered_lines`): `nbs_tui.widgets.direct_paint`; and what the
  output's colours depend on (`output_look`), whose one public attribute is new in 8.2;
- the footer's key widget and its "bindings ready" flag (`FooterKey`, `footer_bindings_ready`):
  `nbs_tui.widgets.footer`;
- `rich_style` and `background_colors` answered from one read per paint (`LookReadOncePerPaint`):
  the mirror and the thumbnails.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from rich.style import Style
from textual.app import App
from textual.color import Color
from textual.driver import Driver
from textual.geometry import Region, Size
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Footer

# The footer's key widget lives in a private module and is not exported by `textual.widgets`.
from textual.widgets._footer import FooterKey

__all__ = [
    "FooterKey",
    "LookReadOncePerPaint",
    "direct_paint_supported",
    "footer_bindings_ready",
    "forget_rendered_lines",
    "in_batch_update",
    "output_look",
    "report_exception",
    "synchronized_output",
    "terminal_driver",
    "update_pending",
    "visible_widgets",
]


def terminal_driver(app: App[Any]) -> Driver | None:
    """The driver that writes the app's output to its terminal (None before it starts, after it
    stops). Relies on ``App._driver``: the running `Driver`, whose ``write`` puts text into the
    same stream as Textual's frames and ``flush`` sends it."""
    driver: Driver | None = app._driver
    return driver


def report_exception(app: App[Any], error: Exception) -> None:
    """End the app for an error raised outside any message handler, as Textual ends it for one
    raised inside: the traceback shown, return code 1, and `App.run_test` re-raising it.

    Why: the frame scheduler runs the frame as a plain callback on the event loop (a message
    costs ~90 µs of a ~0.7 ms frame); an error there would otherwise only reach asyncio's log
    while the mirror silently stopped. Relies on ``App._handle_exception(error)``, which is
    what Textual's message pump and timers call."""
    app._handle_exception(error)


def in_batch_update(app: App[Any]) -> bool:
    """Inside `App.batch_update` (Textual holds its output back until the batch ends).
    Relies on ``App._batch_count``: the depth of open batches, 0 outside one."""
    return bool(app._batch_count)


def synchronized_output(app: App[Any]) -> bool:
    """The terminal said it supports synchronized output (mode 2026), as Textual asked it at
    start. Relies on ``App._sync_available``, set by Textual when the terminal answers."""
    return bool(app._sync_available)


def visible_widgets(screen: Screen[Any]) -> Mapping[Widget, tuple[Region, Region]]:
    """The compositor's map of what is drawn where: widget -> (region, clip), in drawing order,
    front first. Relies on ``Screen._compositor.visible_widgets``, which also keeps returning
    the same object until the arrangement changes (the direct painter keys its check on it)."""
    visible: Mapping[Widget, tuple[Region, Region]] = screen._compositor.visible_widgets
    return visible


def update_pending(screen: Screen[Any]) -> bool:
    """The screen will lay out, scroll or repaint at its next update (so what is on the terminal
    now is about to be redrawn: writing rows past Textual now could be painted over or lost).
    Relies on ``Screen._layout_required``, ``_scroll_required`` and ``_repaint_required``, the
    flags `Screen._on_update` acts on."""
    return bool(screen._layout_required or screen._scroll_required or screen._repaint_required)


def forget_rendered_lines(widget: Widget, region: Region) -> None:
    """Make Textual render ``region``'s lines of the widget afresh next time it paints them
    (its cache of them is stale once they were written past it). Relies on
    ``Widget._styles_cache.set_dirty(region)``: the cache `Widget.render_lines` draws from."""
    widget._styles_cache.set_dirty(region)


def output_look(app: App[Any]) -> tuple[object, ...]:
    """What the escape sequences of every row depend on app-wide, besides the widget's own look:
    the line filters (e.g. no colour), the ANSI theme and whether ANSI colours are left to the
    terminal. The last is ``App.native_ansi_color``, public but new in Textual 8.2: on 8.0 and
    8.1 there is no such choice, and it reads None (an attribute read there ended the app)."""
    return (tuple(app.get_line_filters()), app.ansi_theme, getattr(app, "native_ansi_color", None))


def direct_paint_supported(app: App[Any], widget: Widget) -> bool:
    """Everything the direct painter reads is where it expects (checked once per painter, so
    a Textual that moved one gets the ordinary path instead of an error in every frame)."""
    screen = widget.screen
    return (
        hasattr(app, "_driver")
        and hasattr(app, "_batch_count")
        and hasattr(app, "_sync_available")
        and hasattr(screen, "_compositor")
        and hasattr(screen._compositor, "visible_widgets")
        and all(hasattr(screen, flag) for flag in ("_layout_required", "_scroll_required", "_repaint_required"))
        and hasattr(widget, "_styles_cache")
        and hasattr(widget._styles_cache, "set_dirty")
    )


def footer_bindings_ready(footer: Footer) -> bool:
    """The screen has said its bindings are ready: before that Textual's footer composes no keys.
    Relies on ``Footer._bindings_ready``, the reactive its ``compose`` reads."""
    return bool(footer._bindings_ready)


class LookReadOncePerPaint(Widget):
    """A widget whose ``rich_style``, ``background_colors`` and ``size`` are read once per paint.

    Within one paint the widget's look cannot change, yet Textual's own row rendering (each row
    the direct painter has not seen, each row of `render_lines`) asks for the first two again,
    and each is a walk of every ancestor's styles: three or four walks a frame of a scrolling
    mirror, a quarter of its time. Inside `look_read_once` (which `render_lines` opens) they
    answer what was read on entry. Relies on Textual reading both through the widget's
    attributes (so an override is seen) and on both being plain properties of `DOMNode`.
    """

    _paint_style: Style | None = None
    _paint_colors: tuple[Color, Color] | None = None
    _paint_size: Size | None = None

    @property
    def painting_style(self) -> Style | None:
        """``rich_style`` as read for the paint under way; None outside one."""
        return self._paint_style

    @property
    def painting_size(self) -> Size | None:
        """``size`` as read for the paint under way (``size`` walks the DOM too); None outside one."""
        return self._paint_size

    @contextlib.contextmanager
    def look_read_once(self) -> Iterator[None]:
        """Read the look once for the rows drawn inside, and forget it after. Within a paint
        (rows rendered inside another's) it is already read."""
        if self._paint_style is not None:
            yield
            return
        self._paint_style, self._paint_colors, self._paint_size = self.rich_style, self.background_colors, self.size
        try:
            yield
        finally:
            self._paint_style = self._paint_colors = self._paint_size = None

    @property
    def rich_style(self) -> Style:
        style = self._paint_style
        return super().rich_style if style is None else style

    @property
    def background_colors(self) -> tuple[Color, Color]:
        colors = self._paint_colors
        return super().background_colors if colors is None else colors

    def render_lines(self, crop: Region) -> list[Strip]:
        with self.look_read_once():
            return super().render_lines(crop)
