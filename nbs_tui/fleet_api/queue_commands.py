"""``nbs-tui queue add|ls|cancel|pause|resume``: the work queue from a script (docs/queue.md).

The commands only append records to the server's queue file (`nbs_tui.files.queue_store`) and
read it; the lease holder's feeder (`nbs_tui.sidecar.queue_feeder`) is the one actor that hands
tasks out. Each command makes sure the server's service runs (`ensure_service`), as the other
fleet API commands do, so a task added with no dashboard open is fed. ``--host`` runs the
command there, by that host's own nbs-tui (its queue file, its service).

Each command's work is a ``queue_*_document`` function returning the JSON document (MCP calls
the same ones) or raising `FleetApiError`: 4 for bad input (an unknown task id, a missing file),
2 for a cancel refused (the task already ended).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from nbs_tui.config import Settings
from nbs_tui.core.fleet.agent_spec import worker_problem
from nbs_tui.core.fleet.host_spec import LOCAL, HostSpec
from nbs_tui.core.fleet_api.agent_row import _duration
from nbs_tui.core.fleet_api.exit_codes import ExitCode, FleetApiError
from nbs_tui.core.queue.records import (
    MAX_TEXT,
    QueuePaused,
    QueueResumed,
    Record,
    TaskAdded,
    TaskCancelled,
)
from nbs_tui.core.queue.task_states import QueueState, Task
from nbs_tui.core.sidecar.delivery_rules import clean_text
from nbs_tui.files.queue_store import QueueStore
from nbs_tui.fleet_api.read_commands import _run_there
from nbs_tui.fleet_api.service_up import ensure_service
from nbs_tui.server_options import add_server_options
from nbs_tui.tmux.commands import TmuxServerCommands
from nbs_tui.tmux.errors import TmuxError

COMMANDS = ("queue",)
VERBS = ("add", "ls", "cancel", "pause", "resume")


def add_parsers(commands: argparse._SubParsersAction[Any]) -> None:
    queue = commands.add_parser(
        "queue", help="the work queue: tasks the lease holder hands to idle agents"
    )
    verbs = queue.add_subparsers(dest="queue_verb", metavar="VERB", required=True)
    add = verbs.add_parser("add", help="add a task; prints its id")
    add.add_argument(
        "text", nargs="?", metavar="TEXT", help="the prompt to type into the agent that takes it"
    )
    add.add_argument(
        "--text", dest="text_option", help=argparse.SUPPRESS
    )  # TEXT, whatever it starts with (--host)
    add.add_argument("--file", metavar="F", help="the prompt from this file")
    add.add_argument(
        "--worker",
        metavar="NAME",
        help="an NBS worker: a new agent runs .nbs/workers/NAME.md of --folder",
    )
    add.add_argument(
        "--folder",
        metavar="DIR",
        help="only agents in DIR or below it (and where --start starts one)",
    )
    add.add_argument(
        "--agents", metavar="GLOB", help="only agents whose window or worker name matches GLOB"
    )
    add.add_argument(
        "--start",
        action="store_true",
        help="may start a new agent in --folder (default: here) for it",
    )
    add.add_argument("--after", metavar="ID", help="only once task ID is done")
    add.add_argument(
        "--priority",
        type=int,
        default=0,
        metavar="N",
        help="higher goes first (default 0); then by age",
    )
    ls = verbs.add_parser("ls", help="list the tasks: state, agent, age")
    cancel = verbs.add_parser(
        "cancel", help="cancel a task (one already out stays with its agent, unfollowed)"
    )
    cancel.add_argument("task", metavar="ID")
    pause = verbs.add_parser("pause", help="hand nothing out until resumed")
    resume = verbs.add_parser("resume", help="hand tasks out again")
    for parser in (add, ls, cancel, pause, resume):
        parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
        add_server_options(
            parser, inherit=True, host_help="run it on this host's queue, through ssh"
        )


def run(args: argparse.Namespace, settings: Settings) -> int:
    verb = args.queue_verb
    try:
        if verb == "add":
            out = queue_add_document(
                settings, text=args.text if args.text_option is None else args.text_option, file=args.file, worker=args.worker, folder=args.folder,
                agents=args.agents, start=args.start, after=args.after, priority=args.priority,
            )  # fmt: skip
            said = str(out["task"]["id"])
        elif verb == "ls":
            out = queue_ls_document(settings)
            said = queue_table(out)
        elif verb == "cancel":
            out = queue_cancel_document(settings, args.task)
            said = f"task {args.task} cancelled"
        else:
            out = (
                queue_pause_document(settings)
                if verb == "pause"
                else queue_resume_document(settings)
            )
            said = "queue paused" if out["paused"] else "queue resumed"
    except FleetApiError as error:
        print(f"nbs-tui queue {verb}: {error.message}", file=sys.stderr)
        return error.code
    print(json.dumps(out, ensure_ascii=False) if args.json else said)
    return ExitCode.DONE


# -- where: this machine's server, or the one other host named ---------------------------------


def _host(settings: Settings) -> HostSpec:
    if len(settings.host_choice) > 1:
        raise FleetApiError(ExitCode.BAD_INPUT, "--host: one host's queue at a time")
    if settings.host_choice:
        (host,) = settings.watched_hosts()
        return host
    return HostSpec(
        LOCAL, socket_name=settings.server.socket_name, socket_path=settings.server.socket_path
    )


def _store(settings: Settings, host: HostSpec) -> QueueStore:
    """This machine's queue of the server, with its service made sure to run."""
    commands = TmuxServerCommands.for_server(host.server)
    try:
        ensure_service(
            settings, commands, lambda said: print(f"nbs-tui queue: {said}", file=sys.stderr)
        )
    except TmuxError as error:  # no server yet: the queue is kept, fed once a service runs
        print(
            f"nbs-tui queue: {host.server.describe()}: {error}; the queue is fed once its service runs",
            file=sys.stderr,
        )
    return QueueStore.for_server(
        LOCAL, host.server, report=lambda why: print(f"nbs-tui queue: {why}", file=sys.stderr)
    )


