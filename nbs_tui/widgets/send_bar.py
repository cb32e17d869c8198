"""Typing to agents: the send bar, the named-key picker, and pass-through mode.

- `SendBar`: a text box docked above the footer. Enter sends what was typed, exactly, to the
  selected pane (or to every marked pane in broadcast mode); Enter is pressed in the pane
  afterwards only when the operator turned that on (Ctrl+T). Ctrl+J (or Alt+Enter) starts a
  new line; pasted text keeps its lines. Escape closes the bar.
- `KeyPicker`: a small modal listing named keys (Enter, Esc, Ctrl-C, arrows, Tab, Shift-Tab,
  digits for menu options); pressing the key's own shortcut picks it at once.
- `PassThrough`: an invisible focusable widget; while it has focus every key goes to the
  pane as if typed there (Ctrl+] leaves). Keys are translated to tmux key names by
  `tmux_keys_for` and posted in order as `PassThrough.Keys`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import OptionList, Static, TextArea
from textual.widgets.option_list import Option

PASS_THROUGH_EXIT = "ctrl+right_square_bracket"
"""Ctrl+] leaves pass-through (telnet's escape key: rarely needed by an agent)."""


class _SendText(TextArea):
    """A TextArea where Enter submits instead of breaking the line."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "submit", "Send", id="send.submit", priority=True),
        Binding("ctrl+j,alt+enter", "newline", "New line", id="send.newline", show=False, priority=True),
        Binding("ctrl+t", "toggle_enter", "⏎ after", id="send.enter", priority=True),
        Binding("escape", "close", "Close", id="send.close", priority=True),
    ]

    def action_submit(self) -> None:
        bar = self._bar()
        if bar is not None:
            bar.submit()

    def action_newline(self) -> None:
        self.insert("\n")

    def action_toggle_enter(self) -> None:
        bar = self._bar()
        if bar is not None:
            bar.toggle_enter()

    def action_close(self) -> None:
        bar = self._bar()
        if bar is not None:
            bar.close()

    def _bar(self) -> SendBar | None:
        for node in self.ancestors:
            if isinstance(node, SendBar):
                return node
        return None


class SendBar(Vertical):
    """Type text for one pane, or for every marked pane (broadcast)."""

    DEFAULT_CSS = """
    SendBar {
        height: auto;
        border-top: solid $accent;
        background: $surface;
        padding: 0 1;
    }
    SendBar #send-label {
        height: 1;
        color: $text-muted;
    }
    SendBar.broadcast #send-label {
        color: $warning;
        text-style: bold;
    }
    SendBar #send-text {
        height: 3;
        border: none;
        padding: 0;
        background: $boost;
    }
    """

    @dataclass
    class Submitted(Message):
        """The operator sent ``text``; ``enter``: press Enter after it; ``broadcast``: to marked panes."""

        text: str
        enter: bool
        broadcast: bool

    @dataclass
    class Closed(Message):
        """The bar closed without sending."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.enter_after = False
        self.broadcast = False
        self.target = ""
        self.label = Static("", id="send-label")
        self.text = _SendText("", id="send-text", soft_wrap=True, show_line_numbers=False, compact=True)

    def compose(self) -> ComposeResult:
        yield self.label
        yield self.text

    def open(self, target: str, *, broadcast: bool = False, enter_after: bool | None = None) -> None:
        """Show the bar for ``target`` (a pane name, or "3 marked panes") and focus it."""
        self.target = target
        self.broadcast = broadcast
        if enter_after is not None:
            self.enter_after = enter_after
        self.set_class(broadcast, "broadcast")
        self._relabel()
        self.display = True
        self.screen.set_focus(self.text)  # at once, so keys typed right away land in the box

    def _relabel(self) -> None:
        mode = "Broadcast to" if self.broadcast else "Send to"
        enter = "then press Enter" if self.enter_after else "no Enter"
        self.label.update(
            Text.assemble(
                (f"{mode} {self.target}", "bold"),
                f"  ·  {enter} (Ctrl+T)  ·  Enter sends, Ctrl+J new line, Esc closes",
            )
        )

    def toggle_enter(self) -> None:
        self.enter_after = not self.enter_after
        self._relabel()

    def submit(self) -> None:
        text = self.text.text
        if not text and not self.enter_after:
            self.app.notify("Nothing to send: type text, or turn on Enter (Ctrl+T) to press Enter alone.")
            return
        self.post_message(self.Submitted(text, self.enter_after, self.broadcast))
        self.text.clear()

    def close(self) -> None:
        self.text.clear()
        self.post_message(self.Closed())


NAMED_KEY_CHOICES: tuple[tuple[str, str, str], ...] = (
    ("enter", "Enter", "Enter"),
    ("e", "Esc", "Escape"),
    ("c", "Ctrl-C", "C-c"),
    ("k", "Up", "Up"),
    ("j", "Down", "Down"),
    ("h", "Left", "Left"),
    ("l", "Right", "Right"),
    ("t", "Tab", "Tab"),
    ("T", "Shift-Tab", "BTab"),
    ("y", "y", "y"),
    ("n", "n", "n"),
    *((str(d), f"{d} (menu option)", str(d)) for d in range(1, 10)),
    ("0", "0", "0"),
)
"""(shortcut in the picker, label, tmux key name)."""


