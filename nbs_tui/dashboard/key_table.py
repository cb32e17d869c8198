"""Every key of the dashboard, in one table: bindings, footer, command palette and help come from it.

A `Command` is one operator command: a key binding with an id (rebindable through the keymap),
a footer label, a palette entry and a line of help. A few keys belong to a widget rather than to
the app (the list's cursor, pass-through's way out); they are listed here too, with
``bound=False``, so the help screen names them without a hand-written row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from textual.binding import Binding


@dataclass(frozen=True, slots=True)
class Command:
    """One operator command: a key binding with an id, a footer label and a palette entry."""

    id: str
    keys: str
    action: str
    label: str
    help: str
    show: bool = True
    key_display: str | None = None
    priority: bool = False
    palette: str = ""
    """The command palette's name for it, when the short footer label would not do."""
    in_palette: bool = True
    bound: bool = True
    """False for a key a widget handles itself: listed in help only."""
    scope: str = ""
    """A widget's keys (``scrollback``): bound by that widget (`scope_bindings`), active while
    it has focus, where they win over the app's same keys; "" for the app's own."""

    def binding(self) -> Binding:
        return Binding(
            self.keys, self.action, self.label, show=self.show, key_display=self.key_display,
            id=self.id, priority=self.priority,
        )

    @property
    def keys_shown(self) -> str:
        """The keys as help shows them when no binding is in force to ask."""""
        return self.key_display or self.keys.replace(",", " / ")


