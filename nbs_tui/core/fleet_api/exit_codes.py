"""The fleet API's exit codes, fixed and documented (docs/reference.md): other tools script
against them, so a number here never changes meaning."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    DONE = 0
    REFUSED = 2
    """The agent is not in a state to take it; the reason is printed."""
    NO_SUCH_AGENT = 3
    BAD_INPUT = 4
    TIMEOUT = 124
    """As timeout(1)."""


class FleetApiError(Exception):
    """A command of the fleet API ends with ``code`` and says ``message`` on stderr."""

    def __init__(self, code: ExitCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
