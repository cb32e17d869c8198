"""Meters: tokens, context used and estimated cost from a transcript's usage records (pure).

Claude Code writes one transcript line per content block of an API response, and every line of
one response repeats the same ``message.id``, ``requestId`` and ``usage`` (seen on 2.1.100 and
2.1.332): summing every line counts a response two or three times. :class:`MeterAccount` counts
each response once, keyed by its message id; if a later line of the same response carries
larger numbers (a version that writes the stream's first usage before its last), the counts grow
to the larger values, never add up twice.

Cost is an estimate: tokens by model times a price table (USD per million tokens) that the
config can override (``[prices."model-id"]``). A model with no price is named, not guessed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

PRICES_TAKEN = "2026-11-26"
"""When :data:`DEFAULT_PRICES` were taken from platform.claude.com's model and pricing pages."""

DEFAULT_CONTEXT = 200_000
"""Context window assumed for a model without one in the table."""


@dataclass(frozen=True, slots=True)
class Tokens:
    """Token counts of one response, or a sum of them."""

    input: int = 0
    """Input tokens not read from or written to the prompt cache."""
    output: int = 0
    cache_creation: int = 0
    """Input tokens written to the cache (all lifetimes)."""
    cache_read: int = 0
    cache_creation_1h: int = 0
    """The part of ``cache_creation`` written for one hour (priced higher than five minutes)."""

    @property
    def prompt(self) -> int:
        """The whole prompt the model read: what fills the context window."""
        return self.input + self.cache_creation + self.cache_read

    @property
    def total(self) -> int:
        return self.prompt + self.output

    def __add__(self, other: Tokens) -> Tokens:
        return Tokens(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(Tokens)))

    def __sub__(self, other: Tokens) -> Tokens:
        return Tokens(*(getattr(self, f.name) - getattr(other, f.name) for f in fields(Tokens)))

    def widest(self, other: Tokens) -> Tokens:
        """Each count at the larger of the two (two lines of one response)."""
        return Tokens(*(max(getattr(self, f.name), getattr(other, f.name)) for f in fields(Tokens)))


def _count(value: Any) -> int:
    # bool is an int in Python; a negative or absurd count is a broken record, not a number
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**12:
        return value
    return 0


def usage_tokens(usage: Any) -> Tokens | None:
    """The counts of one ``message.usage`` object; None when it is not one."""
    if not isinstance(usage, Mapping):
        return None
    creation = usage.get("cache_creation")
    one_hour = _count(creation.get("ephemeral_1h_input_tokens")) if isinstance(creation, Mapping) else 0
    written = _count(usage.get("cache_creation_input_tokens"))
    return Tokens(
        input=_count(usage.get("input_tokens")),
        output=_count(usage.get("output_tokens")),
        cache_creation=written,
        cache_read=_count(usage.get("cache_read_input_tokens")),
        cache_creation_1h=min(one_hour, written),
    )


@dataclass(frozen=True, slots=True)
class UsageRecord:
    """One transcript line's usage: which response it belongs to, and its model."""

    key: str
    model: str
    tokens: Tokens
    sidechain: bool


def usage_of_record(record: Mapping[str, Any]) -> UsageRecord | None:
    """The usage an ``assistant`` transcript record carries; None for every other record
    (users, system lines, Claude Code's synthetic API-error messages)."""
    if record.get("type") != "assistant" or record.get("isApiErrorMessage") is True:
        return None
    message = record.get("message")
    if not isinstance(message, Mapping):
        return None
    tokens = usage_tokens(message.get("usage"))
    if tokens is None:
        return None
    model = message.get("model")
    model = model if isinstance(model, str) else ""
    if model.startswith("<"):  # "<synthetic>": written by Claude Code itself, never billed
        return None
    key = message.get("id") or record.get("requestId") or record.get("uuid")
    if not isinstance(key, str) or not key:
        return None
    return UsageRecord(key, model, tokens, record.get("isSidechain") is True)


@dataclass(frozen=True, slots=True)
class Meters:
    """What one agent's transcript has cost so far (a frozen snapshot, cheap to compare)."""

    by_model: tuple[tuple[str, Tokens], ...] = ()
    responses: int = 0
    """API responses counted (each once, however many lines it took)."""
    context: Tokens | None = None
    """The last main-chain response's counts: its prompt is the context in use."""
    context_model: str | None = None

    @property
    def tokens(self) -> Tokens:
        total = Tokens()
        for _model, tokens in self.by_model:
            total = total + tokens
        return total

    def cost(self, prices: Mapping[str, ModelPrice]) -> Cost:
        return cost_of(self.by_model, prices)

    def context_percent(self, prices: Mapping[str, ModelPrice]) -> float | None:
        """Context used as a percentage of the model's window; None before any response."""
        if self.context is None:
            return None
        window = context_window(self.context_model or "", prices)
        return 100.0 * self.context.prompt / window


