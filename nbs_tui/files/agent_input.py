"""What ``nbs-tui new`` reads from this machine's files before anything starts.

`prepare_local` checks a `nbs_tui.core.fleet.agent_spec.NewAgent` against the file system: the folder
exists (and is resolved: the trust dialog names the real path), the prompt file or the worker's
task file (``DIR/.nbs/workers/<NAME>.md``, typed whole: the file, never a summary) reads as text,
a worktree's folder is in a git repository (Claude Code's ``-w`` refuses one that is not), and the
configured Claude Code command is on PATH. It reads only: a refusal leaves nothing behind.
Every problem is reported at once, in the CLI's words (`SpecError.problems`).

An agent on another host (``--host``) has its folder, worker file and Claude Code there: those
checks run there, through the wiring's tmux path; a prompt file is read here, where the
operator typed its name.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from nbs_tui.core.fleet.agent_spec import (
    NewAgent,
    SpecError,
    checked,
    command_words,
    worker_problem,
)
from nbs_tui.files.registry_io import open_regular, read_at_most

MAX_PROMPT = 1024 * 1024
"""A prompt file larger than this is refused (a task file is a few KB; typing 1 MiB into a pane
already takes a while)."""


@dataclass(frozen=True, slots=True)
class PreparedAgent:
    """A new agent ready to start: checked, its folder resolved, its prompt read."""

    spec: NewAgent
    """Checked; ``directory`` is the resolved folder and ``name`` is filled in."""
    typed_folder: str
    """The folder as the operator named it, made absolute (another name of the same place when
    symlinks lead there: the trust dialog may show either)."""
    prompt: str | None
    """The text to type once the input box is ready (trailing newlines dropped); None: none."""
    worker_file: Path | None = None
    events: Path | None = None
    """The project's ``.nbs/events`` for a worker's ``worker-spawned``/``worker-died`` (None: no bus)."""


def _read_text(path: Path, what: str) -> tuple[str | None, str | None]:
    """(text, None) or (None, the problem)."""
    try:
        with open_regular(path) as handle:
            data = read_at_most(handle, MAX_PROMPT)
    except FileNotFoundError:
        return None, f"{what} {path}: no such file"
    except OSError as error:
        return None, f"{what} {path}: cannot read it ({error.strerror or error})"
    if len(data) > MAX_PROMPT:
        return None, f"{what} {path}: larger than {MAX_PROMPT >> 20} MiB"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, f"{what} {path}: not UTF-8 text"
    if not text.strip():
        return None, f"{what} {path}: is empty"
    return text.rstrip("\r\n"), None


def _in_git(folder: Path) -> bool:
    return any((parent / ".git").exists() for parent in (folder, *folder.parents))


def prepare_local(
    spec: NewAgent,
    *,
    cwd: Path | None = None,
    claude_command: str | None = None,
    which: Callable[[str], str | None] = shutil.which,
) -> PreparedAgent:
    """``spec`` checked against this machine (module docstring); raises `SpecError` listing
    every problem. ``cwd``: where relative names are read from (the operator's shell's folder).
    ``claude_command``: also check that its program is on PATH."""
    base = cwd or Path.cwd()
    found: list[str] = []
    try:
        spec = checked(spec)
    except SpecError as error:
        found.extend(error.problems)
    typed = Path(os.path.expanduser(spec.directory)) if spec.directory.strip() else None
    folder: Path | None = None
    if typed is not None:
        typed = Path(os.path.abspath(base / typed))
        if not typed.exists():
            found.append(f"DIR {typed} does not exist")
        elif not typed.is_dir():
            found.append(f"DIR {typed} is not a folder")
        else:
            folder = typed.resolve()
    prompt: str | None = spec.prompt.rstrip("\r\n") if spec.prompt is not None and spec.prompt.strip() else None
    if spec.prompt_file is not None and spec.prompt_file.strip():
        prompt, problem = _read_text(Path(os.path.abspath(base / os.path.expanduser(spec.prompt_file))), "--prompt-file")
        if problem:
            found.append(problem)
    worker_file = events = None
    if spec.worker is not None and folder is not None and worker_problem(spec.worker) is None:
        nbs = folder / ".nbs"
        if not nbs.is_dir():
            found.append(f"--worker {spec.worker}: {folder} has no .nbs/ folder (NBS workers are .nbs/workers/<NAME>.md)")
        else:
            worker_file = nbs / "workers" / f"{spec.worker}.md"
            prompt, problem = _read_text(worker_file, f"--worker {spec.worker}: task file")
            if problem:
                found.append(problem)
            events = nbs / "events" if (nbs / "events").is_dir() else None
    if spec.worktree and folder is not None and not _in_git(folder):
        found.append(f"--worktree: {folder} is not in a git repository (Claude Code's -w makes a git worktree)")
    if claude_command is not None:
        try:
            program = command_words(claude_command)[0]
        except SpecError as error:
            found.extend(error.problems)
        else:
            if which(program) is None:
                found.append(f"Claude Code not found: {program!r} is not on PATH (install it, or set claude_command)")
    if found:
        raise SpecError(found)
    assert folder is not None and typed is not None
    return PreparedAgent(replace(spec, directory=str(folder)), str(typed), prompt, worker_file, events)
