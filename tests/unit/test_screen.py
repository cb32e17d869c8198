"""PaneScreen: the pyte model a pane is mirrored into (no tmux needed)."""

from __future__ import annotations

import threading

import pytest

from nbs_tui.core.screen.pane_screen import Cell, PaneScreen

ESC = b"\x1b"


def screen(data: bytes = b"", width: int = 20, height: int = 5) -> PaneScreen:
    s = PaneScreen(width, height)
    s.feed(data)
    return s


def test_plain_text_rows_are_stripped_and_sized() -> None:
    s = screen(b"hello   \r\nworld")
    assert s.text_lines() == ["hello", "world", "", "", ""]
    assert (s.width, s.height) == (20, 5)
    assert all(len(s.row_cells(y)) == 20 for y in range(5))
    assert (s.cursor_x, s.cursor_y, s.cursor_visible) == (5, 1, True)
    assert isinstance(s.lock, type(threading.RLock()))


def test_long_line_wraps_and_bottom_scrolls() -> None:
    s = screen(b"a" * 25 + b"\r\n1\r\n2\r\n3\r\n4", width=20, height=5)
    assert s.text_lines() == ["a" * 5, "1", "2", "3", "4"]


@pytest.mark.parametrize(
    ("sgr", "field", "value"),
    [
        (b"1", "bold", True),
        (b"2", "dim", True),
        (b"3", "italics", True),
        (b"4", "underscore", True),
        (b"4:3", "underscore", True),
        (b"5", "blink", True),
        (b"7", "reverse", True),
        (b"9", "strikethrough", True),
        (b"31", "fg", "red"),
        (b"33", "fg", "brown"),
        (b"44", "bg", "blue"),
        (b"91", "fg", "brightred"),
        (b"105", "bg", "brightmagenta"),
        (b"38;5;1", "fg", "red"),
        (b"38;5;9", "fg", "brightred"),
        (b"38;5;196", "fg", "ff0000"),
        (b"48;5;244", "bg", "808080"),
        (b"38;2;1;2;3", "fg", "010203"),
        (b"48;2;250;128;7", "bg", "fa8007"),
        (b"38:2::1:2:3", "fg", "010203"),
        (b"38:5:196", "fg", "ff0000"),
    ],
)
def test_every_sgr_attribute(sgr: bytes, field: str, value: object) -> None:
    s = screen(ESC + b"[" + sgr + b"mX" + ESC + b"[0mY")
    x, y = s.row_cells(0)[0], s.row_cells(0)[1]
    assert getattr(x, field) == value
    assert y == Cell("Y")


def test_sgr_22_ends_bold_and_dim_and_combined_codes() -> None:
    s = screen(ESC + b"[1;2;3;4;7;9;38;5;208;48;2;0;0;255mA" + ESC + b"[22mB" + ESC + b"[23;24;27;29;39;49mC")
    a, b, c = s.row_cells(0)[:3]
    assert a == Cell("A", "ff8700", "0000ff", True, True, True, True, True, False, True)
    assert (b.bold, b.dim, b.italics) == (False, False, True)
    assert c == Cell("C")


def test_private_csi_and_strings_are_not_drawn_or_taken_as_sgr() -> None:
    s = screen(
        ESC + b"[>4;2m" + b"a" + ESC + b"[<u" + b"b" + ESC + b"[!p" + b"c"
        + ESC + b"]0;title" + b"\x07" + b"d" + ESC + b"P1$r" + ESC + b"\\" + b"e"
        + ESC + b"_apc" + ESC + b"\\" + b"f" + b"\x01\x02" + b"g" + ESC + b"[2 q" + b"h"
    )
    assert s.text_lines()[0] == "abcdefgh"
    assert all(c == Cell(c.data) for c in s.row_cells(0))


def test_wide_characters_have_an_empty_stub_cell() -> None:
    s = screen("中文 😀x".encode())
    cells = s.row_cells(0)
    assert [c.data for c in cells[:8]] == ["中", "", "文", "", " ", "😀", "", "x"]
    assert s.text_lines()[0] == "中文 😀x"
    assert s.cursor_x == 8


def test_wide_character_at_the_last_column_wraps_first() -> None:
    s = screen("abcd中".encode(), width=5, height=3)
    assert s.text_lines() == ["abcd", "中", ""]


def test_overwriting_half_a_wide_character_blanks_the_other_half() -> None:
    s = screen("中文".encode() + b"\r" + ESC + b"[1Cx")
    assert [c.data for c in s.row_cells(0)[:4]] == [" ", "x", "文", ""]


