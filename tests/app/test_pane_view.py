"""The mirror's renderer: pyte cells to Segments, with every attribute, wide chars, cursor, crop."""

from __future__ import annotations

from rich.color import Color
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size

from nbs_tui.core.screen.pane_screen import PaneScreen
from nbs_tui.widgets.pane_view import ScreenLines, cell_style, pyte_color


def _segments(screen: PaneScreen, y: int, width: int, size: Size | None = None) -> list[Segment]:
    lines = ScreenLines()
    lines.attach(screen)
    with screen.lock:
        lines.layout(size or Size(width, screen.height))
    return list(lines.strip(y, width))


def _style_at(segments: list[Segment], text: str) -> Style:
    for segment in segments:
        if text in segment.text:
            assert segment.style is not None, f"{text!r} has no style"
            return segment.style
    raise AssertionError(f"{text!r} not in {[s.text for s in segments]}")


def test_pyte_colours_map_to_ansi_256_and_truecolour() -> None:
    assert pyte_color("default") is None
    assert pyte_color("red") == Color.from_ansi(1)
    assert pyte_color("brown") == Color.from_ansi(3)
    assert pyte_color("brightbrown") == Color.from_ansi(11)
    assert pyte_color("bfightmagenta") == Color.from_ansi(13)
    assert pyte_color("ff8700") == Color.from_rgb(0xFF, 0x87, 0x00)


def test_every_sgr_attribute_reaches_the_segment() -> None:
    screen = PaneScreen(60, 3)
    screen.feed(
        b"\x1b[1mB\x1b[0m \x1b[2mD\x1b[0m \x1b[3mI\x1b[0m \x1b[4mU\x1b[0m \x1b[7mR\x1b[0m "
        b"\x1b[9mS\x1b[0m \x1b[38;5;208mO\x1b[0m \x1b[38;2;1;2;3mT\x1b[0m \x1b[44mG\x1b[0m \x1b[5mK\x1b[0m"
    )
    segments = _segments(screen, 0, 60)
    assert _style_at(segments, "B").bold
    assert _style_at(segments, "D").dim
    assert _style_at(segments, "I").italic
    assert _style_at(segments, "U").underline
    assert _style_at(segments, "R").reverse
    assert _style_at(segments, "S").strike
    assert _style_at(segments, "K").blink
    orange = _style_at(segments, "O").color
    assert orange is not None and orange.triplet is not None and orange.triplet.hex == "#ff8700"
    true = _style_at(segments, "T").color
    assert true is not None and true.triplet is not None and tuple(true.triplet) == (1, 2, 3)
    assert _style_at(segments, "G").bgcolor == Color.from_ansi(4)


def test_wide_characters_skip_their_stub_and_keep_the_row_width() -> None:
    screen = PaneScreen(10, 2)
    screen.feed("漢字ab".encode())
    segments = _segments(screen, 0, 10)
    text = "".join(s.text for s in segments)
    assert text.startswith("漢字ab")
    assert sum(s.cell_length for s in segments) == 10


def test_cursor_is_drawn_reversed() -> None:
    screen = PaneScreen(10, 2)
    screen.feed(b"ab")
    segments = _segments(screen, 0, 10)
    cursor = [s for s in segments if s.style is not None and s.style.reverse]
    assert cursor and cursor[0].text == " "


def test_a_wide_pane_is_cropped_with_a_marker_not_wrapped() -> None:
    screen = PaneScreen(40, 4)
    screen.feed(b"0123456789" * 4 + b"\r\nshort")
    lines = ScreenLines()
    lines.attach(screen)
    with screen.lock:
        view = lines.layout(Size(20, 4))
    assert view is not None and view.cropped_right
    first = list(lines.strip(0, 20))
    assert "".join(s.text for s in first).endswith("›")
    assert sum(s.cell_length for s in first) == 20
    second = "".join(s.text for s in lines.strip(1, 20))
    assert second.startswith("short") and "›" not in second
    assert "cropped" in view.describe()


def test_a_tall_pane_shows_the_bottom_of_its_content() -> None:
    screen = PaneScreen(20, 10)
    screen.feed(b"\r\n".join(f"line {i}".encode() for i in range(10)))
    lines = ScreenLines()
    lines.attach(screen)
    with screen.lock:
        view = lines.layout(Size(20, 3))
    assert view is not None and view.top == 7 and view.cropped_rows
    assert "".join(s.text for s in lines.strip(2, 20)).startswith("line 9")


def test_only_changed_rows_are_repainted() -> None:
    screen = PaneScreen(20, 6)
    screen.feed(b"a\r\nb\r\nc")
    lines = ScreenLines()
    lines.attach(screen)
    size = Size(20, 6)
    assert lines.changed(size) is None  # first time: everything
    assert lines.changed(size) == []  # nothing new
    screen.feed(b"\x1b[2;1HB")  # rewrite row 1, cursor moves from row 2 to row 1
    runs = lines.changed(size)
    assert runs == [(1, 2)]


def test_styles_are_cached() -> None:
    assert cell_style("red", "default", True) is cell_style("red", "default", True)


def test_plain_pyte_chars_render_too() -> None:
    from pyte.screens import Char

    from nbs_tui.widgets.pane_view import cells_to_segments

    cells = [Char("a", fg="red", bold=True), Char("b", fg="red", bold=True), Char("c", bg="brightblue"), Char("d")]
    segments, used = cells_to_segments(cells, 10, cursor_x=3)
    assert used == 4
    assert [s.text for s in segments] == ["ab", "c", "d"]
    assert segments[0].style is not None and segments[0].style.bold and segments[0].style.color == Color.from_ansi(1)
    assert segments[1].style is not None and segments[1].style.bgcolor == Color.from_ansi(12)
    assert segments[2].style is not None and segments[2].style.reverse  # the cursor
