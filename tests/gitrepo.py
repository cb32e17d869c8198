"""A real git repository with an agent's worktree on a branch of its own, for the review tests."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

IDENTITY = {
    "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.invalid",
}  # fmt: skip


def run_git(folder: Path, *args: str) -> str:
    """git as the tests run it (the identity fixed), its output."""
    import os

    done = subprocess.run(
        ["git", "-C", str(folder), *args], capture_output=True, text=True, check=True, env={**os.environ, **IDENTITY}
    )
    return done.stdout.strip()


@dataclass(frozen=True)
class AgentRepo:
    main: Path
    """The repository's main checkout, on ``main``."""
    worktree: Path
    """The agent's worktree, on ``agent``."""

    def commit(self, where: Path, files: dict[str, str], message: str) -> str:
        for name, text in files.items():
            (where / name).parent.mkdir(parents=True, exist_ok=True)
            (where / name).write_text(text)
        run_git(where, "add", "--all")
        run_git(where, "commit", "--quiet", "-m", message)
        return run_git(where, "rev-parse", "HEAD")


def agent_repo(tmp_path: Path) -> AgentRepo:
    """``main`` with two files, and a linked worktree on branch ``agent`` from it."""
    main = tmp_path / "project"
    main.mkdir()
    run_git(main, "init", "--quiet", "--initial-branch=main")
    repo = AgentRepo(main, tmp_path / "agent-wt")
    repo.commit(main, {"app.py": "".join(f"line {n}\n" for n in range(1, 21)), "README.md": "readme\n"}, "start")
    run_git(main, "worktree", "add", "--quiet", "-b", "agent", str(repo.worktree))
    return repo


MIRROR_PY = '''"""The screen mirror: rows of a pane, painted."""

from __future__ import annotations


class Mirror:
    def __init__(self, width: int, height: int) -> None:
        self.width = width
        self.height = height
        self.rows: list[str] = [""] * height

    def paint(self, row: int, text: str) -> None:
        self.rows[row] = text[: self.width]

    def clear(self) -> None:
        for row in range(self.height):
            self.rows[row] = ""

    def resize(self, width: int, height: int) -> None:
        self.width = width
        self.height = height
        self.rows = self.rows[:height] + [""] * (height - len(self.rows))

    def text(self) -> str:
        return "\\n".join(self.rows)
'''


def reviewed_repo(tmp_path: Path) -> AgentRepo:
    """The agent's worktree the review snapshots show: one file edited in two hunks and
    committed, one changed and not committed, one new file not yet added."""
    repo = agent_repo(tmp_path)
    repo.commit(repo.main, {"mirror.py": MIRROR_PY, "NOTES.md": "# Notes\n\nThe mirror paints rows.\n"}, "the mirror")
    run_git(repo.worktree, "merge", "--quiet", "--ff-only", "main")
    edited = MIRROR_PY.replace(
        "        self.rows: list[str] = [\"\"] * height\n",
        "        self.rows: list[str] = [\"\"] * height\n        self.dirty: set[int] = set()\n",
    ).replace(
        "        self.rows[row] = text[: self.width]\n",
        "        if self.rows[row] != text[: self.width]:\n            self.rows[row] = text[: self.width]\n            self.dirty.add(row)\n",
    ).replace(
        "        for row in range(self.height):\n            self.rows[row] = \"\"\n",
        "        self.rows = [\"\"] * self.height\n        self.dirty = set(range(self.height))\n",
    )
    repo.commit(repo.worktree, {"mirror.py": edited}, "paint only the rows that changed")
    (repo.worktree / "NOTES.md").write_text("# Notes\n\nThe mirror paints only the rows that changed.\n")
    (repo.worktree / "test_mirror.py").write_text(
        "from mirror import Mirror\n\n\ndef test_paint_marks_the_row() -> None:\n    m = Mirror(10, 3)\n"
        "    m.paint(1, 'x')\n    assert m.dirty == {1}\n"
    )
    return repo
