"""Soak: the dashboard and the service on 50 demo agents for an hour; is anything growing?

Run on demand (not part of the test suite)::

    nice -n 10 .venv/bin/python bench/soak.py                      # 50 agents, 60 minutes
    .venv/bin/python bench/soak.py --agents 10 --minutes 3 --every 20   # a quick look

It starts ``DemoFleet.start_busy(N, busy_fraction=0.25)`` on a private tmux server (a quarter
of the agents print 10 coloured lines a second, the rest idle and answer ``/nbs-poll``), then
the real CLI (``python -m nbs_tui -L SOCKET --poll-interval 10``) in a pty of 160x48, drained
by a thread as a terminal would. With ``service = "auto"`` the dashboard starts the server's
sidecar service (``nbs-tui service run``, detached): both are sampled every ``--every`` seconds:

* RSS (VmRSS) of the process, and of its ``tmux -C`` control clients;
* open file descriptors (``/proc/PID/fd``) and threads (``Threads:``);
* CPU over the interval (% of one core, the process and its control clients).

Growth is judged after a warm-up (``--warmup-minutes``, default 5): the last sample against the
first one after the warm-up (and for RSS the highest one too). Limit 10 % (RSS, fds, threads); CPU is reported, not judged (a shared machine's noise is larger
than any drift). The table is printed and saved to bench/results/soak-YYYYmmdd-HHMMSS.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from bench_app import AppInPty, app_env, descendants, stop_service, wait_for_service  # noqa: E402
from bench_mirror import TICK, cpu_ticks  # noqa: E402

from nbs_tui.demo.launcher import DemoFleet  # noqa: E402

LIMIT = 10.0
"""Per cent growth allowed after the warm-up (RSS, fds, threads)."""


def status_field(pid: int, name: str) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    raise ValueError(name)


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@dataclass
class Sample:
    minute: float
    rss_mb: float
    clients_rss_mb: float
    fds: int
    threads: int
    cpu: float
    """% of one core over the interval before this sample, the process and its control clients."""


@dataclass
class Watched:
    """One process (the dashboard or the service) and the ticks it had used at the last sample."""

    name: str
    pid: int
    samples: list[Sample] = field(default_factory=list)
    last_ticks: int = 0
    last_at: float = 0.0

    def ticks(self) -> int:
        total = cpu_ticks(self.pid)
        for child in descendants(self.pid):
            try:
                total += cpu_ticks(child)
            except (OSError, IndexError, ValueError):
                continue
        return total

    def start(self) -> None:
        self.last_ticks, self.last_at = self.ticks(), time.monotonic()

    def sample(self, minute: float) -> Sample:
        ticks, now = self.ticks(), time.monotonic()
        cpu = 100.0 * (ticks - self.last_ticks) / TICK / max(1e-6, now - self.last_at)
        self.last_ticks, self.last_at = ticks, now
        clients = 0.0
        for child in descendants(self.pid):
            try:
                clients += status_field(child, "VmRSS") / 1024
            except (OSError, ValueError):
                continue
        sample = Sample(
            minute=minute,
            rss_mb=status_field(self.pid, "VmRSS") / 1024,
            clients_rss_mb=clients,
            fds=fd_count(self.pid),
            threads=status_field(self.pid, "Threads"),
            cpu=cpu,
        )
        self.samples.append(sample)
        return sample


def growth(samples: list[Sample], warmup: float, attr: str) -> tuple[float, float, float]:
    """(value at the end of the warm-up, % growth of the last sample, % growth of the highest)."""
    after = [s for s in samples if s.minute >= warmup] or samples[-1:]
    base = float(getattr(after[0], attr))
    last = float(getattr(after[-1], attr))
    peak = max(float(getattr(s, attr)) for s in after)
    if base <= 0:
        return base, 0.0, 0.0
    return base, 100.0 * (last - base) / base, 100.0 * (peak - base) / base


def report(watched: list[Watched], args: argparse.Namespace, started: str, load: list[float]) -> tuple[str, bool]:
    lines = [
        f"# soak {started}: {args.agents} demo agents ({round(args.agents * args.busy)} busy), "
        f"{args.minutes} min, samples every {args.every:.0f} s, warm-up {args.warmup_minutes} min",
        "",
        f"load average during the run: min {min(load):.1f}, max {max(load):.1f} (2 cores, shared)",
        "",
    ]
    ok = True
    lines += ["| process | measure | at warm-up end | last | growth (last) | growth (peak) | verdict |",
              "|---|---|---|---|---|---|---|"]
    for proc in watched:
        for attr, unit in (("rss_mb", "MB"), ("clients_rss_mb", "MB"), ("fds", ""), ("threads", "")):
            if not proc.samples:
                continue
            base, last_pct, peak_pct = growth(proc.samples, args.warmup_minutes, attr)
            last = getattr(proc.samples[-1], attr)
            judged = attr != "clients_rss_mb" or base > 0
            # RSS is judged on its peak too; a sample of fds or threads can catch a passing
            # subprocess's pipes or a short-lived worker, so those are judged on the last sample
            good = last_pct < LIMIT and (peak_pct < LIMIT or attr != "rss_mb")
            ok = ok and (good or not judged)
            lines.append(
                f"| {proc.name} | {attr.replace('_mb', '')} | {base:.1f}{unit} | {last:.1f}{unit} | "
                f"{last_pct:+.1f} % | {peak_pct:+.1f} % | {'ok' if good else 'GROWS'} |"
            )
        after = [s.cpu for s in proc.samples if s.minute >= args.warmup_minutes]
        if after:
            half = max(1, len(after) // 2)
            lines.append(
                f"| {proc.name} | CPU % of a core | first half {sum(after[:half]) / half:.1f} | "
                f"second half {sum(after[half:]) / max(1, len(after) - half):.1f} | - | max {max(after):.1f} | reported |"
            )
    lines += ["", "Every sample (minute: RSS MB / clients MB / fds / threads / CPU %):", ""]
    for proc in watched:
        lines.append(f"{proc.name}:")
        for s in proc.samples:
            lines.append(
                f"  {s.minute:6.1f}: {s.rss_mb:6.1f} / {s.clients_rss_mb:5.1f} / {s.fds:3d} / {s.threads:2d} / {s.cpu:5.1f}"
            )
    lines += ["", f"verdict: {'no growth over ' + str(LIMIT) + ' % after the warm-up' if ok else 'GROWTH'}"]
    return "\n".join(lines) + "\n", ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--busy", type=float, default=0.25)
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--every", type=float, default=60.0, help="seconds between samples")
    parser.add_argument("--warmup-minutes", type=float, default=5.0)
    parser.add_argument("--poll-interval", type=float, default=10.0)
    args = parser.parse_args(argv)
    started = time.strftime("%Y%m%d-%H%M%S")
    workdir = Path(tempfile.mkdtemp(prefix="nbs-soak-"))
    print(f"starting {args.agents} demo agents ...", file=sys.stderr, flush=True)
    fleet = DemoFleet.start_busy(args.agents, busy_fraction=args.busy)
    app: AppInPty | None = None
    ok = False
    try:
        socket = fleet.server.socket_name
        assert socket is not None
        home = workdir / "home"
        home.mkdir()
        config = workdir / "soak.toml"
        config.write_text('service = "auto"\n')
        argv_app = [sys.executable, "-m", "nbs_tui", "-L", socket, "--poll-interval", str(args.poll_interval),
                    "--config", str(config)]
        app = AppInPty(argv_app, app_env(home), args.agents, ROOT)  # drained as a terminal would
        service = wait_for_service(socket, 90)
        if service is None:
            raise RuntimeError("the dashboard started no service")
        if app.proc.poll() is not None or app.out_bytes == 0:
            raise RuntimeError(f"the dashboard is not drawing; last output: {app.output()[-600:]!r}")
        watched = [Watched("dashboard", app.proc.pid), Watched("service", service)]
        for proc in watched:
            proc.start()
        began = time.monotonic()
        load: list[float] = []
        end = began + args.minutes * 60
        next_at = began + args.every
        while next_at <= end + 1:
            time.sleep(max(0.0, next_at - time.monotonic()))
            minute = (time.monotonic() - began) / 60
            load.append(os.getloadavg()[0])
            for proc in watched:
                if app.proc.poll() is not None:
                    raise RuntimeError(f"the dashboard exited ({app.proc.returncode}): {app.output()[-600:]!r}")
                s = proc.sample(minute)
                print(f"{minute:6.1f} min {proc.name}: RSS {s.rss_mb:.1f} MB (+clients {s.clients_rss_mb:.1f}), "
                      f"{s.fds} fds, {s.threads} threads, CPU {s.cpu:.1f} %", file=sys.stderr, flush=True)
            next_at += args.every
        text, ok = report(watched, args, started, load)
        events = [line for log in (home / ".local" / "state" / "nbs-tui").glob("service-*.log")
                  for line in log.read_text(errors="replace").splitlines()]
        polls = sum('"poll' in line or "nbs-poll" in line for line in events)
        text += f"\nthe service's event log: {len(events)} events, {polls} of them polls\n"
        print(text)
        out = BENCH / "results" / f"soak-{started}.md"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        print(f"saved {out.relative_to(ROOT)}", file=sys.stderr)
    finally:
        if app is not None:
            app.quit()
        socket = fleet.server.socket_name
        if socket:
            stop_service(socket, app_env(workdir / "home"))
        fleet.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
