"""Which task goes next, to which agent: the feeder's decisions, pure.

The feeder (`nbs_tui.sidecar.queue_feeder`) gives `plan_handouts` the queue, the agents as the
holder sees them now and the config's folder limits, and carries out what it returns, one
hand-out at a time. The rules (docs/queue.md):

- tasks go by priority, then age (`Task.order`); a task waits while the queue is paused, while
  its ``after`` task is not done, and while its folder is at its ``max_concurrent``;
- an agent may take a task when it is idle, holds no task, and matches the task: its folder is
  the task's folder or below it (``--folder``), its window or worker name matches the glob
  (``--agents``), or any agent when neither is given;
- when no agent may take it, a task that may start one (``--start``, a ``--worker`` task, or a
  folder with a ``max_concurrent``) gets a new agent in its folder; under a ``max_concurrent``
  only while the folder has fewer agents that could take it than the limit (a worker task, its
  own agent, always);
- never more than ``max_concurrent`` tasks of one folder out at once (an agent holds one task,
  so that is the number of agents busy on them).
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from nbs_tui.core.queue.task_states import QueueState, Task, TaskState

IDLE_STATES = frozenset({"idle", "stuck"})
"""Published agent states (``@nbs_state``) at an idle prompt, ready for a prompt."""


@dataclass(frozen=True, slots=True)
class QueueAgent:
    """One agent as the feeder sees it."""

    pane: str
    folder: str = ""
    window: str = ""
    worker: str = ""
    state: str = ""
    """As detected (`nbs_tui.core.fleet.model.AgentState` values, ``stuck``...)."""

    @property
    def idle(self) -> bool:
        return self.state in IDLE_STATES


@dataclass(frozen=True, slots=True)
class Handout:
    """Hand ``task`` to the agent in ``pane``, or start a new agent for it (``pane`` "")."""

    task: Task
    pane: str = ""

    @property
    def starts(self) -> bool:
        return not self.pane


def within(folder: str, parent: str) -> bool:
    """``folder`` is ``parent`` or below it (both absolute; compared as normalised paths)."""
    if not folder or not parent:
        return False
    folder, parent = posixpath.normpath(folder), posixpath.normpath(parent)
    return folder == parent or folder.startswith(parent.rstrip("/") + "/")


def may_take(task: Task, agent: QueueAgent) -> bool:
    """The agent matches the task's ``--folder`` and ``--agents`` (its state aside)."""
    added = task.added
    if added.worker:
        return False  # a worker task is a new agent running the worker's file, always
    if added.folder and not within(agent.folder, added.folder):
        return False
    names = (agent.window, agent.worker)
    return not added.agents or any(
        name and fnmatch.fnmatchcase(name, added.agents) for name in names
    )


def folder_limit(folder: str, limits: Mapping[str, int]) -> tuple[str, int | None]:
    """The configured folder ``folder`` falls under (the nearest one) and its ``max_concurrent``;
    ``("", None)`` when none is configured above it."""
    best = ""
    for configured in limits:
        if within(folder, configured) and len(configured) > len(best):
            best = configured
    return (best, limits[best]) if best else ("", None)


def parse_max_concurrent(table: object) -> dict[str, int]:
    """The config file's ``[max_concurrent]`` table: absolute folder = a number of 1 or more
    (``~`` is expanded by the caller's shell rules: not here). Raises ValueError saying what is wrong."""
    if not isinstance(table, Mapping):
        raise ValueError('max_concurrent must be a table of "/absolute/folder" = number')
    limits: dict[str, int] = {}
    for folder, value in table.items():
        if not isinstance(folder, str) or not folder.startswith("/"):
            raise ValueError(f"max_concurrent: {folder!r} is not an absolute folder")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"max_concurrent.{folder!r}: must be a whole number of 1 or more, not {value!r}")
        limits[posixpath.normpath(folder)] = value
    return limits


def may_start(task: Task, limits: Mapping[str, int]) -> bool:
    """The feeder may start a new agent for ``task`` (when no agent may take it)."""
    if not task.folder:
        return False
    return bool(task.worker or task.added.start or folder_limit(task.folder, limits)[1] is not None)


def blocked_for_good(queue: QueueState) -> list[tuple[Task, str]]:
    """Queued tasks whose ``after`` task failed or was cancelled (they would wait for ever), with
    why: the feeder fails them (final)."""
    found: list[tuple[Task, str]] = []
    for task in queue:
        if task.state is not TaskState.QUEUED or not task.added.after:
            continue
        before = queue.get(task.added.after)
        if before is None:
            found.append((task, f"it runs after task {task.added.after}, which does not exist"))
        elif before.state in (TaskState.FAILED, TaskState.CANCELLED):
            found.append((task, f"it runs after task {before.id}, which {before.state}"))
    return found


def plan_handouts(
    queue: QueueState, agents: Sequence[QueueAgent], limits: Mapping[str, int]
) -> list[Handout]:
    """What to hand out now, in order (module docstring). Each agent appears at most once."""
    if queue.paused:
        return []
    holding = {task.pane for task in queue if task.state.out and task.pane}
    free = [agent for agent in agents if agent.idle and agent.pane not in holding]
    busy: dict[str, int] = {}
    for task in queue:
        if task.state.out and task.folder:
            key = folder_limit(task.folder, limits)[0]
            busy[key] = busy.get(key, 0) + 1
    plan: list[Handout] = []
    for task in queue.ordered():
        if task.state is not TaskState.QUEUED or not _after_done(queue, task):
            continue
        key, limit = folder_limit(task.folder, limits) if task.folder else ("", None)
        if limit is not None and busy.get(key, 0) >= limit:
            continue
        agent = next((agent for agent in free if may_take(task, agent)), None)
        if agent is not None:
            free.remove(agent)
            plan.append(Handout(task, agent.pane))
        elif may_start(task, limits) and (limit is None or task.worker or _room(task, agents, plan, limit)):
            plan.append(Handout(task))
        else:
            continue
        if limit is not None:
            busy[key] = busy.get(key, 0) + 1
    return plan


def _room(task: Task, agents: Sequence[QueueAgent], plan: Sequence[Handout], limit: int) -> bool:
    """A folder with a limit gets a new agent only while it has fewer agents that could take
    the task (whatever they do now) than its limit: otherwise the queue waits for one of them."""
    there = sum(1 for agent in agents if may_take(task, agent))
    starting = sum(1 for handout in plan if handout.starts and handout.task.folder == task.folder)
    return there + starting < limit


def _after_done(queue: QueueState, task: Task) -> bool:
    if not task.added.after:
        return True
    before = queue.get(task.added.after)
    return before is not None and before.state is TaskState.DONE


def holders(queue: QueueState) -> dict[str, Task]:
    """pane -> the task it holds (each agent holds at most one: `plan_handouts` sees to it)."""
    return {task.pane: task for task in queue if task.state.out and task.pane}


def matching_agents(task: Task, agents: Iterable[QueueAgent]) -> list[QueueAgent]:
    """The agents that may take ``task`` whatever their state (for ``queue ls``: why it waits)."""
    return [agent for agent in agents if may_take(task, agent)]