def test_utf8_split_across_feeds() -> None:
    s = PaneScreen(10, 2)
    data = "é中".encode()
    for i in range(len(data)):
        s.feed(data[i : i + 1])
    assert s.text_lines()[0] == "é中"


def test_zero_width_joiner_and_variation_selector_stay_with_their_character() -> None:
    s = screen("✔\ufe0fz".encode())
    assert s.row_cells(0)[0].data == "✔\ufe0f"
    assert s.row_cells(0)[1].data == "z"


def test_alternate_screen_1049_saves_and_restores_screen_and_cursor() -> None:
    s = screen(b"main text\r\nline2")
    s.feed(ESC + b"[?1049h")
    assert s.alternate
    assert s.text_lines() == [""] * 5
    s.feed(ESC + b"[3;3Halt" + ESC + b"[?25l")
    assert s.text_lines()[2] == "  alt"
    assert not s.cursor_visible
    s.feed(ESC + b"[?1049l" + ESC + b"[?25h")
    assert not s.alternate
    assert s.text_lines()[:2] == ["main text", "line2"]
    assert (s.cursor_x, s.cursor_y) == (5, 1)


@pytest.mark.parametrize("mode", [b"47", b"1047"])
def test_alternate_screen_47_and_1047_keep_the_cursor(mode: bytes) -> None:
    s = screen(b"main")
    s.feed(ESC + b"[?" + mode + b"h" + ESC + b"[4;4Hx")
    assert s.alternate and s.text_lines()[0] == ""
    s.feed(ESC + b"[?" + mode + b"l")
    assert not s.alternate and s.text_lines()[0] == "main"
    assert (s.cursor_x, s.cursor_y) == (4, 3)


def test_erase_takes_only_the_background_colour() -> None:
    s = screen(ESC + b"[4;7;44m" + ESC + b"[2J" + ESC + b"[0m")
    assert s.row_cells(3)[7] == Cell(" ", bg="blue")
    s.feed(ESC + b"[H" + ESC + b"[41mab" + ESC + b"[K" + ESC + b"[m")
    assert s.row_cells(0)[0] == Cell("a", bg="red")
    assert s.row_cells(0)[19] == Cell(" ", bg="red")


def test_row_versions_bump_only_for_changed_rows() -> None:
    s = screen(b"a\r\nb\r\nc")
    before = [s.row_version(y) for y in range(5)]
    version = s.version
    s.feed(ESC + b"[2;1Hx")
    after = [s.row_version(y) for y in range(5)]
    assert after[1] > before[1]
    assert after[0] == before[0] and after[2:] == before[2:]
    assert s.version > version
    moved = s.version
    s.feed(ESC + b"[5;5H")  # cursor only
    assert s.version > moved
    assert [s.row_version(y) for y in range(5)] == after


def test_a_scroll_carries_each_row_version_with_its_row() -> None:
    s = screen(b"a\r\nb\r\nc\r\nd\r\ne")
    before = [s.row_version(y) for y in range(5)]
    s.feed(b"!\r\nf")  # row 4 written, then the screen scrolls up one, then the new row written
    after = [s.row_version(y) for y in range(5)]
    assert s.text_lines() == ["b", "c", "d", "e!", "f"]
    assert after[:3] == before[1:4], "rows that only moved keep their versions"
    assert after[3] not in before and after[4] not in before and after[3] != after[4]
    s.feed(ESC + b"[1;1H" + ESC + b"M")  # reverse index at the top: the screen scrolls down
    assert [s.row_version(y) for y in range(1, 5)] == after[:4]
    assert s.row_version(0) not in after and s.text_lines()[0] == ""


def test_a_scroll_region_moves_only_its_own_row_versions() -> None:
    s = screen(b"top\r\n1\r\n2\r\n3\r\nbottom")
    before = [s.row_version(y) for y in range(5)]
    s.feed(ESC + b"[2;4r" + ESC + b"[4;1H\nnew")
    after = [s.row_version(y) for y in range(5)]
    assert s.text_lines() == ["top", "2", "3", "new", "bottom"]
    assert after[0] == before[0] and after[4] == before[4]
    assert after[1:3] == before[2:4] and after[3] not in before


