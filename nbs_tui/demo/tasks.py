"""The made-up work the turn scripts talk about: tasks (files, commands, plans, questions),
diff snippets, AskUserQuestion chips, spinner tips, chat names and busy-log words. Data only.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Task:
    title: str
    files: tuple[str, ...]
    command: str
    command_desc: str
    output: tuple[str, ...]
    summary: str
    plan: tuple[str, ...]
    question: str
    answers: tuple[tuple[str, str], ...]


TASKS = (
    Task(
        "Retry flaky fetches",
        ("src/fetch.py", "tests/test_fetch.py", "src/http/backoff.py"),
        "pytest -q tests/test_fetch.py",
        "Run the fetch tests",
        ("....F.", "FAILED tests/test_fetch.py::test_retry_after - assert 1 == 3", "1 failed, 5 passed in 0.42s"),
        "The fetcher now retries 3 times with jittered backoff and honours `Retry-After`; the flaky test passes 50/50 runs.",
        ("Wrap `fetch()` in a retry loop with jittered exponential backoff", "Honour `Retry-After` on 429 and 503",
         "Add tests for the retry budget and the header", "Run the suite 50 times to check the flake is gone"),
        "How many retries should a fetch get before it gives up?",
        (("3 retries", "Matches the upstream client's default"), ("5 retries", "Better for the slow mirror"),
         ("No limit", "Retry until the deadline only")),
    ),
    Task(
        "Parse the control inbox",
        ("nbs/inbox.py", "nbs/registry.py", "tests/test_inbox.py"),
        "python -m pytest tests/test_inbox.py -q",
        "Run the inbox tests",
        ("..........", "10 passed in 0.08s"),
        "The inbox reader keeps its offset across restarts and skips comments and one-word lines.",
        ("Read `.nbs/control-inbox` from the saved line offset", "Skip `#` comments, blanks and one-word lines",
         "Apply `register-chat` / `unregister-chat` to the registry atomically", "Cover replays from line 0"),
        "Where should the inbox offset be stored?",
        (("In the registry file", "One file to keep in sync"), ("Beside the inbox", "`.nbs/control-inbox.offset`"),
         ("In memory only", "Replay from line 0 at every start")),
    ),
    Task(
        "Speed up the screen mirror",
        ("mirror/screen.py", "mirror/diff.py", "bench/bench_mirror.py"),
        "python bench/bench_mirror.py --panes 50",
        "Benchmark the mirror with 50 panes",
        ("panes=50  frames=3000  p50=4.1ms  p99=11.8ms", "cpu=23%  rss=61MB"),
        "Dirty-row repaints cut p99 frame time from 31 ms to 12 ms at 50 panes 🚀",
        ("Track dirty rows in the screen model", "Repaint only dirty rows in the widget",
         "Cache painted strips per row", "Re-run the 50-pane benchmark"),
        "Which frame budget should the mirror aim for?",
        (("16 ms", "60 Hz, smooth scrolling"), ("33 ms", "30 Hz, half the CPU"), ("Adaptive", "Drop to 10 Hz when idle")),
    ),
    Task(
        "Docs: quick start",
        ("README.md", "docs/quickstart.md", "docs/img/fleet.svg"),
        "make docs",
        "Build the documentation",
        ("sphinx-build -b html docs docs/_build", "build succeeded, 2 warnings.", "The HTML pages are in docs/_build."),
        "The quick start now shows `nbs-tui demo` first, links the keys table and has a 日本語 stub.",
        ("Lead the README with `nbs-tui demo`", "Add a screenshot of the fleet view",
         "Document every key binding in one table", "Fix the two Sphinx warnings"),
        "Which screenshot should lead the README?",
        (("Fleet grid", "Six agents at once"), ("Pane view", "One agent, full size"), ("Both", "Side by side")),
    ),
)

DIFFS: dict[str, tuple[tuple[str, str, tuple[str, ...]], ...]] = {
    ".py": (
        ("    def fetch(self, url):", "       return self.session.get(url)",
         ("       for attempt in retries(3):", "           return self.session.get(url)")),
        ("def test_retry_after(server):", "    assert calls == 1",
         ("    server.reply(429, retry_after=0)", "    assert calls == 3")),
    ),
    ".md": (
        ("## Quick start", "Run `nbs-tui` inside tmux.", ("Run `nbs-tui demo` to see a fleet at once.", "")),
        ("| key | action |", "| p | poll |", ("| p | poll now |", "| d | details |")),
    ),
}
"""Edit snippets by file suffix: (context line, removed line, added lines)."""

CHIPS = {
    "Retry flaky fetches": "Retries",
    "Parse the control inbox": "Offset",
    "Speed up the screen mirror": "Frame budget",
    "Docs: quick start": "Screenshot",
}
"""The short header chip AskUserQuestion shows above each task's question."""

TIPS = (
    "Tip: Use /memory to view and manage Claude memory",
    "Tip: Press shift+tab to cycle between permission modes",
    "Tip: Run /init to create a CLAUDE.md file with instructions for Claude",
    "Tip: Use ctrl+o to expand tool results",
)

NEW_CHATS = ("debug", "review", "bench", "release")
BUSY_WORDS = ("compiling", "linking", "testing", "fetching", "indexing", "rendering", "hashing", "packing")
BUSY_WIDE = ("✓ 完了", "⚠ 警告", "▶ 実行中", "構築", "テスト", "🔧")
