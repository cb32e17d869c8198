"""The answer card's pure part: the card read from a screen, the key a choice is, the re-check."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from nbs_tui.core.detection.answer import (
    AnswerCard,
    Choice,
    card_for,
    choose,
    choose_answer,
    detection_menu_id,
    recheck,
)
from nbs_tui.core.detection.detect import detect_text
from nbs_tui.core.fleet.model import AgentState, Detection

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "claude"


def screen(version: str, name: str) -> Detection:
    text = (CORPUS / version / f"{name}.txt").read_text(encoding="utf-8")
    return detect_text("\n".join(text.split("\n")[2:]))


def card(version: str, name: str) -> AnswerCard:
    made = card_for("%1", 4242, screen(version, name))
    assert made is not None
    return made


@pytest.mark.parametrize("version", ["2.1.100", "2.1.150", "2.1.197", "2.1.265", "2.1.332"])
def test_a_permission_card_reads_the_command_and_answers_by_the_shown_digits(version: str) -> None:
    c = card(version, "permission_bash")
    assert c.state is AgentState.PERMISSION and c.numbered
    assert "ls -la /" in c.prompt and "Do you want to proceed?" in c.prompt
    yes = choose(c, "y")
    assert yes == Choice("1", "1. Yes")
    no = choose(c, "n")
    no_option = next(o for o in c.options if o.label == "No")
    assert isinstance(no, Choice) and no.key == str(no_option.number)  # 2.1.332 numbers it 3 or 4
    assert choose(c, "escape") == Choice("Escape", "Esc (cancel the prompt)")
    assert "no option 9" in str(choose(c, "9"))


def test_a_question_card_has_no_yes_or_no() -> None:
    c = card("2.1.332", "question")
    assert c.state is AgentState.QUESTION and "Which colour" in c.prompt
    assert choose(c, "2") == Choice("2", "2. Blue")
    assert "no 'Yes' option" in str(choose(c, "y"))
    assert "no 'No' option" in str(choose(c, "n"))
    assert "does not answer" in str(choose(c, "x"))


def test_an_unnumbered_dialog_takes_only_esc() -> None:
    c = card("2.1.332", "dialog_trust")
    assert not c.numbered
    assert "no digits" in str(choose(c, "1"))
    assert choose(c, "escape") == Choice("Escape", "Esc (cancel the prompt)")


def test_no_card_where_nothing_waits_on_a_menu() -> None:
    for name in ("idle_empty", "working_streaming", "error_overloaded", "limited_session"):
        assert card_for("%1", 1, screen("2.1.332", name)) is None, name


def test_recheck_passes_the_same_menu_and_names_every_change() -> None:
    c = card("2.1.197", "permission_bash")
    assert recheck(c, screen("2.1.197", "permission_bash")) is None
    assert "is gone" in str(recheck(c, screen("2.1.197", "idle_after_reply")))
    assert "options are not the ones shown" in str(recheck(c, screen("2.1.197", "permission_write")))
    other = replace(c, prompt=c.prompt.replace("ls -la /", "rm -rf /"))
    assert "a different permission prompt" in str(recheck(other, screen("2.1.197", "permission_bash")))


# -- the fleet API's menu id and answers by label (nbs-tui answer) ------------------------------


def test_a_menu_id_is_the_same_for_the_same_menu_and_another_for_another_question_or_option() -> None:
    c = card("2.1.332", "permission_bash")
    assert c.menu_id == card("2.1.332", "permission_bash").menu_id and len(c.menu_id) == 12
    assert detection_menu_id(screen("2.1.332", "permission_bash")) == c.menu_id
    moved = replace(c, options=tuple(replace(o, selected=not o.selected) for o in c.options))
    assert moved.menu_id == c.menu_id  # the mark moved by an arrow key: the same menu
    assert replace(c, prompt=c.prompt.replace("ls -la /", "rm -rf /")).menu_id != c.menu_id
    assert replace(c, options=c.options[:-1]).menu_id != c.menu_id
    assert replace(c, state=AgentState.QUESTION).menu_id != c.menu_id
    others = {card("2.1.332", name).menu_id for name in ("permission_write", "plan_approval", "question")}
    assert c.menu_id not in others and len(others) == 3
    assert detection_menu_id(screen("2.1.332", "idle_empty")) == ""


def test_an_answer_by_label_is_the_whole_label_or_the_one_label_it_begins() -> None:
    c = card("2.1.332", "permission_bash")  # 1. Yes, 2. Yes, and switch to auto mode..., 3. No
    assert choose_answer(c, "Yes") == Choice("1", "1. Yes")  # whole label first, though two begin so
    assert choose_answer(c, "  no ") == Choice("3", "3. No")
    assert choose_answer(c, "yes, and switch") == Choice("2", f"2. {c.options[1].label}")
    assert choose_answer(c, "2") == Choice("2", f"2. {c.options[1].label}")
    assert choose_answer(c, "esc") == Choice("Escape", "Esc (cancel the prompt)")
    assert "no option 'Maybe'" in str(choose_answer(c, "Maybe"))
    assert "no option 7" in str(choose_answer(c, "7"))
    assert "begins 2 options" in str(choose_answer(c, "Ye"))
    assert "empty" in str(choose_answer(c, " "))
    plan = card("2.1.332", "plan_approval")
    assert choose_answer(plan, "Yes, manually approve edits") == Choice("2", "2. Yes, manually approve edits")
