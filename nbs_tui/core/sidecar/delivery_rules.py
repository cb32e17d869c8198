"""The rules of delivering a caller's text into an agent pane: ``nbs-tui send`` and the work
queue's feeder hand the lease holder a text, and its sidecar types it once, whole, as it types
``/nbs-poll`` (docs/fleet-api.md, "send").

Pure: what a caller's text may be (`clean_text`), whether a pane may take one now and why not
(`send_refusal`, with a `Refusal` code a script can match), whether the input box shows the text
the sidecar pasted (`box_holds`: Claude Code wraps long rows and shows a paste of more than 800
characters or several lines as a ``[Pasted text #N +K lines]`` chip), the in-flight mark's text
(`mark_text`), and what the answer to a caller is (`Delivery`). The tests hold every rule
without tmux (tests/unit/test_delivery_rules.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from nbs_tui.core.fleet.model import AgentState, Detection

SEND_PURPOSE = "send"
"""The purpose of a caller's text in the sidecar's typing handshake (`InjectPoll.purpose`)."""
MARK_CHARS = 800
"""The in-flight mark carries at most this much of a sent text (a tmux command line must fit
16 KiB); Claude Code shows a longer paste as a chip anyway."""
MAX_CHARS = 100_000
"""The longest text a send takes (a prompt, not a file transfer)."""

_CHIP = re.compile(r"\[Pasted text #\d+(?: \+(?P<lines>\d+) lines?)?\]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class DeliveryResult(StrEnum):
    SUBMITTED = "submitted"
    """Typed whole and seen leaving the input box (submitted once)."""
    REFUSED = "refused"
    """Nothing was typed: the pane was not in a state to take it (`Delivery.reason`)."""
    FAILED = "failed"
    """Typed, but not seen submitted: look at the pane before sending again."""


class Refusal(StrEnum):
    """Why a pane does not take a text now: a short code for scripts (``reason`` in the JSON)."""

    NOT_HOLDER = "not-holder"
    NOT_AGENT = "not-agent"
    STARTING = "starting"
    PAUSED = "paused"
    POLL_IN_FLIGHT = "poll-in-flight"
    OPERATOR_TYPING = "operator-typing"
    WORKING = "working"
    PERMISSION = "permission"
    QUESTION = "question"
    PLAN = "plan"
    DIALOG = "dialog"
    LIMITED = "limited"
    ERROR = "error"
    UNKNOWN = "unknown"
    INPUT = "input"
    """Half-typed text in the input box: an operator's, never clobbered."""
    NO_BOX = "no-input-box"
    PENDING = "pending"
    """Another send to the pane is pending."""
    CHANGED = "changed"
    """The live screen no longer allowed it when the sidecar was about to type."""
    STOPPED = "stopped"
    """The sidecar stopped (or lost the lease) before it typed."""
    EXPIRED = "expired"
    """A tmux request the caller had given up on before a sidecar took it."""
    BAD_TEXT = "bad-text"
    BUDGET = "budget"
    """The budget governor feeds this agent nothing more: its account or itself at a cap (issue 37)."""
    """A tmux request whose text is missing or not sendable."""


_STATE_REFUSALS = {
    AgentState.WORKING: Refusal.WORKING,
    AgentState.PERMISSION: Refusal.PERMISSION,
    AgentState.QUESTION: Refusal.QUESTION,
    AgentState.PLAN: Refusal.PLAN,
    AgentState.DIALOG: Refusal.DIALOG,
    AgentState.LIMITED: Refusal.LIMITED,
    AgentState.ERROR: Refusal.ERROR,
    AgentState.UNKNOWN: Refusal.UNKNOWN,
}


@dataclass(frozen=True, slots=True)
class Delivery:
    """The answer to one send: submitted, refused (nothing typed) or failed (typed, not seen
    submitted), with a `Refusal` code (empty when submitted) and words for a person."""

    result: DeliveryResult
    reason: str = ""
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.result is DeliveryResult.SUBMITTED

    @classmethod
    def refused(cls, reason: Refusal, message: str) -> Delivery:
        return cls(DeliveryResult.REFUSED, reason.value, message)

    def as_json(self) -> dict[str, str | None]:
        return {"result": self.result.value, "reason": self.reason or None, "message": self.message}


@dataclass(frozen=True, slots=True)
class PaneFacts:
    """What the holder knows of a pane when a send arrives."""

    detection: Detection | None
    """The pane's detection as its sidecar last read it; None: not an agent pane it watches."""
    acting: bool = True
    """This process holds the lease (and may act)."""
    starting: bool = False
    """``nbs-tui new`` claims the pane (``@nbs_starting``)."""
    paused: bool = False
    """``@nbs_pause`` or the project's ``.nbs/control-pause``."""
    injecting: bool = False
    """A poll, nudge, resume or send is being typed or is queued in the pane's sidecar."""
    inflight: bool = False
    """An ``@nbs_inflight`` mark is on the pane (a holder's typing not yet seen submitted)."""
    operator_typing: bool = False
    """The operator sent keys to the pane moments ago."""
    held: str | None = None
    """Why the budget governor feeds the agent nothing more (None: it may be fed)."""


