"""The agents' git worktrees watched for changed files: one thread, one ``watchfiles.watch`` over
the folders of every worktree, reporting which worktrees changed (``on_change(roots)``); nothing
is read here.

Which folders: each worktree's root and the folders git tracks files in, and those its changes
are in (the caller says: `set_folders`), each watched alone (not recursively). An ignored tree
(``node_modules``, a build folder, ``.venv``) then costs no inotify watch at all, where a
recursive watch would register every folder of it; a folder the agent makes shows as a change in
its parent, and is watched once a read has seen a change in it. Watchfiles' default filter also
passes over ``.git``, ``__pycache__`` and editor droppings: git's own folder on purpose, as a
commit, a stage or a checkout does not change the worktree against its base (the changes counted
are the base against the files), and a checkout that does change files is seen through the files.
A path in a worktree nested in another (Claude Code's ``.claude/worktrees/NAME`` inside its
repository) belongs to the innermost root.

When the folders change the watch is stopped and started again on the new set; once it is in
place, the worktrees whose folders changed are reported changed (a write while no watch was
there is not lost). When the watch
dies (a folder removed, an inotify limit) ``on_error`` is told once and the folders are watched
again at the next `set_folders`; meanwhile the counts follow the hooks alone.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping

from nbs_tui.files.control_watch import WATCH_STEP_MS

DEBOUNCE_MS = 300
"""A burst of writes (a formatter, a checkout) is one change: the counts follow within ~0.5 s."""


def owning_root(path: str, roots: Iterable[str]) -> str | None:
    """The innermost of ``roots`` that ``path`` lies in, or None."""
    best: str | None = None
    for root in roots:
        inside = root.rstrip(os.sep) + os.sep
        if (path == root or path.startswith(inside)) and (best is None or len(root) > len(best)):
            best = root
    return best


class WorktreeWatch:
    """Watches a set of worktree roots on a daemon thread (module docstring)."""

    def __init__(
        self,
        on_change: Callable[[frozenset[str]], None],
        on_error: Callable[[str], None],
        *,
        debounce_ms: int = DEBOUNCE_MS,
        step_ms: int = WATCH_STEP_MS,
    ) -> None:
        self._on_change = on_change
        self._on_error = on_error
        self._debounce_ms = debounce_ms
        self._step_ms = step_ms
        self._folders: dict[str, frozenset[str]] = {}
        """Worktree root -> the folders watched in it."""
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._restart = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nbs-worktree-watch", daemon=True)

    @property
    def roots(self) -> frozenset[str]:
        return frozenset(self._folders)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._restart.set()
        self._wake.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(2.0)

    def set_folders(self, folders: Mapping[str, frozenset[str]]) -> None:
        """Watch these folders from now on, by worktree root (the same again changes nothing)."""
        wanted = dict(folders)
        with self._lock:
            if wanted == self._folders:
                return
            self._folders = wanted
        self._restart.set()
        self._wake.set()

    def _run(self) -> None:
        import watchfiles  # a port's thread: the core never imports watchfiles

        in_place: dict[str, frozenset[str]] = {}
        while not self._stopping.is_set():
            self._wake.wait()
            self._wake.clear()
            self._restart.clear()
            with self._lock:
                wanted = dict(self._folders)
            roots = sorted(wanted)
            folders = sorted({f for fs in wanted.values() for f in fs if os.path.isdir(f)})
            # a folder not watched until now may have changed meanwhile: said once the watch is in
            # place (a new worktree is read by the caller when it hands it over)
            unwatched = frozenset(root for root, fs in wanted.items() if root in in_place and fs != in_place[root])
            in_place = wanted
            if not folders:
                continue
            try:
                for changes in watchfiles.watch(
                    *folders,
                    recursive=False,
                    debounce=self._debounce_ms,
                    step=self._step_ms,
                    stop_event=self._restart,
                    rust_timeout=500,
                    yield_on_timeout=True,
                    raise_interrupt=False,
                    ignore_permission_denied=True,
                ):
                    if self._restart.is_set():
                        break
                    hit = {root for _change, path in changes if (root := owning_root(path, roots)) is not None}
                    hit |= unwatched  # the first yield (a change, or the empty set after rust_timeout)
                    unwatched = frozenset()
                    if hit:
                        self._on_change(frozenset(hit))
            except Exception as error:  # the next set_folders watches again
                if not self._stopping.is_set():
                    self._on_error(f"watching the agents' worktrees stopped: {error}")
                    continue
            if self._restart.is_set():
                self._wake.set()  # go round with the new roots