SEEN_KEEP = 64
"""Responses remembered to count each once: a response's lines (one per content block) come
together, at most interleaved with those of a few parallel subagents, so a window this size
never counts one twice; and it fills within minutes, so a day-long session's account stays the
size it had after its first hour (512 took the demo's agents past the hour to fill: the soak's
growth)."""


class MeterAccount:
    """Counts responses once each (see the module docstring). Mutable, owned by one reader."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Start again (the transcript was replaced or truncated)."""
        self._seen: dict[str, Tokens] = {}
        """The last `SEEN_KEEP` responses' widest tokens, oldest first."""
        self._responses = 0
        self._by_model: dict[str, Tokens] = {}
        self._context: Tokens | None = None
        self._context_model: str | None = None
        self._snapshot: Meters | None = Meters()

    def add(self, usage: UsageRecord) -> bool:
        """Fold one line's usage in; True when the counts changed."""
        before = self._seen.get(usage.key)
        tokens = usage.tokens if before is None else before.widest(usage.tokens)
        if tokens == before:
            return False
        self._seen[usage.key] = tokens
        if before is None:
            self._responses += 1
            if len(self._seen) > SEEN_KEEP:
                del self._seen[next(iter(self._seen))]
        grown = tokens if before is None else tokens - before
        self._by_model[usage.model] = self._by_model.get(usage.model, Tokens()) + grown
        if not usage.sidechain:
            self._context, self._context_model = tokens, usage.model
        self._snapshot = None
        return True

    @property
    def meters(self) -> Meters:
        if self._snapshot is None:
            self._snapshot = Meters(
                tuple(sorted(self._by_model.items())), self._responses, self._context, self._context_model
            )
        return self._snapshot


# -- prices ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """USD per million tokens, and the model's context window in tokens."""

    input: float
    output: float
    cache_write: float
    """Five-minute cache writes."""
    cache_read: float
    cache_write_1h: float | None = None
    """One-hour cache writes; None: twice ``input``, as Anthropic prices them."""
    context: int = DEFAULT_CONTEXT

    def cost(self, tokens: Tokens) -> float:
        one_hour = self.cache_write_1h if self.cache_write_1h is not None else 2 * self.input
        five_minutes = tokens.cache_creation - tokens.cache_creation_1h
        return (
            tokens.input * self.input
            + tokens.output * self.output
            + five_minutes * self.cache_write
            + tokens.cache_creation_1h * one_hour
            + tokens.cache_read * self.cache_read
        ) / 1_000_000


_M = 1_000_000
DEFAULT_PRICES: Mapping[str, ModelPrice] = {
    "claude-fable-5-1": ModelPrice(10, 50, 12.5, 0.25, 20, _M),
    "claude-fable-5": ModelPrice(10, 50, 12.5, 1, 20, _M),
    "claude-opus-5-5": ModelPrice(4, 20, 5, 0.2, 8, _M),
    "claude-opus-5": ModelPrice(5, 25, 6.25, 0.5, 10, _M),
    "claude-opus-4-8": ModelPrice(5, 25, 6.25, 0.5, 10),
    "claude-opus-4-7": ModelPrice(5, 25, 6.25, 0.5, 10),
    "claude-opus-4-6": ModelPrice(5, 25, 6.25, 0.5, 10),
    "claude-opus-4-5": ModelPrice(5, 25, 6.25, 0.5, 10),
    "claude-opus-4-1": ModelPrice(15, 75, 18.75, 1.5, 30),
    "claude-opus-4": ModelPrice(15, 75, 18.75, 1.5, 30),
    "claude-sonnet-5-5": ModelPrice(2, 10, 2.5, 0.1, 4, _M),
    "claude-sonnet-5": ModelPrice(2, 10, 2.5, 0.2, 4, _M),
    "claude-sonnet-4-6": ModelPrice(3, 15, 3.75, 0.3, 6),
    "claude-sonnet-4-5": ModelPrice(3, 15, 3.75, 0.3, 6),
    "claude-sonnet-4": ModelPrice(3, 15, 3.75, 0.3, 6),
    "claude-haiku-5-5": ModelPrice(0.1, 0.5, 0.125, 0.01, 0.2, _M),
    "claude-haiku-4-5": ModelPrice(1, 5, 1.25, 0.1, 2),
    "claude-3-5-haiku": ModelPrice(0.8, 4, 1, 0.08, 1.6),
}
"""Defaults (docs/reference.md, "Meters"); the config's ``[prices."model-id"]`` tables replace or add."""

_DATED = re.compile(r"-\d{8}$")
_WINDOW = re.compile(r"\[(\d+)([km])\]$", re.I)


def model_key(model: str) -> str:
    """``claude-sonnet-4-5-20250929[1m]`` -> ``claude-sonnet-4-5``: how the table is keyed."""
    return _DATED.sub("", _WINDOW.sub("", model.strip()))


def price_for(model: str, prices: Mapping[str, ModelPrice]) -> ModelPrice | None:
    """The exact model's price (a dated id or a ``[1m]`` suffix match their base id); None when
    the table has none: a near name is not guessed, since families change price between versions."""
    return prices.get(model) or prices.get(model_key(model))


