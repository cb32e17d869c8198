"""The command line: parse arguments, build settings, start the dashboard or a subcommand.

Textual is imported only once a command needs it, so ``--help``,
``--version`` and ``detect`` start fast.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from nbs_tui import __version__
from nbs_tui.config import ConfigError, Settings, load_settings
from nbs_tui.core.fleet.agent_spec import SpecError
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.screen.text import json_line_safe
from nbs_tui.housekeeping.logs import log_path
from nbs_tui.server_options import add_server_options
from nbs_tui.tmux.address import default_server
from nbs_tui.tmux.commands import TmuxServerCommands
from nbs_tui.tmux.errors import TmuxError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 4


class UsageError(Exception):
    """Invalid arguments: exit 4 with a one-line message."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see 'nbs-tui --help')")


def _add_sidecar_options(parser: argparse.ArgumentParser, *, inherit: bool = False) -> None:
    """``inherit`` (a subcommand's copy): an option not given there keeps the value given before
    the subcommand, instead of argparse resetting it to None."""
    unset = argparse.SUPPRESS if inherit else None
    group = parser.add_argument_group("sidecar")
    group.add_argument(
        "--poll-interval", type=float, metavar="SECONDS", default=unset,
        help="idle seconds before /nbs-poll (default 30, env NBS_POLL_INTERVAL)",
    )
    group.add_argument(
        "--no-poll", action="store_true", default=unset, help="never inject /nbs-poll (env NBS_POLL_DISABLE=1)"
    )
    group.add_argument(
        "--plan-policy", choices=("no-prompts", "off"), default=unset,
        help="answer plan-approval menus (default no-prompts)",
    )
    group.add_argument(
        "--config", type=Path, metavar="FILE", default=unset,
        help="settings file (default ~/.config/nbs-tui/config.toml; a file named here must exist)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="nbs-tui",
        description="Watch and steer every Claude Code agent of a tmux server from one dashboard.",
        epilog=f"With no tmux server to watch, try 'nbs-tui demo'. Log file (errors and their tracebacks): {log_path()}",
    )
    parser.add_argument("--version", action="version", version=f"nbs-tui {__version__}")
    add_server_options(parser)
    parser.add_argument(
        "--session", action="append", dest="sessions", metavar="NAME", help="watch only this session (repeatable)"
    )
    parser.add_argument(
        "--project", action="append", dest="projects", type=Path, metavar="DIR",
        help="also watch this project's .nbs/ folder (repeatable)",
    )
    parser.add_argument(
        "--headless", action="store_true", help="run the sidecar workers without the UI; one JSON event per line"
    )
    parser.add_argument(
        "--open-card", dest="open_card", metavar="TARGET",
        help="open this agent's answer card once the fleet is seen (TARGET: host/server-key/pane-id, e.g. local/default/%%3)",
    )
    _add_sidecar_options(parser)

    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    demo = commands.add_parser("demo", help="start a private tmux server with a demo fleet and watch it")
    demo.add_argument("--keep", action="store_true", help="leave the demo server running on exit")
    demo.add_argument("--agents", type=int, default=6, metavar="N", help="how many demo agents (default 6)")
    demo.add_argument("--headless", action="store_true", dest="demo_headless", help="run headless on the demo fleet")
    _add_sidecar_options(demo, inherit=True)

    detect = commands.add_parser("detect", help="print the state nbs-tui reads from one captured screen")
    detect.add_argument("file", nargs="?", default="-", help="a capture-pane dump (plain or -e); '-' reads stdin")

    hooks = commands.add_parser("hooks", help="install, remove or inspect nbs-tui's Claude Code hooks")
    hooks.add_argument("action", choices=("install", "uninstall", "status"))
    scope = hooks.add_mutually_exclusive_group()
    scope.add_argument("--user", action="store_true", help="~/.claude/settings.json (default)")
    scope.add_argument(
        "--project-dir", type=Path, metavar="DIR",
        help="DIR/.claude/settings.local.json (the project's personal, git-ignored settings: our hook paths are absolute)",
    )
    scope.add_argument("--settings-file", type=Path, metavar="FILE", help="any settings file")
    hooks.add_argument("--spool", type=Path, metavar="FILE", help="where hook events are appended")

    completion = commands.add_parser("completion", help="print a bash or zsh completion script for nbs-tui")
    completion.add_argument("shell", choices=("bash", "zsh"))

    commands.add_parser(
        "serve-stdio", help="a host's control plane as JSON lines on stdin/stdout (a dashboard runs it over ssh)"
    )

    from nbs_tui.lifecycle_cli import add_lifecycle_parsers
    from nbs_tui.runtime.service import add_parser as add_service_parser
    from nbs_tui.web.command import add_parser as add_web_parser

    add_service_parser(commands)
    add_web_parser(commands)
    add_lifecycle_parsers(commands)
    return parser