def send_refusal(facts: PaneFacts) -> tuple[Refusal, str] | None:
    """Why the pane may not take a text now (None: queue it for the sidecar's next tick)."""
    d = facts.detection
    if not facts.acting:
        return Refusal.NOT_HOLDER, "this process does not hold the sidecar lease"
    if d is None:
        return Refusal.NOT_AGENT, "not an agent pane the sidecar watches"
    if facts.starting:
        return Refusal.STARTING, "nbs-tui new is starting this agent"
    if facts.paused:
        return Refusal.PAUSED, "the sidecar is paused (@nbs_pause or .nbs/control-pause)"
    if facts.held:
        return Refusal.BUDGET, f"budget: {facts.held}"
    if facts.injecting or facts.inflight:
        return Refusal.POLL_IN_FLIGHT, "the sidecar is typing into this pane (a poll in flight)"
    if facts.operator_typing:
        return Refusal.OPERATOR_TYPING, "the operator typed into this pane just now"
    if d.state is not AgentState.IDLE:
        return _STATE_REFUSALS[d.state], f"{d.state.value}: {d.reason}" if d.reason else d.state.value
    if d.input_text:
        return Refusal.INPUT, f"the input box holds {_short(d.input_text)!r}"
    if d.input_text is None or not d.safe_to_inject:
        return Refusal.NO_BOX, f"no empty input box in view ({d.reason})"
    return None


def clean_text(text: str) -> str:
    """The text as it will be pasted: line ends made ``\\n``, trailing blank lines and spaces
    dropped (Enter submits it). Raises ValueError for an empty text, a control character
    (an Escape could open a menu) or one longer than `MAX_CHARS`."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").rstrip()
    if not text:
        raise ValueError("nothing to send: the text is empty")
    if len(text) > MAX_CHARS:
        raise ValueError(f"the text has {len(text)} characters: at most {MAX_CHARS} are sent")
    bad = _CONTROL.search(text)
    if bad is not None:
        raise ValueError(f"the text holds a control character ({bad.group()!r} at {bad.start()}): not sent")
    return text


def squash(text: str) -> str:
    """The text without its whitespace: a box row wrapped at the pane's edge, and the indent
    Claude Code puts before a box's second line, compare equal to the text typed."""
    return "".join(text.split())


def box_holds(text: str, box: str | None) -> bool:
    """Whether the input box (detection's ``input_text``) shows exactly ``text`` as pasted:
    the same characters (rows wrapped or indented), or one paste chip with the text's line count."""
    if not box:
        return False
    chip = _CHIP.fullmatch(box)
    if chip is not None:
        lines = chip["lines"]
        return lines is None or int(lines) == text.count("\n")
    return squash(box) == squash(text)


def mark_text(text: str) -> str:
    """The text of a send's in-flight mark (``TOKEN TEXT``): one line, the same length as the
    text (a newline is one space, so a new holder erases exactly as many characters), cut at
    `MARK_CHARS`."""
    return text[:MARK_CHARS].replace("\n", " ").replace("\t", " ")


def typed_prefix_length(mark: str, box: str) -> int | None:
    """How many characters of ``mark`` the box shows from its start, rows wrapped or not (the
    length of the shortest prefix of ``mark`` whose characters other than whitespace are the
    box's); None when the box shows anything else."""
    want = squash(box)
    if not want:
        return None
    seen = 0
    for i, char in enumerate(mark):
        if char.isspace():
            continue
        if seen >= len(want) or char != want[seen]:
            return None
        seen += 1
        if seen == len(want):
            return i + 1
    return None


# -- ``nbs-tui send``'s request through tmux (docs/fleet-api.md, "The request channel") ---------

SEND_REQUEST_OPTION = "@nbs_send_req"
"""Pane option ``ID DEADLINE``: a caller asks the holder to send the text in buffer
``nbs-send-ID``; set only while unset (one pending request per pane), unset with the answer."""
SEND_ANSWER_OPTION = "@nbs_send_ack"
"""Pane option: ``ID typed TOKEN`` (pasted by holder TOKEN, in the same tmux step), then
``ID RESULT REASON MESSAGE`` (RESULT a `DeliveryResult`, REASON a `Refusal` or ``-``)."""
TYPED = "typed"


def buffer_name(request_id: str) -> str:
    """The tmux buffer that carries request ``request_id``'s text."""
    return f"nbs-send-{request_id}"


