"""The fan-out (rooms/references/panel.py): parallel, bounded by each timeout and the deadline,
failures dropped and recorded, the order a function of the stored seed."""

from __future__ import annotations

from collections import Counter

import pytest

from rooms.references.panel import consult, label, new_seed, shuffled
from tests.fakes.references import FakeReference, panel_of


class VirtualClock:
    """Time read from the event loop, which the test's sleeps advance."""

    def __init__(self) -> None:
        import asyncio

        self.loop = asyncio.get_running_loop()

    def __call__(self) -> float:
        return self.loop.time()


async def test_all_are_asked_at_once_and_the_fanout_lasts_about_the_slowest() -> None:
    refs = panel_of(
        FakeReference("a", "model-a", delay_s=0.2),
        FakeReference("b", "model-b", delay_s=0.3),
        FakeReference("c", "model-c", delay_s=0.1),
    )
    panel = await consult(refs, "context", seed=7, deadline_s=5, clock=VirtualClock())
    assert refs[0].in_flight[1] == 3  # every call was in flight before any ended
    assert [o.answered for o in panel.opinions] == [True, True, True]
    # The slowest is 0.3 s, the sum 0.6 s: parallel, not one after the other.
    assert 0.3 <= panel.wall_s < 0.45
    assert all(r.prompts == ["context"] for r in refs)


async def test_a_failure_a_crash_and_a_timeout_are_dropped_and_recorded() -> None:
    refs = panel_of(
        FakeReference("ok", "m-ok", answer="VERDICT: REVISE\nthe test is wrong", delay_s=0.05),
        FakeReference("err", "m-err", fail="HTTP 500: overloaded"),
        FakeReference("slow", "m-slow", delay_s=10, timeout_s=0.2),
        FakeReference("bug", "m-bug", crash=True),
    )
    panel = await consult(refs, "ctx", seed=1, deadline_s=5)
    by_name = {o.name: o for o in panel.opinions}
    assert by_name["ok"].answered and by_name["ok"].label == "R1"
    assert by_name["ok"].verdict == "REVISE"
    assert by_name["err"].error == "HTTP 500: overloaded" and by_name["err"].label == ""
    assert by_name["slow"].error == "timed out after 0.2 s"
    assert by_name["bug"].error == "RuntimeError: boom"
    assert panel.labels == ["R1"]
    assert panel.wall_s < 2  # the 10 s reference was not waited for


async def test_the_deadline_cuts_the_whole_fanout() -> None:
    refs = panel_of(
        FakeReference("fast", "m1", delay_s=0.01),
        FakeReference("late", "m2", delay_s=10, timeout_s=30),
    )
    panel = await consult(refs, "ctx", seed=3, deadline_s=0.2)
    late = next(o for o in panel.opinions if o.name == "late")
    assert late.error == "dropped: not answered within the 0.2 s deadline"
    assert [o.name for o in panel.answered] == ["fast"]
    assert panel.wall_s < 2


async def test_an_empty_answer_is_a_failure() -> None:
    [opinion] = (
        await consult([FakeReference("e", "m", answer="  ")], "x", seed=1, deadline_s=1)
    ).opinions
    assert opinion.error == "empty answer" and not opinion.answered


async def test_no_references_is_an_empty_panel() -> None:
    panel = await consult([], "x", seed=1, deadline_s=1)
    assert panel.opinions == () and panel.tally.describe() == "no answers"


async def test_labels_follow_the_seeded_order_and_skip_the_dropped() -> None:
    refs = [FakeReference(n, f"m-{n}") for n in "abcd"]
    refs[1].fail = "no"
    order = [r.name for r in shuffled(refs, 42)]
    panel = await consult(refs, "x", seed=42, deadline_s=1)
    assert [o.name for o in panel.opinions] == order
    expected = iter(label(i) for i in range(3))
    assert [o.label for o in panel.opinions] == [
        "" if o.name == "b" else next(expected) for o in panel.opinions
    ]


def test_the_order_is_a_function_of_the_seed() -> None:
    refs = [FakeReference(n, n) for n in "abc"]
    assert [r.name for r in shuffled(refs, 123)] == [r.name for r in shuffled(refs, 123)]
    orders = {tuple(r.name for r in shuffled(refs, seed)) for seed in range(200)}
    assert len(orders) == 6  # every permutation of three occurs


@pytest.mark.parametrize("n", [2, 3, 5])
def test_each_reference_is_first_about_one_in_n_times(n: int) -> None:
    refs = [FakeReference(str(i), str(i)) for i in range(n)]
    runs = 6000
    firsts = Counter(shuffled(refs, seed)[0].name for seed in range(runs))
    for ref in refs:
        share = firsts[ref.name] / runs
        assert abs(share - 1 / n) < 0.03, (ref.name, share)


def test_new_seeds_differ_and_fit_sqlite() -> None:
    seeds = {new_seed() for _ in range(50)}
    assert len(seeds) == 50 and all(0 <= s < 2**63 for s in seeds)
