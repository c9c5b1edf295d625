"""Deadlock detection (DESIGN §4): after every owner/reviewer turn, does the task need a ruling?

`check` looks at the task's whole history and returns the first detector that fires, in this
order: ceiling (turns, wall time, tokens, cost), blocked, stagnation, repeated_findings,
unchanged, oscillation, round_cap. Ceilings count the whole task; everything else counts only
the steps since the last human message or ruling, because either one changes the situation: the
pair gets new input, so its round count and its repeat windows start again.

"Repeats N times" means what it says: the thing occurred once and then N more times. With the
default of 2, identical rounds are caught at the third, a pair that keeps making progress is
left alone until the round cap of 6. A round is an owner turn and the review that follows it;
`unchanged` counts rounds whose owner left the workspace tree as the last CHANGES_REQUESTED (or
the last human message or ruling) found it, so a stall argued in new words every round is still
caught at its second unchanged round.

This module holds the rules (each detector's function) and their registry, `DETECTORS`; what
they read, the steps cut into a window and its rounds, is rooms/judge/steps.py, and the
ceilings, which count the whole task rather than the window, are rooms/judge/ceilings.py.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from rooms.base.model import Firing, Thresholds
from rooms.base.words import (
    BLOCKED_DETECTOR,
    CEILING,
    OSCILLATION,
    OWNER,
    REPEATED_FINDINGS,
    REVIEWER,
    ROUND_CAP,
    STAGNATION,
    STUCK,
    UNCHANGED,
    WORK_ROLES,
)
from rooms.judge.ceilings import ceiling, duration_words
from rooms.judge.detector_spec import DetectorSpec, Threshold
from rooms.judge.findings import after_marker, findings, paragraphs
from rooms.judge.fingerprint import fingerprint, reason_fingerprint
from rooms.judge.no_progress import SPEC as NO_PROGRESS_SPEC
from rooms.judge.noise import digest
from rooms.judge.quoting import in_reason
from rooms.judge.repeated_findings import repeated_findings
from rooms.judge.steps import (
    TEXT_LIMIT,
    Round,
    Step,
    bounded,
    last_tree,
    rounds_of,
    since_reset,
)

# What callers read here beside `check` and the registry: the steps' nouns (rooms/judge/steps.py)
# and the ceilings' words (rooms/judge/ceilings.py), where they are defined.
__all__ = [
    "TEXT_LIMIT",
    "Step",
    "bounded",
    "check",
    "duration_words",
    "findings",
    "fingerprint",
    "since_reset",
]

STUCK_MARKERS = STUCK
# How many times a reviewer may withdraw its approval (APPROVED, then changes requested again)
# since the last human message or ruling before the pair counts as oscillating.
APPROVAL_WITHDRAWALS = 2


def check(
    steps: Sequence[Step],
    t: Thresholds,
    *,
    turns: int,
    tokens: int,
    cost_usd: float,
    started_at: float,
    now: float,
    proceeded: Collection[str] = (),
) -> Firing | None:
    """The first detector that fires after the latest step, or None.

    `proceeded` holds the stagnation fingerprints the arbiter has already ruled PROCEED on:
    one such round coming back fires at once (DESIGN §4: the engine then escalates instead of
    proceeding again), without waiting for the repeat window to fill after the ruling."""
    firing = ceiling(t, turns=turns, tokens=tokens, cost_usd=cost_usd, elapsed=now - started_at)
    if firing is not None:
        return firing
    window = since_reset(steps)
    if not window or window[-1].kind != "turn":
        return None
    earlier = steps[: len(steps) - len(window)]
    rounds = rounds_of(window, last_tree(earlier))
    firing = _stagnation_after_proceed(window, rounds, proceeded)
    if firing is not None:
        return firing
    for detect in _CONTENT_DETECTORS:
        firing = detect(window, rounds, t)
        if firing is not None:
            return firing
    return None


# --- content detectors ----------------------------------------------------------------------

Detector = Callable[[Sequence[Step], list[Round], Thresholds], Firing | None]


def _blocked(window: Sequence[Step], rounds: list[Round], t: Thresholds) -> Firing | None:
    step = window[-1]
    if step.marker not in STUCK_MARKERS or step.role not in WORK_ROLES:
        return None
    marker = step.marker
    rest, lines = after_marker(step.text, OWNER if step.role == OWNER else REVIEWER)
    # The reason is what follows the marker on its line, else the first paragraph after it.
    reason = rest or next(iter(paragraphs(lines)), "")
    said = f": {in_reason(reason)}" if reason else " without saying why"
    return Firing(
        detector=BLOCKED_DETECTOR,
        reason=f"the {step.role} reported {marker}{said}",
        fingerprint=reason_fingerprint(marker, reason),
        extra={"role": step.role, "marker": marker},
    )


def _stagnation(window: Sequence[Step], rounds: list[Round], t: Thresholds) -> Firing | None:
    if window[-1].role != REVIEWER or rounds[-1].approved:
        return None
    latest = rounds[-1].fingerprint
    occurrences = sum(1 for r in rounds if r.fingerprint == latest)
    if occurrences < max(1, t.stagnation_repeats) + 1:
        return None
    return Firing(
        detector=STAGNATION,
        reason=(
            f"the same round has happened {occurrences} times: the owner's output, the reviewer's "
            "findings and the workspace are unchanged"
        ),
        fingerprint=latest,
        extra={"occurrences": occurrences},
    )


def _stagnation_after_proceed(
    window: Sequence[Step], rounds: list[Round], proceeded: Collection[str]
) -> Firing | None:
    if not proceeded or window[-1].role != REVIEWER or rounds[-1].approved:
        return None
    latest = rounds[-1].fingerprint
    if latest not in proceeded:
        return None
    return Firing(
        detector=STAGNATION,
        reason=(
            "the round the arbiter ruled PROCEED on has come back unchanged: the same owner "
            "output, reviewer findings and workspace"
        ),
        fingerprint=latest,
        extra={"after_proceed": True},
    )


def _unchanged(window: Sequence[Step], rounds: list[Round], t: Thresholds) -> Firing | None:
    """The owner left the workspace as the last CHANGES_REQUESTED found it, in the last
    `unchanged_rounds` rounds in a row, and the reviewer still asks for changes."""
    if window[-1].role != REVIEWER or rounds[-1].approved:
        return None
    span = max(1, t.unchanged_rounds)
    streak = 0
    for r in reversed(rounds):
        before = r.tree_before
        if not r.owner or r.approved or before is None or r.tree is None:
            break
        if any(s.tree is None for s in r.owner) or r.tree != before:
            break
        streak += 1
    if streak < span:
        return None
    tree = rounds[-1].tree or ""
    return Firing(
        detector=UNCHANGED,
        reason=(
            f"the owner has left the workspace unchanged for {streak} rounds while the reviewer "
            f"keeps asking for changes (tree {tree[:12]}): neither side moves"
        ),
        fingerprint=digest("unchanged", tree),
        extra={"rounds": streak, "tree": tree},
    )


def _oscillation(window: Sequence[Step], rounds: list[Round], t: Thresholds) -> Firing | None:
    return _tree_returns(window) or _approval_flips(window, rounds)


def _tree_returns(window: Sequence[Step]) -> Firing | None:
    """The workspace came back to a state it had left earlier in this window (A → B → A)."""
    trees = [s.tree for s in window if s.kind == "turn" and s.tree is not None]
    if window[-1].tree is None or len(trees) < 3 or trees[-1] == trees[-2]:
        return None  # only the turn that made the return fires, not every turn after it
    states: list[str] = []
    for tree in trees:
        if not states or states[-1] != tree:
            states.append(tree)
    latest = states[-1]
    if latest not in states[:-1]:
        return None
    back = len(states) - 1 - states.index(latest)
    return Firing(
        detector=OSCILLATION,
        reason=(
            f"the workspace went back to a state it had {back} changes ago "
            f"(tree {latest[:12]}): the work is going back and forth"
        ),
        fingerprint=digest("tree", latest),
        extra={"kind": "tree", "tree": latest},
    )


def _approval_flips(window: Sequence[Step], rounds: list[Round]) -> Firing | None:
    """The reviewer approved, then asked for changes again, more than once."""
    if window[-1].role != REVIEWER or len(rounds) < 2:
        return None
    if rounds[-1].approved or not rounds[-2].approved:
        return None  # only the review that withdraws an approval fires, not every one after it
    withdrawals = sum(
        1 for a, b in zip(rounds, rounds[1:], strict=False) if a.approved and not b.approved
    )
    if withdrawals < APPROVAL_WITHDRAWALS:
        return None
    return Firing(
        detector=OSCILLATION,
        reason=(
            f"the reviewer has approved and then asked for changes again {withdrawals} times: "
            "its verdict is going back and forth"
        ),
        extra={"kind": "verdicts", "withdrawals": withdrawals},
    )


def _round_cap(window: Sequence[Step], rounds: list[Round], t: Thresholds) -> Firing | None:
    if window[-1].role != REVIEWER or rounds[-1].approved:
        return None
    unapproved = 0
    for r in reversed(rounds):
        if r.approved:
            break
        unapproved += 1
    if unapproved < t.round_cap:
        return None
    return Firing(
        detector=ROUND_CAP,
        reason=f"{unapproved} rounds without approval since the last human message or ruling",
        extra={"rounds": unapproved},
    )


# The detectors, in the order `check` asks them (after the ceilings, which come first). A new
# detector is its function and one entry here; its thresholds are fields of Thresholds.
DETECTORS: tuple[DetectorSpec, ...] = (
    DetectorSpec(
        CEILING,
        "the task's turns, wall time, tokens or cost reached their limit: people decide",
        thresholds=(
            Threshold("max_turns", "turns per task (ceiling → escalation)", ge=1),
            Threshold("max_wall_s", "wall time per task (ceiling)", gt=0),
            Threshold("max_tokens", "tokens per task (ceiling)", ge=1),
            Threshold("max_cost_usd", "cost per task (ceiling)", gt=0),
        ),
    ),
    DetectorSpec(
        BLOCKED_DETECTOR,
        "the owner or the reviewer says BLOCKED or NEEDS_CONTEXT",
        _blocked,
        repeat_asks_people=True,
    ),
    DetectorSpec(
        STAGNATION,
        "the same round (owner output, reviewer findings, workspace) comes back",
        _stagnation,
        thresholds=(
            Threshold(
                "stagnation_repeats",
                "the same round fingerprint this many times is a deadlock",
                ge=1,
            ),
        ),
        proceed_remembered=True,
        repeat_asks_people=True,
    ),
    DetectorSpec(
        REPEATED_FINDINGS,
        "the reviewer's findings stay the same",
        repeated_findings,
        thresholds=(
            Threshold(
                "repeated_findings_rounds",
                "the reviewer's findings unchanged for this many rounds (on structured "
                "reviews: the same open finding ids, none resolved, however worded)",
                ge=1,
            ),
            Threshold(
                "findings_similarity",
                "each open finding this similar to its own earlier one counts as unchanged (0–1)",
                ge=0,
                le=1,
            ),
        ),
    ),
    DetectorSpec(
        UNCHANGED,
        "the owner leaves the workspace as the reviewer's request found it",
        _unchanged,
        thresholds=(
            Threshold(
                "unchanged_rounds",
                "rounds in a row the owner leaves the workspace as the last request for changes "
                "found it",
                ge=1,
            ),
        ),
    ),
    DetectorSpec(
        OSCILLATION,
        "the workspace returns to an earlier state, or the reviewer's approval flips back",
        _oscillation,
    ),
    DetectorSpec(
        ROUND_CAP,
        "too many rounds without approval",
        _round_cap,
        thresholds=(
            Threshold(
                "round_cap", "rounds without approval since the last human message or ruling", ge=1
            ),
        ),
    ),
    NO_PROGRESS_SPEC,  # checked by the pair itself: it asks a model (rooms/pair/progress_judge)
)
_CONTENT_DETECTORS: tuple[Detector, ...] = tuple(d.detect for d in DETECTORS if d.detect)


def detector(name: str) -> DetectorSpec | None:
    """The spec of the detector whose firings are recorded as `name`."""
    return next((d for d in DETECTORS if d.name == name), None)


def remembers_proceed(name: str) -> bool:
    """Whether a PROCEED on a firing of detector `name` is remembered (`check`'s `proceeded`)."""
    spec = detector(name)
    return spec is not None and spec.proceed_remembered
