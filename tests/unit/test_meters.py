"""Meters: each API response counted once, prices, context, and the transcript read for them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nbs_tui.claude import transcript as transcript_module
from nbs_tui.claude.transcript import TranscriptTail
from nbs_tui.core.sidecar.meters import (
    DEFAULT_PRICES,
    SEEN_KEEP,
    MeterAccount,
    ModelPrice,
    Tokens,
    context_window,
    parse_prices,
    price_for,
    sum_meters,
    usage_of_record,
    usage_tokens,
)


def _usage(i: int, o: int, cw: int = 0, cr: int = 0, one_hour: int = 0) -> dict[str, Any]:
    return {
        "input_tokens": i,
        "output_tokens": o,
        "cache_creation_input_tokens": cw,
        "cache_read_input_tokens": cr,
        "cache_creation": {"ephemeral_1h_input_tokens": one_hour, "ephemeral_5m_input_tokens": cw - one_hour},
    }


def _line(msg_id: str, usage: dict[str, Any], block: str = "text", model: str = "claude-opus-5-5", **extra: Any) -> dict[str, Any]:
    """One transcript line as Claude Code 2.1.332 writes it: one per content block, the
    response's id, request id and usage repeated on each."""
    return {
        "type": "assistant",
        "requestId": f"req_{msg_id}",
        "uuid": f"u-{msg_id}-{block}",
        "message": {"id": msg_id, "model": model, "role": "assistant", "content": [{"type": block}], "usage": usage},
        **extra,
    }


def test_a_response_written_as_several_lines_is_counted_once() -> None:
    account = MeterAccount()
    first = _usage(1000, 50, 200, 3000)
    for block in ("thinking", "text", "tool_use"):  # three lines, one response
        account.add(usage_of_record(_line("msg_1", first, block)) or pytest.fail("no usage"))
    account.add(usage_of_record(_line("msg_2", _usage(7, 11, 13, 17))) or pytest.fail("no usage"))
    meters = account.meters
    assert meters.responses == 2
    assert meters.tokens == Tokens(input=1007, output=61, cache_creation=213, cache_read=3017)
    # the context in use is the last response's whole prompt
    assert meters.context is not None and meters.context.prompt == 7 + 13 + 17


def test_a_long_session_is_counted_whole_while_what_is_remembered_stays_bounded() -> None:
    account = MeterAccount()
    n = SEEN_KEEP * 3
    for i in range(n):
        for block in ("thinking", "text"):  # each response's lines together, as written
            account.add(usage_of_record(_line(f"msg_{i}", _usage(2, 1), block)) or pytest.fail("no usage"))
    assert account.meters.responses == n
    assert account.meters.tokens == Tokens(input=2 * n, output=n)
    assert len(account._seen) <= SEEN_KEEP  # a day-long session does not grow it
    # a recent response's repeated line still counts once
    account.add(usage_of_record(_line(f"msg_{n - 1}", _usage(2, 1), "tool_use")) or pytest.fail("no usage"))
    assert account.meters.responses == n


def test_a_later_line_with_larger_counts_grows_the_response_never_adds_it_twice() -> None:
    account = MeterAccount()
    assert account.add(usage_of_record(_line("m", _usage(100, 1))) or pytest.fail())
    assert account.add(usage_of_record(_line("m", _usage(100, 40), "tool_use")) or pytest.fail())
    assert not account.add(usage_of_record(_line("m", _usage(100, 40), "text")) or pytest.fail())
    assert account.meters.tokens == Tokens(input=100, output=40)
    assert account.meters.responses == 1


def test_records_without_billable_usage_are_left_out() -> None:
    assert usage_of_record({"type": "user", "message": {"id": "x", "usage": _usage(1, 1)}}) is None
    synthetic = _line("e", _usage(0, 0), model="<synthetic>")
    assert usage_of_record(synthetic) is None
    assert usage_of_record({**_line("e", _usage(5, 5)), "isApiErrorMessage": True}) is None
    assert usage_of_record({"type": "assistant", "message": "not a dict"}) is None
    # broken counts count as nothing rather than raise or go negative
    assert usage_tokens({"input_tokens": -5, "output_tokens": True, "cache_read_input_tokens": "9"}) == Tokens()
    # no message id: the request id still dedupes
    line = _line("", _usage(3, 4))
    record = usage_of_record(line)
    assert record is not None and record.key == "req_"


def test_sidechain_responses_cost_but_do_not_move_the_context() -> None:
    account = MeterAccount()
    account.add(usage_of_record(_line("main", _usage(10, 1, 0, 5000))) or pytest.fail())
    account.add(usage_of_record(_line("side", _usage(99, 9), isSidechain=True)) or pytest.fail())
    assert account.meters.context is not None and account.meters.context.prompt == 5010
    assert account.meters.tokens.input == 109


def test_cost_by_model_with_both_cache_lifetimes() -> None:
    account = MeterAccount()
    # opus 5.5: $4 in, $20 out, $5 5m-write, $8 1h-write, $0.20 read, per million
    account.add(usage_of_record(_line("a", _usage(1_000_000, 1_000_000, 2_000_000, 10_000_000, one_hour=1_000_000))) or pytest.fail())
    # haiku 4.5 by its dated id: $1 in, $5 out
    account.add(usage_of_record(_line("b", _usage(1_000_000, 1_000_000), model="claude-haiku-4-5-20251001")) or pytest.fail())
    cost = account.meters.cost(DEFAULT_PRICES)
    assert cost.usd == pytest.approx(4 + 20 + 5 + 8 + 2 + 1 + 5)
    assert cost.unpriced == ()