@contextmanager
def _writing(store: QueueStore) -> Iterator[None]:
    """A write that fails (a full disk, a read-only folder) is the command's failure, said."""
    try:
        yield
    except OSError as error:
        why = error.strerror or error
        raise FleetApiError(ExitCode.BAD_INPUT, f"cannot write {store.path} ({why})") from None


def _listing(queue: QueueState) -> dict[str, Any]:
    return {"paused": queue.paused, "tasks": [task.as_json() for task in queue.ordered()]}


# -- the documents (MCP calls these) --------------------------------------------------------------


def queue_add_document(
    settings: Settings,
    *,
    text: str | None = None,
    file: str | None = None,
    worker: str | None = None,
    folder: str | None = None,
    agents: str | None = None,
    start: bool = False,
    after: str | None = None,
    priority: int = 0,
) -> dict[str, Any]:
    """Add a task; ``{"task": {...}}`` (`Task.as_json`). Raises `FleetApiError` (4) for bad input."""
    host = _host(settings)
    if not host.is_local:  # that host's own nbs-tui adds it; a file is read here, its text sent
        if (start or worker is not None) and folder is None:
            raise FleetApiError(
                ExitCode.BAD_INPUT,
                f"--host {host.name}: give --folder (a folder there) with --start or --worker",
            )
        words = ["queue", "add", "--priority", str(priority), *(["--start"] if start else [])]
        if file is not None:
            text, file = _read_prompt(file), None
        for flag, value in (
            ("--text", text),
            ("--worker", worker),
            ("--folder", folder),
            ("--agents", agents),
            ("--after", after),
        ):
            if value is not None:
                words.append(f"{flag}={value}")
        return _run_there(host, words)
    given = [
        name
        for name, value in (("TEXT", text), ("--file", file), ("--worker", worker))
        if value is not None
    ]
    if len(given) != 1:
        raise FleetApiError(
            ExitCode.BAD_INPUT, "give exactly one of TEXT, --file F and --worker NAME"
        )
    prompt = _read_prompt(file) if file is not None else (text or "")
    if worker is not None:
        problem = worker_problem(worker)
        if problem:
            raise FleetApiError(ExitCode.BAD_INPUT, problem)
    else:
        try:  # as the sidecar will type it (the send's rules): refused now, not when handed out
            prompt = clean_text(prompt)
        except ValueError as error:
            raise FleetApiError(ExitCode.BAD_INPUT, str(error)) from None
    where = _folder(folder, needed=start or worker is not None)
    if worker is not None and not (Path(where) / ".nbs" / "workers" / f"{worker}.md").is_file():
        raise FleetApiError(
            ExitCode.BAD_INPUT, f"--worker {worker}: no {where}/.nbs/workers/{worker}.md"
        )
    if agents is not None and not agents.strip():
        raise FleetApiError(ExitCode.BAD_INPUT, "--agents: an empty pattern")
    store = _store(settings, host)

    def make(task_id: str) -> TaskAdded:
        return TaskAdded(
            task=task_id, at=time.time(), text="" if worker is not None else prompt, worker=worker or "",
            folder=where, agents=agents or "", start=start, after=after or "", priority=priority,
        )  # fmt: skip

    if after is not None and store.refresh().get(after) is None:
        raise FleetApiError(ExitCode.BAD_INPUT, f"--after {after}: no such task")
    with _writing(store):
        task = store.add(make)
    return {"task": task.as_json()}


