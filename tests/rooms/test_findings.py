"""Reading the reviewer's findings, masking run-to-run noise, and round fingerprints: the parts
the content detectors compare (DESIGN §4)."""

from __future__ import annotations

import pytest

from rooms.judge.detectors import findings, fingerprint
from rooms.judge.findings import finding_id, finding_ids, similarity
from rooms.judge.noise import normalize


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("CHANGES_REQUESTED\n- a\n- b", ["a", "b"]),
        ("CHANGES_REQUESTED\n1. first\n2) second\n(3) third", ["first", "second", "third"]),
        ("CHANGES_REQUESTED\n* one\n  continued here\n* two", ["one continued here", "two"]),
        # open findings only (DESIGN §3): checked boxes, resolved items, quotes are not
        ("CHANGES_REQUESTED\n- [ ] open item\n- [x] done item", ["open item"]),
        ("CHANGES_REQUESTED\n- F1 ✅ fixed\n- F2: still broken", ["F2: still broken"]),
        ("CHANGES_REQUESTED\n- ~~F1 the old bug~~\n- F2 x", ["F2 x"]),
        ("CHANGES_REQUESTED\n- F1 (resolved) parser\n- F2 cli", ["F2 cli"]),
        (
            "CHANGES_REQUESTED\n## Still open\n- F2 cli exits 0\n## Resolved\n- F1 parser\n"
            "- F3 docs\nOpen:\n- F4 the cache",
            ["F2 cli exits 0", "F4 the cache"],
        ),
        ("CHANGES_REQUESTED\n**Fixed:**\n- F1 parser\n**Open:**\n- F2 cli", ["F2 cli"]),
        ("APPROVED\n- [x] F1\n- [x] F2", []),
        (
            "CHANGES_REQUESTED\nF1 (still open): the parser drops lines\nF2: the cli exits 0",
            ["F1 (still open): the parser drops lines", "F2: the cli exits 0"],
        ),
        ("CHANGES_REQUESTED\n> - F9 what the owner wrote\n- F1 mine", ["F1 mine"]),
        (
            "CHANGES_REQUESTED\n\nThanks, the parser fix works.\n\nThe CLI still exits 0.",
            ["The CLI still exits 0."],
        ),
        ("CHANGES_REQUESTED\n- F1 x\n```\nFAILED test_a - F2 AssertionError\n```", ["F1 x"]),
        (
            "CHANGES_REQUESTED — the parser is wrong\n\nIt drops lines.\nAlways.",
            ["the parser is wrong", "It drops lines. Always."],
        ),
        ("## Findings\n\n- a\n\n```\n- not a finding, code\n```", ["a"]),
        ("CHANGES_REQUESTED\n<internal>- private</internal>\n- public", ["public"]),
        (
            "plain prose with no marker\n\nsecond paragraph",
            ["plain prose with no marker", "second paragraph"],
        ),
        ("CHANGES_REQUESTED", []),
        ("", []),
    ],
)
def test_findings_are_list_items_else_paragraphs(text: str, expected: list[str]) -> None:
    assert findings(text) == expected


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("done at 2024-05-01T10:11:12Z", "done at 2025-01-09T00:00:01+02:00"),
        ("wrote /tmp/pytest-of-root/pytest-3/test_a0/out.txt", "wrote /tmp/tmpab12cd/out.txt"),
        ("took 1.23s", "took 870ms"),
        (
            "session 123e4567-e89b-12d3-a456-426614174000",
            "session 00000000-0000-0000-0000-000000000000",
        ),
        ("commit a1b2c3d4e5", "commit 99ff00aa11"),
        ("listening on port 54321, pid 8812", "listening on port 40001, pid 40177"),
        ("tool toolu_01ABCdef234GHIjkl", "tool toolu_09ZZZyyy999XXXwww"),
        ("\x1b[31mFAILED\x1b[0m  test_x", "failed test_x"),
    ],
)
def test_noise_is_masked(a: str, b: str) -> None:
    assert normalize(a) == normalize(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("3 failed, 10 passed", "1 failed, 12 passed"),  # progress shows in small numbers
        ("the facade is wrong", "the decade is wrong"),  # words made of hex letters survive
        ("parser.py line 12", "parser.py line 40"),
    ],
)
def test_signal_is_kept(a: str, b: str) -> None:
    assert normalize(a) != normalize(b)


def test_fingerprint_covers_every_part_of_a_round() -> None:
    base = fingerprint(
        "DONE\nx", "CHANGES_REQUESTED\n- a\n- b", ["DONE", "CHANGES_REQUESTED"], "t1"
    )
    assert base == fingerprint(
        "DONE\nx", "CHANGES_REQUESTED\n- b\n- a", ["DONE", "CHANGES_REQUESTED"], "t1"
    )
    assert base != fingerprint(
        "DONE\ny", "CHANGES_REQUESTED\n- a\n- b", ["DONE", "CHANGES_REQUESTED"], "t1"
    )
    assert base != fingerprint(
        "DONE\nx", "CHANGES_REQUESTED\n- a\n- c", ["DONE", "CHANGES_REQUESTED"], "t1"
    )
    assert base != fingerprint("DONE\nx", "CHANGES_REQUESTED\n- a\n- b", ["DONE", "BLOCKED"], "t1")
    assert base != fingerprint(
        "DONE\nx", "CHANGES_REQUESTED\n- a\n- b", ["DONE", "CHANGES_REQUESTED"], "t2"
    )
    assert len(base) == 64 and int(base, 16) >= 0


def test_fingerprint_memo_gives_what_computing_gives_and_stays_bounded() -> None:
    from rooms.judge import fingerprint as fp

    round_ = ("DONE\nx", "CHANGES_REQUESTED\n- a\n- b", ["DONE", "CHANGES_REQUESTED"], "t1")
    first = fp.fingerprint(*round_)
    assert fp.fingerprint(*round_) == first == fp._fingerprint(*round_)  # a hit, then computed
    # The same characters split otherwise between the owner and the reviewer are another round.
    assert fp.fingerprint("DONE\nab", "c") == fp._fingerprint("DONE\nab", "c", [], None)
    assert fp.fingerprint("DONE\na", "bc") == fp._fingerprint("DONE\na", "bc", [], None)
    for i in range(fp._MEMO_SIZE + 10):
        fp.fingerprint(f"DONE\nround {i}", "CHANGES_REQUESTED\n- a")
    assert len(fp._memo) == fp._MEMO_SIZE
    assert fp.fingerprint(*round_) == first  # evicted, computed again


def test_similarity_ignores_order_and_scores_unrelated_lists_low() -> None:
    assert similarity(["a b c", "d e f"], ["d e f", "a b c"]) == 1.0
    assert (
        similarity(
            ["parser.py drops the last line when the input lacks a trailing newline"],
            ["the CLI exits 0 when the config file is missing; it must exit 2"],
        )
        < 0.5
    )
    assert similarity([], []) == 1.0


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ("F1: x", "F1"),
        ("**F12** (still open) y", "F12"),
        ("[F3] z", "F3"),
        ("F1x is a typo", None),
        ("the F1 key", None),
        ("f1 lower case", None),
    ],
)
def test_finding_ids(item: str, expected: str | None) -> None:
    assert finding_id(item) == expected


def test_finding_ids_of_a_list_need_every_finding_numbered() -> None:
    assert finding_ids(["F1 a", "F2: b"]) == frozenset({"F1", "F2"})
    assert finding_ids(["F1 a", "unnumbered"]) is None
    assert finding_ids([]) is None
