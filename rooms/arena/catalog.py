"""Consolidating the evidence of the final positions: one catalog entry per piece of evidence
however many experts cited it, the contested ratings settled, and each position's trust from the
settled ratings (weakest load-bearing link)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rooms.arena.evidence import Evidence, Level, Rating, level, settle, trust


@dataclass(frozen=True)
class Position:
    """An expert's final (or last) position with the evidence it cites."""

    champion: str  # the expert's slug
    name: str  # the expert's display name
    stance: str
    evidence: tuple[Evidence, ...]
    final: bool = True  # False: taken from their last message (they never sent a final one)


@dataclass(frozen=True)
class Entry:
    """One piece of evidence in the catalog."""

    number: int  # E1, E2, … in order of first citation
    key: str
    title: str
    source: str
    cited_by: tuple[str, ...]
    ratings: tuple[Rating, ...]  # every distinct rating given, in order
    rating: Rating  # the one that counts

    @property
    def label(self) -> str:
        return f"E{self.number}"

    @property
    def contested(self) -> bool:
        return len({(r.r, r.cl) for r in self.ratings}) > 1


@dataclass(frozen=True)
class Standing:
    """A position's line in the trust summary."""

    position: Position
    trust: float
    level: Level
    load_bearing: int
    supporting: int


def build_catalog(
    positions: Sequence[Position],
    contests: Sequence[tuple[str, Rating]] = (),
    chosen: Mapping[str, str] | None = None,
) -> list[Entry]:
    """`contests`: (evidence title or source, the challenger's rating) from the debate;
    `chosen`: evidence key → slug of the rating the synthesis judged better justified."""
    chosen = chosen or {}
    order: list[str] = []
    first: dict[str, Evidence] = {}
    cited: dict[str, list[str]] = {}
    ratings: dict[str, list[Rating]] = {}
    for position in positions:
        for ev in position.evidence:
            key = ev.key
            if key not in first:
                order.append(key)
                first[key] = ev
                cited[key], ratings[key] = [], []
            if position.champion not in cited[key]:
                cited[key].append(position.champion)
            _add(ratings[key], Rating(position.champion, ev.r, ev.cl))
    titles = {_norm(first[k].title): k for k in order}
    for ref, rating in contests:
        found = titles.get(_norm(ref)) or (_norm(ref) if _norm(ref) in first else None)
        if found is not None:  # a contest of evidence nobody cited in a final position is moot
            _add(ratings[found], rating)
    return [
        Entry(
            number=i,
            key=key,
            title=first[key].title,
            source=first[key].source,
            cited_by=tuple(cited[key]),
            ratings=tuple(ratings[key]),
            rating=settle(ratings[key], _chosen_for(chosen, key, first[key].title)),
        )
        for i, key in enumerate(order, start=1)
    ]


def standings(positions: Sequence[Position], catalog: Sequence[Entry]) -> list[Standing]:
    """Each position's trust from the settled ratings, strongest first (ties: panel order)."""
    settled = {entry.key: entry.rating for entry in catalog}
    out = []
    for position in positions:
        rated = [
            Evidence(
                ev.title,
                ev.source,
                settled[ev.key].r if ev.key in settled else ev.r,
                settled[ev.key].cl if ev.key in settled else ev.cl,
                ev.load_bearing,
                ev.cited_by,
            )
            for ev in position.evidence
        ]
        value = trust(rated)
        bearing = sum(1 for ev in rated if ev.load_bearing)
        out.append(Standing(position, value, level(value), bearing, len(rated) - bearing))
    return sorted(out, key=lambda s: -s.trust)


def _add(ratings: list[Rating], rating: Rating) -> None:
    if not any((r.by, r.r, r.cl) == (rating.by, rating.r, rating.cl) for r in ratings):
        ratings.append(rating)


def _chosen_for(chosen: Mapping[str, str], key: str, title: str) -> str | None:
    return chosen.get(key) or chosen.get(_norm(title))


def _norm(text: str) -> str:
    return " ".join(text.lower().split()).rstrip("/.")