def test_a_model_without_a_price_is_named_not_guessed() -> None:
    account = MeterAccount()
    account.add(usage_of_record(_line("a", _usage(10, 10), model="claude-opus-9")) or pytest.fail())
    account.add(usage_of_record(_line("b", _usage(1_000_000, 0), model="claude-sonnet-4-5")) or pytest.fail())
    cost = account.meters.cost(DEFAULT_PRICES)
    assert cost.usd == pytest.approx(3.0) and cost.unpriced == ("claude-opus-9",)
    assert price_for("claude-opus-4-6-20260101[1m]", DEFAULT_PRICES) == DEFAULT_PRICES["claude-opus-4-6"]


def test_context_percent_uses_the_models_window() -> None:
    assert context_window("claude-sonnet-4-5[1m]", DEFAULT_PRICES) == 1_000_000
    assert context_window("claude-sonnet-4-5", DEFAULT_PRICES) == 200_000
    assert context_window("claude-opus-5-5", DEFAULT_PRICES) == 1_000_000
    assert context_window("unknown-model", DEFAULT_PRICES) == 200_000
    account = MeterAccount()
    assert account.meters.context_percent(DEFAULT_PRICES) is None
    account.add(usage_of_record(_line("a", _usage(1000, 5, 9000, 40_000), model="claude-haiku-4-5")) or pytest.fail())
    assert account.meters.context_percent(DEFAULT_PRICES) == pytest.approx(25.0)


def test_fleet_totals_sum_by_model() -> None:
    one, two = MeterAccount(), MeterAccount()
    one.add(usage_of_record(_line("a", _usage(1, 2))) or pytest.fail())
    two.add(usage_of_record(_line("a", _usage(3, 4))) or pytest.fail())  # another agent's id space
    two.add(usage_of_record(_line("b", _usage(5, 6), model="claude-haiku-4-5")) or pytest.fail())
    total = sum_meters([one.meters, two.meters])
    assert total.responses == 3 and total.tokens == Tokens(input=9, output=12)
    assert dict(total.by_model)["claude-opus-5-5"] == Tokens(input=4, output=6)


def test_parse_prices_fills_cache_rates_and_refuses_nonsense() -> None:
    prices = parse_prices({"my-model": {"input": 2, "output": 8}, "claude-opus-5-5": {"input": 1, "output": 2, "cache_read": 0.5}})
    assert prices["my-model"] == ModelPrice(2, 8, 2.5, 0.2, None, 200_000)
    assert prices["claude-opus-5-5"].cache_read == 0.5 and prices["claude-opus-5-5"].context == 1_000_000
    for bad in ({"m": {"input": 1}}, {"m": {"input": "x", "output": 1}}, {"m": {"input": 1, "output": 1, "colour": 3}},
                {"m": {"input": 1, "output": 1, "context": 0}}, {"m": 3}, [1]):
        with pytest.raises(ValueError):
            parse_prices(bad)


# -- the transcript read for meters ------------------------------------------------------------


def _append(path: Path, *records: dict[str, Any]) -> None:
    with path.open("ab") as handle:
        for record in records:
            handle.write(json.dumps(record).encode() + b"\n")


def test_the_transcript_reader_counts_forward_without_rereading(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _append(path, {"type": "user", "message": {"role": "user", "content": "go"}},
            _line("m1", _usage(10, 2), "text"), _line("m1", _usage(10, 2), "tool_use"))
    tail = TranscriptTail(path)
    assert tail.read()
    assert tail.facts.meters.tokens == Tokens(input=10, output=2) and tail.facts.meters.responses == 1
    _append(path, _line("m1", _usage(10, 2), "tool_use"), _line("m2", _usage(20, 4)))
    assert tail.read()
    assert tail.facts.meters.tokens == Tokens(input=30, output=6)
    assert not tail.read()
    path.write_bytes(b"")  # truncated: the meters start again with the file
    _append(path, _line("m9", _usage(1, 1)))
    tail.read()
    assert tail.facts.meters.tokens == Tokens(input=1, output=1)


def test_a_long_transcript_is_counted_whole_though_states_come_from_its_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # START_TAIL skips the beginning of a long transcript for states; the meters read that
    # beginning too, MAX_READ bytes per call, so the first cycle stays short.
    monkeypatch.setattr(transcript_module, "START_TAIL", 2000)
    monkeypatch.setattr(transcript_module, "MAX_READ", 1500)
    path = tmp_path / "long.jsonl"
    filler = {"type": "user", "message": {"role": "user", "content": "x" * 300}}
    for n in range(40):
        _append(path, _line(f"m{n}", _usage(1, 1), "text"), filler, _line(f"m{n}", _usage(1, 1), "tool_use"))
    tail = TranscriptTail(path)
    tail.read()
    first = tail.facts.meters.responses
    assert first < 40  # the first read did not parse the whole file
    for _ in range(100):
        if tail.facts.meters.responses == 40:
            break
        tail.read()
    assert tail.facts.meters.tokens == Tokens(input=40, output=40) and tail.facts.meters.responses == 40
    _append(path, _line("late", _usage(5, 5)))
    tail.read()
    assert tail.facts.meters.tokens == Tokens(input=45, output=45)
