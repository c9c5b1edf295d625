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
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from rooms.base.model import Firing, Thresholds
from rooms.base.words import (
    APPROVED,
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
    UNMARKED,
    WORK_ROLES,
)
from rooms.judge.detector_spec import DetectorSpec, Threshold
from rooms.judge.findings import after_marker, finding_ids, findings, paragraphs, similar
from rooms.judge.fingerprint import fingerprint, reason_fingerprint
from rooms.judge.no_progress import SPEC as NO_PROGRESS_SPEC
from rooms.judge.noise import digest, normalize
from rooms.judge.quoting import inline_quote

__all__ = ["TEXT_LIMIT", "Step", "bounded", "check", "findings", "fingerprint", "since_reset"]

STUCK_MARKERS = STUCK
# How many times a reviewer may withdraw its approval (APPROVED, then changes requested again)
# since the last human message or ruling before the pair counts as oscillating.
APPROVAL_WITHDRAWALS = 2
_QUOTE_CHARS = 160
# Characters of one turn or message the detectors read: their normalising and similarity work
# grows with the text, and a few 4 MiB outputs must not stall the engine; the head of a turn is
# where its marker, findings and summary are.
TEXT_LIMIT = 64 * 1024


def bounded(text: str) -> str:
    return text[:TEXT_LIMIT]


@dataclass(frozen=True)
class Step:
    kind: Literal["turn", "human", "ruling"]
    role: str  # owner / reviewer / arbiter / human
    text: str
    marker: str | None  # canonical owner/reviewer marker, or the verdict for a ruling
    tree: str | None = None  # workspace tree hash after the turn
    at: float = 0.0  # unix time
    # A structured review's open findings by the engine's ids (rooms/judge/finding_ledger.py);
    # None for any other step, whose findings are read from its text.
    open_ids: frozenset[str] | None = None


@dataclass(frozen=True)
class Round:
    """The owner's turns since the previous review, and the review that closed them."""

    owner: tuple[Step, ...]
    reviewer: Step
    # The workspace the owner started from: the tree after the review (or the human message or
    # ruling) before this round; None when unknown, or when that review approved (the owner
    # was then wrapping up, not answering a request for changes).
    tree_before: str | None = None

    @property
    def approved(self) -> bool:
        return self.reviewer.marker == APPROVED

    @property
    def tree(self) -> str | None:
        trees = [s.tree for s in (*self.owner, self.reviewer) if s.tree is not None]
        return trees[-1] if trees else None

    @cached_property
    def findings(self) -> list[str]:
        return [] if self.approved else findings(self.reviewer.text)

    @cached_property
    def finding_ids(self) -> frozenset[str] | None:
        return finding_ids(self.findings)

    @cached_property
    def fingerprint(self) -> str:
        markers = [_effective_marker(s) for s in (*self.owner, self.reviewer)]
        owner_text = "\n\n".join(s.text for s in self.owner)
        return fingerprint(owner_text, self.reviewer.text, markers, self.tree)


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
    firing = _ceiling(t, turns=turns, tokens=tokens, cost_usd=cost_usd, elapsed=now - started_at)
    if firing is not None:
        return firing
    window = since_reset(steps)
    if not window or window[-1].kind != "turn":
        return None
    earlier = steps[: len(steps) - len(window)]
    rounds = _rounds(window, _last_tree(earlier))
    firing = _stagnation_after_proceed(window, rounds, proceeded)
    if firing is not None:
        return firing
    for detect in _CONTENT_DETECTORS:
        firing = detect(window, rounds, t)
        if firing is not None:
            return firing
    return None


def since_reset(steps: Sequence[Step]) -> Sequence[Step]:
    """The steps after the last human message or ruling (all of them when there is none)."""
    for index in range(len(steps) - 1, -1, -1):
        if steps[index].kind != "turn":
            return steps[index + 1 :]
    return steps


def _rounds(window: Sequence[Step], tree_before: str | None = None) -> list[Round]:
    """Completed rounds: each reviewer turn closes the owner turns before it. `tree_before`:
    the workspace when the window opened (the last tree before it)."""
    rounds: list[Round] = []
    owner: list[Step] = []
    for step in window:
        if step.role == REVIEWER:
            r = Round(owner=tuple(owner), reviewer=step, tree_before=tree_before)
            rounds.append(r)
            owner = []
            tree_before = None if r.approved else (r.tree or tree_before)
        elif step.role == OWNER:
            owner.append(step)
    return rounds


def _last_tree(steps: Sequence[Step]) -> str | None:
    return next((s.tree for s in reversed(steps) if s.kind == "turn" and s.tree), None)


