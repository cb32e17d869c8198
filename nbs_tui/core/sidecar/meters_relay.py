"""An agent's meters relayed from the lease holder to every viewer through a pane option.

Claude Code's transcripts live on the host that runs the agent, and only that host's nbs-tui
(its ``nbs-tui service``, the lease holder) reads them. The holder publishes each agent pane's
`Meters` in the user option `METERS_OPTION` (written only when they change, with the pane's
other published options), and every view reads it in the per-tick ``list-panes`` it already
makes, over ssh too (docs/lease.md, "relay"). What travels is the counts by model, not a cost:
each view prices them with its own price table.

The value is compact ASCII JSON, ``[1, responses, [[model, in, out, cw, cr, cw1h], ...],
context_counts_or_null, context_model_or_null]``. A view parses it with bounded sizes; anything
garbled is no meters (never an exception). Pure: no tmux, no I/O.
"""

from __future__ import annotations

import json
from typing import Any

from nbs_tui.core.screen.text import loads_json
from nbs_tui.core.sidecar.meters import Meters, Tokens

METERS_OPTION = "@nbs_meters"
"""Pane option the holder writes: the pane's meters (`encode_meters`)."""
WIRE_VERSION = 1
MAX_VALUE = 4000
"""Characters of an option value a view parses at most (read by every view every tick)."""
MAX_MODELS = 16
"""Models per agent kept on the wire (an agent uses one or two; sub-agents a few more)."""
MAX_MODEL = 100
"""Characters of a model id."""
_MAX_COUNT = 10**12


def _counts(tokens: Tokens) -> list[int]:
    return [tokens.input, tokens.output, tokens.cache_creation, tokens.cache_read, tokens.cache_creation_1h]


def encode_meters(meters: Meters | None) -> str:
    """The option's value ("" for no meters: the option is then unset). No tab or newline, so
    a ``list-panes`` row stays one row."""
    if meters is None or not meters.responses:
        return ""
    models = [[model[:MAX_MODEL], *_counts(tokens)] for model, tokens in meters.by_model[:MAX_MODELS]]
    context = _counts(meters.context) if meters.context is not None else None
    model = meters.context_model[:MAX_MODEL] if meters.context_model is not None else None
    row = [WIRE_VERSION, meters.responses, models, context, model]
    return json.dumps(row, ensure_ascii=True, separators=(",", ":"))


def _count(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < _MAX_COUNT:
        return value
    raise ValueError(f"not a token count: {value!r}")


def _tokens(value: Any) -> Tokens:
    if not isinstance(value, list) or len(value) != 5:
        raise ValueError("token counts must be a list of five")
    counts = [_count(v) for v in value]
    if counts[4] > counts[2]:  # the one-hour part of the cache writes
        raise ValueError("one-hour cache writes above all cache writes")
    return Tokens(*counts)


def _model(value: Any) -> str:
    if not isinstance(value, str) or len(value) > MAX_MODEL or not value.isprintable():
        raise ValueError("not a model id")
    return value


def parse_meters(raw: str) -> Meters | None:
    """The meters in an option's value; None when it is empty, too long or garbled."""
    raw = raw.strip()
    if not raw or len(raw) > MAX_VALUE:
        return None
    try:
        row = loads_json(raw)
        if not isinstance(row, list) or len(row) < 5 or row[0] != WIRE_VERSION:
            return None
        _version, responses, models, context, context_model = row[:5]
        responses = _count(responses)
        if not isinstance(models, list) or len(models) > MAX_MODELS:
            return None
        by_model: dict[str, Tokens] = {}
        for entry in models:
            if not isinstance(entry, list) or len(entry) != 6:
                return None
            by_model[_model(entry[0])] = _tokens(entry[1:])
        return Meters(
            tuple(sorted(by_model.items())),
            responses,
            _tokens(context) if context is not None else None,
            _model(context_model) if context_model is not None else None,
        )
    except ValueError:
        return None
