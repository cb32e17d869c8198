"""The agents' git worktrees watched for changed files: one thread, one ``watchfiles.watch`` over
every worktree root, reporting which roots changed (``on_change(roots)``); nothing is read here.

What is passed over: watchfiles' default filter (``.git``, ``__pycache__``, ``node_modules``,
``.venv``, editor droppings). Git's own folder is left out on purpose: a commit, a stage or a
checkout of the agent does not change the worktree against its base (the changes counted are the
base against the files), and a checkout that does change files is seen through the files. A path
under a worktree nested in another (Claude Code's ``.claude/worktrees/NAME`` inside its
repository) belongs to the innermost root.

When the roots change (`set_roots`) the watch is stopped and started again on the new set. When
the watch dies (a root removed, an inotify limit) ``on_error`` is told once and the roots are
watched again at the next `set_roots`; the fleet list then keeps its last counts.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable

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
        self._roots: frozenset[str] = frozenset()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._restart = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nbs-worktree-watch", daemon=True)

    @property
    def roots(self) -> frozenset[str]:
        return self._roots

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._restart.set()
        self._wake.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(2.0)

    def set_roots(self, roots: Iterable[str]) -> None:
        """Watch these roots from now on (the same set again changes nothing)."""
        wanted = frozenset(roots)
        with self._lock:
            if wanted == self._roots:
                return
            self._roots = wanted
        self._restart.set()
        self._wake.set()

    def _run(self) -> None:
        import watchfiles  # a port's thread: the core never imports watchfiles

        while not self._stopping.is_set():
            self._wake.wait()
            self._wake.clear()
            self._restart.clear()
            with self._lock:
                roots = sorted(self._roots)
            present = [root for root in roots if os.path.isdir(root)]
            if not present:
                continue
            try:
                for changes in watchfiles.watch(
                    *present,
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
                    hit = {owning_root(path, present) for _change, path in changes}
                    hit.discard(None)
                    if hit:
                        self._on_change(frozenset(root for root in hit if root is not None))
            except Exception as error:  # the next set_roots watches again
                if not self._stopping.is_set():
                    self._on_error(f"watching the agents' worktrees stopped: {error}")
                    continue
            if self._restart.is_set():
                self._wake.set()  # go round with the new roots