def settings_from_args(args: argparse.Namespace) -> Settings:
    chosen = bool(args.socket_name or args.socket_path)
    if chosen:
        server = ServerAddress(socket_name=args.socket_name, socket_path=args.socket_path)
    else:
        server = default_server()  # $TMUX's server inside tmux, as a plain `tmux` would
    return load_settings(
        config_path=getattr(args, "config", None),
        server=server,
        server_from_tmux_env=not chosen and server != ServerAddress(),
        host_choice=tuple(args.hosts) if getattr(args, "hosts", None) else None,
        sessions=tuple(args.sessions) if args.sessions else None,
        projects=tuple(p.resolve() for p in args.projects) if args.projects else None,
        poll_interval=getattr(args, "poll_interval", None),
        poll_disabled=getattr(args, "no_poll", None),
        plan_policy=getattr(args, "plan_policy", None),
        open_card=getattr(args, "open_card", None),
    )


def _require_tmux() -> None:
    if shutil.which("tmux") is None:
        raise RuntimeError("tmux is not installed: install it (e.g. 'apt-get install tmux') and run nbs-tui again")


def _require_server(settings: Settings) -> None:
    """Refuse to start on a server that is not running; once running, losing it is survivable."""
    try:
        TmuxServerCommands.for_server(settings.server).run("list-sessions")
    except TmuxError as error:
        why = (str(error).splitlines() or ["no answer"])[0]
        raise RuntimeError(
            f"cannot reach {settings.server.describe()} ({why}): start one with 'tmux new -s work', "
            "pick another with -L/-S, or try 'nbs-tui demo'"
        ) from None


def _install_log() -> None:
    """The dashboard, headless and the demo log to a file: under a full-screen UI, stderr is not
    where anyone looks. A log that cannot be opened is said once here and does not stop us."""
    from nbs_tui.housekeeping import logs

    logs.install()
    if logs.failure():  # the runtime reports it as a problem too (the UI and --headless show it)
        print(f"nbs-tui: {logs.failure()}; carrying on", file=sys.stderr)


def _require_watchable(settings: Settings) -> None:
    """What a dashboard needs before it starts (a browser view's tabs are dashboards too)."""
    hosts = settings.watched_hosts()
    if any(h.is_local for h in hosts):
        _require_tmux()
        if len(hosts) == 1:  # with several, a local server away is that host's state, not a stop
            _require_server(settings)
    if not all(h.is_local for h in hosts) and shutil.which("ssh") is None:
        raise RuntimeError("ssh is not installed: install OpenSSH's client to watch another host")


def _run_dashboard(settings: Settings, headless: bool) -> int:
    hosts = settings.watched_hosts()
    _require_watchable(settings)
    _install_log()
    remote = not all(h.is_local for h in hosts)
    if remote:
        from nbs_tui.tmux.ssh import preconnect

        preconnect(hosts)  # the logins run while the dashboard is imported
    if headless:
        from nbs_tui.runtime.headless import run_headless

        return run_headless(settings)
    return _load_app(settings if remote else None)(settings)


