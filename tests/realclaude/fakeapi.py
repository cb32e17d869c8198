"""A scripted Anthropic Messages API for driving the real Claude Code CLI offline.

One ``FakeAPI`` per agent: a threaded HTTP server on 127.0.0.1 (its own port) that answers
``POST /v1/messages`` (streamed as server-sent events or as one JSON body) from a *scenario*: a
list of steps, one consumed per main-model turn. Side calls (session title and name, the small
model, requests without tools or with a JSON-schema output format) get a canned answer and consume
nothing. Anything else (``HEAD /``, ``count_tokens``, ``GET``s) gets a harmless 200.

Steps::

    Text("Hello")                        # plain text, end_turn
    Slow(seconds=20, text="...")         # streams slowly: holds the working state (api.release()
                                         # ends it early); thinking=True streams a thinking block
    Bash("ls -la", description="List")   # a Bash tool call: Claude Code asks permission
    ToolUse("Read", {"file_path": "/x"}) # any tool call
    Plan("# Plan\\n...")                  # writes the plan file named in the plan-mode reminder,
                                         # then calls ExitPlanMode: the plan-approval menu
    Ask("Which colour?", ["Red", "Blue"]) # AskUserQuestion
    Error(529)                           # an HTTP error with an Anthropic JSON error body

Plain strings in a scenario are taken as ``Text``. When the scenario runs out, main turns get
``Text("Done.")``. Every request is recorded (``api.requests``); ``api.prompts()`` returns the
user text of each main turn, once per turn (retries after an error are not counted again).
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = [
    "Ask",
    "Bash",
    "Error",
    "FakeAPI",
    "Plan",
    "RecordedRequest",
    "Scenario",
    "Slow",
    "Step",
    "Text",
    "ToolUse",
    "Usage",
    "usage_limit",
]


# --- steps -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Usage:
    """The token counts a reply reports (``message_start`` carries the input side and one
    output token, ``message_delta`` the final output count, as the real API streams them)."""

    input_tokens: int = 100
    output_tokens: int = 20
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def start(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": 1,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
        }

    def whole(self) -> dict[str, Any]:
        return {**self.start(), "output_tokens": self.output_tokens}


@dataclass(frozen=True)
class Text:
    """A plain text reply that ends the turn."""

    text: str
    delay: float = 0.0  # seconds of silence (pings) before the text: the agent shows "working"
    usage: Usage | None = None  # None: 100 in, one output token per streamed piece


@dataclass(frozen=True)
class Slow:
    """A text reply streamed over ``seconds``: Claude Code shows its spinner the whole time.

    ``thinking``: stream ``text`` as an extended-thinking block instead, then answer ``answer``.
    ``FakeAPI.release()`` ends it early. If the client goes away (Esc) the stream just stops.
    """

    seconds: float
    text: str = "Still thinking about it, one piece at a time."
    interval: float = 0.5
    thinking: bool = False
    answer: str = "Thought it through."


@dataclass(frozen=True)
class ToolUse:
    """One tool call (stop_reason ``tool_use``); ``text`` is said before it."""

    name: str
    input: dict[str, Any]
    text: str = ""
    delay: float = 0.0
    usage: Usage | None = None


def Bash(
    command: str,
    description: str = "Run a command",
    text: str = "",
    delay: float = 0.0,
    usage: Usage | None = None,
) -> ToolUse:
    """A Bash tool call: outside an allow-list Claude Code shows its permission prompt."""
    return ToolUse("Bash", {"command": command, "description": description}, text, delay, usage)


@dataclass(frozen=True)
class Plan:
    """A plan for plan mode: the server writes ``plan`` to the plan file named in the plan-mode
    reminder (``~/.claude/plans/<name>.md``) and calls ``ExitPlanMode`` (``{}``, or
    ``{"plan": ...}`` when the tool's schema asks for it, as older versions do)."""

    plan: str = "# Plan\n\n1. Read the code.\n2. Change it.\n3. Run the tests.\n"
    text: str = "Here is my plan."
    delay: float = 0.0


@dataclass(frozen=True)
class Ask:
    """An ``AskUserQuestion`` call with one single-choice question."""

    question: str = "Which approach should I take?"
    options: Sequence[str] = ("Small change", "Big rewrite")
    header: str = "Approach"
    multi_select: bool = False
    delay: float = 0.0


@dataclass(frozen=True)
class Error:
    """An HTTP error with an Anthropic error body. Claude Code retries 5xx/529 on its own, so
    ``times`` says how many requests this step answers (``None``: every request from now on)."""

    status: int = 529
    kind: str = ""
    message: str = ""
    times: int | None = 1
    headers: tuple[tuple[str, str], ...] = ()
    """Extra response headers (e.g. the unified rate-limit headers of `usage_limit`)."""

    def body(self) -> dict[str, Any]:
        kind = self.kind or _ERROR_KINDS.get(self.status, "api_error")
        message = self.message or _ERROR_MESSAGES.get(self.status, "Internal server error")
        return {"type": "error", "error": {"type": kind, "message": message}}


_ERROR_KINDS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_ERROR_MESSAGES = {
    401: "invalid x-api-key",
    403: "Your API key does not have permission to use the specified resource.",
    429: "Number of request tokens has exceeded your per-minute rate limit",
    500: "Internal server error",
    529: "Overloaded",
}

def usage_limit(reset_at: float, claim: str = "five_hour", times: int | None = None) -> Error:
    """A subscription usage limit: a 429 with the ``anthropic-ratelimit-unified-*`` headers that
    make Claude Code (under ``CLAUDE_CODE_OAUTH_TOKEN``, not an API key) show its usage-limit
    screen. ``reset_at``: unix seconds; ``claim``: ``five_hour`` (session) or ``seven_day``
    (weekly)."""
    return Error(
        429,
        message="This request would exceed your account's rate limit. Please try again later.",
        times=times,
        headers=(
            ("anthropic-ratelimit-unified-status", "rejected"),
            ("anthropic-ratelimit-unified-reset", str(int(reset_at))),
            ("anthropic-ratelimit-unified-representative-claim", claim),
            (f"anthropic-ratelimit-unified-{claim.replace('_', '-')}-status", "rejected"),
            (f"anthropic-ratelimit-unified-{claim.replace('_', '-')}-reset", str(int(reset_at))),
            ("x-should-retry", "false"),
        ),
    )


Step = Text | Slow | ToolUse | Plan | Ask | Error
Scenario = Sequence[Step | str]

DEFAULT_STEP = Text("Done.")
SIDE_TEXT = '{"isNewTopic": false, "title": null}'


# --- recording ---------------------------------------------------------------------------------


def _token(headers: Mapping[str, str]) -> str:
    auth = next((v for k, v in headers.items() if k.lower() == "authorization"), "")
    return auth.removeprefix("Bearer ").strip()


@dataclass(frozen=True)
class RateLimits:
    """One OAuth token's usage as the API reports it on a 200 (notes: "Usage in the status line")."""

    five_hour: float
    seven_day: float
    five_hour_reset: float
    seven_day_reset: float

    def headers(self) -> dict[str, str]:
        return {
            "anthropic-ratelimit-unified-status": "allowed",
            "anthropic-ratelimit-unified-5h-status": "allowed",
            "anthropic-ratelimit-unified-5h-utilization": f"{self.five_hour:.4f}",
            "anthropic-ratelimit-unified-5h-reset": str(int(self.five_hour_reset)),
            "anthropic-ratelimit-unified-7d-status": "allowed",
            "anthropic-ratelimit-unified-7d-utilization": f"{self.seven_day:.4f}",
            "anthropic-ratelimit-unified-7d-reset": str(int(self.seven_day_reset)),
            "anthropic-ratelimit-unified-representative-claim": "five_hour",
            "anthropic-ratelimit-unified-reset": str(int(self.five_hour_reset)),
        }


@dataclass
class RecordedRequest:
    """One request as the server saw it, and how it was answered."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or None
    kind: str  # "main" | "side" | "other"
    step: Step | None = None  # the scenario step that answered a main turn
    status: int = 200
    aborted: bool = False  # the client hung up before the reply was complete
    at: float = field(default_factory=time.time)

    @property
    def model(self) -> str:
        return str(self.body.get("model", "")) if isinstance(self.body, dict) else ""

    @property
    def tool_names(self) -> list[str]:
        if not isinstance(self.body, dict):
            return []
        return [str(t.get("name", "")) for t in self.body.get("tools") or []]

    @property
    def messages(self) -> list[dict[str, Any]]:
        if not isinstance(self.body, dict):
            return []
        return list(self.body.get("messages") or [])

    def last_user_text(self) -> str | None:
        """The text a person (or an injected command) typed for this turn, or ``None`` when the
        turn carries tool results. Looks at the user messages after the last assistant message
        (``system``-role reminder messages may sit among them) and drops reminder blocks."""
        tail: list[dict[str, Any]] = []
        for m in reversed(self.messages):
            if m.get("role") == "assistant":
                break
            tail.insert(0, m)
        users = [m for m in tail if m.get("role") == "user"]
        if not users or any(_has_tool_result(m.get("content")) for m in users):
            return None
        texts = [t for m in users for t in _texts(m.get("content")) if not _is_reminder(t)]
        return "\n".join(texts) if texts else None

    def system_text(self) -> str:
        if not isinstance(self.body, dict):
            return ""
        return "\n".join(_texts(self.body.get("system")))

    def all_text(self) -> str:
        """System prompt and every message text (reminders included): for searching."""
        parts = [self.system_text()]
        for m in self.messages:
            parts.extend(_texts(m.get("content")))
        return "\n".join(parts)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    for block in content or []:
        if isinstance(block, dict):
            if block.get("type") == "text":
                out.append(str(block.get("text", "")))
            elif block.get("type") == "tool_result":
                out.extend(_texts(block.get("content")))
    return out


def _has_tool_result(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def _is_reminder(text: str) -> bool:
    return text.lstrip().startswith("<system-reminder>")


_PLAN_FILE = re.compile(r"(/[^\s`'\"<>]*?/\.claude/plans/[^\s`'\"<>]+?\.md)")


# --- the server --------------------------------------------------------------------------------


class FakeAPI:
    """A scripted Messages API on ``127.0.0.1:<port>`` for one agent (or several sharing one
    scenario). Use as a context manager, or call ``start()``/``stop()``."""

    def __init__(self, scenario: Scenario = (), *, name: str = "agent") -> None:
        self.name = name
        self._steps: list[Step] = [Text(s) if isinstance(s, str) else s for s in scenario]
        self._error_left: int | None = None  # remaining answers of the current Error step
        self._lock = threading.Lock()
        self._release = threading.Event()
        self.requests: list[RecordedRequest] = []
        self._ids = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.utilisation: dict[str, RateLimits] = {}
        """Per OAuth token (the ``authorization: Bearer`` value): the unified rate-limit headers
        sent with every 200 reply to it (`set_utilisation`)."""
        self.token_usage: dict[str, Usage] = {}
        """Per OAuth token: the usage its streamed replies report (a loop re-reading a huge context)."""

    # lifecycle

    def start(self) -> FakeAPI:
        handler = type("Handler", (_Handler,), {"api": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name=f"fakeapi-{self.name}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()  # let a Slow stream finish so shutdown() does not wait for it
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "FakeAPI not started"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # scenario

    def add(self, *steps: Step | str) -> None:
        """Append steps to the scenario (e.g. between two prompts of a test)."""
        with self._lock:
            self._steps.extend(Text(s) if isinstance(s, str) else s for s in steps)

    def set_utilisation(
        self, token: str, five_hour: float, seven_day: float, *, five_hour_reset: float, seven_day_reset: float
    ) -> None:
        """From now on, every 200 reply to ``token`` carries these utilisations (fractions, 0.42 is
        42 %) and resets (unix seconds), as the real API's unified rate-limit headers do."""
        with self._lock:
            self.utilisation[token] = RateLimits(five_hour, seven_day, five_hour_reset, seven_day_reset)

    def rate_limit_headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        with self._lock:
            limits = self.utilisation.get(_token(headers))
        return limits.headers() if limits is not None else {}

    def usage_of(self, headers: Mapping[str, str]) -> Usage | None:
        """The token counts every streamed reply to this request's OAuth token reports, when
        `token_usage` names one (a step's own ``usage`` wins)."""
        with self._lock:
            return self.token_usage.get(_token(headers))

    def pending(self) -> list[Step]:
        with self._lock:
            return list(self._steps)

    def release(self) -> None:
        """End the ``Slow`` step (or a step's ``delay``) in progress now."""
        self._release.set()

    def _next_step(self) -> Step:
        with self._lock:
            if not self._steps:
                return DEFAULT_STEP
            step = self._steps[0]
            if isinstance(step, Error):
                if self._error_left is None:
                    self._error_left = step.times
                if self._error_left is not None:
                    self._error_left -= 1
                    if self._error_left <= 0:
                        self._steps.pop(0)
                        self._error_left = None
                return step
            self._steps.pop(0)
            return step

    # what the agent sent

    def main_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.kind == "main"]

    def prompts(self) -> list[str]:
        """User texts of main turns, in order, one per turn: a request repeated after an error
        answer (Claude Code's retry) is not counted again."""
        out: list[str] = []
        prev: RecordedRequest | None = None
        for r in self.main_requests():
            text = r.last_user_text()
            retry = (
                prev is not None
                and prev.status >= 400
                and len(prev.messages) == len(r.messages)
                and prev.last_user_text() == text
            )
            if text is not None and not retry:
                out.append(text)
            prev = r
        return out

    def count_prompts(self, needle: str) -> int:
        """How many main turns' user text contains ``needle``."""
        return sum(needle in p for p in self.prompts())

    def tool_results(self) -> list[dict[str, Any]]:
        """The tool_result blocks of main turns, in order (each once)."""
        seen: set[str] = set()
        out: list[dict[str, Any]] = []
        for r in self.main_requests():
            for m in r.messages:
                if m.get("role") != "user" or not isinstance(m.get("content"), list):
                    continue
                for b in m["content"]:
                    if isinstance(b, dict) and b.get("type") == "tool_result":
                        tid = str(b.get("tool_use_id"))
                        if tid not in seen:
                            seen.add(tid)
                            out.append(b)
        return out

    # answering (called from handler threads)

    def _record(self, req: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(req)

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}_{self.name}_{next(self._ids):04d}"


