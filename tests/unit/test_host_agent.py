"""What the host script printed, read back (`nbs_tui.lifecycle.host.parse_found`)."""

from __future__ import annotations

from nbs_tui.lifecycle.host import RunningClaude, parse_found


def test_the_first_process_whose_status_file_is_its_own_is_taken() -> None:
    out = (
        "PROC\t10\t500\t/h/.claude\t/w\nARGS\tnode\nSTATUS\t{\"sessionId\": \"old\", \"procStart\": \"499\"}\n"
        "PROC\t11\t600\t/h/.claude\t/w/api\nARGS\tclaude\x1f-n\x1fapi\x1f\nSTATUS\t{\"sessionId\": \"s-2\", \"procStart\": \"600\"}\n"
    )
    assert parse_found(out) == RunningClaude(11, "s-2", "/h/.claude", ("claude", "-n", "api"), "/w/api")


def test_nothing_found_garbled_or_without_a_session_id() -> None:
    assert parse_found("") is None
    assert parse_found("PROC\tx\t1\t/c\t/w\nARGS\t\nSTATUS\t{}\n") is None
    assert parse_found("PROC\t12\t1\t/c\t\nARGS\tclaude\nSTATUS\tnot json\n") == RunningClaude(12, None, "/c", ("claude",), None)
