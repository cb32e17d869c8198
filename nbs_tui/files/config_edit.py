"""One setting written back to the user's config file, as a line-level edit.

``save_setting`` sets one top-level key (the theme chosen in the command palette) so the
user's comments, order and other settings survive. Here, not in `nbs_tui.config`, so that
config stays below the ports: it reads settings, this writes the file (atomically).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nbs_tui.config import ConfigError
from nbs_tui.files.atomic import write_atomic

TomlScalar = str | bool | int | float

_KEY_LINE = re.compile(r"""^\s*(?P<quote>["']?)(?P<key>[A-Za-z0-9_-]+)(?P=quote)\s*=""")
_TABLE_LINE = re.compile(r"^\s*\[")


def save_setting(path: Path, key: str, value: TomlScalar) -> None:
    """Set one top-level ``key`` in the TOML file at ``path``, keeping every other line as it was.

    The value's own line(s) are replaced (a trailing comment is kept), or a new line is added
    before the first table; the file is created if missing. The result is parsed back and must
    equal the old settings plus this one change, else nothing is written. The write is atomic
    (temporary file, fsync, rename) and goes through a symlink to its target, so a dotfiles
    link stays a link.
    """
    target = path.resolve()
    try:
        text = target.read_bytes().decode("utf-8")  # bytes: keep the file's own line endings
    except FileNotFoundError:
        text = ""
    except OSError as error:
        raise ConfigError(f"config file {path}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"config file {path}: not UTF-8 ({error.reason}); not changing it") from None
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"config file {path}: {error}; not changing it") from None
    new_text = _with_key(text, key, value)
    expected = {k: v for k, v in before.items() if k.replace("-", "_") != key.replace("-", "_")}
    expected[_existing_spelling(before, key)] = value
    try:
        after = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError:
        after = None
    if after != expected:
        raise ConfigError(f"config file {path}: cannot set {key} by editing one line; set it by hand")
    try:
        write_atomic(target, new_text.encode("utf-8"), make_parents=True)
    except OSError as error:
        raise ConfigError(f"config file {target}: cannot write ({error.strerror or error})") from None


def _existing_spelling(data: Mapping[str, Any], key: str) -> str:
    """The key as the file spells it (``plan-policy`` or ``plan_policy``), or ``key`` if absent."""
    for existing in data:
        if existing.replace("-", "_") == key.replace("-", "_"):
            return existing
    return key


def _toml_value(value: TomlScalar) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    escaped = []
    for char in value:
        if char in '"\\':
            escaped.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            escaped.append(f"\\u{ord(char):04x}")
        else:
            escaped.append(char)
    return '"' + "".join(escaped) + '"'


def _with_key(text: str, key: str, value: TomlScalar) -> str:
    lines = text.splitlines(keepends=True)
    wanted = key.replace("-", "_")
    rendered = _toml_value(value)
    index = 0
    while index < len(lines):
        line = lines[index]
        if _TABLE_LINE.match(line):
            break  # top-level keys end at the first table
        match = _KEY_LINE.match(line)
        if match is None:
            index += 1
            continue
        end = _value_end(lines, index)
        if match["key"].replace("-", "_") != wanted:
            index = end  # skip the whole value: a multi-line string may hold "theme = ..." or "["
            continue
        last = lines[end - 1]
        newline = last[len(last.rstrip("\r\n")) :]
        comment = _trailing_comment(lines[index]) if end == index + 1 else ""
        replacement = f"{line[: match.end()]} {rendered}{comment}{newline}"
        return "".join([*lines[:index], replacement, *lines[end:]])
    first_table = index if index < len(lines) else None
    insert_at = len(lines) if first_table is None else first_table
    while first_table is not None and insert_at > 0 and _blank_or_comment(lines[insert_at - 1]):
        insert_at -= 1  # the blank lines and comment that introduce the first table stay with it
    if insert_at > 0 and not lines[insert_at - 1].endswith("\n"):
        lines[insert_at - 1] += "\n"
    return "".join([*lines[:insert_at], f"{key} = {rendered}\n", *lines[insert_at:]])


def _blank_or_comment(line: str) -> bool:
    return not line.strip() or line.lstrip().startswith("#")


def _value_end(lines: Sequence[str], start: int) -> int:
    """One past the last line of the key/value pair starting at ``start`` (arrays and
    multi-line strings span several): the shortest run of lines that parses on its own."""
    for end in range(start + 1, len(lines) + 1):
        try:
            tomllib.loads("".join(lines[start:end]))
        except tomllib.TOMLDecodeError:
            continue
        return end
    return start + 1


def _trailing_comment(line: str) -> str:
    """``  # why`` after a one-line value, found as the first ``#`` whose left part parses alone
    (a ``#`` inside a string does not)."""
    body = line.rstrip("\r\n")
    for position, char in enumerate(body):
        if char != "#":
            continue
        try:
            tomllib.loads(body[:position])
        except tomllib.TOMLDecodeError:
            continue
        left = body[:position]
        return body[len(left.rstrip()) :]
    return ""