class KeyPicker(ModalScreen[str | None]):
    """Pick one named key to press in the pane(s); returns the tmux key name or None."""

    DEFAULT_CSS = """
    KeyPicker {
        align: center middle;
    }
    KeyPicker > Vertical {
        width: 48;
        height: auto;
        max-height: 90%;
        border: thick $primary;
        background: $surface;
        padding: 0 1;
    }
    KeyPicker OptionList {
        height: auto;
        max-height: 24;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "cancel", "Cancel", id="keys.cancel"),
    ]

    def __init__(self, target: str) -> None:
        super().__init__()
        self.target = target

    def compose(self) -> ComposeResult:
        options = [
            Option(Text.assemble((f"{label:<18}", "bold"), (f"key: {shortcut}", "dim")), id=key)
            for shortcut, label, key in NAMED_KEY_CHOICES
        ]
        with Vertical():
            yield Static(Text(f"Press a key in {self.target}", style="bold"))
            yield Static(Text("Type its shortcut, or pick it and press Enter; Esc cancels.", style="dim"))
            yield OptionList(*options, id="key-options")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_key(self, event: events.Key) -> None:
        if event.key in ("up", "down", "enter", "pageup", "pagedown", "home", "end", "escape", "q"):
            return  # the list's own navigation (Enter picks the highlighted key) and cancel
        for shortcut, _label, key in NAMED_KEY_CHOICES:
            if event.key == shortcut:
                event.stop()
                event.prevent_default()
                self.dismiss(key)
                return

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


_NAMED: dict[str, str] = {
    "enter": "Enter",
    "escape": "Escape",
    "tab": "Tab",
    "shift+tab": "BTab",
    "backspace": "BSpace",
    "ctrl+h": "BSpace",
    "delete": "DC",
    "insert": "IC",
    "up": "Up",
    "down": "Down",
    "left": "Left",
    "right": "Right",
    "home": "Home",
    "end": "End",
    "pageup": "PPage",
    "pagedown": "NPage",
    "space": "Space",
    "ctrl+space": "C-Space",
    "ctrl+at": "C-@",
    **{f"f{n}": f"F{n}" for n in range(1, 13)},
}


def tmux_keys_for(event: events.Key) -> list[tuple[bool, str]]:
    """How to replay a Textual key event with ``send-keys``: ``[(literal, text_or_key_name)]``.

    Printable characters go literally (``-l``), so unicode and tmux-special characters arrive
    as typed; named and modified keys become tmux key names (``C-c``, ``M-x``, ``S-Up``).
    Returns ``[]`` for a key tmux cannot name.
    """
    key = event.key
    if key in _NAMED:
        return [(False, _NAMED[key])]
    parts = key.split("+")
    base = parts[-1]
    modifiers = parts[:-1]
    if modifiers:
        prefix = ""
        for modifier in modifiers:
            prefix += {"ctrl": "C-", "alt": "M-", "shift": "S-", "meta": "M-"}.get(modifier, "")
        named = _NAMED.get(base)
        if named is not None:
            return [(False, prefix + named)]
        if len(base) == 1:
            return [(False, prefix + base)]
        if event.character and event.is_printable:
            return [(True, event.character)]
        return []
    if event.character and event.is_printable:
        return [(True, event.character)]
    if event.character and len(event.character) == 1 and ord(event.character) < 32:
        return [(False, f"C-{chr(ord(event.character) + 96)}")]
    return []


class PassThrough(Widget, can_focus=True):
    """While focused, forwards every key (but Ctrl+]) to the operator's pane as `Keys`."""

    DEFAULT_CSS = """
    PassThrough {
        height: 1;
        background: $warning;
        color: $background;
        text-style: bold;
        padding: 0 1;
    }
    """

    @dataclass
    class Keys(Message):
        """Keys to send in order: ``(literal, text_or_key_name)`` pairs (see `tmux_keys_for`)."""

        keys: tuple[tuple[bool, str], ...]

    @dataclass
    class Pasted(Message):
        text: str

    @dataclass
    class Leave(Message):
        """Ctrl+] (or focus lost): pass-through is over."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.target = ""

    def render(self) -> Text:
        return Text(
            f"PASS-THROUGH → {self.target}: every key goes to the pane · Ctrl+] leaves",
            no_wrap=True,
            overflow="ellipsis",
        )

    def on_key(self, event: events.Key) -> None:
        event.stop()
        event.prevent_default()
        if event.key == PASS_THROUGH_EXIT:
            self.post_message(self.Leave())
            return
        keys = tmux_keys_for(event)
        if keys:
            self.post_message(self.Keys(tuple(keys)))
        else:
            self.app.bell()

    def on_paste(self, event: events.Paste) -> None:
        event.stop()
        event.prevent_default()
        self.post_message(self.Pasted(event.text))

    def on_blur(self) -> None:
        if self.display:
            self.post_message(self.Leave())
