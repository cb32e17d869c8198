"""Every relative link of the README, docs/ and bench/'s guides leads to a file that exists, and a
link to a heading (``file.md#heading``) to a heading that exists: sections move between the README
and docs/, and a link left behind is found here rather than by a reader.

Headings become anchors as GitHub makes them: lower case, punctuation dropped, spaces to hyphens."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:")


def guides() -> list[Path]:
    return [
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        ROOT / "bench" / "README.md",
        *sorted((ROOT / "bench" / "results").glob("*.md")),
    ]


def prose_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, where a ``[x](y)`` is a link."""
    lines, fenced = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append((number, line))
    return lines


def anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {anchor(line.lstrip("#")) for _, line in prose_lines(path) if line.startswith("#")}


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    broken = []
    for number, line in prose_lines(path):
        for target in LINK.findall(line):
            if EXTERNAL.match(target):
                continue
            file_part, _, heading = target.partition("#")
            destination = (path.parent / file_part).resolve() if file_part else path
            where = f"{path.relative_to(root)}:{number}: {target}"
            if not destination.exists():
                broken.append(f"{where} (no such file)")
            elif heading and destination.suffix == ".md" and heading not in anchors(destination):
                broken.append(f"{where} (no such heading)")
    return broken


def test_the_guides_are_found() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in guides()}
    assert {"README.md", "docs/reference.md", "bench/README.md"} <= names


def test_every_relative_link_resolves() -> None:
    broken = [entry for path in guides() for entry in broken_links(path)]
    assert broken == [], "broken links:\n" + "\n".join(broken)


def test_a_broken_link_and_a_missing_heading_are_found(tmp_path: Path) -> None:
    # the checker itself can fail: a page with one link of each kind, beside a page it links to
    (tmp_path / "reference.md").write_text("# Details\n\n## Keys\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "# Here\n\n[ok](reference.md#keys) [ok](#here) [gone](no-such-file.md) [gone](reference.md#no-such)\n"
        "```\n[in a code block](not-a-link.md)\n```\n",
        encoding="utf-8",
    )
    assert broken_links(page, root=tmp_path) == [
        "page.md:3: no-such-file.md (no such file)",
        "page.md:3: reference.md#no-such (no such heading)",
    ]
