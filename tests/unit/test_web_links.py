"""One-time links: signed, expiring, redeemed once, refused when tampered with."""

from __future__ import annotations

import pytest

from nbs_tui.core.fleet.web_links import LinkRedeemer, issue_link, new_link_key, read_link

NOW = 1_000_000.0


def test_a_link_opens_its_target_once() -> None:
    key = new_link_key()
    redeemer = LinkRedeemer(key)
    link = issue_link(key, "local:%3", now=NOW, ttl=60)
    assert redeemer.redeem(link, now=NOW + 1) == "local:%3"
    assert redeemer.redeem(link, now=NOW + 2) is None


def test_two_links_to_one_target_each_work_once() -> None:
    key = new_link_key()
    redeemer = LinkRedeemer(key)
    first, second = (issue_link(key, "local:%3", now=NOW) for _ in range(2))
    assert first != second
    assert redeemer.redeem(first, now=NOW) == "local:%3"
    assert redeemer.redeem(second, now=NOW) == "local:%3"


def test_an_expired_link_is_refused() -> None:
    key = new_link_key()
    link = issue_link(key, "local:%3", now=NOW, ttl=60)
    assert LinkRedeemer(key).redeem(link, now=NOW + 59.9) == "local:%3"
    assert LinkRedeemer(key).redeem(link, now=NOW + 60) is None


def test_another_key_or_a_changed_byte_is_refused() -> None:
    key = new_link_key()
    link = issue_link(key, "local:%3", now=NOW)
    assert read_link(new_link_key(), link, now=NOW) is None
    head, _, tail = link.partition(".")
    forged = issue_link(key, "local:%4", now=NOW).partition(".")[0]
    assert read_link(key, f"{forged}.{tail}", now=NOW) is None
    # the first character: all six of its bits are the signature's (the last one's low bits
    # are base64 padding, so 'B' -> 'A' there decoded to the same bytes in 1 run of ~16)
    flipped = ("A" if tail[0] != "A" else "B") + tail[1:]
    assert read_link(key, f"{head}.{flipped}", now=NOW) is None


@pytest.mark.parametrize("junk", ["", ".", "abc", "a.b", "!!!.???", "x" * 5000 + ".y"])
def test_junk_is_refused_without_raising(junk: str) -> None:
    assert LinkRedeemer(new_link_key()).redeem(junk, now=NOW) is None


def test_redeemed_nonces_are_forgotten_after_expiry() -> None:
    key = new_link_key()
    redeemer = LinkRedeemer(key)
    link = issue_link(key, "local:%3", now=NOW, ttl=10)
    assert redeemer.redeem(link, now=NOW) == "local:%3"
    assert len(redeemer._redeemed) == 1
    assert redeemer.redeem(issue_link(key, "local:%5", now=NOW + 20, ttl=10), now=NOW + 20) == "local:%5"
    assert len(redeemer._redeemed) == 1


def test_a_lifetime_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        issue_link(new_link_key(), "local:%3", now=NOW, ttl=0)