def test_equal_row_versions_always_mean_equal_rows() -> None:
    """Whatever a pane prints (scrolls up and down, regions, erases, inserted and deleted
    lines, the alternate screen, resizes), two rows with one version hold the same cells, and
    a row whose cells changed has a new version."""
    import random

    rng = random.Random(1234)
    pieces = [
        b"\r\n", b"\n", b"word ", b"\x1b[31mred\x1b[0m", ESC + b"M", ESC + b"D", ESC + b"[2;5r",
        ESC + b"[r", ESC + b"[3;1H", ESC + b"[6;1H", ESC + b"[1;1H", ESC + b"[2K", ESC + b"[J",
        ESC + b"[2L", ESC + b"[M", ESC + b"[S", ESC + b"[T", ESC + b"[?1049h", ESC + b"[?1049l",
        ESC + b"[3P", ESC + b"[2@", b"\x1b[44m\x1b[K\x1b[0m", "é漢".encode(),
    ]
    s = PaneScreen(12, 6)
    rows = [tuple(s.row_cells(y)) for y in range(6)]
    versions = [s.row_version(y) for y in range(6)]
    for step in range(3000):
        if step % 500 == 499:
            s.resize(12, rng.choice((5, 6, 7)))
        s.feed(b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 6))))
        height = s.height
        now = [tuple(s.row_cells(y)) for y in range(height)]
        now_versions = [s.row_version(y) for y in range(height)]
        by_version: dict[int, tuple[Cell, ...]] = {}
        for y in range(height):
            seen = by_version.setdefault(now_versions[y], now[y])
            assert seen == now[y], f"step {step}: rows with version {now_versions[y]} differ"
            if y < len(rows) and now[y] != rows[y]:
                assert now_versions[y] != versions[y], f"step {step}: row {y} changed, version did not"
        rows, versions = now, now_versions


def test_seed_paints_a_capture_and_places_the_cursor() -> None:
    capture = b"\x1b[31mred\x1b[39m plain\n\n\x1b[1mbold\x1b[0m\n\n\n"
    s = PaneScreen(20, 5)
    s.feed(b"old content")
    s.seed(capture, 4, 2, cursor_visible=False)
    assert s.text_lines() == ["red plain", "", "bold", "", ""]
    assert s.row_cells(0)[0].fg == "red" and s.row_cells(0)[4].fg == "default"
    assert s.row_cells(2)[0].bold
    assert (s.cursor_x, s.cursor_y, s.cursor_visible) == (4, 2, False)
    s.feed(b"X")
    assert s.row_cells(2)[4] == Cell("X")  # attributes do not leak out of the capture


def test_seed_of_an_alternate_screen_restores_the_main_capture_on_exit() -> None:
    s = PaneScreen(20, 3)
    s.seed(b"full screen app\n\n\n", 0, 0, alternate=True, main_capture=b"$ shell\n\n\n")
    assert s.alternate and s.text_lines()[0] == "full screen app"
    s.feed(ESC + b"[?1049l")
    assert s.text_lines()[0] == "$ shell"


def test_seed_with_full_width_rows_does_not_wrap() -> None:
    s = PaneScreen(4, 2)
    s.seed(b"abcd\nefgh\n", 0, 1)
    assert s.text_lines() == ["abcd", "efgh"]


def test_resize_keeps_content_and_sizes_rows() -> None:
    s = screen(b"hello\r\nworld")
    s.resize(8, 3)
    assert (s.width, s.height) == (8, 3)
    assert s.text_lines() == ["hello", "world", ""]
    assert len(s.row_cells(0)) == 8
    s.resize(30, 6)
    assert len(s.row_cells(5)) == 30 and s.row_version(5) > 0


def test_scroll_region_scrolls_only_inside() -> None:
    s = screen(b"top\r\n1\r\n2\r\n3\r\nbottom")
    s.feed(ESC + b"[2;4r" + ESC + b"[4;1H\nnew")
    assert s.text_lines() == ["top", "2", "3", "new", "bottom"]


