"""``nbs-tui new --host DEST``: the checks `nbs_tui.files.agent_input` makes here, made on the host.

One shell script over the host's ssh connection (`SshTmuxRunner.run_script`, its ControlMaster)
reports, one ``KEY=value`` line each: the folder resolved (``cd -P``), the host's HOME, whether
``claude_command``'s program is found there (``command -v``), whether a worktree's folder is in
git, the worker's task file (base64, at most `MAX_PROMPT` bytes) and whether its project has an NBS
bus (``.nbs/events``: its ``worker-spawned`` and ``worker-died`` go there); then Claude Code's ``--help`` there (for `ClaudeFlags`). A prompt file is read
here, where the operator named it. Every problem is reported at once (`SpecError`), nothing made.
"""

from __future__ import annotations

import base64
import shlex
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from nbs_tui.core.fleet.agent_spec import (
    ClaudeFlags,
    NewAgent,
    SpecError,
    checked,
    command_words,
    worker_problem,
)
from nbs_tui.files.agent_input import MAX_PROMPT, PreparedAgent, prepare_local
from nbs_tui.tmux.errors import TmuxError
from nbs_tui.tmux.ssh import SshTmuxRunner

_HELP = "----nbs-tui-help----"
_AGENTS_HELP = "----nbs-tui-agents-help----"


@dataclass(frozen=True, slots=True)
class RemoteAgent:
    prepared: PreparedAgent
    home: str | None
    flags: ClaudeFlags


def _folder_word(directory: str) -> str:
    """The folder as a word of the host's shell: quoted, with a leading ``~`` as the host's HOME."""
    if directory == "~":
        return '"$HOME"'
    if directory.startswith("~/"):
        return '"$HOME"/' + shlex.quote(directory[2:])
    return shlex.quote(directory)


def _script(spec: NewAgent, program: str, claude_command: str) -> str:
    q = shlex.quote
    lines = [
        f"if d=$(cd -P -- {_folder_word(spec.directory)} 2>/dev/null && pwd -P); then echo \"DIR=$d\"; else echo DIR=; fi",
        'echo "HOME=$HOME"',
        f"if command -v {q(program)} >/dev/null 2>&1; then echo CLAUDE=1; else echo CLAUDE=0; fi",
        'if [ -n "$d" ] && (cd "$d" && git rev-parse --git-dir >/dev/null 2>&1); then echo GIT=1; else echo GIT=0; fi',
    ]
    if spec.worker is not None:
        task = f'"$d"/.nbs/workers/{q(spec.worker + ".md")}'
        lines += [
            'if [ -d "$d/.nbs" ]; then echo NBS=1; else echo NBS=0; fi',
            'if [ -d "$d/.nbs/events" ]; then echo EVENTS=1; else echo EVENTS=0; fi',
            f"if [ -f {task} ] && [ -r {task} ]; then echo \"TASK=$(head -c {MAX_PROMPT + 1} {task} | base64 | tr -d '\\n')\"; else echo TASK=-; fi",
        ]
    lines += [
        f"echo {_HELP}",
        f"{claude_command} --help 2>/dev/null </dev/null",
        f"echo {_AGENTS_HELP}",
        f"{claude_command} agents --help 2>/dev/null </dev/null",
        "true",
    ]
    return "\n".join(lines) + "\n"


def prepare_remote(spec: NewAgent, runner: SshTmuxRunner, claude_command: str) -> RemoteAgent:
    """``spec`` checked, then checked on the host (module docstring); raises `SpecError` listing
    the spec's problems, else every problem found there. The one check of a spec for another
    host (`nbs_tui.lifecycle.host.RemoteHost.prepare`)."""
    spec = checked(spec)  # the spec's own problems first: nothing is asked of the host for a bad one
    found: list[str] = []
    host = runner.host.name
    prompt = spec.prompt
    if spec.prompt_file is not None:  # read here: the operator named a file of this machine
        try:
            local = prepare_local(replace(spec, directory=".", worker=None, worktree=False), claude_command=None)
            prompt = local.prompt
        except SpecError as error:
            found.extend(p for p in error.problems if p.startswith("--prompt-file"))
    program = command_words(claude_command)[0]
    try:
        out = runner.run_script(_script(spec, program, claude_command), timeout=60.0)
    except TmuxError as error:
        raise SpecError([*found, f"--host {spec.host}: {error}"]) from None
    head, _, rest = out.partition(_HELP + "\n")
    help_text, _, agents_help = rest.partition(_AGENTS_HELP + "\n")
    facts = dict(line.split("=", 1) for line in head.splitlines() if "=" in line)
    folder = facts.get("DIR", "")
    if not folder:
        found.append(f"DIR {spec.directory} does not exist on {host} (or is not a folder)")
    if facts.get("CLAUDE") != "1":
        found.append(f"Claude Code not found on {host}: {program!r} is not on PATH there (install it, or set claude_command)")
    if spec.worktree and folder and facts.get("GIT") != "1":
        found.append(f"--worktree: {folder} on {host} is not in a git repository")
    if spec.worker is not None and folder and worker_problem(spec.worker) is None:
        if facts.get("NBS") != "1":
            found.append(f"--worker {spec.worker}: {folder} on {host} has no .nbs/ folder")
        else:
            prompt, problem = _task(facts.get("TASK", "-"), f"--worker {spec.worker}: task file {folder}/.nbs/workers/{spec.worker}.md on {host}")
            if problem:
                found.append(problem)
    if found:
        raise SpecError(found)
    flags = ClaudeFlags.from_help(help_text, agents_help) if help_text.strip() else ClaudeFlags()
    # a worker's bus is the project's .nbs/events on the host: `RemoteHost.publish` writes there
    events = PurePosixPath(folder) / ".nbs" / "events" if spec.worker is not None and facts.get("EVENTS") == "1" else None
    prepared = PreparedAgent(replace(spec, directory=folder), spec.directory, prompt, events=Path(events) if events else None)
    return RemoteAgent(prepared, facts.get("HOME") or None, flags)


def _task(encoded: str, what: str) -> tuple[str | None, str | None]:
    if encoded == "-":
        return None, f"{what}: no such file"
    try:
        data = base64.b64decode(encoded)
    except ValueError:
        return None, f"{what}: cannot read it"
    if len(data) > MAX_PROMPT:
        return None, f"{what}: larger than {MAX_PROMPT >> 20} MiB"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, f"{what}: not UTF-8 text"
    if not text.strip():
        return None, f"{what}: is empty"
    return text.rstrip("\r\n"), None
