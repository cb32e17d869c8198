"""The agent's options and its state: every field the screen, the turn scripts and the turn
engine share, set in one place. ``Agent`` (``agent.py``) is this state plus three layers of
behaviour: ``AgentScreen`` (``agent_screen.py``: transcript and drawing), ``TurnScripts``
(``turns.py``: what a turn does) and the engine (keys, turns, autonomy, the clock).
"""

from __future__ import annotations

import codecs
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nbs_tui.demo.demo_terminal import Row, Terminal
from nbs_tui.demo.side_files import SideChannels
from nbs_tui.demo.steps import Menu, Mode, Turn
from nbs_tui.demo.tasks import TASKS

PERMISSION_MODES = ("default", "accept-edits", "plan", "auto")
"""``--mode`` values, in the order of ``Agent.MODES`` (the footer texts)."""


@dataclass(slots=True)
class Options:
    name: str = "claude"
    script: str = "cycle"
    seed: int | None = None
    busy: bool = False
    rate: float = 10.0
    project: Path = field(default_factory=Path.cwd)
    marker_file: Path | None = None
    marker_fifo: Path | None = None
    prompt_timeout: float | None = None
    legacy_spinner: bool = False
    placeholder: bool = False
    model: str = "Opus 4.8 (1M context) · Claude Max"
    start_delay: float | None = None
    warm: int = 0
    speed: float = 1.0
    mode: str = "default"
    inbox: str = "shared"
    claude_config: Path | None = None
    hook_spool: Path | None = None


class AgentState:
    """The imitation's state: a transcript, an input box, the current turn and menu."""

    MODES = ("", "⏵⏵ accept edits on", "⏸ plan mode on", "⏵⏵ auto mode on")
    """Shift-Tab cycles these; index 2 is plan mode, 3 is what "Yes, and use auto mode" turns on."""

    def __init__(self, options: Options, terminal: Terminal, clock: Callable[[], float] = time.monotonic) -> None:
        self.opt = options
        self.term = terminal
        self.clock = clock
        self.rng = random.Random(options.seed)
        self.task = TASKS[self.rng.randrange(len(TASKS))]
        self.rows: list[Row] = []
        self._phys: list[Row] = []
        self._phys_width = 0
        self._phys_base = 0  # physical rows dropped from the front (transcript trimming)
        self._wrapped_upto = 0
        self.mode = Mode.IDLE
        self.input = ""
        self.cursor = 0
        self.queued: list[str] = []
        self.turn: Turn | None = None
        self.turn_started = 0.0
        self.wait_until = 0.0
        self.verb = "Sautéing"
        self.tokens = 0
        self.menu: Menu | None = None
        self.tip: str | None = None
        self.retry: tuple[int, float] | None = None
        self.perm_mode = 2 if options.script == "plan" else PERMISSION_MODES.index(options.mode)
        self.show_placeholder = options.placeholder
        self.next_auto: float | None = None
        self.running = True
        self.dirty = True
        self.last_ctrl_c = -10.0
        self.notice: str | None = None
        self.marker_seq = 0
        self.busy_emitted = 0
        self.busy_started = 0.0
        self.polls = 0
        self.registered: list[str] = []
        self.fx = random.Random()
        """Randomness that depends on timing (token counts); kept apart so --seed stays exact."""
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._paste: list[str] | None = None
        self.side = SideChannels(options.claude_config, options.hook_spool, options.project, options.name)
        self.pending_tool: tuple[str, dict[str, Any], str] | None = None
        self.last_message = ""
        self.idle_since = 0.0
        self.idle_notified = True