def test_feed_is_thread_safe_with_readers() -> None:
    s = PaneScreen(40, 10)
    stop = threading.Event()
    errors: list[BaseException] = []

    def read() -> None:
        while not stop.is_set():
            try:
                with s.lock:
                    width = s.width
                    rows = [s.row_cells(y) for y in range(s.height)]
                assert all(len(r) == width for r in rows)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)
                return

    reader = threading.Thread(target=read)
    reader.start()
    for i in range(300):
        s.feed(f"\x1b[3{i % 8}mline {i}\r\n".encode())
        if i % 100 == 0:
            s.resize(40 + i // 100, 10)
    stop.set()
    reader.join()
    assert not errors


SAMPLE = (
    b"\x1b[?1049h\x1b[H\x1b[2J\x1b[1;38;2;215;119;87m\xe2\x9c\xbb Pondering\xe2\x80\xa6\x1b[0m "
    b"\x1b[2m(esc to interrupt)\x1b[22m\r\n\x1b[38:5:244m\xe2\x94\x80\xe2\x94\x80\x1b[39m\r\n"
    b"> \x1b[7m \x1b[27m\x1b[K\r\n\x1b[3;5H\xe4\xb8\xad\xe6\x96\x87\x1b[1K\x1b[4:3mcurly\x1b[24m"
    b"\x1b]0;title\x07\x1bP+q\x1b\\\x1b[>4;2m\x1b[?25l\x1b[10;1H\x1b[44mbg\x1b[0J\x1b[m"
    b"\x1b[?1049l\x1b[2;3r\x1b[3;1H\n\nscrolled\x1b[r\x1b[?25h"
)


def test_any_chunking_gives_the_same_screen() -> None:
    whole = PaneScreen(30, 12)
    whole.feed(SAMPLE)
    for size in (1, 2, 3, 7, 64):
        split = PaneScreen(30, 12)
        for i in range(0, len(SAMPLE), size):
            split.feed(SAMPLE[i : i + size])
        assert [split.row_cells(y) for y in range(12)] == [whole.row_cells(y) for y in range(12)], size
        assert (split.cursor_x, split.cursor_y, split.cursor_visible, split.alternate) == (
            whole.cursor_x, whole.cursor_y, whole.cursor_visible, whole.alternate,
        )


def test_random_bytes_never_break_the_screen() -> None:
    import random

    rng = random.Random(1234)
    alphabet = b"\x1b[]?;:0123456789mHJKhlrP\\\x07\r\n\x08\t abc\xe4\xb8\xad\xf0\x9f\x98\x80"
    s = PaneScreen(20, 6)
    for _ in range(300):
        s.feed(bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 40))))
        assert all(len(s.row_cells(y)) == 20 for y in range(6))
        assert 0 <= s.cursor_x < 20 and 0 <= s.cursor_y < 6
    assert s.errors == 0


def test_erase_display_3_clears_only_history_like_tmux() -> None:
    s = screen(b"keep me" + ESC + b"[3J")
    assert s.text_lines()[0] == "keep me"
    s.feed(ESC + b"[2J")
    assert s.text_lines()[0] == ""


def test_scroll_up_and_down_keep_the_cursor() -> None:
    s = screen(b"1\r\n2\r\n3\r\n4\r\n5" + ESC + b"[2;2H" + ESC + b"[2S")
    assert s.text_lines() == ["3", "4", "5", "", ""]
    assert (s.cursor_x, s.cursor_y) == (1, 1)
    s.feed(ESC + b"[1T")
    assert s.text_lines() == ["", "3", "4", "5", ""]


def test_repeat_and_cursor_save_restore() -> None:
    s = screen(b"ab" + ESC + b"[3b" + ESC + b"[s" + ESC + b"[4;4Hx" + ESC + b"[uc")
    assert s.text_lines()[0] == "abbbbc"


def test_inserted_and_deleted_lines_and_characters_take_the_background() -> None:
    s = screen(b"one\r\ntwo\r\nthree" + ESC + b"[1;1H" + ESC + b"[44m" + ESC + b"[1L" + ESC + b"[m")
    assert s.text_lines()[:4] == ["", "one", "two", "three"]
    assert s.row_cells(0)[5].bg == "blue"
    s.feed(ESC + b"[2;1H" + ESC + b"[41m" + ESC + b"[2P" + ESC + b"[m")
    assert s.text_lines()[1] == "e"
    assert s.row_cells(1)[19].bg == "red"
    s.feed(ESC + b"[3;1H" + ESC + b"[42m" + ESC + b"[2@" + ESC + b"[m")
    assert s.text_lines()[2] == "  two"
    assert s.row_cells(2)[0].bg == "green" and s.row_cells(2)[2].bg == "default"


def test_shrinking_drops_blank_rows_below_the_cursor_first() -> None:
    s = screen(b"a\r\nb\r\nc", height=6)
    s.resize(20, 3)
    assert s.text_lines() == ["a", "b", "c"] and s.cursor_y == 2
    s.resize(20, 2)
    assert s.text_lines() == ["b", "c"] and s.cursor_y == 1
