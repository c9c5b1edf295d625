"""Deadlock detectors (DESIGN §4) driven through `check`, the one entry point the engine calls."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from rooms.base.model import Firing, Thresholds
from rooms.judge.detectors import Step, check, fingerprint, since_reset

T = Thresholds()

# Five rounds of a pair that makes progress: each review raises something new, each owner turn
# changes the workspace. Nothing may fire on these before the round cap.
PROGRESS_FINDINGS = [
    "parser.py drops the last line when the input lacks a trailing newline",
    "the CLI exits 0 when the config file is missing; it must exit 2",
    "README example uses the old flag --verbose instead of --log-level",
    "retry loop in client.py never backs off and hammers the server",
    "docstring of load_settings promises TOML support that is absent",
    "cache eviction ignores the size limit set in settings",
]


def owner(text: str = "DONE\nFixed what was asked.", tree: str | None = None) -> Step:
    marker = "DONE" if text.startswith("DONE") else None
    for word in ("BLOCKED", "NEEDS_CONTEXT"):
        if text.startswith(word):
            marker = word
    return Step(kind="turn", role="owner", text=text, marker=marker, tree=tree)


def reviewer(text: str, tree: str | None = None) -> Step:
    marker = None
    for word in ("APPROVED", "CHANGES_REQUESTED", "BLOCKED", "NEEDS_CONTEXT"):
        if text.startswith(word):
            marker = word
            break
    return Step(kind="turn", role="reviewer", text=text, marker=marker, tree=tree)


def human(text: str = "please keep going") -> Step:
    return Step(kind="human", role="human", text=text, marker=None)


def ruling(verdict: str = "PROCEED") -> Step:
    return Step(kind="ruling", role="arbiter", text=f"{verdict}\nreasons", marker=verdict)


def progressing_round(i: int) -> list[Step]:
    return [
        owner(f"DONE\nAddressed the review: change number {i} in module_{i}.py", tree=f"t{i}"),
        reviewer(f"CHANGES_REQUESTED\n- {PROGRESS_FINDINGS[i]}", tree=f"t{i}"),
    ]


def run(steps: Sequence[Step], t: Thresholds = T) -> list[Firing | None]:
    """`check` after every step, as the engine calls it after every turn."""
    return [
        check(steps[: i + 1], t, turns=i + 1, tokens=0, cost_usd=0.0, started_at=0.0, now=0.0)
        for i in range(len(steps))
    ]


def fired(results: list[Firing | None]) -> list[tuple[int, str]]:
    return [(i, f.detector) for i, f in enumerate(results) if f is not None]


# --- a pair that makes progress ---------------------------------------------------------------


def test_progressing_pair_is_left_alone_for_five_rounds() -> None:
    steps = [s for i in range(5) for s in progressing_round(i)]
    assert fired(run(steps)) == []


def test_round_cap_fires_at_the_sixth_round_without_approval() -> None:
    steps = [s for i in range(6) for s in progressing_round(i)]
    results = run(steps)
    assert fired(results) == [(11, "round_cap")]
    firing = results[11]
    assert firing is not None
    assert "6 rounds without approval" in firing.reason


@pytest.mark.parametrize("reset", [human(), ruling("REVISE")], ids=["human", "ruling"])
def test_a_human_message_or_ruling_restarts_the_round_count(reset: Step) -> None:
    steps = [s for i in range(3) for s in progressing_round(i)]
    steps.append(reset)
    steps += [s for i in range(3, 6) for s in progressing_round(i)]
    assert fired(run(steps)) == []


def test_an_approval_restarts_the_round_count() -> None:
    steps = [s for i in range(4) for s in progressing_round(i)]
    steps += [owner(tree="t9"), reviewer("APPROVED\nlooks right", tree="t9")]
    steps += [owner("DONE\nchanged the error message after approval", tree="t10")]
    steps += [reviewer("CHANGES_REQUESTED\n- the new message has a typo", tree="t10")]
    assert fired(run(steps)) == []


# --- stagnation ------------------------------------------------------------------------------


def stuck_round(n: int) -> list[Step]:
    """The same round each time, with the run-to-run noise a real agent output carries."""
    return [
        owner(
            f"DONE\nRan the tests at 2024-05-0{n}T10:1{n}:00Z in /tmp/pytest-of-root/pytest-{n}/"
            f" in {n}.{n}3s (pid {4000 + n}); commit a1b2c3{n}d. No further change needed."
        ),
        reviewer(f"CHANGES_REQUESTED\n- test_parse_empty still fails (took {n}12ms)"),
    ]


def test_stagnation_fires_when_the_same_round_repeats_twice() -> None:
    steps = [s for n in range(1, 4) for s in stuck_round(n)]
    results = run(steps)
    assert fired(results) == [(5, "stagnation")]
    firing = results[5]
    assert firing is not None and firing.fingerprint is not None
    assert firing.fingerprint == fingerprint(
        steps[4].text, steps[5].text, ["DONE", "CHANGES_REQUESTED"]
    )


def test_stagnation_respects_its_threshold() -> None:
    steps = [s for n in range(1, 5) for s in stuck_round(n)]
    t = Thresholds(stagnation_repeats=3, repeated_findings_rounds=5)
    assert fired(run(steps, t)) == [(7, "stagnation")]


def test_stagnation_does_not_count_rounds_before_a_human_message() -> None:
    steps = [*stuck_round(1), *stuck_round(2), human(), *stuck_round(3)]
    assert fired(run(steps)) == []


def test_the_same_words_with_a_changing_workspace_are_not_stagnation() -> None:
    steps: list[Step] = []
    for n in range(1, 4):
        o, r = stuck_round(n)
        steps += [Step("turn", "owner", o.text, "DONE", tree=f"tree{n}"), r]
    results = run(steps)
    # The findings still repeat, which is its own detector.
    assert fired(results) == [(5, "repeated_findings")]


# --- repeated findings -----------------------------------------------------------------------


def test_repeated_findings_fire_after_two_unchanged_rounds() -> None:
    drops, still, untested = (
        "parse() drops the last line of input",
        "parse() still drops the last line of input",
        "no test covers empty input",
    )
    reviews = [
        f"CHANGES_REQUESTED\n1. {drops}\n2. {untested}",
        f"CHANGES_REQUESTED\n1. {still}\n2. {untested}",
        f"CHANGES_REQUESTED\n- {untested.capitalize()}\n- {still}",  # reordered, recased
    ]
    steps: list[Step] = []
    for n, text in enumerate(reviews):
        steps += [owner(f"DONE\nattempt {n}: tried another approach", tree=f"t{n}"), reviewer(text)]
    results = run(steps)
    assert fired(results) == [(5, "repeated_findings")]
    firing = results[5]
    assert firing is not None
    assert firing.reason.startswith("the reviewer's findings have not changed for 2 rounds")
    assert firing.fingerprint is not None


def test_findings_below_the_similarity_threshold_do_not_fire() -> None:
    tail = "the last line of input when the file has no trailing newline"
    reviews = [
        f"CHANGES_REQUESTED\n- parse() drops {tail}",  # 14 words
        f"CHANGES_REQUESTED\n- parse() still drops {tail}",  # one word more: ratio 0.97
        f"CHANGES_REQUESTED\n- parse() still drops {tail.replace('of', 'of the')}",  # 0.93 to #1
    ]
    steps: list[Step] = []
    for n, text in enumerate(reviews):
        steps += [owner(f"DONE\nattempt {n}", tree=f"t{n}"), reviewer(text)]
    assert fired(run(steps)) == [(5, "repeated_findings")]
    assert fired(run(steps, Thresholds(findings_similarity=0.95))) == []
    assert fired(run(steps, Thresholds(findings_similarity=1.0))) == []


def test_a_review_without_readable_findings_never_counts_as_repeated() -> None:
    steps: list[Step] = []
    for n in range(3):
        steps += [owner(f"DONE\nattempt {n}", tree=f"t{n}"), reviewer("CHANGES_REQUESTED")]
    assert fired(run(steps)) == []


# --- oscillation -----------------------------------------------------------------------------


def test_workspace_returning_to_an_earlier_tree_is_oscillation() -> None:
    steps = [
        *progressing_round(0),  # tree t0
        owner("DONE\nswitched to approach B", tree="B"),
        reviewer("CHANGES_REQUESTED\n- approach B breaks the API", tree="B"),
        owner("DONE\nswitched back to approach A", tree="t0"),
        reviewer("CHANGES_REQUESTED\n- approach A is slow", tree="t0"),
    ]
    results = run(steps)
    # Fires on the owner turn that made the return, and only there.
    assert fired(results) == [(4, "oscillation")]
    firing = results[4]
    assert firing is not None and "went back to a state" in firing.reason
    assert firing.extra["kind"] == "tree"


def test_a_tree_that_merely_stays_the_same_is_not_oscillation() -> None:
    steps = [
        owner("DONE\nfirst", tree="A"),
        reviewer("CHANGES_REQUESTED\n- one", tree="A"),
        owner("DONE\nsecond", tree="A"),
        reviewer("CHANGES_REQUESTED\n- something else entirely different", tree="A"),
    ]
    assert fired(run(steps)) == []


def test_a_reviewer_withdrawing_approval_twice_is_oscillation() -> None:
    # APPROVED ends review, but the owner may change the work in finalize, which sends it
    # back to review: approve, object, approve, object is a verdict going back and forth.
    steps = [
        owner("DONE\nv1", tree="v1"),
        reviewer("APPROVED\nfine", tree="v1"),
        owner("DONE\nv2: renamed the flag after approval", tree="v2"),
        reviewer("CHANGES_REQUESTED\n- the rename breaks old configs", tree="v2"),
        owner("DONE\nv3: kept both names", tree="v3"),
        reviewer("APPROVED\nfine now", tree="v3"),
        owner("DONE\nv4: dropped the old name again", tree="v4"),
        reviewer("CHANGES_REQUESTED\n- dropping the old name breaks configs", tree="v4"),
        owner("DONE\nv5: restored the old name", tree="v5"),
        reviewer("CHANGES_REQUESTED\n- the changelog does not mention it", tree="v5"),
    ]
    results = run(steps)
    assert fired(results) == [(7, "oscillation")]
    firing = results[7]
    assert firing is not None and firing.extra == {"kind": "verdicts", "withdrawals": 2}


# --- blocked ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("step", "reason"),
    [
        (owner("BLOCKED: the staging database refuses connections"), "the owner reported BLOCKED"),
        (
            reviewer("NEEDS_CONTEXT\n\nWhich locale should dates use?\n\nMore detail."),
            "the reviewer reported NEEDS_CONTEXT: “Which locale should dates use?”",
        ),
        (owner("NEEDS_CONTEXT"), "the owner reported NEEDS_CONTEXT without saying why"),
    ],
)
def test_blocked_fires_at_once_from_either_side(step: Step, reason: str) -> None:
    firing = run([step])[0]
    assert firing is not None and firing.detector == "blocked"
    assert firing.reason.startswith(reason)
    assert firing.fingerprint is not None


def test_the_same_blocked_reason_has_the_same_fingerprint_despite_noise() -> None:
    a = run([owner("BLOCKED\nconnect to 10.0.0.5:5432 refused at 2024-01-01T10:00:00Z")])[0]
    b = run([owner("BLOCKED\nConnect to 10.0.0.5:5432 refused at 2024-03-09T11:22:33Z")])[0]
    c = run([owner("BLOCKED\nthe API key for the payments sandbox is missing")])[0]
    assert a is not None and b is not None and c is not None
    assert a.fingerprint == b.fingerprint != c.fingerprint


def test_blocked_wins_over_the_round_cap() -> None:
    steps = [s for i in range(5) for s in progressing_round(i)]
    steps += [owner(tree="t9"), reviewer("BLOCKED\ncannot run the tests: no docker")]
    results = run(steps)
    assert fired(results)[-1] == (11, "blocked")


# --- ceilings --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "limit", "words"),
    [
        ({"turns": 60}, "turns", "60 turns"),
        ({"now": 4 * 3600.0}, "wall_time", "4 h 0 min"),
        ({"tokens": 5_000_000}, "tokens", "5,000,000 tokens"),
        ({"cost_usd": 50.0}, "cost", "$50.00"),
    ],
)
def test_each_ceiling_fires_with_a_reason_naming_it(
    kwargs: dict[str, float], limit: str, words: str
) -> None:
    args: dict[str, float] = {
        "turns": 1,
        "tokens": 0,
        "cost_usd": 0.0,
        "started_at": 0.0,
        "now": 0.0,
    }
    args.update(kwargs)
    firing = check(
        [owner()],
        T,
        turns=int(args["turns"]),
        tokens=int(args["tokens"]),
        cost_usd=args["cost_usd"],
        started_at=args["started_at"],
        now=args["now"],
    )
    assert firing is not None and firing.detector == "ceiling"
    assert firing.extra["limit"] == limit and words in firing.reason


def test_just_under_every_ceiling_nothing_fires() -> None:
    firing = check(
        [owner()],
        T,
        turns=59,
        tokens=4_999_999,
        cost_usd=49.99,
        started_at=1000.0,
        now=1000.0 + 4 * 3600 - 1,
    )
    assert firing is None


def test_a_ceiling_wins_over_a_content_detector() -> None:
    results = check(
        [owner("BLOCKED\nno key")], T, turns=60, tokens=0, cost_usd=0, started_at=0, now=0
    )
    assert results is not None and results.detector == "ceiling"


def test_nothing_fires_right_after_a_human_message_or_ruling() -> None:
    steps = [owner("BLOCKED\nno key"), human("here is the key")]
    assert run(steps)[1] is None
    assert since_reset(steps) == []


# --- unchanged and numbered findings (DESIGN §4, changed today) ------------------------------

# One defect argued five times in new words: neither the owner's nor the reviewer's text repeats,
# so stagnation and text-compared findings miss it; the workspace never changes.
REWORDED_REVIEWS = [
    "CHANGES_REQUESTED\n- parse() loses the final line when the file has no trailing newline",
    "CHANGES_REQUESTED\n- Input without a newline at EOF still comes back one line short",
    "CHANGES_REQUESTED\n- The last record disappears if the text does not end in \\n",
    "CHANGES_REQUESTED\n- Still truncating: no terminating newline means the tail is dropped",
    "CHANGES_REQUESTED\n- EOF handling remains broken for unterminated final lines",
]
REWORDED_OWNERS = [
    "DONE\nImplemented the parser as asked.",
    "DONE\nI believe the current behaviour is correct; splitlines handles it.",
    "DONE\nRe-checked: the tail is kept by the loop in read_all, nothing to change.",
    "DONE\nAs explained, the function already covers that case.",
    "DONE\nNo change needed, see my previous answer.",
]


def reworded_stall(rounds: int = 5, tree: str = "A") -> list[Step]:
    steps: list[Step] = []
    for i in range(rounds):
        steps += [owner(REWORDED_OWNERS[i], tree=tree), reviewer(REWORDED_REVIEWS[i], tree=tree)]
    return steps


def test_a_reworded_stall_on_an_unchanged_tree_is_caught_at_the_second_unchanged_round() -> None:
    steps = reworded_stall()
    results = run(steps)
    # Round 1 sets the tree; rounds 2 and 3 leave it as the review found it: caught at turn 5,
    # not at the round cap (which this pair would reach at turn 11).
    assert fired(results)[0] == (5, "unchanged")
    firing = results[5]
    assert firing is not None and firing.extra["rounds"] == 2
    assert "unchanged for 2 rounds" in firing.reason
    # And text alone would not have caught it: the same steps without trees fire nothing
    # before the round cap.
    no_trees = [Step(s.kind, s.role, s.text, s.marker) for s in steps]
    assert fired(run(no_trees)) == []


def test_one_answered_question_then_a_fix_is_left_alone() -> None:
    # The owner answers the first finding with evidence and no change (one unchanged round),
    # then fixes the next finding: progress, never interrupted.
    steps = [
        owner("DONE\nfirst version", tree="A"),
        reviewer("CHANGES_REQUESTED\n- F1 why does load() not lock the file?", tree="A"),
        owner("DONE\nF1: the file is opened O_EXCL in open_db(), see line 40; no change", tree="A"),
        reviewer("CHANGES_REQUESTED\n- F2 the error message names the wrong file", tree="A"),
        owner("DONE\nF2 fixed", tree="B"),
        reviewer("CHANGES_REQUESTED\n- F3 add a test for the message", tree="B"),
        owner("DONE\nF3 added", tree="C"),
        reviewer("CHANGES_REQUESTED\n- F4 the test name is misleading", tree="C"),
        owner("DONE\nrenamed", tree="D"),
        reviewer("CHANGES_REQUESTED\n- F5 changelog entry missing", tree="D"),
    ]
    assert fired(run(steps)) == []


def test_unchanged_needs_the_review_to_still_ask_for_changes() -> None:
    steps = reworded_stall(2)
    steps += [owner("DONE\nsee above", tree="A"), reviewer("APPROVED\nconvinced", tree="A")]
    assert fired(run(steps)) == []


def test_unchanged_never_fires_without_known_trees_or_below_its_threshold() -> None:
    assert fired(run(reworded_stall(3), Thresholds(unchanged_rounds=3))) == []
    assert fired(run(reworded_stall(4), Thresholds(unchanged_rounds=3)))[0] == (7, "unchanged")


def test_an_owner_ignoring_a_ruling_is_caught_at_the_second_round_after_it() -> None:
    # The tree when the ruling came is where the owner starts: two rounds that leave it
    # unchanged after the REVISE are the stall, counted afresh since the ruling.
    steps = reworded_stall(2)
    steps.append(ruling("REVISE"))
    steps += [owner(REWORDED_OWNERS[2], tree="A"), reviewer(REWORDED_REVIEWS[2], tree="A")]
    steps += [owner(REWORDED_OWNERS[3], tree="A"), reviewer(REWORDED_REVIEWS[3], tree="A")]
    assert fired(run(steps)) == [(8, "unchanged")]


def numbered(i: int, ids: str, tree: str) -> list[Step]:
    body = "\n".join(f"- {f} (still open): {PROGRESS_FINDINGS[(i + n) % 6]}" for n, f in
                     enumerate(ids.split()))  # fmt: skip
    return [owner(f"DONE\nattempt {i}", tree=tree), reviewer(f"CHANGES_REQUESTED\n{body}")]


def test_the_same_finding_ids_reworded_are_repeated_findings() -> None:
    # The owner changes the workspace each round, the reviewer rewords, but F1 and F2 stay open.
    steps = [s for i in range(3) for s in numbered(i, "F1 F2", tree=f"t{i}")]
    results = run(steps)
    assert fired(results) == [(5, "repeated_findings")]
    firing = results[5]
    assert firing is not None and firing.extra["ids"] == ["F1", "F2"]


def test_new_or_resolved_finding_ids_are_progress() -> None:
    steps = numbered(0, "F1 F2", "t0") + numbered(1, "F2 F3", "t1") + numbered(2, "F3", "t2")
    steps += numbered(3, "F3 F4", "t3") + numbered(4, "F5", "t4")
    assert fired(run(steps)) == []
    # A checked-off finding is no longer open: the open set changed, nothing repeats.
    resolved = "CHANGES_REQUESTED\n- [x] F1 parser\n- F2 (still open): cli"
    steps = numbered(0, "F1 F2", "t0") + numbered(1, "F1 F2", "t1")
    steps += [owner("DONE\nfixed F1", tree="t2"), reviewer(resolved)]
    assert fired(run(steps)) == []


def test_a_stall_in_japanese_that_only_moves_its_line_numbers_is_repeated_findings() -> None:
    # Issue 26, class 6: no spaces, so word-by-word similarity saw a new finding every round.
    steps: list[Step] = []
    for n in range(3):
        where = f"rooms/x.py の {12 + 7 * n} 行目"
        review = f"CHANGES_REQUESTED\n- {where}: 期限を過ぎても再試行が止まりません"
        steps += [owner(f"DONE\n修正 {n}", tree=f"t{n}"), reviewer(review)]
    assert fired(run(steps)) == [(5, "repeated_findings")]


def test_a_checklist_that_closes_one_item_per_round_is_progress() -> None:
    # Issue 26, class 5: compared as one block, twenty items less one or two scored as the same
    # findings and fired on a pair that closes one finding per round.
    parts = ("retry", "cache", "log", "exit code", "readme", "migration", "loader", "test", "lock")
    items = [f"the {part} of stage {stage} is still wrong" for stage in "ab" for part in parts]
    steps: list[Step] = []
    for n in range(4):
        listed = "\n".join(f"- {item}" for item in items[n:])
        review = f"CHANGES_REQUESTED\n{listed}"
        steps += [owner(f"DONE\nclosed {n}", tree=f"t{n}"), reviewer(review)]
    assert fired(run(steps)) == []
