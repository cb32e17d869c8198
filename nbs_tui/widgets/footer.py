"""Textual's footer, rebuilt only when the keys it shows change.

Textual's `Footer` recomposes (removes its ~20 keys, mounts and styles new ones) every time the
screen says its bindings may have changed: on every focus change and screen switch, whether or not
a shown key changed. Starting the dashboard did it four or five times, ~0.6 s of CSS work under
py-spy, right when the first frame is due. This one compares what it would show with what it shows.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer as TextualFooter

from nbs_tui.widgets.textual_internals import FooterKey, footer_bindings_ready

Shown = tuple[object, ...]


class Footer(TextualFooter):
    """A `textual.widgets.Footer` that skips a recompose which would show the same keys."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._composed: Shown | None = None
        """What the keys on show were composed from; None: nothing composed yet."""

    def _shown(self) -> Shown:
        """Everything `Footer.compose` reads to build its keys: it shows the first binding of
        each action (a focused list's own arrow keys hide the app's, yet the key shown stays)."""
        app = self.app
        active = self.screen.active_bindings
        first: dict[str, tuple[object, ...]] = {}
        for _node, binding, enabled, tooltip in active.values():
            if binding.show and binding.action not in first:
                first[binding.action] = (binding.key, app.get_key_display(binding), binding.description, enabled, tooltip, binding.group)
        palette = active.get(app.COMMAND_PALETTE_BINDING)
        return tuple(first.items()), palette[1:] if palette is not None else None, self.show_command_palette

    def compose(self) -> ComposeResult:
        # before the screen first says its bindings are ready, Textual's footer composes nothing
        self._composed = self._shown() if footer_bindings_ready(self) else None
        for widget in super().compose():
            if isinstance(widget, FooterKey) and not widget.has_class("-command-palette"):
                # Each key but the palette's is data-bound to the footer's `compact`, its own
                # default the opposite: mounting, a key took the class and lost it again, restyled
                # twice (~50 ms for 18 keys under cProfile, right after the first frame). Set now,
                # the binding changes nothing.
                widget.set_reactive(FooterKey.compact, self.compact)
            yield widget

    async def recompose(self) -> None:
        if self._composed is not None and self.is_attached and self._shown() == self._composed:
            return
        await super().recompose()
