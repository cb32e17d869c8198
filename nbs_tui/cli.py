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
from functools import partial
from pathlib import Path
from typing import NoReturn

from nbs_tui import __version__
from nbs_tui.config import ConfigError, Settings, load_settings
from nbs_tui.core.fleet.agent_spec import SpecError
from nbs_tui.core.fleet.host_spec import LOCAL
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
    parser.add_argument(
        "--card-only", dest="card_only", action="store_true", default=None,
        help="with --open-card: show only that agent's card, no fleet and no other key, and quit when it closes",
    )
    parser.add_argument(
        "--open-review", dest="open_review", metavar="TARGET",
        help="open this agent's review once the fleet is seen (TARGET as --open-card's); with --card-only: that review alone",
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
    scope.add_argument(
        "--account", metavar="NAME", help="the [accounts.NAME]'s settings (its config_dir/settings.json), for its usage"
    )  # fmt: skip
    hooks.add_argument("--spool", type=Path, metavar="FILE", help="where hook events are appended")

    completion = commands.add_parser("completion", help="print a bash or zsh completion script for nbs-tui")
    completion.add_argument("shell", choices=("bash", "zsh"))

    commands.add_parser(
        "serve-stdio", help="a host's control plane as JSON lines on stdin/stdout (a dashboard runs it over ssh)"
    )

    from nbs_tui.fleet_api.command_table import add_parsers as add_fleet_api_parsers
    from nbs_tui.lifecycle.arguments import add_lifecycle_parsers
    from nbs_tui.runtime.service import add_parser as add_service_parser
    from nbs_tui.web.command import add_parser as add_web_parser

    add_service_parser(commands)
    add_web_parser(commands)
    add_lifecycle_parsers(commands)
    add_fleet_api_parsers(commands)
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
        card_only=getattr(args, "card_only", None),
        open_review=getattr(args, "open_review", None),
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
    early = None
    try:
        if start_first is not None:
            from nbs_tui.runtime.early import start_early

            early = start_early(start_first)
        from nbs_tui.app import run_app
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
    return partial(run_app, early=early)


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
    elif args.account:
        named = {account.name: account for account in settings.accounts}
        if args.account not in named:
            raise ConfigError(f"--account {args.account!r} is not an [accounts.NAME] of {settings.config_file}")
        target = Path(named[args.account].config_dir) / "settings.json"
    elif args.project_dir:
        target = args.project_dir / ".claude" / "settings.local.json"
    else:
        target = settings.claude_home / "settings.json"
    return hooks_command(args.action, target, args.spool or settings.hook_spool)


def _run_new(args: argparse.Namespace, settings: Settings) -> int:
    """``nbs-tui new``: every check first (nothing made on a bad input), then the start
    (`nbs_tui.fleet_api.lifecycle_documents.start_document`)."""
    import json

    from nbs_tui.files.agent_input import PreparedAgent
    from nbs_tui.fleet_api.lifecycle_documents import CommandFailed, start_document
    from nbs_tui.lifecycle.arguments import prepare_new
    from nbs_tui.lifecycle.operations import Lifecycle

    _require_tmux()
    found = prepare_new(args, claude_command=settings.claude_command)  # another host's: checked there
    spec = found.spec if isinstance(found, PreparedAgent) else found
    lifecycle = Lifecycle.for_command(settings, None if spec.host in (None, LOCAL) else spec.host, "--host")
    try:
        started = start_document(lifecycle, found, _warn)
    except CommandFailed as failed:
        print(f"nbs-tui: {failed.message}", file=sys.stderr)
        if args.json and failed.document:
            print(json.dumps(failed.document, ensure_ascii=False))
        return EXIT_ERROR
    if args.json:
        print(json.dumps(started, ensure_ascii=False))
    else:
        answered = started["answered"]
        said = f", answered the {' and the '.join(answered)}" if answered else ""
        typed = ", prompt submitted" if started["prompt_submitted"] else ""
        session = f" (Claude Code session {started['session_id']})" if started["session_id"] else ""
        print(f"{started['name']}: started in {started['target']} ({started['pane_id']}){said}{typed}{session}")
    return EXIT_OK


def _warn(message: str) -> None:
    print(f"nbs-tui: {message}", file=sys.stderr)


def _run_restore(args: argparse.Namespace, settings: Settings) -> int:
    """``nbs-tui restore``: the plan from the remembered fleet (`nbs_tui.core.fleet.restore`), printed
    (``--dry-run``) or carried out (`Lifecycle.restore`); with ``--host``, the host's own nbs-tui
    restores there (its fleet is remembered there, by its service; its folders, transcripts and
    Claude Code are there), its output and exit status this command's."""
    import json

    from nbs_tui.core.fleet.restore import plan_as_json, plan_lines
    from nbs_tui.fleet_api.lifecycle_documents import serve
    from nbs_tui.lifecycle.arguments import restore_request_from_args
    from nbs_tui.lifecycle.operations import Lifecycle

    _require_tmux()
    request = restore_request_from_args(args)
    lifecycle = Lifecycle.for_command(settings, None if request.host in (None, LOCAL) else request.host, "restore --host")
    try:
        if lifecycle.host.remote:
            done = lifecycle.restore_there(request)
            sys.stdout.write(done.stdout)
            if done.lost is not None:  # ssh's own failure: said as a host problem
                raise SpecError([f"--host {lifecycle.host.name}: {done.lost}"])
            sys.stderr.write(done.stderr)
            return done.returncode
        problems: list[str] = []
        try:
            parts = lifecycle.restore_plan(lifecycle.fleet_store(problems.append), request.names)
        except TmuxError as error:
            raise RuntimeError(f"tmux on {settings.server.describe()}: {error}") from None
        finally:
            for problem in problems:
                _warn(problem)
        if request.dry_run:
            plan = parts.plan
            print(json.dumps(plan_as_json(plan), ensure_ascii=False) if request.json else "\n".join(plan_lines(plan)))
            return EXIT_OK
        try:
            report = lifecycle.restore(parts)
        except TmuxError as error:
            raise RuntimeError(f"tmux on {settings.server.describe()}: {error}") from None
        serve(lifecycle, _warn)
    finally:
        lifecycle.close()
    if request.json:
        print(json.dumps(report.as_json(), ensure_ascii=False))
    else:
        print("\n".join(report.lines()) or "nothing to restore")
    return EXIT_OK if not report.not_restored and not any(a.stopped for a in report.restored) else EXIT_ERROR


def _run_stop(args: argparse.Namespace, settings: Settings) -> int:
    """``nbs-tui stop PANE`` / ``nbs-tui restart PANE``
    (`nbs_tui.fleet_api.lifecycle_documents.stop_document`)."""
    import json

    from nbs_tui.fleet_api.lifecycle_documents import CommandFailed, NotConfirmed, stop_document
    from nbs_tui.lifecycle.arguments import one_host
    from nbs_tui.lifecycle.operations import Lifecycle

    _require_tmux()
    lifecycle = Lifecycle.for_command(settings, one_host(args, args.command), f"{args.command} --host")

    def confirm(target: str, pane_id: str) -> bool:
        if not sys.stdin.isatty():
            raise SpecError([f"{args.command} {args.pane}: confirm with --yes (no terminal to ask on)"])
        answer = input(f"{args.command} the agent in {target} ({pane_id})? [y/N] ")
        return answer.strip().lower() in ("y", "yes")

    try:
        out = stop_document(lifecycle, args.command, args.pane, _warn, None if args.yes else confirm)
    except NotConfirmed:
        return EXIT_ERROR
    except CommandFailed as failed:
        if failed.document is None:
            raise RuntimeError(failed.message) from None
        _warn(failed.message)  # a restart whose new process stopped: what was done is still printed
        out = failed.document
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
    elif args.command == "stop":
        print(f"stopped {out['target']} ({out['pane_id']}) with {out['stopped_by']}")
    else:
        print(f"restarted {out['target']} ({out['pane_id']}) in conversation {out['session_id']}")
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
        from nbs_tui.fleet_api.command_table import command_names
        from nbs_tui.fleet_api.command_table import run as run_fleet_api

        if args.command in command_names():
            _require_tmux()
            return run_fleet_api(args, settings)
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
