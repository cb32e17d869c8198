"""Two or more commits' dashboards on one fleet, launch after launch, alternating: which costs more?

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_commits.py 58ccd14 main                  # 200 panes, 48 printing
    .venv/bin/python bench/bench_commits.py --panes 1000 --busy 0 main .  # 1,000 idle shells
    .venv/bin/python bench/bench_commits.py --rounds 8 --max-rounds 16 ../before .

Each argument is a checkout (a folder: ``.`` is this one, uncommitted edits included) or a
commit, which gets a detached worktree of its own (``git worktree add --detach``, removed at
the end) sharing this checkout's ``.venv`` (``python -m nbs_tui`` run from the worktree imports
its own ``nbs_tui`` first); every checkout is byte-compiled first, as `bench_app.py` does.

The fleet: `bench_mirror.Bench` on a private tmux server, ``--panes`` plain 120x40 panes (default
200), ``--busy`` of them (default 48) printing a coloured ~100-byte line every 80-120 ms, the
rest idle shells (``--idle``, default ``bash --noprofile --norc``: no output at all; the rc files
here run pyenv, which made 1,000 shells take minutes to start, at load ~200). Before each round
its server's CPU with nothing attached is measured (``--baseline`` seconds): the reference of
that round's "extra" (it grows as the writers' panes fill their history: 0.5 % of a core at
first, ~10 % once 2,000 lines are kept, a few minutes in).

A round launches each checkout once, the order reversed every other round (as
`bench_first_frame.interleaved`: load drifts hit both alike): the CLI as `bench_app.py` runs it (``python -m nbs_tui -L SOCKET
--no-poll``, empty config, so ``service = "auto"``) in a pty of ``--size`` (default 200x60).
Once the status bar lists every pane and the service the dashboard starts is running (or 10 s
passed), ``--warmup`` seconds (6), then a window of ``--seconds`` (20): the CPU of the app's
process tree (the process with its reaped children, and its live ``tmux -C`` clients), of the
service (a detached process of its own, with its children), and the server's extra CPU; peak
RSS of the app and the service; the machine's load average. Then ``q``, and the service is
stopped (``nbs-tui service stop`` of that checkout) before the next launch.

The verdict, for each checkout against the first: the ratio of each round's pair (our
processes: the app's tree and the service; the app's tree with the server's extra, as issue 35
measured it; and all of it), their geometric mean and its 95 % confidence interval (Student's t
on the logs). Rounds go on past ``--rounds`` until the interval of our processes' ratio is
within ``--resolve`` (default ±5 %, so a 10 % change lies outside it) or ``--max-rounds`` is
reached: the report says whether a 10 % change can be told from the noise. The server's extra
moves with the machine's load far more than our processes' CPU does (its own baseline moves
within a round): read its ratios with their wider intervals.
Prints one Markdown report and saves it as ``bench/results/commits-*.md`` (not committed).
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from bench_app import (  # noqa: E402
    ChildrenMeter,
    MachineMeter,
    app_env,
    service_pids,
    stop_service,
    wait_for_service,
)
from bench_first_frame import launch_checkout, prepare  # noqa: E402
from bench_mirror import Bench, CpuMeter, peak_rss_mb  # noqa: E402

T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)  # fmt: skip
"""Student's t, two-sided 95 %, for 1..30 degrees of freedom."""


class ServiceMeter(ChildrenMeter):
    """CPU of the server's ``nbs-tui service`` and its children over a window (% of one core)."""

    def _members(self) -> list[int]:
        return service_pids(self.socket) if self.socket else []


@dataclass
class Launch:
    """One launch's window, CPU in % of one core."""

    app: float
    clients: float
    service: float
    server_extra: float
    base: float
    """The server alone before this round (``server_extra`` is over it)."""
    app_rss_mb: float
    service_rss_mb: float
    service_seen: bool
    load: float
    machine: float

    @property
    def ours(self) -> float:
        """Our processes: the app's tree and the service."""
        return self.app + self.clients + self.service

    @property
    def tree(self) -> float:
        """Issue 35's measure: the app's process tree and the server's extra."""
        return self.app + self.clients + self.server_extra

    @property
    def total(self) -> float:
        """All of it: the tree, the service and the server's extra."""
        return self.tree + self.service


@dataclass
class Checkout:
    name: str
    path: Path
    launches: list[Launch] = field(default_factory=list)


def checkouts_of(specs: list[str], scratch: Path) -> tuple[list[Checkout], list[Path]]:
    """A checkout per argument: a folder as it is, a commit in a detached worktree of its own
    (returned second, to remove) with this checkout's ``.venv``."""
    found, made = [], []
    for spec in specs:
        if Path(spec).is_dir():
            path = Path(spec).resolve()
            found.append(Checkout(path.name if path != ROOT else f"{path.name} (this checkout)", path))
            continue
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", spec],
                                capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
        path = scratch / f"at-{commit}"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), commit],
                       capture_output=True, check=True)  # fmt: skip
        (path / ".venv").symlink_to(ROOT / ".venv")
        made.append(path)
        found.append(Checkout(f"{spec} ({commit})" if spec != commit else commit, path))
    return found, made