def _effective_marker(step: Step) -> str | None:
    """An unmarked turn counts as DONE (owner) or CHANGES_REQUESTED (reviewer), as in the engine."""
    if step.marker is not None:
        return step.marker
    return UNMARKED.get(step.role)


# --- ceilings -------------------------------------------------------------------------------


def _ceiling(
    t: Thresholds, *, turns: int, tokens: int, cost_usd: float, elapsed: float
) -> Firing | None:
    if turns >= t.max_turns:
        reason = f"the task has used {turns} turns, the limit is {t.max_turns}"
        return _ceiling_firing("turns", reason)
    if elapsed >= t.max_wall_s:
        ran, limit = duration_words(elapsed), duration_words(t.max_wall_s)
        reason = f"the task has run for {ran}, the limit is {limit}"
        return _ceiling_firing("wall_time", reason)
    if tokens >= t.max_tokens:
        reason = f"the task has used {tokens:,} tokens, the limit is {t.max_tokens:,}"
        return _ceiling_firing("tokens", reason)
    if cost_usd >= t.max_cost_usd:
        reason = f"the task has cost ${cost_usd:.2f}, the limit is ${t.max_cost_usd:.2f}"
        return _ceiling_firing("cost", reason)
    return None


def _ceiling_firing(limit: str, reason: str) -> Firing:
    return Firing(detector=CEILING, reason=reason, extra={"limit": limit})


def duration_words(seconds: float) -> str:
    """A span of time as the room reads it: "45 s", "12 min", "2 h 5 min"."""
    minutes = int(seconds // 60)
    if minutes >= 60:
        return f"{minutes // 60} h {minutes % 60} min"
    return f"{minutes} min" if minutes else f"{int(seconds)} s"


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
    said = f": {_quote(reason)}" if reason else " without saying why"
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
            f"the same round has happened {occurrences} times: the owner's output, the "
            "reviewer's findings and the workspace are unchanged"
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


def _repeated_findings(window: Sequence[Step], rounds: list[Round], t: Thresholds) -> Firing | None:
    span = max(1, t.repeated_findings_rounds)
    if window[-1].role != REVIEWER or len(rounds) < span + 1:
        return None
    recent = rounds[-(span + 1) :]
    opened = [r.reviewer.open_ids for r in recent]
    # Structured reviews that name findings are compared by id; ones whose objects name none
    # (the reviewer wrote its findings in the prose only) are read as text, like any other.
    if all(o is not None for o in opened) and any(opened):
        return _repeated_open_ids(recent, span)
    latest = recent[-1].findings
    if not latest or any(not r.findings for r in recent):
        return None  # an approval, or a review with nothing we can read as findings
    ids = [r.finding_ids for r in recent]
    latest_ids = ids[-1]
    extra: dict[str, object] = {"findings": len(latest)}
    if latest_ids is not None and all(i is not None for i in ids):
        # The reviewer numbers its findings: the same ids are the same defects, however worded.
        if any(i != latest_ids for i in ids):
            return None
        named = ", ".join(sorted(latest_ids, key=_id_order))
        what = f"the reviewer's open findings ({named}) have not changed for {span} rounds"
        print_ = digest("finding-ids", *sorted(latest_ids))
        extra["ids"] = sorted(latest_ids, key=_id_order)
    elif all(similar(r.findings, latest, t.findings_similarity) for r in recent[:-1]):
        what = (
            f"the reviewer's findings have not changed for {span} rounds "
            f"(first of them: {_quote(latest[0])})"
        )
        print_ = digest("findings", *sorted(normalize(item) for item in latest))
    else:
        return None
    return Firing(detector=REPEATED_FINDINGS, reason=what, fingerprint=print_, extra=extra)


def _repeated_open_ids(recent: Sequence[Round], span: int) -> Firing | None:
    """Structured reviews: the same open ids, none resolved, for `span` rounds, whatever words
    the reviewer used; any finding closed or new is progress."""
    opened = [r.reviewer.open_ids for r in recent]
    latest = opened[-1]
    if not latest or any(r.approved for r in recent) or any(o != latest for o in opened):
        return None
    ids = sorted(latest, key=_id_order)
    return Firing(
        detector=REPEATED_FINDINGS,
        reason=f"the reviewer's open findings ({', '.join(ids)}) stayed open, none resolved, "
        f"for {span} rounds",
        fingerprint=digest("finding-ids", *sorted(latest)),
        extra={"findings": len(ids), "ids": ids, "structured": True},
    )


def _id_order(finding: str) -> int:
    return int(finding[1:])


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
        _repeated_findings,
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


def _quote(text: str) -> str:
    return inline_quote(text, _QUOTE_CHARS)  # agent words in a reason the room and status show
