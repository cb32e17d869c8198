"""The work queue on the real Claude Code CLI against the scripted API (docs/queue.md): tasks
added with ``nbs-tui queue add`` and no dashboard open are handed out by the service the command
starts; each prompt reaches the API once, in order; an agent holds one task at a time."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import libtmux
import pytest

from nbs_tui.core.queue.records import record_from_json
from nbs_tui.core.queue.task_states import QueueState, TaskState
from tests.realclaude.harness import Bash, ClaudeFleet, Text
from tests.realclaude.new_world import REPO, NewAgentWorld, make_world, wait_until


def nbs(world: NewAgentWorld, socket: str, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """nbs-tui as a script runs it: the service allowed, no polls typed (the API then sees only
    the tasks)."""
    environ = {**world.env(), "NBS_SERVICE": "auto", "NBS_POLL_DISABLE": "1", **env}
    return subprocess.run(
        [sys.executable, "-m", "nbs_tui", "--config", str(world.config), "-L", socket, *argv],
        capture_output=True, text=True, timeout=120, env=environ, cwd=REPO, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def tasks(world: NewAgentWorld, socket: str) -> list[dict[str, Any]]:
    done = nbs(world, socket, "queue", "ls", "--json")
    assert done.returncode == 0, done.stderr
    listed: list[dict[str, Any]] = json.loads(done.stdout)["tasks"]
    return sorted(listed, key=lambda task: int(task["id"]))


def records(world: NewAgentWorld, socket: str) -> list[dict[str, Any]]:
    path = world.state / "nbs-tui" / f"queue-L-{socket}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.service_auto
def test_start_tasks_get_new_agents_whose_prompts_reach_the_api_once_and_end_done(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    socket = str(server.socket_name)
    server.new_session(session_name="work")
    world = make_world(claude_fleet, tmp_path, "q", [], trust=True)
    world.api.add(Text("Parser built.", delay=20), Text("Tests written."))  # the first busy while the second is handed out
    try:
        for text in ("build the parser", "write the tests"):
            added = nbs(world, socket, "queue", "add", text, "--start", "--folder", str(world.workdir))
            assert added.returncode == 0, added.stderr
        wait_until(lambda: [t["state"] for t in tasks(world, socket)] == ["done", "done"], 90, "both tasks done")
        listed = tasks(world, socket)
        assert sorted(t["message"] for t in listed) == ["Parser built.", "Tests written."]
        assert len({t["pane"] for t in listed}) == 2, "each task its own new agent"
        windows = server.cmd("list-windows", "-a", "-F", "#{window_name}").stdout
        assert {"task-1", "task-2"} <= set(windows)
        assert world.api.count_prompts("build the parser") == 1 and world.api.count_prompts("write the tests") == 1
        kinds = [r["kind"] for r in records(world, socket) if r.get("task") == "1"]
        assert kinds == ["added", "handing", "handed", "done"], kinds
    finally:
        nbs(world, socket, "service", "stop")


def records_of(tmp_path: Path, socket: str) -> list[dict[str, Any]]:
    """The queue file's records, of `service_world`'s state folder."""
    path = tmp_path / "state" / "nbs-tui" / f"queue-L-{socket}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def service_world(tmp_path: Path, limits: dict[str, int]) -> tuple[dict[str, str], Path]:
    """The environment and config file of commands and a service with ``max_concurrent``."""
    state = tmp_path / "state"
    config = tmp_path / "config.toml"
    config.write_text("[max_concurrent]\n" + "".join(f"{json.dumps(k)} = {v}\n" for k, v in limits.items()))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "CLAUDE", "NBS_"))}
    env.update(XDG_STATE_HOME=str(state), XDG_CONFIG_HOME=str(state / "config"), NBS_SERVICE="auto", NBS_POLL_DISABLE="1")
    return env, config


def run(env: dict[str, str], config: Path, socket: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nbs_tui", "--config", str(config), "-L", socket, *argv],
        capture_output=True, text=True, timeout=120, env=env, cwd=REPO, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def replay(lines: list[dict[str, Any]]) -> tuple[int, int]:
    """Fold the records one by one: the most tasks out at once, and the most tasks one pane held."""
    queue = QueueState()
    most_out = most_held = 0
    for line in lines:
        queue.apply(record_from_json(line))
        out = [task for task in queue if task.state.out]
        most_out = max(most_out, len(out))
        panes = [task.pane for task in out if task.pane]
        most_held = max([most_held, *(panes.count(p) for p in panes)])
    return most_out, most_held


@pytest.mark.service_auto
def test_ten_tasks_three_agents_max_concurrent_two_each_prompt_once_in_order(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    socket = str(server.socket_name)
    agents = claude_fleet.start_many(*([Text("Done, next.", delay=2.5)] * 10 for _ in range(3)))  # turns long enough that two overlap
    folder = str(claude_fleet.base.resolve())
    env, config = service_world(tmp_path, {folder: 2})
    texts = [f"queue task number {n:02d}" for n in range(1, 11)]
    try:
        for text in texts:
            added = run(env, config, socket, "queue", "add", text, "--folder", folder)
            assert added.returncode == 0, added.stderr

        def listing() -> list[dict[str, Any]]:
            done = run(env, config, socket, "queue", "ls", "--json")
            assert done.returncode == 0, done.stderr
            return sorted(json.loads(done.stdout)["tasks"], key=lambda task: int(task["id"]))

        wait_until(lambda: all(t["state"] == "done" for t in listing()), 60, "all ten tasks done")
        prompts = [(r.at, str(r.last_user_text())) for a in agents for r in a.api.main_requests() if r.last_user_text() in texts]
        assert sorted(p for _at, p in prompts) == texts, "each prompt exactly once"
        assert [p for _at, p in sorted(prompts)] == texts, "in order"
        most_out, most_held = replay(records_of(tmp_path, socket))
        assert most_out == 2, f"at most max_concurrent out at once (saw {most_out})"
        assert most_held == 1, "no agent held two tasks"
        assert all(t["message"] == "Done, next." for t in listing())
        assert {t["pane"] for t in listing()} <= {a.pane_id for a in agents}, "no agent started: three were there"
    finally:
        run(env, config, socket, "service", "stop")


TTL = 2.0
"""The kill test's lease ttl (the shortest a reader accepts): a SIGKILLed holder is replaced
within about 2.5 s."""


def handing_count(queue_file: Path) -> int:
    return sum('"kind":"handing"' in line for line in queue_file.read_text().splitlines())


class Contender:
    """A ``--headless`` runtime contending for the lease (the service's runtime, in the
    foreground), its events read from stdout."""

    def __init__(self, env: dict[str, str], config: Path, socket: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "nbs_tui", "--config", str(config), "-L", socket, "--headless"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO,
            env={**env, "NBS_LEASE_TTL": str(TTL)},
        )  # fmt: skip
        self.events: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with contextlib.suppress(ValueError):
                self.events.append(json.loads(line))

    def acting(self) -> bool:
        leases = [e for e in list(self.events) if e.get("event") == "lease"]
        return bool(leases) and bool(leases[-1].get("acting"))

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)


ALL_ROUNDS = [(1 + 7 * n, 7 if n < 6 else 8) for n in range(7)]
"""(first kill's number, kills): 50 in seven tests of about a minute each."""

ROUNDS = ALL_ROUNDS if os.environ.get("NBS_QUEUE_KILLS") == "50" else ALL_ROUNDS[:1]
"""The suite runs the first 7 kills (one test): all seven tests cost CI about six worker-minutes
of its ten. ``NBS_QUEUE_KILLS=50`` runs all 50 (docs/testing.md)."""


@pytest.mark.parametrize(("first", "kills"), ROUNDS, ids=[f"kills-{f}-{f + k - 1}" for f, k in ROUNDS])
def test_the_holder_sigkilled_at_random_moments_hands_no_task_twice_and_loses_none(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path, first: int, kills: int
) -> None:
    """50 SIGKILLs in all, in seven tests of 7 or 8 (one tmux server each: a takeover costs
    about 2.5 s and the next hand-out begins 1 s after it, so each test stays near a minute): the acting runtime is killed at a random
    moment of its next hand-out (0-3.5 s after the hand-out's record: its typing takes ~3 s, then
    the outcome is written), a fresh contender takes its place, and the queue runs on; then the
    queue drains under the last holder."""
    socket = str(server.socket_name)
    agents = claude_fleet.start_many((), ())
    folder = str(claude_fleet.base.resolve())
    env, config = service_world(tmp_path, {})
    env["NBS_SERVICE"] = "off"  # the contenders below are the services
    texts = [f"kill task number {n:02d}" for n in range(1, 5)]
    for text in texts:
        assert run(env, config, socket, "queue", "add", text, "--folder", folder).returncode == 0
    queue_file = tmp_path / "state" / "nbs-tui" / f"queue-L-{socket}.jsonl"
    contenders = [Contender(env, config, socket) for _ in range(2)]
    everyone = list(contenders)
    mid_handout = 0
    rng = random.Random(first)
    try:
        for _ in range(kills):
            wait_until(lambda: any(c.acting() for c in contenders), 6 * TTL, "a holder")
            (holder,) = [c for c in contenders if c.acting()]
            handings = handing_count(queue_file)
            with contextlib.suppress(AssertionError):  # a hand-out begun, or none to begin
                wait_until(lambda h=handings: handing_count(queue_file) > h, 4.0)  # type: ignore[misc]
            time.sleep(rng.uniform(0.0, 3.5))  # anywhere in its typing (~3 s) and just after
            holder.kill()
            queue = QueueState()
            for line in queue_file.read_text().splitlines():
                queue.apply(record_from_json(json.loads(line)))
            mid_handout += any(task.state is TaskState.HANDING for task in queue)
            contenders.remove(holder)
            contenders.append(Contender(env, config, socket))
            everyone.append(contenders[-1])

        def ended() -> bool:
            listed = json.loads(run(env, config, socket, "queue", "ls", "--json").stdout)["tasks"]
            return all(task["state"] == "done" for task in listed)

        try:
            wait_until(ended, 40, "every task done after the last kill")
        except AssertionError:
            print(queue_file.read_text())
            for c in everyone:
                print([e for e in c.events if e.get("event") in ("lease", "error", "send")][-8:])
            raise
    finally:
        for contender in contenders:
            contender.proc.send_signal(signal.SIGTERM)
        for contender in contenders:
            contender.proc.wait(20)
    prompts = [str(r.last_user_text()) for a in agents for r in a.api.main_requests()]
    counts = {text: prompts.count(text) for text in texts}
    assert counts == dict.fromkeys(texts, 1), f"each task's prompt at an API exactly once: {counts}"
    lines = [json.loads(x) for x in queue_file.read_text().splitlines()]
    assert replay(lines)[1] == 1, "no agent held two tasks"
    token = {line["mark"]: line["token"] for line in lines if line["kind"] == "handing"}
    settled = [line for line in lines if line["kind"] in ("handed", "unhanded") and line["by"] != token[line["mark"]]]
    went_in = sum(1 for line in settled if line["kind"] == "handed")
    print(f"kills {first}-{first + kills - 1}: {mid_handout} with a hand-out in flight: {went_in} settled as gone in, "
          f"{len(settled) - went_in} as not")
    assert mid_handout >= 2, f"only {mid_handout} of {kills} kills landed mid-hand-out: the test did not test it"


@pytest.mark.service_auto
def test_a_task_waits_as_needs_and_when_its_agent_exits_is_handed_out_once_more(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    """``needs`` while the agent waits on a permission prompt; the agent's pane closed: the task
    fails once and goes to the next agent free, where it ends done (two hand-outs, one each)."""
    socket = str(server.socket_name)
    alpha = claude_fleet.start([Bash("touch made.txt", "Make the file"), Text("never said")], name="alpha")
    env, config = service_world(tmp_path, {})
    assert run(env, config, socket, "queue", "add", "make the file").returncode == 0

    def task() -> dict[str, Any]:
        done = run(env, config, socket, "queue", "ls", "--json")
        assert done.returncode == 0, done.stderr
        listed: dict[str, Any] = json.loads(done.stdout)["tasks"][0]
        return listed

    try:
        wait_until(lambda: task()["state"] == "needs", 45, "the task waiting on alpha's permission prompt")
        assert task()["reason"] == "permission" and task()["pane"] == alpha.pane_id
        listed = run(env, config, socket, "agents", "--json")
        assert listed.returncode == 0, listed.stderr
        held = {agent["pane_id"]: agent["task"] for agent in json.loads(listed.stdout)["agents"]}
        assert held[alpha.pane_id] == {"id": task()["id"], "state": "needs"}, held  # agents names its queue task
        beta = claude_fleet.start([Text("Made by beta.")], name="beta")
        server.cmd("kill-pane", "-t", alpha.pane_id)
        wait_until(lambda: task()["state"] == "done", 45, "the task done by beta")
        ended = task()
        assert (ended["pane"], ended["message"], ended["failures"], ended["handouts"]) == (beta.pane_id, "Made by beta.", 1, 2)
        assert alpha.api.count_prompts("make the file") == 1 and beta.api.count_prompts("make the file") == 1
        kinds = [line["kind"] for line in records_of(tmp_path, socket)]
        assert kinds == ["added", "handing", "handed", "needs", "failed", "handing", "handed", "done"], kinds
        assert [line["reason"] for line in records_of(tmp_path, socket) if line["kind"] == "failed"] == ["its agent exited"]
    finally:
        run(env, config, socket, "service", "stop")


@pytest.mark.service_auto
def test_a_worker_task_starts_its_worker_announced_on_the_bus(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    socket = str(server.socket_name)
    server.new_session(session_name="work")
    world = make_world(claude_fleet, tmp_path, "w", [Text("Counted: three files.")], trust=True)
    nbs_dir = world.workdir / ".nbs"
    (nbs_dir / "workers").mkdir(parents=True)
    (nbs_dir / "events").mkdir()
    (nbs_dir / "workers" / "counter.md").write_text("Worker task: count the files.\n")
    try:
        added = nbs(world, socket, "queue", "add", "--worker", "counter", "--folder", str(world.workdir), "--json")
        assert added.returncode == 0, added.stderr
        wait_until(lambda: tasks(world, socket)[0]["state"] == "done", 60, "the worker's task done")
        (task,) = tasks(world, socket)
        assert task["message"] == "Counted: three files." and task["worker"] == "counter"
        assert world.api.count_prompts("Worker task: count the files.") == 1
        (event,) = (nbs_dir / "events").glob("*.event")
        text = event.read_text()
        assert "type: worker-spawned" in text and "source: counter" in text and task["pane"] in text
        worker = server.cmd("display-message", "-p", "-t", task["pane"], "#{@nbs_worker}").stdout
        assert worker == ["counter"]
        server.cmd("kill-pane", "-t", task["pane"])  # the holder announces its end
        wait_until(lambda: len(list((nbs_dir / "events").glob("*.event"))) == 2, 30, "worker-died")
        assert tasks(world, socket)[0]["state"] == "done", "a task done stays done when its agent goes"
    finally:
        nbs(world, socket, "service", "stop")


@pytest.mark.service_auto
def test_agents_glob_pause_resume_cancel_and_priority(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    """``--agents rev*`` goes to the reviewer only; nothing is handed out while paused; a
    cancelled task never reaches an agent; a higher priority goes first."""
    socket = str(server.socket_name)
    reviewer = claude_fleet.start([Text("Reviewed.")] * 3, name="rev-1")
    builder = claude_fleet.start([Text("Built.")] * 3, name="build")
    env, config = service_world(tmp_path, {})
    assert run(env, config, socket, "queue", "pause").returncode == 0
    for argv in (
        ("review the diff", "--agents", "rev*"),
        ("never typed",),
        ("urgent review", "--agents", "rev*", "--priority", "5"),
    ):
        assert run(env, config, socket, "queue", "add", *argv).returncode == 0
    assert run(env, config, socket, "queue", "cancel", "2").returncode == 0

    def states() -> list[str]:
        done = run(env, config, socket, "queue", "ls", "--json")
        return [t["state"] for t in sorted(json.loads(done.stdout)["tasks"], key=lambda t: int(t["id"]))]

    try:
        wait_until(lambda: run(env, config, socket, "service", "status").returncode == 0, 20, "the service")
        time.sleep(3)  # past its SETTLE and several looks: paused, it hands nothing out
        assert states() == ["queued", "cancelled", "queued"]
        assert not reviewer.api.prompts() and not builder.api.prompts()
        assert run(env, config, socket, "queue", "resume").returncode == 0
        wait_until(lambda: states() == ["done", "cancelled", "done"], 60, "both reviews done")
        assert reviewer.api.prompts() == ["urgent review", "review the diff"], "rev* only, priority first"
        assert builder.api.prompts() == []
    finally:
        run(env, config, socket, "service", "stop")


@pytest.mark.service_auto
def test_an_agent_with_half_typed_input_refuses_and_takes_the_task_once_the_box_is_empty(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    """The operator's draft in the box is never clobbered: the hand-out is refused (nothing
    typed, the task queued again, no attempt spent) until the box is empty."""
    socket = str(server.socket_name)
    agent = claude_fleet.start([Text("Done it.")], name="solo")
    draft = "my own draft"
    agent.type(draft)
    agent.wait_for(lambda screen: draft in screen)
    env, config = service_world(tmp_path, {})
    assert run(env, config, socket, "queue", "add", "do the task").returncode == 0
    try:
        wait_until(lambda: any(r["kind"] == "unhanded" for r in records_of(tmp_path, socket)), 30, "a refusal")
        (refused,) = [r for r in records_of(tmp_path, socket) if r["kind"] == "unhanded"]
        assert refused["reason"].startswith("refused: input"), refused
        assert draft in agent.screen() and agent.api.prompts() == []
        agent.press(*["BSpace"] * len(draft))
        wait_until(lambda: json.loads(run(env, config, socket, "queue", "ls", "--json").stdout)["tasks"][0]["state"] == "done", 45)
        assert agent.api.prompts() == ["do the task"]
        task = json.loads(run(env, config, socket, "queue", "ls", "--json").stdout)["tasks"][0]
        assert (task["handouts"], task["failures"], task["message"]) == (1, 0, "Done it.")
    finally:
        run(env, config, socket, "service", "stop")
