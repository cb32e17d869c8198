"""The budget governor in the sidecar (issue 37 item 4): the lease holder feeds nothing more to
the agents of an account at its cap (`nbs_tui.core.fleet.budget_rules`).

Once per pass (`update`) it reads what the status-line recorder appended to the usage spool
since the last pass, learns each new agent pane's account (its Claude Code process's
``CLAUDE_CONFIG_DIR``, else ``~/.claude``: `nbs_tui.claude.status.find_claude_process`, one walk
of ``/proc`` at most every `PROCESS_SCAN` seconds while a pane is unknown) and asks the rules.
`held` is what each pane's `SidecarContext.held` says: the pane's sidecar then types no poll,
the stuck watch no nudge and the limit watch no resume. Nothing is ever interrupted.

When an account reaches a cap the holder says so once: an `Escalation` (reason ``budget``) on
the account's first agent (the needs-you line and the push, as a stuck agent's) and a line in
the action log. The operator's lift of a per-agent cap (`lift`) is logged too.

Burn alarms (`nbs_tui.core.fleet.budget_rules.burn_alarms`) need no cap: an agent burning far
faster than its peers gets an `Escalation` (reason ``burn``) once per spell and a needs-you line
while it lasts. With no cap set, the panes' accounts are never looked up (no /proc walk).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from nbs_tui.claude.status import find_claude_process, process_table
from nbs_tui.claude.status_recorder import usage_spool_for
from nbs_tui.claude.usage_spool import UsageReader, append_line
from nbs_tui.config import Settings
from nbs_tui.core.fleet.budget_rules import BudgetDecision, BudgetGovernor
from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.core.fleet.usage import limit_record
from nbs_tui.operator.action_log import ActionLog, ActionRecord, Outcome
from nbs_tui.sidecar.events import Escalation, SidecarError
from nbs_tui.sidecar.sidecar_lease import SidecarLease
from nbs_tui.sidecar.watched_panes import EventOutlet

log = logging.getLogger(__name__)

LIFT_OPTION = "@nbs_budget_lift"
"""A pane option any view sets (the dashboard's lift key): the holder lifts the per-agent cap
for the agent in that pane (`BudgetWatch.update` reads it while an agent cap holds)."""
DECIDE_EVERY = 2.0
"""Seconds between two decisions when the spool brought nothing new and nobody waits for a
release (the figures move with new lines; the resets and the caps' times move slowly)."""
PROCESS_SCAN = 5.0
"""Seconds between two walks of /proc for panes whose account is not known yet."""


def budget_configured(settings: Settings) -> bool:
    budget = settings.budget
    return any(
        value is not None
        for value in (
            budget.max_five_hour_percent, budget.max_seven_day_percent,
            budget.agent_max_cost_usd_per_day, budget.fleet_max_cost_usd_per_day,
            *(a.max_five_hour_percent for a in settings.accounts), *(a.max_seven_day_percent for a in settings.accounts),
        )
    )  # fmt: skip


class BudgetWatch:
    """The holder's budget governor over every agent pane (module docstring). Tick thread only,
    except `held` and `lift` (a dict read, a dict write)."""

    def __init__(
        self,
        settings: Settings,
        outlet: EventOutlet,
        action_log: ActionLog,
        *,
        lease: SidecarLease | None,
        wall: Callable[[], float] = time.time,
        spool: Path | None = None,
    ) -> None:
        self.settings = settings
        self.capped = budget_configured(settings)
        """Some cap is set: the panes' accounts are looked up and held at their caps."""
        self.reader = UsageReader(spool or usage_spool_for(settings.hook_spool), settings.accounts)
        self.governor = BudgetGovernor(settings.limit_resume_stagger)
        self.decision = BudgetDecision({})
        self.outlet = outlet
        self.action_log = action_log
        self.lease = lease
        self.wall = wall
        self._accounts: dict[PaneId, tuple[int, str]] = {}
        """pane -> (pane pid, its agent's config folder)."""
        self._scanned_at = float("-inf")
        self._panes: frozenset[PaneId] = frozenset()
        self._decided_at = float("-inf")
        self._unwritten_limits: dict[PaneId, tuple[PaneInfo, str, float | None]] = {}
        """Limits seen before this process held the lease: the limit watch tells each once."""

    def held(self, pane_id: PaneId) -> str | None:
        return self.decision.held.get(pane_id)

    def needs_you(self) -> Mapping[PaneId, str]:
        return {
            pane_id: why if why.startswith("burn:") else f"budget: {why}"
            for pane_id, why in self.decision.needs_you.items()
            if pane_id in self._panes  # the spool names panes of every server
        }

    def lift(self, pane_id: PaneId, by: str = "operator") -> None:
        """The operator lifts the per-agent cap for the agent in ``pane_id`` (logged)."""
        session = next(
            (a.session_id for u in self.reader.accounts(self.wall()) for a in u.agents if a.pane == pane_id), ""
        )
        self.governor.lift(pane_id, session)
        self._log(pane_id, "budget lift", by, Outcome.SENT, "per-agent cap lifted for this agent")

    def update(self, panes: Mapping[PaneId, PaneInfo], wall_now: float) -> None:
        if self._unwritten_limits and (self.lease is None or self.lease.acting()):
            for pane_id, (info, kind, reset_at) in list(self._unwritten_limits.items()):
                if pane_id in panes:
                    self.limit_seen(info, kind, reset_at)
                else:
                    del self._unwritten_limits[pane_id]
        try:
            added = self.reader.read()
        except OSError as error:
            log.info("usage spool not read: %s", error)
            added = 0
        new_panes = frozenset(panes) != self._panes
        self._panes = frozenset(panes)
        if not (added or new_panes or self.governor.releasing or wall_now - self._decided_at >= DECIDE_EVERY):
            return  # nothing moved: the last decision stands (a pass a second, hundreds of sessions)
        self._decided_at = wall_now
        pane_accounts = self._pane_accounts(panes, wall_now) if self.capped else {}
        self._read_lifts()
        acting = self.lease is None or self.lease.acting()
        usages = self.reader.accounts(wall_now)
        decision = self.governor.decide(wall_now, usages, pane_accounts, self.settings.budget, announce=acting)
        self.decision = decision
        for notice in decision.notices:
            message = f"{notice.message}: nothing more is fed to its agents until then"
            self.outlet.emit(Escalation(notice.pane_id, wall_now, message, reason="budget"))
            self._log(notice.pane_id, "budget hold", "budget governor", Outcome.SKIPPED, message)
        for alarm in decision.alarms:  # the spool names agents of every server: only this one's
            if alarm.pane_id in panes:
                self.outlet.emit(Escalation(alarm.pane_id, wall_now, alarm.message, reason="burn"))

    def _read_lifts(self) -> None:
        """The lifts views asked for in tmux, while some agent is held at its own cap."""
        if self.lease is None or not any("daily cap" in why and "fleet" not in why for why in self.decision.held.values()):
            return
        try:
            out = self.lease.commands.run("list-panes", "-a", "-F", f"#{{pane_id}}\t#{{{LIFT_OPTION}}}")
        except Exception as error:  # a lift not read now is read at the next pass
            log.info("budget lifts not read: %s", error)
            return
        for row in out.rows("\t"):
            if len(row) == 2 and row[1] and row[0] not in self.governor.lifted:
                self.lift(row[0], by=f"operator ({row[1]})")

    def limit_seen(self, info: PaneInfo, kind: str, reset_at: float | None) -> None:
        """A usage-limit screen (or the 429 behind it) in an agent's pane: as the holder, append
        that window full until its reset to the usage spool (`limit_record`), so every view's
        figures and the caps know it as they know a status-line turn."""
        if self.lease is not None and not self.lease.acting():  # written once this process acts
            self._unwritten_limits[info.pane_id] = (info, kind, reset_at)
            return
        self._unwritten_limits.pop(info.pane_id, None)
        found = find_claude_process(info.pid, process_table(), (self.settings.claude_home,))
        if found is None:
            return
        line = limit_record(str(found.config_dir).rstrip("/"), info.pane_id, kind, reset_at, self.wall())
        try:
            append_line(self.reader.path, line)
        except OSError as error:
            self.outlet.emit(SidecarError(info.pane_id, self.wall(), f"usage spool: {error}"))

    def _log(self, pane_id: PaneId, action: str, why: str, outcome: Outcome, reason: str) -> None:
        record = ActionRecord(self.wall(), action, pane_id, pane_id, "", why, outcome, reason)
        try:
            self.action_log.append(record)
        except OSError as error:  # the event still tells the operator
            self.outlet.emit(SidecarError(pane_id, self.wall(), f"action log: {error}"))

    def _pane_accounts(self, panes: Mapping[PaneId, PaneInfo], wall_now: float) -> dict[PaneId, str]:
        for pane_id in [p for p, (pid, _) in self._accounts.items() if p not in panes or panes[p].pid != pid]:
            del self._accounts[pane_id]
        unknown = [info for pane_id, info in panes.items() if pane_id not in self._accounts]
        if unknown and wall_now - self._scanned_at >= PROCESS_SCAN:
            self._scanned_at = wall_now
            table = process_table()
            for info in unknown:
                found = find_claude_process(info.pid, table, (self.settings.claude_home,))
                if found is not None:
                    self._accounts[info.pane_id] = (info.pid, str(found.config_dir).rstrip("/"))
        return {pane_id: self._accounts[pane_id][1] for pane_id in panes if pane_id in self._accounts}
