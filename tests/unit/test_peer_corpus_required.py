"""The peer-corpus tests cannot pass by reading none of it: where the corpus is missing they skip,
and under CI (``CI=true``) they fail, as the real Claude Code CLI's tests do under
``NBS_REQUIRE_CLAUDE``. Run as a separate pytest, with ``NBS_PEER_CORPUS`` naming no folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PEER_TESTS = [
    "tests/unit/test_detect.py::test_peer_screen_state_is_allowed",
    "tests/unit/test_detect.py::test_peer_corpus_is_fully_covered",
    "tests/unit/test_fuzz_screen_detect.py::test_the_property_tests_start_from_the_peer_corpus_too",
    "tests/unit/test_startup.py::test_peer_trust_dialogs_without_a_whole_folder_are_left_to_the_operator",
]


def run_peer_tests(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    env["NBS_PEER_CORPUS"] = str(tmp_path / "no-such-corpus")
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rfs", "-p", "no:cacheprovider", *PEER_TESTS],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("ci", ["true", "1"])
def test_under_ci_a_missing_peer_corpus_fails_every_peer_test(tmp_path: Path, ci: str) -> None:
    done = run_peer_tests(tmp_path, ci)
    assert done.returncode == 1, done.stdout[-3000:]
    assert "4 errors" in done.stdout and "skipped" not in done.stdout, done.stdout[-3000:]  # at setup
    assert done.stdout.count("CI is set but the peer corpus not found at") == 4, done.stdout[-3000:]


def test_elsewhere_a_missing_peer_corpus_skips_and_says_where_it_looked(tmp_path: Path) -> None:
    done = run_peer_tests(tmp_path, None)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "4 skipped" in done.stdout, done.stdout[-3000:]
    assert str(tmp_path / "no-such-corpus") in done.stdout and "NBS_PEER_CORPUS" in done.stdout
