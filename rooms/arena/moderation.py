"""When the moderator steps in (the seed's intervention table), as a pure decision per round.

Experts argue on their own; after each round the moderator looks at who spoke to whom and acts
only on these situations:

- an expert said nothing this round: nudge them by name, at most `max_nudges` times; still
  silent after that, they are left out and the arena goes on with the rest;
- the same two experts addressed only each other for `loop_exchanges` rounds, neither shifting:
  a third expert is asked to arbitrate between them (once per loop);
- the round limit or the soft time limit is reached: everyone is asked for final positions
  (once).

Anything else — a heated argument, one expert dominating, a shift of position — is the debate
working, and the moderator stays out of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rooms.arena.limits import ArenaLimits


@dataclass(frozen=True)
class Member:
    """One expert as the moderator sees them."""

    slug: str
    devil: bool = False
    nudges: int = 0  # nudges sent since they last spoke
    out: bool = False  # left out (silent after the nudges, or their runs kept failing)
    final: bool = False  # submitted a final position


@dataclass(frozen=True)
class Said:
    """One expert message of a round: who, to whom (empty: everyone), and whether the speaker
    changed position with it."""

    speaker: str
    to: tuple[str, ...] = ()
    shifted: bool = False
    passed: bool = False  # answered, with nothing to add: not silent, but not arguing either


@dataclass(frozen=True)
class Intervention:
    kind: Literal["nudge", "leave_out", "arbitrate", "final_call"]
    to: str = ""  # the expert nudged, left out or asked to arbitrate; "" for everyone
    between: tuple[str, str] | None = None  # arbitrate: the two in the loop


def interventions(
    members: Sequence[Member],
    rounds: Sequence[Sequence[Said]],
    limits: ArenaLimits,
    *,
    elapsed_s: float,
    final_called: bool,
    arbitrated: frozenset[tuple[str, str]] = frozenset(),
) -> list[Intervention]:
    """What the moderator does after the last of `rounds` (oldest first)."""
    active = [m for m in members if not m.out]
    last = rounds[-1] if rounds else ()
    spoke = {said.speaker for said in last}
    out: list[Intervention] = []
    for member in active:
        if member.slug in spoke or member.final:
            continue
        if member.nudges < limits.max_nudges:
            out.append(Intervention("nudge", member.slug))
        else:
            out.append(Intervention("leave_out", member.slug))
    left = {i.to for i in out if i.kind == "leave_out"}
    staying = [m for m in active if m.slug not in left]
    pair = loop_pair(rounds, limits.loop_exchanges)
    if pair is not None and pair not in arbitrated:
        third = pick_arbiter(staying, pair)
        if third is not None:
            out.append(Intervention("arbitrate", third, between=pair))
    if not final_called and (len(rounds) >= limits.max_rounds or elapsed_s >= limits.soft_time_s):
        out.append(Intervention("final_call"))
    return out


def loop_pair(rounds: Sequence[Sequence[Said]], exchanges: int) -> tuple[str, str] | None:
    """The two experts stuck on each other: in each of the last `exchanges` rounds, each
    addressed only the other, and neither changed position. Sorted, so A–B is B–A."""
    if len(rounds) < exchanges:
        return None
    pairs: set[tuple[str, str]] = set()
    for said_in_round in rounds[-exchanges:]:
        found = _mutual(said_in_round)
        if found is None:
            return None
        pairs.add(found)
    return pairs.pop() if len(pairs) == 1 else None


def _mutual(said_in_round: Sequence[Said]) -> tuple[str, str] | None:
    by_speaker = {said.speaker: said for said in said_in_round}
    for said in said_in_round:
        if len(said.to) != 1 or said.shifted or said.passed:
            continue
        other = by_speaker.get(said.to[0])
        if other is not None and other.to == (said.speaker,) and not other.shifted:
            a, b = sorted((said.speaker, other.speaker))
            return (a, b)
    return None


def pick_arbiter(members: Sequence[Member], pair: tuple[str, str]) -> str | None:
    """A third expert for a loop: the first on the panel outside the pair, preferring one who
    is not the devil's advocate (whose job is to oppose, not to settle)."""
    others = [m for m in members if m.slug not in pair]
    if not others:
        return None
    others.sort(key=lambda m: m.devil)  # stable: panel order within each group
    return others[0].slug