def _load_app(start_first: Settings | None = None) -> Callable[[Settings], int]:
    """Import the dashboard with the cyclic garbage collector off, then freeze what the import
    made. Importing it makes ~100,000 long-lived objects (modules, classes, functions); the
    collector ran over and over while they piled up (25-35 ms of the 0.4 s import here), and
    every collection until `nbs_tui.housekeeping.heap` freezes the start-up heap walked them again. Frozen,
    later collections skip them; the import leaves little cyclic garbage to keep.

    ``start_first``: start the dashboard's runtime for these settings before importing Textual
    and the app, so that another host's control clients attach and its panes seed meanwhile
    (`nbs_tui.runtime.early`)."""
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        if start_first is not None:
            from nbs_tui.runtime.early import start_early

            start_early(start_first)
        from nbs_tui.app import run_app
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
    return run_app


def _run_demo(args: argparse.Namespace, settings: Settings) -> int:
    _require_tmux()
    if args.agents < 1:
        raise UsageError("--agents must be at least 1")
    from nbs_tui.demo.launcher import DemoFleet

    # The demo's agents keep Claude-Code-like status files, transcripts and hook records in the
    # fleet's own folders, so the dashboard shows every source without touching ~/.claude.
    spool_dir = Path(tempfile.mkdtemp(prefix="nbs-demo-hooks-"))
    fleet = DemoFleet.start(
        agents=args.agents,
        # its own private server unless one is named: never the pane's server it runs in
        server=settings.server if args.socket_name or args.socket_path else None,
        hook_spool=spool_dir / "hooks.jsonl",
    )

    def cleanup() -> None:
        fleet.stop()
        shutil.rmtree(spool_dir, ignore_errors=True)

    if not args.keep:
        _stop_on_hangup(cleanup)
    settings = load_settings(
        config_path=getattr(args, "config", None),
        server=fleet.server,
        projects=tuple(fleet.projects),
        poll_interval=settings.poll_interval,
        poll_disabled=settings.poll_disabled,
        plan_policy=settings.plan_policy,
        hook_spool=spool_dir / "hooks.jsonl",
        claude_home=fleet.claude_config,
        remember_fleet=False,  # a throw-away server: nothing to restore
        background_sessions=False,  # nor Claude Code sessions of this machine to list beside it
    )
    try:
        return _run_dashboard(settings, headless=args.headless or args.demo_headless)
    finally:
        if args.keep:
            print(f"demo fleet left running: tmux {' '.join(fleet.server.tmux_args())} attach", file=sys.stderr)
        else:
            cleanup()


def _stop_on_hangup(cleanup: Callable[[], None]) -> None:
    """Run ``cleanup`` when the terminal closes or we are told to stop, then die as asked.

    Without this a closed terminal window would leave the demo's tmux server and its
    agents running, because SIGHUP's default action skips every ``finally``.
    """

    def handler(signum: int, _frame: object) -> None:
        cleanup()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    for signum in (signal.SIGHUP, signal.SIGTERM):
        signal.signal(signum, handler)


def _run_detect(args: argparse.Namespace) -> int:
    import json

    from nbs_tui.core.detection.detect import detect_text, detection_as_json

    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise RuntimeError(f"cannot read {args.file}: {error.strerror}") from None
    print(json_line_safe(json.dumps(detection_as_json(detect_text(text)), ensure_ascii=False)))
    return EXIT_OK


def _run_hooks(args: argparse.Namespace, settings: Settings) -> int:
    from nbs_tui.claude.hooks import hooks_command

    if args.settings_file:
        target = args.settings_file
    elif args.project_dir:
        target = args.project_dir / ".claude" / "settings.local.json"
    else:
        target = settings.claude_home / "settings.json"
    return hooks_command(args.action, target, args.spool or settings.hook_spool)


