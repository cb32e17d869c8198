"""Start a demo fleet of imitation agents on a tmux server (private unless one is given).

``DemoFleet.start(agents=6)`` is what ``nbs-tui demo`` shows a new user: two or three sessions
(``alpha``, ``beta``, ``gamma`` for more than six agents), several windows and split panes,
one plain shell pane for contrast, and agents started with different scripts and seeds so
that the fleet shows every state at once (working, idle, a Bash permission menu, a plan menu,
an AskUserQuestion menu, \\nbs- lines and chat posts). Each agent works in its own demo
project under a temp dir; the projects hold ``.nbs/chat/<project>.chat`` (seeded with a few
messages), ``.nbs/control-inbox`` and a README; ``nbs-team`` also has the later releases'
per-agent ``.nbs/control-inbox-team-lead``, which its ``team-lead`` agent appends to.

``DemoFleet.start_busy(panes=50, busy_fraction=0.5)`` is the benchmark's load: ``panes``
agents, ``panes_per_window`` (default 4) tiled in each 160x48 window, windows grouped ten to
a session (``bench-0``, ``bench-1``...). The first ``round(panes * busy_fraction)`` agents run
``--busy --rate RATE``, the rest sit idle with some history. Give ``marker_dir`` to get, per
agent, a FIFO and a marker log (see ``nbs_tui.demo.agent`` for the marker facility); they
are in ``DemoAgent.marker_fifo`` / ``DemoAgent.marker_file``.

From a shell: ``python -m nbs_tui.demo.launcher [--agents N | --busy PANES] [--keep]`` starts a
fleet and prints how to attach to it and watch it.

Discovery: every agent pane gets the pane option ``@nbs_demo_agent 1`` (and
``@nbs_demo_script <script>``); the agent renames its own process to ``claude`` (so
``#{pane_current_command}`` is ``claude``) and sets the pane title as Claude Code does
(``✳ ...`` idle, ``⠂``/``⠐ ...`` working). The shell pane has none of these.

Like Claude Code, each agent keeps a session-status file, ``<fleet.claude_config>/sessions/<pid>.json``
(the panes get ``CLAUDE_CONFIG_DIR`` pointing there, inside the fleet's temp dir, never the
user's ``~/.claude``); ``start(hook_spool=PATH)`` also makes them append hook records to PATH.

Windows are created at a fixed size with ``window-size manual`` on each window, so the layout
does not follow whichever client attaches (a control-mode dashboard or a person's terminal).
``stop()`` kills the private server (or, on a given server, only the sessions it made) and
removes the temp dir.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path

from nbs_tui.core.control.chat import render_chat
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.tmux.commands import TmuxServerCommands
from nbs_tui.tmux.errors import TmuxError

WIDTH = 160
HEIGHT = 48
_fleet_numbers = count(1)
_PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent.parent)


class DemoError(RuntimeError):
    """tmux refused to build the demo fleet."""


@dataclass(frozen=True, slots=True)
class DemoAgent:
    """One imitation agent of a fleet and where it runs."""

    name: str
    pane_id: str
    session: str
    window: str
    project: Path
    script: str
    marker_fifo: Path | None = None
    marker_file: Path | None = None


@dataclass(frozen=True, slots=True)
class _Spec:
    name: str
    session: str
    window: str
    project: str
    script: str
    args: tuple[str, ...] = ()


# The default fleet: who runs where, doing what. Index i is the (i+1)th agent.
_DEFAULT_SPECS: tuple[_Spec, ...] = (
    _Spec("api-claude", "alpha", "api", "api-server", "working", ("--warm", "1")),
    _Spec("web-claude", "alpha", "web", "web-ui", "permission", ("--warm", "1")),
    _Spec("planner", "beta", "plan", "api-server", "plan", ("--warm", "1")),
    _Spec("docs-claude", "beta", "docs", "docs-site", "idle", ("--warm", "2", "--mode", "accept-edits")),
    _Spec("team-lead", "beta", "team", "nbs-team", "nbs", ("--warm", "1", "--legacy-spinner", "--inbox", "per-handle")),
    _Spec("review-claude", "alpha", "api", "api-server", "question", ("--warm", "1")),
)

_PROJECT_BLURBS = {
    "api-server": "A small HTTP API; the agents are making its fetcher retry politely.",
    "web-ui": "The web front end; an agent is waiting for permission to run its tests.",
    "docs-site": "The documentation site; its agent is idle, waiting for the next request.",
    "nbs-team": "A team project coordinated over NBS chats; its agents poll and post.",
}


def _seed_chat_messages(project: str, now: float) -> list[tuple[str, int, str]]:
    base = int(now) - 3600
    return [
        ("alex", base, f"Morning all. Today on {project}: finish the retry work and the docs."),
        ("api-claude", base + 300, "On it. Starting with the backoff helper."),
        ("docs-claude", base + 900, "@api-claude tell me when the flags are final so I can document them."),
        ("team-lead", base + 1800, "Reminder: register any new chat with \\nbs-register-chat so your sidecar hears it."),
        ("api-claude", base + 2400, "@docs-claude flags are final: --retries and --backoff. 日本語 docs later?"),
    ]


def make_project(root: Path, name: str, now: float | None = None) -> Path:
    """Create one demo project folder with its README and .nbs/ files; returns its path."""
    stamp = time.time() if now is None else now
    project = root / name
    chat_dir = project / ".nbs" / "chat"
    chat_dir.mkdir(parents=True, exist_ok=True)
    (project / "README.md").write_text(
        f"# {name}\n\n{_PROJECT_BLURBS.get(name, 'A demo project for nbs-tui.')}\n\n"
        "This folder was made by `nbs-tui demo` and is removed when the demo stops.\n",
        encoding="utf-8",
    )
    chat = chat_dir / f"{name}.chat"
    if not chat.exists():
        chat.write_bytes(render_chat(_seed_chat_messages(name, stamp), "team-lead", stamp))
    inbox = project / ".nbs" / "control-inbox"
    if not inbox.exists():
        inbox.write_text(f"# control inbox for {name} (append-only)\nregister-chat .nbs/chat/{name}.chat\n", encoding="utf-8")
    if name == "nbs-team":  # later NBS releases keep one inbox per agent handle
        own = project / ".nbs" / "control-inbox-team-lead"
        if not own.exists():
            own.write_text(f"register-chat .nbs/chat/{name}.chat\n", encoding="utf-8")
    return project


@dataclass
class DemoFleet:
    """A running demo fleet. Build one with ``start`` or ``start_busy``; end it with ``stop``."""

    server: ServerAddress
    root: Path
    projects: list[Path] = field(default_factory=list)
    agents: list[DemoAgent] = field(default_factory=list)
    shell_panes: list[str] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)
    owns_server: bool = True
    width: int = WIDTH
    height: int = HEIGHT
    hook_spool: Path | None = None
    _stopped: bool = False

    @property
    def claude_config(self) -> Path:
        """The agents' ``CLAUDE_CONFIG_DIR``: they keep ``sessions/<pid>.json`` here, as Claude Code does."""
        return self.root / "claude-config"

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        agents: int = 6,
        server: ServerAddress | None = None,
        *,
        width: int = WIDTH,
        height: int = HEIGHT,
        seed: int = 7,
        speed: float = 1.0,
        hook_spool: Path | None = None,
        wait: bool = True,
    ) -> DemoFleet:
        """Start ``agents`` imitation agents in varied states; returns once they have drawn.

        ``speed`` makes every agent's waits that many times shorter; ``hook_spool`` makes the
        agents append hook records there, as ``nbs-tui hooks install`` would have them do.
        """
        if agents < 1:
            raise ValueError("a demo fleet needs at least one agent")
        fleet = cls._new(server, width, height)
        fleet.hook_spool = hook_spool
        try:
            specs = list(_DEFAULT_SPECS[:agents])
            for index in range(len(specs), agents):
                window = f"crew-{(index - len(_DEFAULT_SPECS)) // 4 + 1}"
                specs.append(_Spec(f"crew-{index - len(_DEFAULT_SPECS) + 1}", "gamma", window,
                                   ("api-server", "web-ui", "docs-site", "nbs-team")[index % 4], "cycle", ("--warm", "1")))
            shell_after = "web" if agents >= 2 else None
            windows: dict[tuple[str, str], str] = {}
            for index, spec in enumerate(specs):
                project = fleet._project(spec.project)
                args = ["--name", spec.name, "--script", spec.script, "--seed", str(seed + index), *spec.args]
                if speed != 1.0:
                    args += ["--speed", str(speed)]
                pane = fleet._add_pane(spec.session, spec.window, project, fleet._agent_command(args), windows)
                fleet._mark_agent(pane, spec.script)
                fleet.agents.append(DemoAgent(spec.name, pane, spec.session, spec.window, project, spec.script))
                if spec.window == shell_after:
                    shell = fleet._add_pane(spec.session, spec.window, project, fleet._shell_command(), windows)
                    fleet.shell_panes.append(shell)
                    shell_after = None
            for key, first_pane in windows.items():
                fleet._tmux("select-layout", "-t", first_pane, "even-horizontal" if key[0] != "gamma" else "tiled")
            if fleet.shell_panes:
                fleet._tmux("send-keys", "-t", fleet.shell_panes[0], "ls -la && head -3 README.md", "Enter")
            if wait:
                fleet.wait_ready()
        except BaseException:
            fleet.stop()
            raise
        return fleet

    @classmethod
    def start_busy(
        cls,
        panes: int,
        busy_fraction: float = 1.0,
        *,
        rate: float = 10.0,
        panes_per_window: int = 4,
        windows_per_session: int = 10,
        server: ServerAddress | None = None,
        width: int = WIDTH,
        height: int = HEIGHT,
        marker_dir: Path | None = None,
        wait: bool = True,
        spread: bool = False,
    ) -> DemoFleet:
        """Start ``panes`` agents for a benchmark: a ``busy_fraction`` of them print ``rate`` lines/s:
        the first ones (whole windows and sessions busy, the rest quiet), or with ``spread`` one
        every ``1 / busy_fraction`` panes (busy agents in every window and session; the first
        pane is busy either way)."""
        if panes < 1:
            raise ValueError("a benchmark fleet needs at least one pane")
        fleet = cls._new(server, width, height)
        try:
            busy = round(panes * max(0.0, min(1.0, busy_fraction)))
            busy_indices = {round(i * panes / busy) for i in range(busy)} if spread and busy else set(range(busy))
            project = fleet._project("bench")
            if marker_dir is not None:
                marker_dir.mkdir(parents=True, exist_ok=True)
            windows: dict[tuple[str, str], str] = {}
            for index in range(panes):
                window_number = index // panes_per_window
                session = f"bench-{window_number // windows_per_session}"
                window = f"w{window_number}"
                name = f"bench-{index}"
                script = "busy" if index in busy_indices else "idle"
                args = ["--name", name, "--script", script, "--seed", str(index)]
                if index in busy_indices:
                    args += ["--busy", "--rate", str(rate)]
                else:
                    args += ["--warm", "1"]
                fifo = mfile = None
                if marker_dir is not None:
                    fifo, mfile = marker_dir / f"{name}.fifo", marker_dir / f"{name}.markers"
                    os.mkfifo(fifo, 0o600)
                    args += ["--marker-fifo", str(fifo), "--marker-file", str(mfile)]
                pane = fleet._add_pane(session, window, project, fleet._agent_command(args), windows)
                fleet._mark_agent(pane, script)
                fleet.agents.append(DemoAgent(name, pane, session, window, project, script, fifo, mfile))
                if index % panes_per_window == panes_per_window - 1 or index == panes - 1:
                    fleet._tmux("select-layout", "-t", windows[(session, window)], "tiled")
            if wait:
                fleet.wait_ready(timeout=max(15.0, panes * 0.3))
        except BaseException:
            fleet.stop()
            raise
        return fleet

    @classmethod
    def _new(cls, server: ServerAddress | None, width: int, height: int) -> DemoFleet:
        if shutil.which("tmux") is None:
            raise DemoError("tmux is not installed")
        root = Path(tempfile.mkdtemp(prefix="nbs-demo-"))
        owns = server is None or not server.tmux_args()
        address = ServerAddress(socket_name=f"nbs-demo-{os.getpid()}-{next(_fleet_numbers)}") if owns else server
        assert address is not None
        return cls(server=address, root=root, owns_server=owns, width=width, height=height)

    # -- tmux -----------------------------------------------------------------------------------

    def _tmux(self, *args: str) -> str:
        return self._tmux_many(args)

    def _tmux_many(self, *commands: Sequence[str]) -> str:
        """Commands as one tmux command line (``a ; b``); their output."""
        try:
            return TmuxServerCommands.for_server(self.server).run_many(commands).text
        except TmuxError as error:
            raise DemoError(f"tmux {' '.join(commands[0][:2])} failed: {error}") from None

    def tmux(self, *args: str) -> str:
        """Run a tmux command against the fleet's server and return its output."""
        return self._tmux(*args)

    def _session_name(self, wanted: str) -> str:
        if self.owns_server or wanted in self.sessions:
            return wanted
        existing = set(self._tmux("list-sessions", "-F", "#{session_name}").split()) if self._has_server() else set()
        name, number = wanted, 2
        while name in existing:
            name, number = f"{wanted}-{number}", number + 1
        return name

    def _has_server(self) -> bool:
        try:
            TmuxServerCommands.for_server(self.server).run("list-sessions")
        except TmuxError:
            return False
        return True

    def _add_pane(
        self, session: str, window: str, project: Path, command: str, windows: dict[tuple[str, str], str]
    ) -> str:
        """Create the pane running ``command``; the first pane of a window creates the window."""
        key = (session, window)
        size = ["-x", str(self.width), "-y", str(self.height)]
        fmt = ["-P", "-F", "#{pane_id}"]
        env = ["-e", f"PYTHONPATH={_python_path()}", "-e", "NBS_DEMO=1", "-e", f"CLAUDE_CONFIG_DIR={self.claude_config}"]
        if key in windows:
            pane = self._tmux("split-window", "-d", "-t", windows[key], "-c", str(project), *env, *fmt, command).strip()
            return pane
        real_session = self._session_name(session)
        if real_session not in self.sessions:
            pane = self._tmux(
                "new-session", "-d", "-s", real_session, "-n", window, *size, "-c", str(project), *env, *fmt, command
            ).strip()
            self.sessions.append(real_session)
        else:
            pane = self._tmux(
                "new-window", "-d", "-t", f"{real_session}:", "-n", window, "-c", str(project), *env, *fmt, command
            ).strip()
        # One tmux call for the window's settings.
        self._tmux_many(
            ("set-option", "-w", "-t", pane, "window-size", "manual"),
            ("set-option", "-w", "-t", pane, "automatic-rename", "off"),
            ("set-option", "-w", "-t", pane, "remain-on-exit", "on"),  # a crashed agent stays readable
            ("resize-window", "-t", pane, *size),
        )
        windows[key] = pane
        return pane

    def _mark_agent(self, pane: str, script: str) -> None:
        self._tmux_many(
            ("set-option", "-p", "-t", pane, "@nbs_demo_agent", "1"),
            ("set-option", "-p", "-t", pane, "@nbs_demo_script", script),
        )

    def _agent_command(self, args: list[str]) -> str:
        argv = [sys.executable, "-m", "nbs_tui.demo.agent", "--proc-name", "claude",
                "--claude-config", str(self.claude_config), *args]
        if self.hook_spool is not None:
            argv += ["--hook-spool", str(self.hook_spool)]
        return "exec " + " ".join(shlex.quote(a) for a in argv)

    def _shell_command(self) -> str:
        return "exec env PS1='demo@nbs:\\W\\$ ' bash --norc --noprofile -i"

    def _project(self, name: str) -> Path:
        path = self.root / name
        if path not in self.projects:
            make_project(self.root, name)
            self.projects.append(path)
        return path

    # -- use ------------------------------------------------------------------------------------

    def wait_ready(self, timeout: float = 15.0) -> None:
        """Wait until every agent has drawn its first frame (its title is Claude Code's)."""
        deadline = time.monotonic() + timeout
        wanted = {a.pane_id for a in self.agents}
        while True:
            out = self._tmux("list-panes", "-a", "-F", "#{pane_id}\t#{pane_title}")
            ready = {
                line.split("\t", 1)[0]
                for line in out.splitlines()
                if "\t" in line and line.split("\t", 1)[1][:1] in ("✳", "⠂", "⠐")
            }
            if wanted <= ready:
                return
            if time.monotonic() > deadline:
                missing = sorted(wanted - ready)
                tail = self._tmux("capture-pane", "-p", "-t", missing[0]).rstrip().splitlines()[-5:]
                raise DemoError(
                    f"demo agents did not start within {timeout:.0f}s: {', '.join(missing)}; "
                    f"{missing[0]} shows: " + " | ".join(tail)
                )
            time.sleep(0.1)

    def agent(self, name: str) -> DemoAgent:
        for agent in self.agents:
            if agent.name == name:
                return agent
        raise KeyError(name)

    def stop(self) -> None:
        """Kill the fleet's server (or only its sessions on a shared server); remove the temp dir."""
        if self._stopped:
            return
        self._stopped = True
        pids: list[int] = []
        try:
            if self._has_server():
                mine = {a.pane_id for a in self.agents}
                for line in self._tmux("list-panes", "-a", "-F", "#{pane_id} #{pane_pid}").splitlines():
                    pane, _, pid = line.partition(" ")
                    if pane in mine and pid.isdigit():
                        pids.append(int(pid))
            if self.owns_server:
                if self._has_server():
                    socket = self._tmux("display-message", "-p", "#{socket_path}").strip()
                    self._tmux("kill-server")
                    # tmux 3.3 leaves its socket file behind; a private one is ours to remove.
                    if socket and Path(socket).name == self.server.socket_name:
                        with contextlib.suppress(OSError):
                            Path(socket).unlink()
            else:
                for session in self.sessions:
                    with contextlib.suppress(DemoError):
                        self._tmux("kill-session", "-t", f"={session}")
        finally:
            _wait_gone(pids, timeout=3.0)  # agents write into root until they exit
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> DemoFleet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _wait_gone(pids: list[int], timeout: float) -> None:
    """Wait (bounded) until none of ``pids`` is alive; zombies count as gone."""
    deadline = time.monotonic() + timeout
    pending = list(pids)
    while pending and time.monotonic() < deadline:
        pending = [pid for pid in pending if _alive(pid)]
        if pending:
            time.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _python_path() -> str:
    current = os.environ.get("PYTHONPATH", "")
    return _PACKAGE_PARENT + (os.pathsep + current if current else "")


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """``python -m nbs_tui.demo.launcher``: start a fleet, print how to attach, stop on Ctrl-C."""
    import argparse
    import signal

    parser = argparse.ArgumentParser(prog="python -m nbs_tui.demo.launcher", description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=6, help="agents in the demo fleet (default 6)")
    parser.add_argument("--busy", type=int, default=0, metavar="PANES", help="a benchmark fleet of PANES panes instead")
    parser.add_argument("--busy-fraction", type=float, default=1.0, help="share of benchmark panes that print")
    parser.add_argument("--rate", type=float, default=10.0, help="lines/s of each busy pane")
    parser.add_argument("--speed", type=float, default=1.0, help="demo agents run this many times faster")
    parser.add_argument("--seconds", type=float, default=0.0, help="stop after this long (default: on Ctrl-C)")
    parser.add_argument("--keep", action="store_true", help="leave the fleet running and exit at once")
    args = parser.parse_args(argv)
    if args.busy:
        fleet = DemoFleet.start_busy(args.busy, args.busy_fraction, rate=args.rate)
    else:
        fleet = DemoFleet.start(agents=args.agents, speed=args.speed)
    attach = " ".join(["tmux", *fleet.server.tmux_args(), "attach", "-t", fleet.sessions[0]])
    print(f"demo fleet: {len(fleet.agents)} agents on {fleet.server.describe()}; projects in {fleet.root}")
    print(f"attach: {attach}    watch: nbs-tui {' '.join(fleet.server.tmux_args())} "
          + " ".join(f"--project {p}" for p in fleet.projects), flush=True)
    if args.keep:
        print(f"left running; stop it with: tmux {' '.join(fleet.server.tmux_args())} kill-server")
        return 0
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        if args.seconds > 0:
            time.sleep(args.seconds)
        else:
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        fleet.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
