"""What Claude Code writes besides the screen: its session-status file, its transcript and
its hook calls (in the format of nbs-tui's own hook script), so the demo exercises every
source the dashboard fuses.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
import uuid
from pathlib import Path
from typing import Any

from nbs_tui.demo.palette import MODEL_ID, VERSION_LABEL


def _proc_start() -> str | None:
    """Field 22 of /proc/self/stat (start time in clock ticks), as Claude Code's ``procStart``."""
    try:
        raw = Path("/proc/self/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2:].split()
    return fields[19] if len(fields) > 19 else None


class SideChannels:
    """The session-status file, transcript and hook calls a real Claude Code process would produce.

    ``config_dir`` plays ``$CLAUDE_CONFIG_DIR``: the agent keeps ``<config_dir>/sessions/<pid>.json``
    (status idle | busy | waiting, waitingFor, sessionId, cwd, version, statusUpdatedAt,
    procStart) up to date and removes it on exit, and appends its conversation to
    ``<config_dir>/projects/<slug>/<sessionId>.jsonl`` (``user`` prompts and tool results,
    ``assistant`` text / tool_use / thinking / API-error records, ``system`` turn_duration).
    ``spool`` receives one JSON line per hook call in the format of nbs-tui's own hook script
    (``nbs_pane``, ``nbs_tmux``, ``nbs_time``, ``payload``), written with one ``write()`` on an
    O_APPEND descriptor. Both are opt-in.
    """

    def __init__(self, config_dir: Path | None, spool: Path | None, cwd: Path, name: str) -> None:
        self.config_dir = config_dir
        self.spool = spool
        self.cwd = str(cwd)
        self.name = name
        self.session_id = str(uuid.uuid4())
        self.started_ms = int(time.time() * 1000)
        self.proc_start = _proc_start()
        self._status: tuple[str, str | None] | None = None
        self.muted = False
        self.path = config_dir / "sessions" / f"{os.getpid()}.json" if config_dir else None
        slug = re.sub(r"[^A-Za-z0-9]", "-", self.cwd)
        self.transcript_path = config_dir / "projects" / slug / f"{self.session_id}.jsonl" if config_dir else None
        for folder in (self.path, self.transcript_path):
            if folder is not None:
                with contextlib.suppress(OSError):
                    folder.parent.mkdir(parents=True, exist_ok=True)
        self._parent: str | None = None
        self._pending_text: str | None = None
        self._context = 18_000 + len(name) * 1_000
        """The conversation's size in tokens, for the usage each response reports (the meters)."""

    def status(self, status: str, waiting_for: str | None = None) -> None:
        if self.path is None or self._status == (status, waiting_for):
            return
        self._status = (status, waiting_for)
        now_ms = int(time.time() * 1000)
        data: dict[str, Any] = {
            "pid": os.getpid(), "sessionId": self.session_id, "cwd": self.cwd, "startedAt": self.started_ms,
            "version": VERSION_LABEL.lstrip("v"), "status": status, "statusUpdatedAt": now_ms, "updatedAt": now_ms,
            "procStart": self.proc_start, "name": self.name,
        }
        if waiting_for:
            data["waitingFor"] = waiting_for
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        with contextlib.suppress(OSError):  # the folder is made once: never re-create a removed one
            tmp.write_text(json.dumps(data), encoding="utf-8")
            os.replace(tmp, self.path)

    def hook(self, event: str, **fields: Any) -> None:
        if self.spool is None or self.muted:
            return
        payload = {"session_id": self.session_id, "transcript_path": str(self.transcript_path or ""), "cwd": self.cwd,
                   "hook_event_name": event, **fields}
        record = {
            "nbs_pane": os.environ.get("TMUX_PANE", ""),
            "nbs_tmux": os.environ.get("TMUX", "").split(",")[0],
            "nbs_time": time.time(),
            "payload": payload,
        }
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        with contextlib.suppress(OSError):
            fd = os.open(self.spool, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)

    # -- the transcript -------------------------------------------------------------------------

    def _record(self, kind: str, message: dict[str, Any] | None = None, **extra: Any) -> None:
        if self.transcript_path is None:
            return
        stamp = time.time()
        ident = str(uuid.uuid4())
        record: dict[str, Any] = {
            "parentUuid": self._parent, "isSidechain": False, "userType": "external", "cwd": self.cwd,
            "sessionId": self.session_id, "version": VERSION_LABEL.lstrip("v"), "type": kind, "uuid": ident,
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(stamp)) + f".{int(stamp * 1000) % 1000:03d}Z",
        }
        if message is not None:
            record["message"] = message
        record.update(extra)
        self._parent = ident
        with contextlib.suppress(OSError):
            fd = os.open(self.transcript_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
            finally:
                os.close(fd)

    def _usage(self, content: list[dict[str, Any]]) -> dict[str, Any]:
        """Plausible usage: the conversation read from the cache, a little written to it, the
        reply's tokens out (about four characters each); the conversation grows by them."""
        output = max(1, len(json.dumps(content)) // 4)
        usage = {"input_tokens": 3, "cache_creation_input_tokens": 350, "cache_read_input_tokens": self._context,
                 "output_tokens": output, "service_tier": "standard"}
        self._context += 350 + output
        return usage

    def _assistant(self, content: list[dict[str, Any]], stop_reason: str | None) -> None:
        self._record("assistant", {"model": MODEL_ID, "id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message",
                                   "role": "assistant", "content": content, "stop_reason": stop_reason,
                                   "usage": self._usage(content)})

    def _flush_text(self, stop_reason: str) -> None:
        if self._pending_text is not None:
            text, self._pending_text = self._pending_text, None
            self._assistant([{"type": "text", "text": text}], stop_reason)

    def user_prompt(self, text: str) -> None:
        self._flush_text("end_turn")
        self._record("user", {"role": "user", "content": text})

    def assistant_text(self, text: str) -> None:
        """Held back until the next record says whether the turn goes on (tool_use) or ends."""
        self._flush_text("tool_use")
        self._pending_text = text

    def thinking(self) -> None:
        self._flush_text("tool_use")
        self._assistant([{"type": "thinking", "thinking": "Let me look at the code first.", "signature": ""}], None)

    def tool_use(self, name: str, tool_input: dict[str, Any]) -> str:
        self._flush_text("tool_use")
        ident = f"toolu_{uuid.uuid4().hex[:24]}"
        self._assistant([{"type": "tool_use", "id": ident, "name": name, "input": tool_input}], "tool_use")
        return ident

    def tool_result(self, ident: str, output: str) -> None:
        self._record("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": ident,
                                                            "content": output, "is_error": False}]})

    def turn_end(self, duration_ms: int) -> None:
        self._flush_text("end_turn")
        self._record("system", subtype="turn_duration", durationMs=duration_ms, isMeta=False)

    def interrupted(self) -> None:
        self._flush_text("end_turn")
        self._record("user", {"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user]"}]})

    def api_error(self, text: str, status: int, code: str) -> None:
        self._flush_text("tool_use")
        self._record("assistant", {"model": "<synthetic>", "role": "assistant", "content": [{"type": "text", "text": text}],
                                   "stop_reason": "stop_sequence"}, isApiErrorMessage=True, error=code, apiErrorStatus=status)

    def close(self, reason: str) -> None:
        self.hook("SessionEnd", reason=reason)
        if self.path is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()
