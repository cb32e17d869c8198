"""The budget governor's rules (issue 37 item 4): which agents are fed nothing more, and why.

The lease holder asks `BudgetGovernor.decide` once per pass with the accounts' usage
(`nbs_tui.core.fleet.usage`), which account each agent pane runs under and the caps
(`nbs_tui.core.fleet.accounts.Budget`). An agent is *held* while:

* its account is at a cap: its 5-hour or 7-day ``used_percentage`` has reached the account's
  ``max_five_hour_percent`` / ``max_seven_day_percent`` (else ``[budget]``'s defaults);
* the fleet's spend over the last 24 hours has reached ``fleet_max_cost_usd_per_day``;
* the agent's own spend over the last 24 hours has reached ``agent_max_cost_usd_per_day``
  (that agent only), unless the operator lifted the cap for it (`lift`).

Held means fed nothing: no ``/nbs-poll``, no nudge, no limit resume, no queue hand-out (the
sidecar reads `SidecarContext.held`). It never means interrupted: a working agent finishes its
turn. When an account's cap goes (its window reset, or a cap raised), its agents are released one
at a time, ``stagger`` seconds apart, as limited agents are resumed after a reset.

Each time an account reaches a cap the decision carries one `BudgetNotice` (one needs-you line
and one push, on the account's first agent); none again until it has opened and closed again.

Burn alarms (item 5): an agent burning `ALARM_FACTOR` times faster than the median of its
peers (every other agent seen lately, at least `ALARM_PEERS` of them), and at least
`ALARM_FLOOR_USD_PER_HOUR`, such as a loop re-reading a huge context, gets a needs-you line with
the figure (`burn_alarms`), whatever the caps: the account has not felt it yet.

Pure: the usage, the panes and the time come in; decisions go out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nbs_tui.core.fleet.accounts import Budget
from nbs_tui.core.fleet.model import PaneId
from nbs_tui.core.fleet.usage import RATE_SPAN, AccountUsage, duration_text

ALARM_FACTOR = 5.0
ALARM_PEERS = 2
ALARM_FLOOR_USD_PER_HOUR = 1.0


@dataclass(frozen=True, slots=True)
class BudgetNotice:
    """An account reached a cap (``pane_id``: the agent whose needs-you line says so)."""

    pane_id: PaneId
    account: str
    message: str


@dataclass(frozen=True, slots=True)
class BudgetDecision:
    held: Mapping[PaneId, str]
    """Pane -> why nothing is fed to it."""
    notices: tuple[BudgetNotice, ...] = ()
    needs_you: Mapping[PaneId, str] = field(default_factory=dict)
    """The needs-you lines while a cap holds: one per capped account (its first agent); and
    one per agent with a burn alarm."""
    alarms: tuple[BudgetNotice, ...] = ()
    """Burn alarms that began at this decision (each said once per spell)."""


def cap_reason(usage: AccountUsage, budget: Budget, now: float) -> str | None:
    """Why the account is at a cap (``account a at its 5-hour cap: 85 % of 80 %, resets in
    1h02m``), or None."""
    five_cap, seven_cap = budget.caps_of(usage.account)
    for label, window, cap in (("5-hour", usage.five_hour, five_cap), ("7-day", usage.seven_day, seven_cap)):
        if window is None or cap is None or window.used_percentage < cap:
            continue
        reset = f", resets in {duration_text(window.resets_at - now)}" if window.resets_at is not None else ""
        return f"account {usage.account.name} at its {label} cap: {window.used_percentage:.0f} % of {cap:.0f} %{reset}"
    return None


class BudgetGovernor:
    """Keeps which accounts are capped and who is released when (module docstring)."""

    def __init__(self, stagger: float = 30.0) -> None:
        self.stagger = stagger
        self._capped: dict[str, str] = {}
        """config_dir -> why, for the accounts at a cap at the last decision."""
        self._release_at: dict[PaneId, float] = {}
        """Panes of an account whose cap went: fed again from this time (wall seconds)."""
        self._told_caps: set[str] = set()
        """Accounts whose cap was announced (they stay told until the cap goes)."""
        self._burning: set[PaneId] = set()
        """Panes whose burn alarm was announced (until it stops)."""
        self.lifted: dict[PaneId, str] = {}
        """Panes the operator lifted the per-agent cap for -> the session it was lifted for."""

    @property
    def releasing(self) -> bool:
        """Agents of an account whose cap went are waiting for their turn to be fed again."""
        return bool(self._release_at)

    def lift(self, pane_id: PaneId, session_id: str = "") -> None:
        """The operator lifts the per-agent cap for this agent (logged by the caller)."""
        self.lifted[pane_id] = session_id

    def decide(
        self,
        now: float,
        usages: Sequence[AccountUsage],
        pane_accounts: Mapping[PaneId, str],
        budget: Budget,
        *,
        announce: bool = True,
    ) -> BudgetDecision:
        """``pane_accounts``: each agent pane's ``CLAUDE_CONFIG_DIR``, in the panes' order.
        ``announce`` False (a viewer, or before the lease is held): no notice is made, and none is
        counted as told, so the holder still says each one once."""
        by_dir = {usage.account.config_dir: usage for usage in usages}
        held: dict[PaneId, str] = {}
        notices: list[BudgetNotice] = []
        needs: dict[PaneId, str] = {}
        capped_now: dict[str, str] = {}
        for config_dir, usage in by_dir.items():
            why = cap_reason(usage, budget, now)
            if why is not None:
                capped_now[config_dir] = why
        panes_of: dict[str, list[PaneId]] = {}
        for pane_id, config_dir in pane_accounts.items():
            panes_of.setdefault(config_dir, []).append(pane_id)
        for config_dir, why in capped_now.items():
            panes = panes_of.get(config_dir, [])
            for pane_id in panes:
                held[pane_id] = why
                self._release_at.pop(pane_id, None)
            if panes:
                needs[panes[0]] = why
                if config_dir not in self._told_caps and announce:
                    notices.append(BudgetNotice(panes[0], by_dir[config_dir].account.name, why))
                    self._told_caps.add(config_dir)
        for config_dir in self._capped:
            if config_dir in capped_now:
                continue
            for index, pane_id in enumerate(panes_of.get(config_dir, [])):  # released in turn
                self._release_at.setdefault(pane_id, now + index * self.stagger)
        self._capped = {d: w for d, w in capped_now.items() if panes_of.get(d) or d in self._capped}
        self._told_caps &= set(capped_now)
        for pane_id, at in list(self._release_at.items()):
            if pane_id not in pane_accounts or at <= now:
                del self._release_at[pane_id]
            elif pane_id not in held:
                held[pane_id] = f"cap lifted: fed again in turn, in {duration_text(at - now)}"
        fleet_why = _fleet_cap(usages, budget)
        agent_cap = budget.agent_max_cost_usd_per_day
        pane_sessions = {agent.pane: (agent.session_id, agent.cost_usd_today) for u in usages for agent in u.agents}
        for pane_id in pane_accounts:
            if pane_id in held:
                continue
            if fleet_why is not None:
                held[pane_id] = fleet_why
                continue
            session, today = pane_sessions.get(pane_id, ("", 0.0))
            if agent_cap is not None and today >= agent_cap:
                lifted = self.lifted.get(pane_id)
                if lifted is None or (lifted and session and lifted != session):
                    held[pane_id] = f"agent at its daily cap: ${today:.2f} of ${agent_cap:.2f} in 24 h"
        for pane_id in list(self.lifted):
            if pane_id not in pane_accounts:
                del self.lifted[pane_id]
        burning = burn_alarms(usages, now)
        alarms = tuple(
            BudgetNotice(pane_id, account, message)
            for pane_id, (account, message) in burning.items()
            if pane_id not in self._burning and announce
        )
        self._burning = (self._burning & set(burning)) | {alarm.pane_id for alarm in alarms}
        for pane_id, (_account, message) in burning.items():
            needs.setdefault(pane_id, message)
        return BudgetDecision(held, tuple(notices), needs, alarms)


def _fleet_cap(usages: Sequence[AccountUsage], budget: Budget) -> str | None:
    cap = budget.fleet_max_cost_usd_per_day
    if cap is None:
        return None
    spent = sum(agent.cost_usd_today for usage in usages for agent in usage.agents)
    return f"fleet at its daily cap: ${spent:.2f} of ${cap:.2f} in 24 h" if spent >= cap else None


def burn_alarms(usages: Sequence[AccountUsage], now: float) -> dict[PaneId, tuple[str, str]]:
    """Agents burning far faster than their peers: pane -> (account, the needs-you line)."""
    agents = [(usage.account.name, agent) for usage in usages for agent in usage.agents if agent.pane and agent.last_seen >= now - RATE_SPAN]
    found: dict[PaneId, tuple[str, str]] = {}
    for index, (account, agent) in enumerate(agents):
        peers = sorted(other.usd_per_hour for i, (_, other) in enumerate(agents) if i != index)
        if len(peers) < ALARM_PEERS:
            continue
        middle = len(peers) // 2
        median = peers[middle] if len(peers) % 2 else (peers[middle - 1] + peers[middle]) / 2
        rate = agent.usd_per_hour
        if rate >= ALARM_FLOOR_USD_PER_HOUR and rate >= ALARM_FACTOR * max(median, ALARM_FLOOR_USD_PER_HOUR / ALARM_FACTOR):
            times = f"{rate / median:.0f}x" if median > 0 else "far above"
            found[agent.pane] = (
                account,
                f"burn: ${rate:.2f}/h, {times} its peers' median ${median:.2f}/h "
                f"({agent.tokens_lately:,} tokens in {RATE_SPAN / 60:.0f} min; account {account})",
            )
    return found