@dataclass(frozen=True, slots=True)
class SendRequest:
    id: str
    deadline: float
    """Wall seconds (the caller's clock, on the server's host) after which it gives up."""

    def render(self) -> str:
        return f"{self.id} {self.deadline:.0f}"


@dataclass(frozen=True, slots=True)
class SendAnswer:
    """What the option `SEND_ANSWER_OPTION` holds: a stage (``typed``) or the final `Delivery`."""

    id: str
    stage: str
    """``typed`` or a `DeliveryResult` value."""
    token: str = ""
    """For ``typed``: the holder that pasted it."""
    delivery: Delivery | None = None

    @property
    def final(self) -> bool:
        return self.delivery is not None


_ID = re.compile(r"[0-9a-f]{8,32}")


def parse_send_request(raw: str) -> SendRequest | None:
    request_id, _, deadline = raw.strip().partition(" ")
    if not _ID.fullmatch(request_id):
        return None
    try:
        return SendRequest(request_id, float(deadline))
    except ValueError:
        return None


def parse_send_answer(raw: str) -> SendAnswer | None:
    parts = raw.split(" ", 3)
    if len(parts) < 3 or not _ID.fullmatch(parts[0]):
        return None
    request_id, stage, third = parts[0], parts[1], parts[2]
    if stage == TYPED:
        return SendAnswer(request_id, stage, token=third)
    try:
        result = DeliveryResult(stage)
    except ValueError:
        return None
    message = parts[3] if len(parts) > 3 else ""
    return SendAnswer(request_id, stage, delivery=Delivery(result, "" if third == "-" else third, message))


def render_answer(request_id: str, delivery: Delivery) -> str:
    """The final answer: one line with no tab (the holder's ``list-panes`` row is tab-separated)."""
    message = " ".join(delivery.message.split())
    return f"{request_id} {delivery.result.value} {delivery.reason or '-'} {message}".rstrip()


def typed_answer(request_id: str, token: str) -> str:
    return f"{request_id} {TYPED} {token}"


@dataclass(frozen=True, slots=True)
class TakeRequest:
    """Hand the request's text to the `SendDesk`."""


@dataclass(frozen=True, slots=True)
class WaitRequest:
    """Nothing to do this tick."""


@dataclass(frozen=True, slots=True)
class AnswerRequest:
    """Answer the request (and unset it) without typing anything."""

    delivery: Delivery


RequestStep = TakeRequest | WaitRequest | AnswerRequest


def request_step(
    request: SendRequest, answer: SendAnswer | None, *, mine: bool, my_token: str, now: float,
    mark_token: str | None, erased: int | None,
) -> RequestStep:  # fmt: skip
    """What a holder does with a pane's pending request. ``mine``: this holder took it and has
    not answered yet (``my_token`` its lease token); ``mark_token``: the token of the pane's ``@nbs_inflight`` mark (None: no
    mark); ``erased``: what the in-flight rule erased this tick for a mark of the token that
    typed it (None: it did not run). A request another holder pasted is never taken again: the
    in-flight rule decides, and the caller hears what became of it."""
    if answer is not None and answer.id != request.id:
        answer = None  # an earlier request's
    if answer is not None and answer.final:
        return WaitRequest()  # answered; the option is being unset
    if mine:
        return WaitRequest()
    if answer is not None and answer.token == my_token:
        said = "this sidecar pasted it and lost track of it: look at the pane before sending again"
        return AnswerRequest(Delivery(DeliveryResult.FAILED, Refusal.STOPPED.value, said))
    if answer is not None:  # typed by a holder that is gone
        if erased is None and mark_token == answer.token:
            return WaitRequest()  # the in-flight rule waits for a box on screen
        if erased:
            said = "the sidecar that pasted it stopped before submitting it; it was erased, nothing was submitted"
            return AnswerRequest(Delivery.refused(Refusal.STOPPED, said))
        said = (
            "the sidecar that pasted it stopped before it saw it submitted: it may have been "
            "(or it is still in the box); look at the pane before sending again"
        )
        return AnswerRequest(Delivery(DeliveryResult.FAILED, Refusal.STOPPED.value, said))
    if now > request.deadline:
        return AnswerRequest(Delivery.refused(Refusal.EXPIRED, "the caller gave up before a sidecar took it"))
    return TakeRequest()


def chip_erase_count(sent: str, box: str | None) -> int | None:
    """For a send a holder that died had pasted (its text known from the request's buffer):
    1 when the box shows exactly that paste as Claude Code's chip (one BSpace takes a chip
    away, measured on 2.1.332), else None (the in-flight rule's own count stands)."""
    if box is None or _CHIP.fullmatch(box) is None or not box_holds(sent, box):
        return None
    return 1


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