COMMANDS: tuple[Command, ...] = (
    Command("pane.next", "j,down", "move(1)", "Next", "Select the next pane", key_display="j/↓", in_palette=False),
    Command("pane.previous", "k,up", "move(-1)", "Previous", "Select the previous pane", key_display="k/↑", in_palette=False),
    Command("view.zoom", "z", "toggle_zoom", "Zoom", "Show the selected pane full-screen (again to go back)"),
    Command("view.unzoom", "escape", "unzoom", "Back", "Leave the full-screen mirror", show=False, in_palette=False),
    Command("view.dashboard", "1", "show_view('dashboard')", "List", "Fleet list with the live mirror"),
    Command("view.grid", "2", "show_view('grid')", "Grid", "Live thumbnails of every pane"),
    Command("view.control", "3", "show_view('control')", "Control", "Control plane: registry, inbox, chat"),
    Command("view.queue", "4", "show_view('queue')", "Queue", "Work queue: each task's state, agent and age; add, cancel, reorder"),
    Command("view.details", "d", "toggle_details", "Details", "Show or hide the selected pane's details"),
    Command("app.help", "question_mark,f1", "help", "Help", "List every key", key_display="?"),
    Command(
        "app.problems", "E", "problems", "Problems",
        "List the problems the backends reported (the status bar counts them; tracebacks are in the log file)",
        show=False, palette="Show problems",
    ),
    Command("app.quit", "q", "app.quit", "Quit", "Leave nbs-tui (the agents keep running)", palette="Quit nbs-tui"),
    Command(
        "pane.jump", "g", "operator('jump')", "Jump",
        "Go into the selected pane in tmux: inside tmux your client switches (prefix B comes back); "
        "outside, the dashboard suspends and attaches until you detach (prefix d)",
        palette="Jump into the pane",
    ),
    Command(
        "send.text", "i", "operator('send_text')", "Send",
        "Type text for the selected pane: Enter sends it exactly, Ctrl+T also presses Enter, Ctrl+J new line",
        palette="Send text to the pane",
    ),
    Command(
        "send.key", "K", "operator('send_key')", "Key",
        "Press a named key in the selected pane: Enter, Esc, Ctrl-C, arrows, Tab, Shift-Tab, a menu digit",
        palette="Press a key in the pane",
    ),
    Command(
        "send.passthrough", "p", "operator('pass_through')", "Pass",
        "Type straight into the selected pane, every key as if there; Ctrl+] leaves",
        palette="Pass-through: type into the pane",
    ),
    Command(
        "pane.mark", "m,space", "operator('toggle_mark')", "Mark",
        "Mark or unmark the selected pane for broadcast (● on its row)", show=False, key_display="m",
        palette="Mark pane for broadcast",
    ),
    Command("pane.unmark", "M", "operator('clear_marks')", "Unmark all", "Clear every broadcast mark", show=False, palette="Unmark all panes"),
    Command(
        "send.broadcast", "b", "operator('broadcast_text')", "Bcast",
        "Send the same text to every marked pane (names them and asks first)",
        palette="Broadcast text to marked panes",
    ),
    Command(
        "send.broadcast_key", "B", "operator('broadcast_key')", "Broadcast key",
        "Press the same named key in every marked pane (names them and asks first)", show=False,
        palette="Broadcast a key to marked panes",
    ),
    Command(
        "poll.now", "r", "operator('force_poll')", "Poll",
        "Inject /nbs-poll into the selected agent now, if typing there is safe (says why not)",
        palette="Force a poll in the pane",
    ),
    Command(
        "poll.idle", "R", "operator('force_poll_all')", "Poll idle",
        "Inject /nbs-poll into every idle agent now; reports each one skipped and why", show=False,
        palette="Force a poll in every idle agent",
    ),
    Command(
        "needs.next", "n", "next_needs_you", "Waiting",
        "Select the next agent waiting on you (oldest first); then g jumps into it",
        palette="Next agent waiting on you",
    ),
    Command(
        "needs.answer", "A", "answer", "Answer",
        "Answer the waiting agents one by one from a card (their prompt and options): a digit, y, n or "
        "Esc answers after a live re-check of the pane, then the next one shows; Tab skips, q closes",
        show=False, palette="Answer waiting agents",
    ),
    Command(
        "fleet.filter", "slash", "filter", "Filter",
        "Filter the list: words, session:NAME project:DIR name:TEXT state:idle|needs", key_display="/",
        palette="Filter the fleet list",
    ),
    Command(
        "pane.toggle_poll", "t", "operator('toggle_poll')", "Poll on/off",
        "Turn poll injection on or off for the selected pane (⊘p on its row when off)", show=False,
        palette="Toggle poll injection for the pane",
    ),
    Command(
        "pane.toggle_plan", "a", "operator('toggle_plan')", "Plan auto",
        "Turn plan-menu auto-select on or off for the selected pane (⊘a on its row when off)", show=False,
        palette="Toggle plan auto-select for the pane",
    ),
    Command(
        "sidecar.pause", "P", "operator('toggle_sidecar_pause')", "Pause sidecar",
        "Pause or resume the sidecar for the whole tmux server (tmux option @nbs_pause: every view and "
        "whichever process acts honour it; detection goes on)", show=False,
        palette="Pause or resume the sidecar (server-wide)",
    ),
    Command(
        "mirror.scrollback", "pageup", "scrollback", "History",
        "Scroll back through the selected pane's history, read from tmux now (the mouse wheel over the "
        "mirror too): / searches it, n/N next/previous match, Esc back to the live view",
        show=False, key_display="PgUp", palette="Scroll back through the pane's history", priority=True,
    ),  # priority: the fleet list pages with PgUp itself; the app's check_action lets text fields keep it
    # the scrollback's own keys: while it has focus, / n N Esc are its, not the filter's or needs-you's
    Command("scrollback.search", "slash", "search", "Search", "Search the history (smart case)", key_display="/", scope="scrollback", in_palette=False),
    Command("scrollback.next", "n", "next_match", "Next", "Next match (further down, wrapping)", scope="scrollback", in_palette=False),
    Command("scrollback.previous", "N", "previous_match", "Previous", "Previous match (further up, wrapping)", scope="scrollback", in_palette=False),
    Command("scrollback.close", "escape", "close", "Live view", "Back to the live mirror", key_display="Esc", scope="scrollback", in_palette=False),
    # the answer card's own keys (nbs_tui/widgets/answer_card.py)
    *(
        Command(
            f"answer.option{n}", str(n), f"choose('{n}')", f"Option {n}", f"Choose option {n}",
            show=n == 1, key_display="1-9" if n == 1 else None, scope="answer", in_palette=False,
        )
        for n in range(1, 10)
    ),
    Command("answer.yes", "y", "choose('y')", "Yes", "Choose the option that starts with Yes", scope="answer", in_palette=False),
    Command("answer.no", "n", "choose('n')", "No", "Choose the option that starts with No", scope="answer", in_palette=False),
    Command(
        "answer.cancel", "escape", "choose('escape')", "Esc", "Press Esc in the agent (cancels its prompt)",
        key_display="Esc", scope="answer", in_palette=False,
    ),
    Command("answer.skip", "tab", "skip", "Next", "Next waiting agent, this one unanswered", scope="answer", in_palette=False),
    Command("answer.close", "q", "close", "Close", "Close the card", scope="answer", in_palette=False),
    # the queue view's own keys (nbs_tui/widgets/queue_view.py)
    Command(
        "queue.add", "a", "add", "Add task",
        "Add a task to the work queue: its text, and which agents may take it (folder, name glob), its priority",
        scope="queue", in_palette=False,
    ),
    Command(
        "queue.cancel", "x,delete", "cancel", "Cancel task",
        "Cancel the highlighted task after a confirmation (an agent working on it is not stopped)",
        key_display="x", scope="queue", in_palette=False,
    ),
    Command(
        "queue.sooner", "plus,shift+up", "move(-1)", "Sooner", "Move the highlighted queued task one place sooner",
        key_display="+", scope="queue", in_palette=False,
    ),
    Command(
        "queue.later", "minus,shift+down", "move(1)", "Later", "Move the highlighted queued task one place later",
        key_display="-", scope="queue", in_palette=False,
    ),
    Command(
        "queue.pause", "p", "pause", "Pause",
        "Pause the work queue (nothing more is handed out; tasks out go on), or resume it", scope="queue", in_palette=False,
    ),
    Command(
        "agent.new", "c", "new_agent", "New agent",
        "Start a Claude Code agent in a new tmux window: folder, name, prompt, model, mode (as nbs-tui new)",
        show=False, palette="Start a new agent",
    ),
    Command(
        "agent.stop", "X", "stop_agent", "Stop agent",
        "Stop the selected agent after a confirmation: /exit when its box is idle and empty, else Ctrl-C, "
        "else kill its pane", show=False, palette="Stop the agent",
    ),
    Command(
        "agent.restart", "S", "restart_agent", "Restart agent",
        "Restart the selected agent in place after a confirmation: stop it, then claude --resume its "
        "conversation in the same pane", show=False, palette="Restart the agent in place",
    ),
    Command(
        "fleet.restore", "ctrl+o", "restore_fleet", "Restore fleet",
        "Bring back this server's remembered agents that are gone (after a reboot or a lost server): "
        "shows the plan and asks first, as nbs-tui restore", show=False, palette="Restore the remembered fleet",
    ),
    Command(
        "background.open", "o", "open_background", "Open bg session",
        "Open the selected Claude Code background session (◇ in the list, from claude --bg) in a new tmux "
        "window: claude attach ID in its folder; that pane is then watched like any other (Enter on its row too; "
        "the palette names each one listed)",
        show=False, in_palette=False,
    ),
    Command(
        "app.usage", "U", "usage", "Usage",
        "Each account's 5-hour and 7-day use with reset countdowns, burn rate, time to the limit, cost; "
        "each agent's cost and share of the burn (nbs-tui usage; docs/usage.md)",
        show=False, palette="Show usage per account",
    ),
    Command(
        "budget.lift", "dollar_sign", "operator('lift_budget')", "Lift cap",
        "Lift the per-agent daily cost cap for the selected agent (logged); the lease holder feeds it again",
        show=False, key_display="$", palette="Lift the budget cap for this agent",
    ),
    Command("app.action_log", "L", "action_log", "Log", "Show the action log: every action, sent or skipped", palette="Show the action log"),
    Command(
        "agent.review", "v", "review", "Review",
        "Review what the selected agent changed: its files and diffs, comments sent back to it, and for an "
        "agent in its own worktree merge or discard (each asked first)", show=False, palette="Review the agent's changes",
    ),
    # the review screen's own keys (nbs_tui/widgets/review_screen.py)
    Command("review.next_file", "right_square_bracket", "file(1)", "Next file", "Next file", key_display="]", scope="review", in_palette=False),
    Command("review.previous_file", "left_square_bracket", "file(-1)", "Prev file", "Previous file", key_display="[", show=False, scope="review", in_palette=False),
    Command("review.down", "j,down", "line(1)", "Down", "Next line", key_display="j/↓", show=False, scope="review", in_palette=False),
    Command("review.up", "k,up", "line(-1)", "Up", "Previous line", key_display="k/↑", show=False, scope="review", in_palette=False),
    Command("review.page_down", "pagedown", "page(1)", "Page down", "A page down", show=False, scope="review", in_palette=False),
    Command("review.page_up", "pageup", "page(-1)", "Page up", "A page up", show=False, scope="review", in_palette=False),
    Command("review.next_hunk", "n", "hunk(1)", "Hunk", "Next hunk", scope="review", in_palette=False),
    Command("review.previous_hunk", "N", "hunk(-1)", "Prev hunk", "Previous hunk", show=False, scope="review", in_palette=False),
    Command("review.comment", "c", "comment(False)", "Comment", "Comment on the line under the cursor", scope="review", in_palette=False),
    Command("review.comment_hunk", "C", "comment(True)", "Hunk comment", "Comment on the whole hunk", show=False, scope="review", in_palette=False),
    Command(
        "review.send", "s", "send", "Send",
        "Send the comments to the agent as one prompt (each file:line and its text), once, only while it is idle",
        scope="review", in_palette=False,
    ),
    Command("review.reload", "r", "reload", "Reload", "Read the agent's changes again (after its next turn)", show=False, scope="review", in_palette=False),
    Command("review.layout", "u", "layout", "Layout", "Unified or side by side (auto: as the width allows)", scope="review", in_palette=False),
    Command(
        "review.merge", "M", "merge", "Merge",
        "Merge the agent's branch into its base (asked first; only while idle; refused on a conflict)",
        scope="review", in_palette=False,
    ),
    Command(
        "review.discard", "X", "discard", "Discard",
        "Discard the agent's work (asked first; only while idle; kept under a backup ref)", scope="review", in_palette=False,
    ),
    Command("review.close", "q,escape", "close", "Close", "Close the review", key_display="q/Esc", scope="review", in_palette=False),
    # keys a widget handles itself (help only)
    Command("list.move", "up,down", "", "", "List: move the cursor (the mirror follows)", key_display="↑ / ↓", bound=False, in_palette=False),
    Command("list.open", "enter", "", "", "List: zoom the pane under the cursor", key_display="⏎", bound=False, in_palette=False),
    Command(
        "queue.agent", "enter", "", "", "Queue: show the highlighted task's agent in the list", key_display="⏎", bound=False,
        in_palette=False,
    ),
    Command(
        "passthrough.leave", "ctrl+right_square_bracket", "", "", "Pass-through: leave (back to the dashboard's keys)",
        key_display="Ctrl+]", bound=False, in_palette=False,
    ),
)

