"""Meters on transcripts written by the real Claude Code CLI: the scripted API answers with known
usage numbers and the watcher's totals must equal them exactly, each response counted once
although the CLI writes one transcript line per content block (text, then the tool call)."""

from __future__ import annotations

import json
from pathlib import Path

import libtmux

from nbs_tui.claude.watcher import ClaudeFacts, ClaudeSignals
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.sidecar.meters import DEFAULT_PRICES, Tokens, price_for, usage_tokens
from tests.realclaude.harness import ClaudeFleet, Text, ToolUse, Usage
from tests.realclaude.test_hooks_signals import fleet_panes, until


def test_meters_count_each_response_once_with_the_apis_numbers(
    server: libtmux.Server, claude_fleet: ClaudeFleet, tmp_path: Path
) -> None:
    agent = claude_fleet.start([])
    (agent.workdir / "notes.txt").write_text("hello\n")
    first, second = Usage(1000, 50, 200, 3000), Usage(7, 11, 13, 17)
    agent.api.add(
        ToolUse("Read", {"file_path": str(agent.workdir / "notes.txt")}, text="Reading it.", usage=first),
        Text("Done reading.", usage=second),
    )
    settings = Settings(
        server=ServerAddress(socket_name=server.socket_name),
        hook_spool=tmp_path / "spool.jsonl",
        claude_home=tmp_path / "no-claude-home",  # the agent's own HOME is found through /proc
    )
    signals = ClaudeSignals(settings, None)
    signals.set_panes(fleet_panes(server))
    agent.submit("read notes.txt")
    expected = Tokens(input=1007, output=61, cache_creation=213, cache_read=3017)

    def counted() -> ClaudeFacts | None:
        signals.poll_once()
        facts = signals.facts(agent.pane_id)
        return facts if facts is not None and facts.meters is not None and facts.meters.tokens == expected else None

    facts = until(counted, timeout=60, what=f"the meters to reach {expected}")
    meters = facts.meters
    assert meters is not None and meters.responses == 2
    # the context in use is the last response's prompt
    assert meters.context is not None and meters.context.prompt == 7 + 13 + 17
    model = dict(meters.by_model)
    assert list(model) == [facts.model] and facts.model  # the CLI's main model, named in the transcript
    price = price_for(facts.model, DEFAULT_PRICES)
    assert price is not None, f"no default price for the CLI's model {facts.model}"
    assert meters.cost(DEFAULT_PRICES).usd == price.cost(expected)
    # what a tool summing every line would have said: the first response twice
    assert facts.transcript_path is not None
    lines = [json.loads(raw) for raw in Path(facts.transcript_path).read_text().splitlines() if raw.strip()]
    naive = Tokens()
    for record in lines:
        if record.get("type") == "assistant":
            naive = naive + (usage_tokens(record["message"].get("usage")) or Tokens())
    assert naive.input == 2007 and naive != expected
    # nothing more is counted while the agent sits idle and the watcher reads again
    signals.poll_once()
    later = signals.facts(agent.pane_id)
    assert later is not None and later.meters == meters