def classify(path: str, body: Any) -> str:
    """``main`` for a turn of the main loop, ``side`` for other model calls, ``other`` else."""
    if not path.split("?")[0].rstrip("/").endswith("/v1/messages") or not isinstance(body, dict):
        return "other"
    if not body.get("tools"):
        return "side"
    if body.get("output_format") or (body.get("output_config") or {}).get("format"):
        return "side"
    return "main"


class _Handler(BaseHTTPRequestHandler):
    api: FakeAPI
    protocol_version = "HTTP/1.1"
    server_version = "nbs-fakeapi/1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    # plumbing

    def _read_body(self) -> Any:
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return None

    def _send_json(self, status: int, obj: Any, extra: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", f"req_fake_{int(time.time() * 1000)}")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    # verbs

    def do_HEAD(self) -> None:
        self.api._record(RecordedRequest("HEAD", self.path, dict(self.headers), None, "other"))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self.api._record(RecordedRequest("GET", self.path, dict(self.headers), None, "other"))
        self._send_json(200, {"data": [], "has_more": False})

    def do_POST(self) -> None:
        body = self._read_body()
        kind = classify(self.path, body)
        rec = RecordedRequest("POST", self.path, dict(self.headers), body, kind)
        self.api._record(rec)
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/count_tokens"):
            self._send_json(200, {"input_tokens": 1000})
            return
        if kind == "other":
            self._send_json(200, {})
            return
        assert isinstance(body, dict)
        if kind == "side":
            blocks = [_text_block(_side_answer(body))]
            stop = "end_turn"
        else:
            step = self.api._next_step()
            rec.step = step
            if isinstance(step, Error):
                rec.status = step.status
                self._send_json(
                    step.status, step.body(), {"x-should-retry": "true", **dict(step.headers)}
                )
                return
            blocks, stop = self._blocks_for(step, body)
            if isinstance(step, Slow):
                self.api._release.clear()
                self._stream(rec, body, blocks, stop, slow=step)
                return
        if body.get("stream"):
            self._stream(rec, body, blocks, stop)
        else:
            self._send_json(200, self._message(body, blocks, stop), self.api.rate_limit_headers(dict(self.headers)))

    # replies

    def _blocks_for(self, step: Step, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
        api = self.api
        if isinstance(step, Text):
            return [_text_block(step.text)], "end_turn"
        if isinstance(step, Slow):
            if step.thinking:
                thought = {"type": "thinking", "thinking": step.text, "signature": "c2lnbmF0dXJl"}
                return [thought, _text_block(step.answer)], "end_turn"
            return [_text_block(step.text)], "end_turn"
        if isinstance(step, ToolUse):
            blocks = [_text_block(step.text)] if step.text else []
            blocks.append(_tool_block(api._new_id("toolu"), step.name, step.input))
            return blocks, "tool_use"
        if isinstance(step, Plan):
            tool_input: dict[str, Any] = {}
            schema = _tool_schema(body, "ExitPlanMode")
            if "plan" in (schema.get("properties") or {}):
                tool_input["plan"] = step.plan
            match = _PLAN_FILE.search(RecordedRequest("", "", {}, body, "main").all_text())
            if match:
                plan_file = Path(match.group(1))
                plan_file.parent.mkdir(parents=True, exist_ok=True)
                plan_file.write_text(step.plan)
            blocks = [_text_block(step.text)] if step.text else []
            blocks.append(_tool_block(api._new_id("toolu"), "ExitPlanMode", tool_input))
            return blocks, "tool_use"
        if isinstance(step, Ask):
            question = {
                "question": step.question,
                "header": step.header,
                "options": [{"label": o, "description": f"Pick {o}."} for o in step.options],
                "multiSelect": step.multi_select,
            }
            block = _tool_block(api._new_id("toolu"), "AskUserQuestion", {"questions": [question]})
            return [block], "tool_use"
        raise TypeError(f"not a step: {step!r}")

    def _message(
        self, body: dict[str, Any], blocks: list[dict[str, Any]], stop: str
    ) -> dict[str, Any]:
        return {
            "id": self.api._new_id("msg"),
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-sonnet-4-5"),
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": _usage(20),
        }

    def _stream(
        self,
        rec: RecordedRequest,
        body: dict[str, Any],
        blocks: list[dict[str, Any]],
        stop: str,
        slow: Slow | None = None,
    ) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("request-id", f"req_fake_{int(time.time() * 1000)}")
        for key, value in self.api.rate_limit_headers(dict(self.headers)).items():
            self.send_header(key, value)
        self.end_headers()
        try:
            for event in self._events(body, blocks, stop, slow, rec.step):
                self._chunk(event)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            rec.aborted = True
            self.close_connection = True

    def _chunk(self, event: tuple[str, dict[str, Any]]) -> None:
        name, data = event
        payload = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
        self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
        self.wfile.flush()

    def _events(
        self,
        body: dict[str, Any],
        blocks: list[dict[str, Any]],
        stop: str,
        slow: Slow | None,
        step: Step | None,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        usage: Usage | None = getattr(step, "usage", None) or self.api.usage_of(dict(self.headers))
        start = self._message(body, [], "")
        start["stop_reason"] = None
        start["usage"] = usage.start() if usage is not None else _usage(1)
        yield "message_start", {"type": "message_start", "message": start}
        yield "ping", {"type": "ping"}
        delay = 0.0 if slow is not None else float(getattr(step, "delay", 0.0))
        if delay > 0:
            release = self.api._release
            release.clear()
            deadline = time.monotonic() + delay
            while not release.is_set() and time.monotonic() < deadline:
                release.wait(min(0.5, max(0.0, deadline - time.monotonic())))
                yield "ping", {"type": "ping"}
        out_tokens = 0
        for i, block in enumerate(blocks):
            pace = slow if i == 0 else None  # a Slow step paces its first block only
            if block["type"] in ("text", "thinking"):
                kind = block["type"]
                start_block: dict[str, Any] = {"type": kind, kind: ""}
                if kind == "thinking":
                    start_block["signature"] = ""
                yield "content_block_start", {
                    "type": "content_block_start",
                    "index": i,
                    "content_block": start_block,
                }
                for piece in _pieces(block[kind], pace, 12, self.api._release):
                    if piece is None:
                        yield "ping", {"type": "ping"}
                        continue
                    out_tokens += 1
                    yield "content_block_delta", {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {"type": f"{kind}_delta", kind: piece},
                    }
                if kind == "thinking":
                    yield "content_block_delta", {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {"type": "signature_delta", "signature": "c2lnbmF0dXJl"},
                    }
            else:
                yield "content_block_start", {
                    "type": "content_block_start",
                    "index": i,
                    "content_block": {
                        "type": "tool_use",
                        "id": block["id"],
                        "name": block["name"],
                        "input": {},
                    },
                }
                raw = json.dumps(block["input"])
                for piece in _chop(raw, 16):
                    out_tokens += 1
                    yield "content_block_delta", {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    }
            yield "content_block_stop", {"type": "content_block_stop", "index": i}
        yield "message_delta", {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": usage.whole() if usage is not None else {"output_tokens": max(out_tokens, 1)},
        }
        yield "message_stop", {"type": "message_stop"}


def _pieces(
    text: str, slow: Slow | None, size: int, release: threading.Event | None = None
) -> Iterable[str | None]:
    """Text deltas; for a ``Slow`` step one word per interval, then ``None`` (a ping) per
    interval until the time is up, so a client that went away is noticed."""
    if slow is None:
        yield from _chop(text, size)
        return
    words = text.split(" ")
    deadline = time.monotonic() + slow.seconds
    i = 0
    while time.monotonic() < deadline and not (release is not None and release.is_set()):
        if i < len(words):
            yield (" " if i else "") + words[i]
            i += 1
        else:
            yield None
        wait = min(slow.interval, max(0.0, deadline - time.monotonic()))
        if release is not None:
            release.wait(wait)
        else:
            time.sleep(wait)
    if i < len(words):
        yield (" " if i else "") + " ".join(words[i:])


def _chop(s: str, size: int) -> Iterable[str]:
    for i in range(0, len(s), size):
        yield s[i : i + size]
    if not s:
        yield ""


def _text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _tool_block(tool_id: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


def _usage(output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": 100,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _tool_schema(body: dict[str, Any], name: str) -> dict[str, Any]:
    for tool in body.get("tools") or []:
        if tool.get("name") == name:
            return dict(tool.get("input_schema") or {})
    return {}


def _side_answer(body: dict[str, Any]) -> str:
    """A harmless answer for a side call: JSON that fits the requested schema, if any."""
    fmt = body.get("output_format") or (body.get("output_config") or {}).get("format") or {}
    schema = fmt.get("schema") if isinstance(fmt, dict) else None
    if isinstance(schema, dict):
        return json.dumps(_example(schema))
    return SIDE_TEXT


def _example(schema: dict[str, Any]) -> Any:
    """A small value that satisfies a JSON schema well enough for titles and names."""
    if schema.get("enum"):
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        return {k: _example(v if isinstance(v, dict) else {}) for k, v in props.items()}
    if kind == "array":
        return []
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        return 0
    if kind == "null":
        return None
    return "Scripted test session"