def _read_prompt(file: str) -> str:
    try:
        with open(file, "rb") as handle:
            data = handle.read(MAX_TEXT * 4 + 1)
    except OSError as error:
        raise FleetApiError(
            ExitCode.BAD_INPUT, f"--file {file}: {error.strerror or error}"
        ) from None
    try:
        text = data.decode("utf-8").rstrip("\n")
    except UnicodeDecodeError:
        raise FleetApiError(ExitCode.BAD_INPUT, f"--file {file}: not UTF-8 text") from None
    if not text.strip():
        raise FleetApiError(ExitCode.BAD_INPUT, f"--file {file}: empty")
    return text


def _folder(folder: str | None, *, needed: bool) -> str:
    """``--folder`` as an absolute real path (agents' folders are tmux's, resolved); the current
    one when a folder is ``needed`` (``--start``, ``--worker``) and none given."""
    if folder is None:
        return os.path.realpath(os.getcwd()) if needed else ""
    path = os.path.realpath(os.path.expanduser(folder))
    if not os.path.isdir(path):
        raise FleetApiError(ExitCode.BAD_INPUT, f"--folder {folder}: not a folder")
    return path


def queue_ls_document(settings: Settings) -> dict[str, Any]:
    """``{"paused": bool, "tasks": [...]}``, the tasks in the order they are handed out."""
    host = _host(settings)
    if not host.is_local:
        return _run_there(host, ["queue", "ls"])
    return _listing(_store(settings, host).refresh())


def queue_cancel_document(settings: Settings, task_id: str) -> dict[str, Any]:
    """Cancel a task; ``{"task": {...}}``. 4: no such task; 2: it already ended."""
    host = _host(settings)
    if not host.is_local:
        return _run_there(host, ["queue", "cancel", task_id])
    store = _store(settings, host)
    refused: list[Task] = []

    def cancel(queue: QueueState) -> Record | None:
        task = queue.get(task_id)
        if task is None:
            raise FleetApiError(ExitCode.BAD_INPUT, f"no task {task_id}")
        if task.state.ended:
            refused.append(task)
            return None
        return TaskCancelled(task_id, time.time())

    with _writing(store):
        store.append_checked(cancel)
    if refused:
        raise FleetApiError(ExitCode.REFUSED, f"task {task_id} is already {refused[0].state}")
    task = store.queue.get(task_id)
    assert task is not None
    return {"task": task.as_json()}


def queue_pause_document(settings: Settings) -> dict[str, Any]:
    return _pause(settings, True)


def queue_resume_document(settings: Settings) -> dict[str, Any]:
    return _pause(settings, False)


def _pause(settings: Settings, paused: bool) -> dict[str, Any]:
    host = _host(settings)
    if not host.is_local:
        return _run_there(host, ["queue", "pause" if paused else "resume"])
    store = _store(settings, host)
    with _writing(store):
        store.append(QueuePaused(time.time()) if paused else QueueResumed(time.time()))
    return _listing(store.queue)


# -- the table ----------------------------------------------------------------------------------

_COLUMNS = ("ID", "STATE", "PRI", "AGE", "AGENT", "FOLDER", "TASK")


def queue_table(listing: dict[str, Any], now: float | None = None) -> str:
    """``queue ls``: one task a line under a header, in hand-out order; "paused" said first."""
    now = time.time() if now is None else now
    rows = [
        (
            str(task["id"]),
            str(task["state"])
            + (
                f" ({task['reason']})"
                if task.get("reason") and task["state"] in ("failed", "needs")
                else ""
            ),
            str(task["priority"]),
            _duration(now - float(task["added_at"])),
            str(task.get("pane") or "-"),
            str(task.get("folder") or "-"),
            _first_line(task.get("text") or f"worker {task.get('worker')}"),
        )
        for task in listing["tasks"]
    ]
    head = (
        "queue paused: nothing is handed out until nbs-tui queue resume\n"
        if listing["paused"]
        else ""
    )
    if not rows:
        return head + "no tasks"
    table = [_COLUMNS, *rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(_COLUMNS))]
    return head + "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in table
    )


def _first_line(text: str, width: int = 60) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "\u2026"