COMMAND_BY_ID = {command.id: command for command in COMMANDS}


def bindings(commands: Iterable[Command] = COMMANDS) -> list[Binding]:
    """The app's BINDINGS (in table order: that is the footer's order)."""
    return [command.binding() for command in commands if command.bound and not command.scope]


def scope_bindings(scope: str, commands: Iterable[Command] = COMMANDS) -> list[Binding]:
    """A widget's BINDINGS: the table's commands of that ``scope``."""
    return [command.binding() for command in commands if command.bound and command.scope == scope]


HelpRow = tuple[str, str, str]
"""(keys, what, binding id) as the help screen lists them ("" for a key with no binding id)."""


class HelpRows:
    """Builds the help screen's rows: one per binding id, the keys merged, first seen first."""

    def __init__(self, key_display: Callable[[Binding], str]) -> None:
        self._display = key_display
        self.rows: dict[str, HelpRow] = {}

    def add(self, binding: Binding, help_text: str = "") -> None:
        ident = binding.id or binding.action
        if binding.key_display:
            displays = [binding.key_display]
        else:
            displays = [self._display(replace(binding, key=key.strip())) for key in binding.key.split(",")]
        keys, description, _ = self.rows.get(ident, ("", help_text or binding.description, ident))
        for display in displays:
            if display not in keys.split(" / "):
                keys = f"{keys} / {display}" if keys else display
        self.rows[ident] = (keys, description, ident)

    def add_widget_key(self, command: Command) -> None:
        """A key a widget handles itself: no binding id to rebind, so none is shown."""
        self.rows.setdefault(command.id, (command.keys_shown, command.help, ""))

    def add_widget_keys(self, scope: str, items: Sequence[object]) -> None:
        """A widget's own BINDINGS, as ``Scope: what`` (only bindings with an id)."""
        for item in items:
            if isinstance(item, Binding) and item.id:
                self.add(item, f"{scope}: {item.description.lower()}")


def help_rows(
    key_display: Callable[[Binding], str],
    active: Sequence[Binding],
    widget_keys: Sequence[tuple[str, Sequence[object]]],
) -> list[HelpRow]:
    """Every row of the help screen: the table's bound commands (with the keys in force), then
    each widget's own keys, then the keys widgets handle themselves, then Textual's (focus,
    palette, quit)."""
    rows = HelpRows(key_display)
    by_id = {binding.id: binding for binding in active if binding.id}
    for command in COMMANDS:  # in force now only: e.g. the pane keys do nothing in the Control view
        if command.bound and (binding := by_id.get(command.id)) is not None:
            rows.add(binding, command.help)
    for scope, items in widget_keys:
        rows.add_widget_keys(scope, items)
    for command in COMMANDS:
        if not command.bound:
            rows.add_widget_key(command)
    for binding in active:
        if binding.id not in COMMAND_BY_ID and binding.description:
            rows.add(binding)
    return list(rows.rows.values())