def context_window(model: str, prices: Mapping[str, ModelPrice]) -> int:
    suffix = _WINDOW.search(model)
    if suffix:
        return int(suffix.group(1)) * (1000 if suffix.group(2).lower() == "k" else _M)
    price = price_for(model, prices)
    return price.context if price is not None else DEFAULT_CONTEXT


@dataclass(frozen=True, slots=True)
class Cost:
    usd: float
    unpriced: tuple[str, ...] = ()
    """Models whose tokens are left out of ``usd`` because the table has no price for them."""


def cost_of(by_model: tuple[tuple[str, Tokens], ...], prices: Mapping[str, ModelPrice]) -> Cost:
    usd = 0.0
    unpriced: list[str] = []
    for model, tokens in by_model:
        price = price_for(model, prices)
        if price is None:
            if tokens.total:
                unpriced.append(model or "?")
            continue
        usd += price.cost(tokens)
    return Cost(usd, tuple(unpriced))


def sum_meters(all_meters: list[Meters]) -> Meters:
    """The fleet's totals (no context: that is per agent)."""
    by_model: dict[str, Tokens] = {}
    responses = 0
    for meters in all_meters:
        responses += meters.responses
        for model, tokens in meters.by_model:
            by_model[model] = by_model.get(model, Tokens()) + tokens
    return Meters(tuple(sorted(by_model.items())), responses)


def parse_prices(table: Any) -> dict[str, ModelPrice]:
    """The config file's ``[prices]`` table: ``{"model-id": {"input": 3, "output": 15, ...}}``.

    ``input`` and ``output`` are required; ``cache_write`` defaults to 1.25x input and
    ``cache_read`` to 0.1x input (Anthropic's usual ratios), ``cache_write_1h`` to 2x input,
    ``context`` to the default model's window. Raises ValueError saying what is wrong."""
    if not isinstance(table, Mapping):
        raise ValueError("prices must be a table of model id = { input = ..., output = ... }")
    out: dict[str, ModelPrice] = {}
    allowed = {"input", "output", "cache_write", "cache_read", "cache_write_1h", "context"}
    for model, entry in table.items():
        if not isinstance(model, str) or not isinstance(entry, Mapping):
            raise ValueError(f"prices.{model}: must be a table (input = ..., output = ...)")
        unknown = set(entry) - allowed
        if unknown:
            raise ValueError(f"prices.{model}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
        values: dict[str, float] = {}
        for key in allowed - {"context"}:
            value = entry.get(key)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(f"prices.{model}.{key}: must be a number of USD per million tokens, not {value!r}")
            values[key] = float(value)
        if "input" not in values or "output" not in values:
            raise ValueError(f"prices.{model}: input and output are required (USD per million tokens)")
        context = entry.get("context", DEFAULT_PRICES.get(model_key(model), ModelPrice(0, 0, 0, 0)).context)
        if isinstance(context, bool) or not isinstance(context, int) or context <= 0:
            raise ValueError(f"prices.{model}.context: must be a positive number of tokens, not {context!r}")
        base = values["input"]
        out[model] = ModelPrice(
            input=base,
            output=values["output"],
            cache_write=values.get("cache_write", 1.25 * base),
            cache_read=values.get("cache_read", 0.1 * base),
            cache_write_1h=values.get("cache_write_1h"),
            context=context,
        )
    return out


def short_count(n: int) -> str:
    """``1234`` -> ``1.2k``, ``3_400_000`` -> ``3.4M``: token counts in a narrow column."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k" if n < 10_000 else f"{n // 1000}k"
    return f"{n / 1_000_000:.1f}M" if n < 10_000_000 else f"{n // 1_000_000}M"


def format_cost(cost: Cost) -> str:
    text = f"${cost.usd:.2f}" if cost.usd < 100 else f"${cost.usd:.0f}"
    return text + ("+?" if cost.unpriced else "")


def describe(meters: Meters, prices: Mapping[str, ModelPrice], context: bool = True) -> str:
    """One line: ``ctx 42% · in 12k +cache 1.2M/45k · out 3.4k · ~$1.23`` (in: uncached input;
    cache: read/written)."""
    tokens = meters.tokens
    parts: list[str] = []
    percent = meters.context_percent(prices) if context else None
    if percent is not None:
        parts.append(f"ctx {percent:.0f}%")
    cached = f" +cache {short_count(tokens.cache_read)}/{short_count(tokens.cache_creation)}" if tokens.cache_read or tokens.cache_creation else ""
    parts.append(f"in {short_count(tokens.input)}{cached}")
    parts.append(f"out {short_count(tokens.output)}")
    parts.append(f"~{format_cost(meters.cost(prices))}")
    return " · ".join(parts)


def describe_total(meters: Meters, prices: Mapping[str, ModelPrice]) -> str:
    """The fleet's totals in few columns, for the status bar: ``$0.83 1.3M tok`` (an estimate,
    as the details say with their ``~``)."""
    return f"{format_cost(meters.cost(prices))} {short_count(meters.tokens.total)} tok"