def launch_cost(
    checkout: Path, bench: Bench, config: Path, home: Path, args: argparse.Namespace, base: float
) -> Launch:
    """Launch the dashboard of ``checkout`` once on the fleet and measure its window."""
    app = launch_checkout(checkout, bench.socket, config, home, bench.n, tuple(args.size))
    try:
        deadline = time.monotonic() + 60 + bench.n * 0.1
        while not app.listed_ns:
            if time.monotonic() > deadline or app.proc.poll() is not None:
                raise RuntimeError(f"{checkout}: fleet never listed; last output: {app.output()[-600:]!r}")
            time.sleep(0.1)
        seen = wait_for_service(bench.socket) is not None
        time.sleep(args.warmup)
        app_cpu = CpuMeter(app.proc.pid, children=True)
        clients = ChildrenMeter(app.proc.pid)
        service = ServiceMeter(0, bench.socket)
        server = CpuMeter(bench.server_pid)
        machine = MachineMeter()
        time.sleep(args.seconds)
        launch = Launch(
            app=app_cpu.percent(), clients=clients.percent(), service=service.percent(),
            server_extra=server.percent() - base, base=base, app_rss_mb=peak_rss_mb(app.proc.pid),
            service_rss_mb=max((peak_rss_mb(pid) for pid in service_pids(bench.socket)[:1]), default=0.0),
            service_seen=seen, load=os.getloadavg()[0], machine=machine.percent(),
        )  # fmt: skip
        if app.proc.poll() is not None:
            raise RuntimeError(f"{checkout}: the app exited ({app.proc.returncode}): {app.output()[-600:]!r}")
        return launch
    finally:
        app.quit()
        stop_service(bench.socket, app_env(home), checkout)


def geometric_ci(ratios: list[float]) -> tuple[float, float, float]:
    """(geometric mean, low, high) of ``ratios``, the interval 95 % (Student's t on the logs)."""
    logs = [math.log(r) for r in ratios]
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return math.exp(mean), float("nan"), float("nan")
    t = T975[len(logs) - 2] if len(logs) - 1 <= len(T975) else 1.96
    half = t * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def ratios(base: Checkout, other: Checkout, measure: str) -> list[float]:
    """Each round's ``other`` over ``base`` (the rounds both completed)."""
    return [getattr(b, measure) / getattr(a, measure) for a, b in zip(base.launches, other.launches, strict=False)
            if getattr(a, measure) > 0 and getattr(b, measure) > 0]  # fmt: skip


def resolved(checkouts: list[Checkout], resolve: float) -> bool:
    """Every checkout's ratio to the first (our processes) known within ±``resolve``."""
    for other in checkouts[1:]:
        mean, low, high = geometric_ci(ratios(checkouts[0], other, "ours"))
        if math.isnan(low) or high / mean - 1 > resolve or 1 - low / mean > resolve:
            return False
    return True


def report(checkouts: list[Checkout], args: argparse.Namespace, bases: list[float], loads: tuple[float, float]) -> str:
    cols, rows = args.size
    lines = [
        f"## Commits side by side: {args.panes} panes ({args.busy} printing), the dashboard in {cols}x{rows} "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})",
        "",
        f"`{' '.join(['.venv/bin/python', 'bench/bench_commits.py', *sys.argv[1:]])}`; {os.cpu_count()} cores; "
        f"{len(checkouts[0].launches)} rounds, alternating; warm-up {args.warmup:.0f} s, windows of {args.seconds:.0f} s; "
        f"CPU in % of one core; the server alone before each round {min(bases):.1f}-{max(bases):.1f} %; "
        f"load average {loads[0]:.1f} before, {loads[1]:.1f} after.",
        "",
        "| checkout | ours (app tree + service): median (min-max) | app | its tmux -C | service | tmux extra "
        "| app tree + tmux extra | all | RSS app / service | load (median) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in checkouts:
        runs = c.launches

        def med(measure: str, runs: list[Launch] = runs) -> float:
            return statistics.median(getattr(r, measure) for r in runs)

        ours = [r.ours for r in runs]
        lines.append(
            f"| {c.name} | {med('ours'):.1f} % ({min(ours):.1f}-{max(ours):.1f}) "
            f"| {med('app'):.1f} % | {med('clients'):.1f} % | {med('service'):.1f} %{'' if all(r.service_seen for r in runs) else ' (not always started)'} "
            f"| {med('server_extra'):.1f} % | {med('tree'):.1f} % | {med('total'):.1f} % "
            f"| {max(r.app_rss_mb for r in runs):.0f} / {max(r.service_rss_mb for r in runs):.0f} MB | {med('load'):.1f} |"
        )  # fmt: skip
    lines += ["", "| against the first: geometric mean of the rounds' ratios [95 % CI] | ours (app tree + service) "
              "| app tree + tmux extra | all | ours, pair by pair | a 10 % change told from noise (ours)? |",
              "|---|---|---|---|---|---|"]  # fmt: skip
    for other in checkouts[1:]:
        cells = []
        for measure in ("ours", "tree", "total"):
            mean, low, high = geometric_ci(ratios(checkouts[0], other, measure))
            cells.append(f"{mean:.3f}x [{low:.3f}-{high:.3f}]")
        mean, low, high = geometric_ci(ratios(checkouts[0], other, "ours"))
        width = max(high / mean - 1, 1 - low / mean) if not math.isnan(low) else float("inf")
        verdict = "yes" if width <= 0.05 else f"no: the interval is ±{100 * width:.0f} %"
        lines.append(
            f"| {other.name} / {checkouts[0].name} | {' | '.join(cells)} "
            f"| {' '.join(f'{r:.2f}' for r in ratios(checkouts[0], other, 'ours'))} | {verdict} |"
        )  # fmt: skip
    lines += ["", "Every launch (all = app + its tmux -C + service + tmux extra over the round's server alone; load "
              "average at the window's end; machine: all cores busy, others included):", ""]  # fmt: skip
    for round_ in range(len(checkouts[0].launches)):
        cells = []
        for c in checkouts:
            if round_ < len(c.launches):
                r = c.launches[round_]
                cells.append(f"{c.name.split(' ')[0]} {r.total:.1f} = {r.app:.1f} + {r.clients:.1f} + {r.service:.1f} + "
                             f"{r.server_extra:.1f} (alone {r.base:.1f}; load {r.load:.1f}, machine {r.machine:.0f} %)")  # fmt: skip
        lines.append(f"- round {round_ + 1}: " + "; ".join(cells))
    return "\n".join(lines) + "\n"


