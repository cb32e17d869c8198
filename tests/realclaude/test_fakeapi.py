"""The scripted Messages API on its own (no Claude Code needed): SSE shape, steps, recording."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.realclaude.fakeapi import Ask, Bash, Error, FakeAPI, Plan, Slow, Text

TOOLS = [{"name": "Bash", "input_schema": {"type": "object"}}]


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    with FakeAPI(name="t") as running:
        yield running


def post(api: FakeAPI, body: dict[str, Any], path: str = "/v1/messages?beta=true") -> Any:
    req = urllib.request.Request(
        api.base_url + path, data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        raw = resp.read().decode()
        if resp.headers.get("Content-Type", "").startswith("text/event-stream"):
            return parse_sse(raw)
        return json.loads(raw)


def parse_sse(raw: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for block in raw.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


def turn(text: str, *, stream: bool = True, history: list[Any] | None = None) -> dict[str, Any]:
    messages = [*(history or []), {"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>\nnoise\n</system-reminder>"},
        {"type": "text", "text": text},
    ]}]
    return {"model": "m", "messages": messages, "tools": TOOLS, "stream": stream}


def test_streamed_text(api: FakeAPI) -> None:
    api.add(Text("Hello there, streaming world."))
    events = post(api, turn("hi"))
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert "content_block_start" in names and "content_block_stop" in names
    text = "".join(d["delta"]["text"] for n, d in events if n == "content_block_delta")
    assert text == "Hello there, streaming world."
    assert events[-2][1]["delta"]["stop_reason"] == "end_turn"
    assert api.prompts() == ["hi"]


def test_tool_use_json_deltas(api: FakeAPI) -> None:
    api.add(Bash("ls -la", "List"))
    events = post(api, turn("list"))
    start = next(d for n, d in events if n == "content_block_start")
    assert start["content_block"]["type"] == "tool_use" and start["content_block"]["name"] == "Bash"
    partial = "".join(
        d["delta"]["partial_json"] for n, d in events
        if n == "content_block_delta" and d["delta"]["type"] == "input_json_delta"
    )
    assert json.loads(partial) == {"command": "ls -la", "description": "List"}
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


def test_non_streaming_and_default_step(api: FakeAPI) -> None:
    msg = post(api, turn("anything", stream=False))
    assert msg["type"] == "message" and msg["content"][0]["text"] == "Done."


def test_side_calls_do_not_consume_steps(api: FakeAPI) -> None:
    api.add(Text("main reply"))
    schema = {"type": "object", "properties": {"title": {"type": "string"}}}
    side = post(api, {"model": "small", "messages": [{"role": "user", "content": "x"}],
                      "output_format": {"type": "json_schema", "schema": schema}})
    assert json.loads(side["content"][0]["text"]) == {"title": "Scripted test session"}
    no_tools = post(api, {"model": "small", "messages": [{"role": "user", "content": "x"}],
                          "stream": False})
    assert no_tools["content"][0]["type"] == "text"
    assert api.pending() == [Text("main reply")]
    assert [r.kind for r in api.requests] == ["side", "side"]


def test_side_call_json_fits_schema(api: FakeAPI) -> None:
    schema = {"type": "object", "properties": {"title": {"type": "string"}}}
    msg = post(api, {"model": "small", "messages": [{"role": "user", "content": "x"}],
                     "output_format": {"type": "json_schema", "schema": schema}})
    assert set(json.loads(msg["content"][0]["text"])) == {"title"}


def test_error_step_repeats_and_retry_counts_once(api: FakeAPI) -> None:
    api.add(Error(529, times=2), Text("recovered"))
    for _ in range(2):
        with pytest.raises(urllib.error.HTTPError) as info:
            post(api, turn("hello"))
        assert info.value.code == 529
        assert json.loads(info.value.read())["error"]["type"] == "overloaded_error"
    events = post(api, turn("hello"))
    assert "recovered" in json.dumps(events)
    assert api.prompts() == ["hello"]  # three requests, one turn


def test_prompts_skip_tool_results_and_system_messages(api: FakeAPI) -> None:
    history = [{"role": "user", "content": "first"},
               {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                                                  "input": {}}]}]
    body = turn("ignored", history=history)
    body["messages"][-1] = {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}
    body["messages"].append({"role": "system", "content": "reminder"})
    post(api, body)
    post(api, turn("second"))
    assert api.prompts() == ["second"]
    assert [r["tool_use_id"] for r in api.tool_results()] == ["t1"]


def test_plan_writes_file_and_exit_plan_mode(api: FakeAPI, tmp_path: Path) -> None:
    plan_file = tmp_path / ".claude" / "plans" / "a-plan.md"
    api.add(Plan("# My plan\n"))
    body = turn("plan it")
    body["messages"][-1]["content"].insert(0, {"type": "text", "text": (
        f"<system-reminder>Plan mode is active. Write your plan to {plan_file}.</system-reminder>")})
    body["tools"] = [*TOOLS, {"name": "ExitPlanMode", "input_schema": {"type": "object"}}]
    msg = post(api, {**body, "stream": False})
    assert plan_file.read_text() == "# My plan\n"
    assert msg["content"][-1]["name"] == "ExitPlanMode" and msg["content"][-1]["input"] == {}


def test_ask_and_other_endpoints(api: FakeAPI) -> None:
    api.add(Ask("Colour?", ["Red", "Blue"]))
    msg = post(api, turn("ask", stream=False))
    question = msg["content"][0]["input"]["questions"][0]
    assert question["question"] == "Colour?" and len(question["options"]) == 2
    assert post(api, {"messages": []}, "/v1/messages/count_tokens")["input_tokens"] > 0
    head = urllib.request.Request(api.base_url + "/", method="HEAD")
    with urllib.request.urlopen(head, timeout=5) as resp:
        assert resp.status == 200


def test_slow_thinking_then_answer(api: FakeAPI) -> None:
    api.add(Slow(0.3, "weigh it", interval=0.1, thinking=True, answer="Decided."))
    events = post(api, turn("think"))
    starts = [d["content_block"]["type"] for n, d in events if n == "content_block_start"]
    assert starts == ["thinking", "text"]
    deltas = [d["delta"] for n, d in events if n == "content_block_delta"]
    assert "".join(d.get("thinking", "") for d in deltas) == "weigh it"
    assert any(d["type"] == "signature_delta" for d in deltas)
    assert "".join(d.get("text", "") for d in deltas) == "Decided."
