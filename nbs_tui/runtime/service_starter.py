"""How a dashboard hands the sidecar to a detached ``nbs-tui service``: the flags it passes
on, and `ServiceStarter`, which starts the service when nobody holds the lease (docs/lease.md).

Apart from `nbs_tui.runtime.service` (the service's own commands and process) so the runtime
can start a service without importing what the service runs (``--headless``, which imports the
runtime).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence

from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import ServerAddress

log = logging.getLogger(__name__)


def sidecar_flags(settings: Settings, *, local: bool = True) -> list[str]:
    """The flags that give a service process the sidecar settings this process runs with.

    A dashboard started with ``--no-poll`` or ``--poll-interval 5`` that starts the service must
    not get a service that polls on the defaults; ``service start`` hands them on to ``run``.
    Paths (the config file, projects) are this machine's: only ``local`` services get them.
    """
    flags = ["--poll-interval", f"{settings.poll_interval:g}", "--plan-policy", settings.plan_policy]
    if settings.poll_disabled:
        flags.append("--no-poll")
    if local:
        if settings.config_file.is_file():  # the default path may be absent; a named one may not
            flags += ["--config", str(settings.config_file)]
        for project in settings.projects:
            flags += ["--project", str(project)]
    return flags



# -- started by a dashboard --------------------------------------------------------------------


class ServiceStarter:
    """A dashboard's ``on_vacant``: nobody holds the lease, so start the service (in a thread,
    at most once per two ttl); if it cannot start, or starts and still nobody holds the lease
    after three ttl, call ``give_up(why)`` (the dashboard then contends itself).

    ``ready()`` holds the start back until the dashboard has drawn its fleet: starting two
    Python processes and a second fleet seed at the same moment as the dashboard's own start
    delayed its first frame 1.3 s -> 4.2 s on two cores (bench/bench_app.py, 50 panes)."""

    def __init__(
        self,
        server: ServerAddress,
        ttl: float,
        problem: Callable[[str], None],
        give_up: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
        ready: Callable[[], bool] = lambda: True,
        argv: Sequence[str] | None = None,
    ) -> None:
        self.server = server
        self.ready = ready
        self.argv = list(argv) if argv is not None else [
            sys.executable, "-m", "nbs_tui", *server.tmux_args(), "service", "start"
        ]
        """``nbs-tui service start`` for the server: here, or ``ssh HOST nbs-tui service start``."""
        self.ttl = ttl
        self.problem = problem
        self.give_up = give_up
        self.clock = clock
        self._first_try: float | None = None
        self._last_try = float("-inf")
        self._lock = threading.Lock()
        self._done = False

    def vacant(self) -> None:
        if not self.ready():
            return  # asked again at the lease's next look (ttl/4)
        now = self.clock()
        with self._lock:
            if self._done or now - self._last_try < 2 * self.ttl:
                if not self._done and self._first_try is not None and now - self._first_try >= 3 * self.ttl:
                    self._done = True
                    self.give_up("nbs-tui service started but no sidecar holds the lease")
                return
            self._last_try = now
            if self._first_try is None:
                self._first_try = now
        threading.Thread(target=self._start, name="nbs-service-start", daemon=True).start()

    def _start(self) -> None:
        env = {k: v for k, v in os.environ.items() if k != "TMUX"}
        try:
            done = subprocess.run(
                self.argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, env=env, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            why = str(error)
        else:
            if done.returncode == 0:
                log.info("started the sidecar service: %s", done.stdout.strip().replace("\n", "; "))
                return
            why = (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}").splitlines()[-1]
        with self._lock:
            self._done = True
        self.give_up(f"nbs-tui service did not start ({why})")