def server_base(bench: Bench, seconds: float) -> float:
    meter = CpuMeter(bench.server_pid)
    time.sleep(seconds)
    return meter.percent()


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("checkouts", nargs="+", help="commits or checkout folders; the first is the reference")
    parser.add_argument("--panes", type=int, default=200)
    parser.add_argument("--busy", type=int, default=48, help="panes printing a line every ~100 ms")
    parser.add_argument("--idle", default="bash --noprofile --norc", help="what the other panes run")
    parser.add_argument("--per-session", type=int, default=25, help="windows (panes) per session")
    parser.add_argument("--size", type=int, nargs=2, default=[200, 60], metavar=("COLS", "ROWS"))
    parser.add_argument("--warmup", type=float, default=6.0)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--baseline", type=float, default=5.0, help="seconds of the server alone before each round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds at least")
    parser.add_argument("--max-rounds", type=int, default=30, help="at load 15-30 here, ±5 %% needs ~25 rounds")
    parser.add_argument("--resolve", type=float, default=0.05, help="stop once every ratio's 95 %% CI is within ±this")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="nbs-commits-"))
    checkouts, made = checkouts_of(args.checkouts, scratch)
    loads = [os.getloadavg()[0], 0.0]
    bench = Bench(args.panes, scratch, busy=args.busy, idle=args.idle, per_session=args.per_session)
    crashed = ""
    try:
        _, home, config = prepare([c.path for c in checkouts], "nbs-commits-")
        bench.start()
        time.sleep(3.0)  # the shells start
        bases: list[float] = []
        round_ = 0
        while round_ < args.max_rounds and (round_ < args.rounds or not resolved(checkouts, args.resolve)):
            bases.append(server_base(bench, args.baseline))
            try:
                launches = [(c, launch_cost(c.path, bench, config, home, args, bases[-1]))
                            for c in (checkouts if round_ % 2 == 0 else checkouts[::-1])]  # load drifts hit all alike
            except (OSError, RuntimeError) as error:
                if Path(f"/proc/{bench.server_pid}").exists():
                    raise
                # tmux 3.3a segfaults now and then with ~40 sessions' control clients starting (dmesg)
                crashed = f"the fleet's tmux server died in round {round_ + 1} ({error!r}); the rounds before it are reported"
                break
            for checkout, launch in launches:
                checkout.launches.append(launch)
                print(f"round {round_ + 1} {checkout.name}: total {launch.total:.1f} % (app {launch.app:.1f}, tmux -C "
                      f"{launch.clients:.1f}, service {launch.service:.1f}, tmux extra {launch.server_extra:.1f}); "
                      f"load {launch.load:.1f}; server alone {launch.base:.1f}", file=sys.stderr, flush=True)  # fmt: skip
                time.sleep(1.0)
            round_ += 1
    finally:
        bench.stop()
        for path in made:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)], capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)
    loads[1] = os.getloadavg()[0]
    text = report(checkouts, args, bases, (loads[0], loads[1])) + (f"\n**{crashed}**\n" if crashed else "")
    print(text)
    out = ROOT / "bench" / "results" / f"commits-{time.strftime('%Y%m%d-%H%M%S')}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"saved {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