def _run_new(args: argparse.Namespace, settings: Settings) -> int:
    """``nbs-tui new``: every check first (nothing made on a bad input), then the start
    (`nbs_tui.runtime.agent_start`)."""
    import json

    from nbs_tui.core.fleet.agent_spec import SpecError
    from nbs_tui.files.agent_input import PreparedAgent
    from nbs_tui.lifecycle_cli import prepare_new
    from nbs_tui.runtime.agent_start import AgentStarter, StartStopped

    _require_tmux()
    prepared = prepare_new(args, claude_command=settings.claude_command)
    runner = None
    if isinstance(prepared, PreparedAgent):
        commands = TmuxServerCommands.for_server(settings.server)
        starter = AgentStarter(commands, settings.claude_command, claude_home=settings.claude_home)
    else:  # another host: its checks are made there, through its ssh connection
        from nbs_tui.runtime.host_agent import SshAgentHost
        from nbs_tui.runtime.remote_agent import prepare_remote
        from nbs_tui.tmux.ssh import SshTmuxRunner

        (host,) = settings.watched_hosts()
        if host.is_local:
            raise SpecError([f"--host {prepared.host}: not another host"])
        runner = SshTmuxRunner(host)
        commands = TmuxServerCommands(runner)
        try:
            remote = prepare_remote(prepared, runner, settings.claude_command)
        except SpecError:
            runner.close()
            raise
        prepared = remote.prepared
        starter = AgentStarter(
            commands, settings.claude_command, flags=remote.flags, home=remote.home, host=SshAgentHost(runner)
        )
    try:
        started = starter.start(prepared)
        if prepared.events is not None and prepared.spec.worker and started.prompt_submitted and starter.host:
            from nbs_tui.core.control.nbs_events import worker_spawned

            try:  # into the project's bus, on the agent's host (the runner is still open)
                starter.host.publish(
                    str(prepared.events),
                    worker_spawned(
                        prepared.spec.worker, target=started.target, pane_id=started.pane_id,
                        session_id=started.session_id,
                    ),
                )  # fmt: skip
            except (OSError, ValueError) as error:
                print(f"nbs-tui: worker-spawned not published in {prepared.events}: {error}", file=sys.stderr)
    except TmuxError as error:
        raise RuntimeError(f"{prepared.spec.name}: tmux on {commands.describe()}: {error}") from None
    except StartStopped as stop:
        where = f" in {stop.started.target} ({stop.started.pane_id})" if stop.started else ""
        print(f"nbs-tui: {prepared.spec.name}{where}: {stop.line}", file=sys.stderr)
        if args.json and stop.started:
            print(json.dumps({**stop.started.as_json(), "stopped": stop.line}, ensure_ascii=False))
        return EXIT_ERROR
    finally:
        if runner is not None:
            runner.close()
    if args.json:
        print(json.dumps(started.as_json(), ensure_ascii=False))
    else:
        said = f", answered the {' and the '.join(started.answered)}" if started.answered else ""
        typed = ", prompt submitted" if started.prompt_submitted else ""
        session = f" (Claude Code session {started.session_id})" if started.session_id else ""
        print(f"{started.name}: started in {started.target} ({started.pane_id}){said}{typed}{session}")
    return EXIT_OK


