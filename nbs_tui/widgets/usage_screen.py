"""The usage view (key ``U``): per account its 5-hour and 7-day windows with their reset
countdowns, the burn rate and the projected time to the limit, its cost; per agent its cost,
tokens and share of the account's burn, top spenders first (issue 37 item 3).

The figures come from a ``load`` callable (the dashboard's `nbs_tui.claude.usage_spool.UsageReader`)
asked again every `REFRESH` seconds; the words are the core's (`nbs_tui.core.fleet.usage`), the
same ``nbs-tui usage`` prints. Narrow (a phone): one column, the agents' table without tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from nbs_tui.core.fleet.accounts import Budget
from nbs_tui.core.fleet.budget_rules import cap_reason
from nbs_tui.core.fleet.usage import AccountUsage, duration_text, window_text
from nbs_tui.core.screen.text import printable
from nbs_tui.widgets.breakpoints import is_narrow

REFRESH = 2.0
TOP = 8
"""Agents listed per account (the top spenders)."""


def _percent_style(used: float) -> str:
    return "bold red" if used >= 90 else "yellow" if used >= 70 else "green"


def account_block(usage: AccountUsage, now: float, narrow: bool, budget: Budget) -> RenderableType:
    account = usage.account
    title = Text.assemble((printable(account.name), "bold"), f"  {usage.kind}", style="")
    if not narrow:
        title.append(f"  {printable(account.config_dir)}", style="dim")
    lines: list[RenderableType] = [title]
    for label, window, burn, limit_at in (
        ("5-hour", usage.five_hour, usage.burn_percent_per_hour, usage.limit_at),
        ("7-day", usage.seven_day, None, None),
    ):
        row = Text("  ")
        if window is not None:
            row.append(f"{label:<7}", style="bold")
            row.append(f"{window.used_percentage:5.1f} %", style=_percent_style(window.used_percentage))
            rest = window_text("", window, now, burn, limit_at).split("·", 1)
            if len(rest) > 1:
                row.append(" ·" + rest[1])
        else:
            row.append(window_text(label, None, now))
        lines.append(row)
    lines.append(Text(f"  cost ${usage.cost_usd:.2f} · {len(usage.agents)} agent{'s' if len(usage.agents) != 1 else ''}"))
    capped = cap_reason(usage, budget, now)
    if capped is not None:
        lines.append(Text(f"  ✖ {capped}: nothing more is fed to its agents", style="bold red"))
    if usage.agents:
        table = Table(box=None, show_header=True, header_style="dim", padding=(0, 1), pad_edge=False)
        table.add_column("  agent", no_wrap=True)
        table.add_column("cost", justify="right", no_wrap=True)
        if not narrow:
            table.add_column("tokens", justify="right", no_wrap=True)
        table.add_column("burn", justify="right", no_wrap=True)
        table.add_column("", no_wrap=not narrow, overflow="fold")
        for agent in usage.agents[:TOP]:
            who = agent.pane or agent.session_id[:8]
            share = "" if agent.burn_share is None else f"{agent.burn_share * 100:.0f} %"
            cap = budget.agent_max_cost_usd_per_day
            note = "at its daily cap" if cap is not None and agent.cost_usd_today >= cap else ""
            cells = [f"  {who}", f"${agent.cost_usd:.2f}"]
            if not narrow:
                cells.append(f"{agent.tokens:,}")
            cells += [share, note]
            table.add_row(*cells, style="yellow" if note else "")
        lines.append(table)
    return Group(*lines, Text(""))


class UsageScreen(ModalScreen[None]):
    """A modal with every account's usage; Escape, q or U closes it."""

    DEFAULT_CSS = """
    UsageScreen {
        align: center middle;
    }
    UsageScreen > Vertical {
        width: 95%;
        height: 90%;
        border: thick $primary;
        background: $surface;
        padding: 0 1;
    }
    UsageScreen.-narrow > Vertical {
        width: 100%;
        height: 100%;
        border: none;
        padding: 0;
    }
    UsageScreen VerticalScroll {
        height: 1fr;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,U", "close", "Close", id="usage.close"),
    ]

    def __init__(
        self,
        load: Callable[[], Sequence[AccountUsage]],
        wall: Callable[[], float],
        budget: Budget | None = None,
    ) -> None:
        super().__init__()
        self.load = load
        self.wall = wall
        self.budget = budget or Budget()
        self.body = Static(id="usage-body")
        self.accounts: list[AccountUsage] = []

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Usage per account", style="bold"), id="usage-title")
            with VerticalScroll():
                yield self.body
            yield Static(Text("Esc close · figures from Claude Code's status line (nbs-tui hooks install)", style="dim"))

    def on_mount(self) -> None:
        self.refresh_usage()
        self.set_interval(REFRESH, self.refresh_usage, name="usage")

    def refresh_usage(self) -> None:
        self.accounts = list(self.load())
        now = self.wall()
        narrow = is_narrow(self.app.size.width)
        if not self.accounts:
            self.body.update(Text("No usage recorded yet: run `nbs-tui hooks install` (per account: --account NAME).", style="dim"))
            return
        blocks = [account_block(usage, now, narrow, self.budget) for usage in self.accounts]
        self.body.update(Group(*blocks))

    def text(self) -> str:
        """Plain text of the figures (tests read it)."""
        now = self.wall()
        out = []
        for usage in self.accounts:
            five = usage.five_hour
            out.append(
                f"{usage.account.name}: 5-hour {five.used_percentage if five else '--'} % "
                f"resets in {duration_text((five.resets_at or now) - now) if five else '--'}"
            )
        return "\n".join(out)

    def action_close(self) -> None:
        self.dismiss(None)
