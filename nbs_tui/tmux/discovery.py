"""Find every pane of a tmux server and tell which ones run Claude Code.

One ``tmux list-panes -a -F`` lists the whole server (in-band on the fleet's connection, or a
process of a few ms even at 200 panes); agent detection walks ``/proc`` below each pane's shell.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from nbs_tui.core.fleet.model import PaneInfo, ServerAddress
from nbs_tui.core.fleet.process_tree import walk
from nbs_tui.core.screen.text import printable
from nbs_tui.files.proc import PROC, ProcShortage, children, children_named, read_or_none
from nbs_tui.tmux.commands import TmuxServerCommands
from nbs_tui.tmux.errors import TmuxError

SEP = "\x1f"
"""Field separator in our formats: a control character tmux never lets into names or titles."""

FIELDS = (
    "pid",
    "session_id",
    "session_name",
    "window_id",
    "window_index",
    "window_name",
    "pane_id",
    "pane_index",
    "pane_pid",
    "pane_width",
    "pane_height",
    "pane_active",
    "window_active",
    "pane_dead",
    "pane_current_command",
    "pane_current_path",
    "pane_title",
)
FORMAT = SEP.join("#{" + name + "}" for name in FIELDS)

_VERSION_COMMAND = re.compile(r"^\d+\.\d+\.\d+")
TITLE_MARKS = frozenset("✳✶✻✽✢·*⠁⠂⠄⡀⢀⠠⠐⠈⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
"""First characters of the pane titles Claude Code sets (idle ``✳``, spinner frames)."""
AGENT_MODULES = ("nbs_tui.demo.agent",)
"""Python modules that stand in for Claude Code (the demo fleet's imitation agent)."""

WALK_BUDGET = 200
"""Panes whose children a listing reads from /proc at most, besides every pane new or changed in
the listing (first process, current command, dead): a larger fleet's unchanged panes are read
in turns (`panes_from_listing`'s ``turn``), so a rescan every 2 s of 1,000 idle shells reads 200
of them, each every 5th rescan (a wrapper's child that execs Claude Code, the one change the
listing does not show, is seen within 10 s there instead of 2 s; Claude Code's title shows it
sooner). Up to this many panes, every pane is read every time."""


AgentKey = tuple[str, int, str, bool, tuple[tuple[int, str], ...], bool]
"""What an agent verdict holds for: pane, first process, current command, dead, the first
process's children by pid and name (`nbs_tui.files.proc.children_named`; empty where this
machine's /proc does not show the pane), and whether the title looks like Claude Code's
(`titled_like_an_agent`: on another host the only sign in the listing that a wrapper started one)."""


@dataclass(frozen=True, slots=True)
class DiscoveredPane:
    """A pane with the tmux ids the fleet needs besides the shared `PaneInfo`."""

    info: PaneInfo
    session_id: str
    window_id: str
    server_pid: int


def parse_panes(text: str) -> list[DiscoveredPane]:
    """Parse ``list-panes -a -F FORMAT`` output; lines that do not parse are skipped."""
    panes: list[DiscoveredPane] = []
    for line in text.splitlines():
        pane = _parse_line(line)
        if pane is not None:
            panes.append(pane)
    return panes


@functools.lru_cache(maxsize=4096)
def _parse_line(line: str) -> DiscoveredPane | None:
    """One listing line as a pane (None: it does not parse). A rescan every 2 s lists every
    pane again, nearly always as before: a line seen lately is not parsed again (the result is
    frozen; at 1,000 panes parsing was a third of the supervisor's time, issue 35)."""
    parts = line.split(SEP)
    if len(parts) != len(FIELDS):
        return None
    f = dict(zip(FIELDS, parts, strict=True))
    try:
        info = PaneInfo(
            pane_id=f["pane_id"],
            # names only shown are made printable here, once (core/screen/text.py says why);
            # the folder is kept as it is: the control plane opens it
            session_name=printable(f["session_name"]),
            window_index=int(f["window_index"]),
            window_name=printable(f["window_name"]),
            pane_index=int(f["pane_index"]),
            title=printable(f["pane_title"]),
            current_command=printable(f["pane_current_command"]),
            current_path=f["pane_current_path"],
            pid=int(f["pane_pid"] or 0),
            width=int(f["pane_width"]),
            height=int(f["pane_height"]),
            active=f["pane_active"] == "1" and f["window_active"] == "1",
            dead=f["pane_dead"] == "1",
        )
    except ValueError:
        return None
    return DiscoveredPane(info, f["session_id"], f["window_id"], int(f["pid"] or 0))


@dataclass(frozen=True, slots=True)
class Discovery:
    panes: list[DiscoveredPane]
    """Agents marked, in session/window/pane order."""
    in_band: bool
    """Asked on a control connection (no process)."""


def discover(
    commands: TmuxServerCommands,
    agent_cache: dict[AgentKey, bool] | None = None,
    timeout: float = 5.0,
    turn: int = 0,
) -> Discovery:
    """Every pane of the server, agents marked, in session/window/pane order.

    A pane in a window linked into several sessions is listed once, under the first session.
    ``agent_cache`` (kept by the caller between calls) remembers the process-tree verdict per
    `AgentKey`, so a rescan walks /proc only for panes whose foreground command or first
    process's children changed (the children because a wrapper without job control, ``sh -c``
    or a script, stays the current command while it starts Claude Code below it). On another
    host this machine's /proc says nothing about the panes: that host is asked
    (`TmuxRunner.detect_agents`), again when a pane's title comes to look like Claude Code's
    (what the listing shows of a wrapper starting one), else command and title decide.
    ``turn``: the caller's count of its listings, for `WALK_BUDGET`'s turns.
    """
    runner = commands.runner
    try:
        out = commands.run("list-panes", "-a", "-F", FORMAT, timeout=timeout)
    except TmuxError as exc:
        if "no sessions" in str(exc).lower():
            return Discovery([], False)
        raise
    panes = panes_from_listing(
        out.text, agent_cache, walk=not runner.remote, detect=runner.detect_agents if runner.remote else None, turn=turn
    )
    return Discovery(panes, out.in_band)


def list_panes(
    server: ServerAddress,
    *,
    tmux: str = "tmux",
    agent_cache: dict[AgentKey, bool] | None = None,
) -> list[DiscoveredPane]:
    """`discover` on a server of this machine, by one ``tmux list-panes`` process."""
    return discover(TmuxServerCommands.for_server(server, tmux), agent_cache).panes


def panes_from_listing(
    text: str,
    agent_cache: dict[AgentKey, bool] | None = None,
    *,
    walk: bool = True,
    detect: Callable[[Sequence[PaneInfo]], dict[str, bool]] | None = None,
    turn: int = 0,
) -> list[DiscoveredPane]:
    """The fleet from ``list-panes -a -F FORMAT`` output, however it was run (a subprocess, or
    in-band on a control connection); ``walk``: whether this machine's /proc shows the panes;
    ``detect``: asks the panes' own host, once for every pane not in the cache; ``turn``: which
    of the unchanged panes past `WALK_BUDGET` have their children read this time."""
    panes = parse_panes(text)
    panes.sort(key=lambda p: (p.info.session_name, p.info.window_index, p.info.pane_index))
    cache = agent_cache if agent_cache is not None else {}
    live_keys: set[AgentKey] = set()
    marked: list[DiscoveredPane] = []
    seen: set[str] = set()
    unique: list[DiscoveredPane] = []
    for p in panes:
        if p.info.pane_id not in seen:
            seen.add(p.info.pane_id)
            unique.append(p)
    keys = _agent_keys(unique, cache, walk, turn)
    for key in keys.values():
        if key is not None and key not in cache:
            # A title that comes to look like Claude Code's is news only to a "no": an agent's
            # titles need not all look alike (working, idle), and each would cost a walk
            carried = cache.get((*key[:-1], not key[-1]))
            if carried is not None and (carried or not key[-1]):
                cache[key] = carried
    asked: dict[str, bool] = {}
    if detect is not None:
        new = [p.info for p in unique if keys[p.info.pane_id] not in cache]
        asked = detect(new) if new else {}
    for p in unique:
        key = keys[p.info.pane_id]
        agent = cache.get(key) if key is not None else None
        if key is not None:
            live_keys.add(key)
        if agent is None:
            verdict = asked.get(p.info.pane_id)
            if verdict is not None:
                agent = verdict
                if key is not None:
                    cache[key] = agent
            else:
                agent, certain = agent_verdict(p.info, walk=walk)
                if certain and key is not None:  # an unsure one (say, out of file descriptors) is asked again next scan
                    cache[key] = agent
        marked.append(DiscoveredPane(_with_agent(p.info, agent), p.session_id, p.window_id, p.server_pid))
    for key in set(cache) - live_keys:
        del cache[key]
    return marked


def _agent_keys(
    panes: Sequence[DiscoveredPane], cache: dict[AgentKey, bool], walk: bool, turn: int
) -> dict[str, AgentKey | None]:
    """Each pane's `AgentKey`: its children read from /proc, except for the unchanged panes
    (first process, current command and dead as when last keyed) not in this ``turn``, past
    `WALK_BUDGET` of them: those keep the children they were last keyed with."""
    known = {key[:4]: key for key in cache}
    unchanged = [p for p in panes if walk and _listed(p.info) in known]
    turns = -(-len(unchanged) // WALK_BUDGET)
    later = {p.info.pane_id for at, p in enumerate(unchanged) if turns > 1 and at % turns != turn % turns}
    keys: dict[str, AgentKey | None] = {}
    for p in panes:
        if p.info.pane_id in later:
            last = known[_listed(p.info)]
            keys[p.info.pane_id] = (*_listed(p.info), last[4], titled_like_an_agent(p.info.title))
        else:
            keys[p.info.pane_id] = _agent_key(p.info, walk)
    return keys


def _listed(info: PaneInfo) -> tuple[str, int, str, bool]:
    """What of an `AgentKey` the listing itself shows (its children come from /proc)."""
    return (info.pane_id, info.pid, info.current_command, info.dead)


def _agent_key(info: PaneInfo, walk: bool) -> AgentKey | None:
    """The key a verdict on ``info`` is remembered by; None when the pane's children could not
    be read for want of resources (then nothing is remembered: asked again next scan)."""
    below: tuple[tuple[int, str], ...] = ()
    if walk and not info.dead and info.pid > 0:
        try:
            below = children_named(info.pid)
        except ProcShortage:
            return None
    return (info.pane_id, info.pid, info.current_command, info.dead, below, titled_like_an_agent(info.title))


def titled_like_an_agent(title: str) -> bool:
    """Whether ``title`` starts as Claude Code's do (idle ``✳``, a spinner frame). Over ssh
    this machine cannot see a pane's children, and asking the host every scan would cost a round
    trip each time: a wrapper without job control (``sh -c``, a script) that starts Claude Code
    after the host said "no agent" changes neither the pane's first process nor its current
    command, but Claude Code sets the title as it starts, so the verdict is asked again then."""
    return title[:1] in TITLE_MARKS


def _with_agent(info: PaneInfo, agent: bool) -> PaneInfo:
    if info.is_agent == agent:
        return info
    from dataclasses import replace

    return replace(info, is_agent=agent)


def filter_sessions(panes: Iterable[DiscoveredPane], sessions: Sequence[str]) -> list[DiscoveredPane]:
    """Keep the panes of the named sessions (all of them when ``sessions`` is empty)."""
    if not sessions:
        return list(panes)
    wanted = set(sessions)
    return [p for p in panes if p.info.session_name in wanted]


# -- agent detection --------------------------------------------------------------------------


def agent_verdict(info: PaneInfo, proc: Path = PROC, *, walk: bool = True) -> tuple[bool, bool]:
    """Whether Claude Code runs in the pane, and whether that is sure.

    The process tree decides when it can be read: a ``claude`` executable (or a command line
    naming it) anywhere below the pane's first process. Without a readable tree, the pane's
    command (the native binary shows a version such as ``2.1.34``) and its title (Claude
    Code's ``✳``/spinner prefix) decide. Not sure: a walk that could not read /proc for want
    of resources (file descriptors, memory) and found no agent; the caller asks again later
    rather than keep a "no" that an idle agent would never change.
    """
    if info.dead:
        return False, True
    try:
        found = agent_in_process_tree(info.pid, proc) if walk else None
    except ProcShortage:
        found, certain = None, False
    else:
        certain = True
    if found is not None:
        return found, True
    if _VERSION_COMMAND.match(info.current_command):
        return True, True
    return titled_like_an_agent(info.title) and "claude" in info.title.lower(), certain


def agent_in_process_tree(pid: int, proc: Path = PROC, limit: int = 64) -> bool | None:
    """True/False from a walk of ``pid`` and its descendants; None if ``pid`` is unreadable.
    Raises `ProcShortage` when /proc could not be read for want of resources and no agent was
    seen (an agent found further on is still sure, so the walk goes on past such a read)."""
    if pid <= 0 or not (proc / str(pid)).exists():
        return None
    short: list[ProcShortage] = []

    def below(current: int) -> list[int]:
        try:
            return children(current, proc)
        except ProcShortage as error:
            short.append(error)
            return []

    for current in walk(pid, below, limit):
        try:
            if _is_claude_process(proc / str(current)):
                return True
        except ProcShortage as error:
            short.append(error)
    if short:
        raise short[0]
    return False


def _is_claude_process(path: Path) -> bool:
    comm = read_or_none(lambda: (path / "comm").read_text().strip())
    raw = read_or_none(lambda: (path / "cmdline").read_bytes()) if comm is not None else None
    if comm is None or raw is None:
        return False
    if comm == "claude":
        return True
    args = [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]
    return is_claude_cmdline(args)


def is_claude_cmdline(args: Sequence[str]) -> bool:
    """``claude ...``, ``/path/to/claude``, ``node .../@anthropic-ai/claude-code/cli.js`` and the
    demo agent count; an editor opening a file named ``claude.md`` does not."""
    for i, arg in enumerate(args[:4]):
        base = os.path.basename(arg)
        if i == 0 and base == "claude":
            return True
        if i > 0 and base == "claude" and os.path.basename(args[0]) in ("node", "bun", "deno"):
            return True
        if "claude-code" in arg and arg.endswith((".js", ".mjs", ".cjs")):
            return True
        if arg in AGENT_MODULES or (i > 0 and args[i - 1] == "-m" and arg in AGENT_MODULES):
            return True
    return False