def _restore_there(args: argparse.Namespace, settings: Settings) -> int:
    """``restore --host DEST``: the host's own nbs-tui restores there (its fleet is remembered
    there, by its service; its folders, transcripts and Claude Code are there), run over the
    host's ssh connection as its service is; its output and exit status are this command's."""
    import shlex
    import subprocess

    from nbs_tui.tmux.ssh import SshTmuxRunner

    (host,) = settings.watched_hosts()
    if not host.nbs_tui:
        raise SpecError(
            [f"restore --host {host.name}: nbs-tui restores on the host itself; set nbs_tui for it in [[hosts]] "
             "(the command that runs nbs-tui there)"]
        )  # fmt: skip
    words = [*host.server.tmux_args(), "restore", *(["--dry-run"] if args.dry_run else []), *(["--json"] if args.json else []), *args.names]
    runner = SshTmuxRunner(host)
    try:
        done = subprocess.run(
            runner.ssh_argv(f"{host.nbs_tui} {shlex.join(words)}"), stdin=subprocess.DEVNULL, capture_output=True,
            text=True, timeout=600, env=runner.env(), check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as error:
        raise RuntimeError(f"restore --host {host.name}: {error}") from None
    finally:
        runner.close()
    sys.stdout.write(done.stdout)
    if done.returncode == 255:  # ssh's own failure: say it as a host problem
        raise SpecError([f"--host {host.name}: {runner.explain(done.returncode, done.stderr)}"])
    sys.stderr.write(done.stderr)
    return done.returncode


def _run_restore(args: argparse.Namespace, settings: Settings) -> int:
    """``nbs-tui restore``: the plan from the remembered fleet (`nbs_tui.core.fleet.restore`), printed
    (``--dry-run``) or carried out (`nbs_tui.runtime.restore_run`)."""
    import json

    from nbs_tui.core.fleet.host_spec import LOCAL
    from nbs_tui.core.fleet.restore import plan_as_json, plan_lines
    from nbs_tui.files.fleet_store import FleetStore
    from nbs_tui.lifecycle_cli import restore_request_from_args
    from nbs_tui.runtime.agent_start import AgentStarter
    from nbs_tui.runtime.restore_run import RestoreRun, after_restore, gather, live_server, plan_for

    _require_tmux()
    request = restore_request_from_args(args)
    if request.host not in (None, LOCAL):
        return _restore_there(args, settings)
    commands = TmuxServerCommands.for_server(settings.server)
    problems: list[str] = []
    store = FleetStore.for_server(LOCAL, settings.server, report=problems.append)
    try:
        gathered = gather(commands, store, settings.claude_command)
        plan = plan_for(gathered, settings.server, settings.claude_command, settings.restore_stagger, request.names)
    except TmuxError as error:
        raise RuntimeError(f"tmux on {settings.server.describe()}: {error}") from None
    finally:
        for problem in problems:
            print(f"nbs-tui: {problem}", file=sys.stderr)
    if request.dry_run:
        print(json.dumps(plan_as_json(plan), ensure_ascii=False) if request.json else "\n".join(plan_lines(plan)))
        return EXIT_OK
    starter = AgentStarter(commands, settings.claude_command, claude_home=settings.claude_home, flags=gathered.flags)
    try:
        report = RestoreRun(commands, starter).execute(plan)
    except TmuxError as error:
        raise RuntimeError(f"tmux on {settings.server.describe()}: {error}") from None
    instance, _live = live_server(commands)
    after_restore(store, gathered.memory, instance)
    if request.json:
        print(json.dumps(report.as_json(), ensure_ascii=False))
    else:
        print("\n".join(report.lines()) or "nothing to restore")
    return EXIT_OK if not report.not_restored and not any(a.stopped for a in report.restored) else EXIT_ERROR


def _log_action(
    settings: Settings, action: str, pane_id: str, target: str, sent: str, ok: bool, reason: str,
    commands: TmuxServerCommands | None = None,
) -> None:
    """One line in the action log for a lifecycle command (the dashboard's viewer shows it) and,
    for stop and restart (``commands``), an event every view of the server is told of."""
    import time

    from nbs_tui.operator.action_log import ActionLog, ActionRecord, Outcome

    def problem(_source: str, message: str) -> None:
        print(f"nbs-tui: {message}", file=sys.stderr)

    record = ActionRecord(
        time.time(), action, pane_id, target, sent, f"operator (nbs-tui {action})",
        Outcome.SENT if ok else Outcome.FAILED, reason,
    )  # fmt: skip
    ActionLog(settings.action_log, problem).append(record)
    if commands is not None:
        from nbs_tui.runtime.agent_stop import tell_views

        why = tell_views(commands, action, pane_id, target, sent, ok, reason)
        if why:
            problem("", f"the dashboards were not told of this {action}: {why}")


def _run_stop(args: argparse.Namespace, settings: Settings) -> int:
    """``nbs-tui stop PANE`` / ``nbs-tui restart PANE`` (`nbs_tui.runtime.agent_stop`)."""
    import json

    from nbs_tui.runtime.agent_start import AgentStarter
    from nbs_tui.runtime.agent_stop import AgentControl, StopError

    _require_tmux()
    runner = None
    if getattr(args, "hosts", None):  # another host: its tmux and its processes, over its ssh master
        from nbs_tui.runtime.host_agent import SshAgentHost
        from nbs_tui.tmux.ssh import SshTmuxRunner

        (host,) = settings.watched_hosts()
        if host.is_local:
            raise SpecError([f"{args.command} --host {host.name}: not another host"])
        runner = SshTmuxRunner(host)
        commands = TmuxServerCommands(runner)
        starter = AgentStarter(commands, settings.claude_command, host=SshAgentHost(runner))
    else:
        commands = TmuxServerCommands.for_server(settings.server)
        starter = AgentStarter(commands, settings.claude_command)
    control = AgentControl(commands, starter)
    try:
        pane_id, _pid, target, _folder = control.resolve(args.pane)
        if not args.yes:
            if not sys.stdin.isatty():
                raise SpecError([f"{args.command} {args.pane}: confirm with --yes (no terminal to ask on)"])
            answer = input(f"{args.command} the agent in {target} ({pane_id})? [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                return EXIT_ERROR
        if args.command == "stop":
            stopped = control.stop(pane_id)
            _log_action(settings, "stop", pane_id, target, stopped.how, True, "", commands)
            out: dict[str, object] = {"pane_id": pane_id, "target": target, "stopped_by": stopped.how}
            said = f"stopped {target} ({pane_id}) with {stopped.how}"
        else:
            restarted = control.restart(pane_id)
            _log_action(
                settings, "restart", pane_id, target, f"claude --resume {restarted.session_id}",
                not restarted.stopped, restarted.stopped or f"stopped with {restarted.how}", commands,
            )  # fmt: skip
            out = {"pane_id": pane_id, "target": target, "session_id": restarted.session_id, "stopped": restarted.stopped or None}
            said = f"restarted {target} ({pane_id}) in conversation {restarted.session_id}"
            if restarted.stopped:
                print(f"nbs-tui: {target}: {restarted.stopped}", file=sys.stderr)
    except StopError as error:
        _log_action(settings, args.command, args.pane, args.pane, "", False, str(error), commands)
        raise RuntimeError(str(error)) from None
    except TmuxError as error:
        raise RuntimeError(f"tmux on {commands.describe()}: {error}") from None
    finally:
        if runner is not None:
            runner.close()
    print(json.dumps(out, ensure_ascii=False) if args.json else said)
    return EXIT_OK if args.command == "stop" or not out.get("stopped") else EXIT_ERROR


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        settings = settings_from_args(args)
        if args.command == "demo":
            return _run_demo(args, settings)
        if args.command == "detect":
            return _run_detect(args)
        if args.command == "hooks":
            return _run_hooks(args, settings)
        if args.command == "service":
            from nbs_tui.runtime.service import service_command

            _require_tmux()
            if args.action == "run":
                _install_log()
            return service_command(args.action, settings)
        if args.command == "new":
            return _run_new(args, settings)
        if args.command == "restore":
            return _run_restore(args, settings)
        if args.command in ("stop", "restart"):
            return _run_stop(args, settings)
        if args.command == "web":
            from nbs_tui.web.access import AccessError
            from nbs_tui.web.command import web_command

            _require_watchable(settings)
            try:
                return web_command(args, settings)
            except AccessError as error:
                raise UsageError(str(error)) from None
        if args.command == "serve-stdio":
            from nbs_tui.runtime.remote_plane import serve_stdio

            return serve_stdio(settings)
        if args.command == "completion":
            from nbs_tui.completion import completion_script

            print(completion_script(args.shell, parser), end="")
            return EXIT_OK
        return _run_dashboard(settings, headless=args.headless)
    except UsageError as error:
        print(f"nbs-tui: {error}", file=sys.stderr)
        return EXIT_USAGE
    except ConfigError as error:
        print(f"nbs-tui: {error}", file=sys.stderr)
        return EXIT_USAGE
    except SpecError as error:
        for problem in error.problems:
            print(f"nbs-tui: {problem}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_OK
    except RuntimeError as error:
        print(f"nbs-tui: {error}", file=sys.stderr)
        return EXIT_ERROR
