"""Live commentary: significant events only, and the rate limit holds."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rooms.arena.commentary import SIGNIFICANT, Gate, offer
from rooms.arena.limits import ArenaLimits

LIMITS = ArenaLimits(commentary_interval_s=30.0, commentary_window_s=300.0, commentary_per_window=3)


def test_ordinary_messages_are_not_commented() -> None:
    verdict = offer(Gate(), "message", 0.0, LIMITS)
    assert not verdict.post and verdict.gate == Gate()


def test_a_burst_gets_one_comment_and_the_next_one_counts_what_it_held_back() -> None:
    gate = Gate()
    posted = []
    for i, kind in enumerate(["shift", "veto", "final", "shift"]):
        verdict = offer(gate, kind, float(i), LIMITS)
        gate = verdict.gate
        posted.append(verdict.post)
    assert posted == [True, False, False, False]
    later = offer(gate, "left_out", 40.0, LIMITS)
    assert later.post and later.held_before == 3 and later.gate.held == 0


def test_at_most_n_per_window() -> None:
    gate, posts = Gate(), []
    for t in range(0, 300, 31):
        verdict = offer(gate, "shift", float(t), LIMITS)
        gate = verdict.gate
        if verdict.post:
            posts.append(t)
    assert posts == [0, 31, 62]
    assert offer(gate, "shift", 301.0, LIMITS).post  # the first comment left the window


@given(
    st.lists(
        st.tuples(st.sampled_from(sorted(SIGNIFICANT) + ["message"]), st.floats(0, 50)), max_size=60
    )
)
def test_the_limit_holds_for_any_stream(events: list[tuple[str, float]]) -> None:
    gate, now, posts = Gate(), 0.0, []
    for kind, gap in events:
        now += gap
        verdict = offer(gate, kind, now, LIMITS)
        gate = verdict.gate
        if verdict.post:
            posts.append(now)
    for a, b in zip(posts, posts[1:], strict=False):
        assert b - a >= LIMITS.commentary_interval_s
    for t in posts:
        in_window = [p for p in posts if t - LIMITS.commentary_window_s < p <= t]
        assert len(in_window) <= LIMITS.commentary_per_window
