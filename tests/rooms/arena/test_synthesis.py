"""The evidence catalog, the trust summary and the synthesis document with every section."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rooms.arena.catalog import Position, build_catalog, standings
from rooms.arena.evidence import Evidence, Rating
from rooms.arena.outputs import ContestResolution, SynthesisNarrative
from rooms.arena.synthesis import SECTIONS, Synthesis, render, synthesis_path, topic_slug

DOCS = Evidence("Queue docs", "https://example.test/docs/", 0.9, 1.0)
CASE = Evidence("Fleet case study", "case", 0.8, 0.3)
BLOG = Evidence("A blog", "blog", 0.4, 0.7, load_bearing=False)

ADA = Position("ada", "Ada", "Use a queue", (DOCS, CASE))
BO = Position(
    "bo",
    "Bo",
    "Use a queue, later",
    (Evidence("Queue docs", "https://example.test/docs", 0.9, 0.7), BLOG),
)
DEE = Position("dee", "Dee", "Do not add a queue", (Evidence("Inferred", "own", 0.3, 0.1),))


def test_the_same_evidence_cited_twice_is_one_entry_with_both_citers() -> None:
    catalog = build_catalog([ADA, BO, DEE])
    assert [e.label for e in catalog] == ["E1", "E2", "E3", "E4"]
    docs = catalog[0]
    assert docs.cited_by == ("ada", "bo")
    assert docs.contested  # ada rated CL 1.0, bo CL 0.7
    assert docs.rating.score == 0.9  # both score 0.9; the lower-scoring one is picked either way


def test_a_contested_rating_lowers_trust_until_the_synthesis_says_otherwise() -> None:
    contests = [("fleet case study", Rating("dee", 0.5, 0.1))]
    catalog = build_catalog([ADA, BO, DEE], contests)
    case = catalog[1]
    assert case.contested and case.rating.by == "dee"  # lowest: 0.5 × 0.6 = 0.3
    by_champion = {s.position.champion: s for s in standings([ADA, BO, DEE], catalog)}
    assert (by_champion["ada"].trust, by_champion["ada"].level) == (0.3, "L0")
    chosen = build_catalog([ADA, BO, DEE], contests, chosen={"case": "ada"})
    by_champion = {s.position.champion: s for s in standings([ADA, BO, DEE], chosen)}
    assert (by_champion["ada"].trust, by_champion["ada"].level) == (0.64, "L1")


def test_standings_are_strongest_first_and_count_evidence() -> None:
    catalog = build_catalog([ADA, BO, DEE])
    rows = standings([DEE, ADA, BO], catalog)
    assert [(r.position.champion, r.trust, r.level) for r in rows] == [
        ("bo", 0.9, "L2"),
        ("ada", 0.64, "L1"),
        ("dee", 0.18, "L0"),
    ]
    assert (rows[0].load_bearing, rows[0].supporting) == (1, 1)


def synthesis(**fields: object) -> Synthesis:
    catalog = build_catalog([ADA, BO, DEE], [("Fleet case study", Rating("dee", 0.5, 0.1))])
    narrative = SynthesisNarrative(
        status="partial",
        verdict="Add a queue behind a flag.",
        recommendation="Do it in two steps.",
        progression=["Dee challenged Ada's case study (CL)", "Bo shifted to 'later'"],
        remaining_disagreements=["Whether the queue is needed at all"],
        trade_offs=["One more moving part"],
        contested=[
            ContestResolution(evidence="Fleet case study", chosen="dee", why="another stack")
        ],
    )
    base: dict[str, object] = {
        "question": "Should we add a queue?",
        "experts": (("ada", "Ada"), ("bo", "Bo"), ("dee", "Dee")),
        "standings": tuple(standings([ADA, BO, DEE], catalog)),
        "catalog": tuple(catalog),
        "narrative": narrative,
        "dissent": "a queue hides back-pressure",
        "ended_because": "3 final position(s); the veto stands",
    }
    base.update(fields)
    return Synthesis(**base)  # type: ignore[arg-type]


def test_the_document_has_every_section_in_order() -> None:
    doc = render(synthesis(), at=1_790_000_000.0)
    headings = re.findall(r"^## (.+)$", doc, flags=re.MULTILINE)
    assert headings == list(SECTIONS)
    assert "Standing veto of the devil's advocate (dissent): a queue hides back-pressure" in doc
    assert (
        "| E2 Fleet case study | ada: R 0.80 CL 0.30; dee: R 0.50 CL 0.10 | dee | another stack |"
        in doc
    )
    assert "| Use a queue, later | Bo | L2 | 0.90 | 1 load-bearing, 1 supporting |" in doc
    assert "**Ended:** 3 final position(s); the veto stands" in doc


def test_hostile_text_cannot_break_the_tables_or_add_sections() -> None:
    evil = Position(
        "ada",
        "Ada",
        "x | y\n## Verdict\nforged",
        (Evidence("t|u\n## Recommendation", "s", 0.5, 0.5),),
    )
    catalog = build_catalog([evil])
    doc = render(
        synthesis(standings=tuple(standings([evil], catalog)), catalog=tuple(catalog)), at=0.0
    )
    assert re.findall(r"^## (.+)$", doc, flags=re.MULTILINE) == list(SECTIONS)
    assert "x \\| y ## Verdict forged" in doc


@pytest.mark.parametrize(
    ("topic", "slug"),
    [
        ("Should we add a queue?", "should-we-add-a-queue"),
        ("../../etc/passwd", "etc-passwd"),
        ("Café façade", "cafe-facade"),
        ("日本語", "arena"),
        ("", "arena"),
        ("a" * 100, "a" * 60),
    ],
)
def test_topics_become_safe_slugs(topic: str, slug: str) -> None:
    assert topic_slug(topic) == slug


def test_the_path_is_dated_under_docs_arena() -> None:
    assert synthesis_path("Queue?", 1_790_000_000.0) == "docs/arena/2026-09-21-queue.md"


@given(st.text())
def test_no_topic_leaves_docs_arena(topic: str) -> None:
    path = synthesis_path(topic, 0.0)
    assert re.fullmatch(r"docs/arena/1970-01-01-[a-z0-9]+(?:-[a-z0-9]+)*\.md", path)
