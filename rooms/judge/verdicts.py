"""The arbiter's ruling: its JSON schema, reading it from the arbiter's output, and the Markdown
decision record posted in the room (DESIGN §2, §3, §5).

Structured output (when the runner enforced `RULING_SCHEMA`) wins when it is valid; an output
that is a ruling object in JSON (bare or fenced, as a runner with an output schema prints it) is
read as that object. Otherwise the text is read: the verdict only ever comes from
`markers.read_marker`, so a verdict word inside fenced code, an `<internal>` block, a quote,
prose or below the 12-line window is never taken. Anything unreadable, and any ruling in doubt
(conflicting verdicts, a conditional PROCEED), becomes ESCALATE with `readable=False`: it asks the
people, it never lets the pair proceed.

`check_ruling` says what a readable ruling lacks (DESIGN §5): REVISE without conditions, RESET
without a new direction, ESCALATE without a question or 2–4 options. The engine sends such a
ruling back to the arbiter once with that problem, and escalates on the second.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from rooms.base.markers import classify_lines, read_marker, split_at_marker
from rooms.base.model import Ruling
from rooms.base.words import ARBITER, ESCALATE, RESET, REVISE, VERDICTS, Verdict
from rooms.judge.findings import list_items, paragraphs

_TEXT_ARRAY: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
RULING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": list(VERDICTS)},
        "reasons": {"type": "string", "description": "why, citing the evidence"},
        "conditions": {**_TEXT_ARRAY, "description": "REVISE: what the owner must do"},
        "new_direction": {"type": "string", "description": "RESET: the new path for the owner"},
        "question": {"type": "string", "description": "ESCALATE: the question for the people"},
        "options": {**_TEXT_ARRAY, "description": "ESCALATE: the answers to choose from"},
        "references_cited": {**_TEXT_ARRAY, "description": "labels of reference opinions used"},
        "dissent": {"type": "string", "description": "the strongest view against this ruling"},
        "override_reason": {
            "type": "string",
            "description": "why you rule against a unanimous set of reference opinions, if you do",
        },
        "resolve": {
            "type": "string",
            "description": "to settle a dispute about what the code does by tests before you "
            "rule: the question the tests must answer; empty otherwise",
        },
    },
    # Strict structured-output APIs want every property required and nothing else allowed;
    # fields that do not apply to the verdict are sent empty.
    "required": [
        "verdict",
        "reasons",
        "conditions",
        "new_direction",
        "question",
        "options",
        "references_cited",
        "dissent",
        "override_reason",
        "resolve",
    ],
    "additionalProperties": False,
}

UNREADABLE_QUESTION = (
    "The arbiter's ruling could not be read, so the task waits for you. How should it go on?"
)
UNREADABLE_OPTIONS = ["Accept the work as it is", "Send it back to the owner", "Stop the task"]
DOUBTFUL_QUESTION = (
    "The arbiter's ruling was not clear-cut ({why}), so the task waits for you. How should it go "
    "on?"
)
_DOUBTS = {
    "conflicting": "it named conflicting verdicts: {seen}",
    "qualified": "it made PROCEED conditional",
    "uncertain": "it said work is still to do without saying whether PROCEED waits for it",
}
MIN_OPTIONS, MAX_OPTIONS = 2, 4
_JSON_CHARS = 200_000  # a ruling object is a few KiB; anything far larger is not one
_FENCED_JSON = re.compile(r"\A```[ \t]*+(?:json)?[ \t]*+\n(?P<body>.*)\n```[ \t]*+\Z", re.DOTALL)
_EXCERPT_CHARS = 2000
# Where a record's Outcome begins (rooms.core.decisions rewrites what follows it). A line of its
# own: person and agent text in a record is quoted, so it cannot end a line with this.
OUTCOME_MARK = "\n<!-- tribunal: outcome -->\n"
PENDING_OUTCOME = "## Outcome\n\nPending: the ruling's cycle has not ended yet.\n"
_QUOTE_CHARS = 3000

# A section label on its own line: "Conditions:", "**Question:** …", "## New direction".
_LABELS = {
    "conditions": "conditions",
    "condition": "conditions",
    "required changes": "conditions",
    "new direction": "new_direction",
    "direction": "new_direction",
    "question": "question",
    "options": "options",
    "references cited": "references_cited",
    "references": "references_cited",
    "dissent": "dissent",
    "override reason": "override_reason",
    "override": "override_reason",
    "reasons": "reasons",
    "reasoning": "reasons",
    "rationale": "reasons",
}
_LABEL = re.compile(
    r"^\s*+(?P<hash>#{1,6}\s*+)?(?:\*\*|__)?(?P<label>"
    + "|".join(sorted(_LABELS, key=len, reverse=True))
    + r")(?![A-Za-z])(?:\*\*|__)?\s*+(?P<colon>:)?\s*+(?:\*\*|__)?\s*+(?P<rest>.*)$",
    re.IGNORECASE,
)
_REFERENCE = re.compile(r"\b(?:(?:Reference|Opinion)\s+(?:[A-Z]|\d{1,2})|R\d{1,2})\b")


class _Structured(BaseModel):
    """The structured output, checked. Extra keys are ignored; types must match."""

    model_config = ConfigDict(extra="ignore")

    verdict: Verdict
    reasons: str = ""
    conditions: list[str] = []
    new_direction: str = ""
    question: str = ""
    options: list[str] = []
    references_cited: list[str] = []
    dissent: str = ""
    override_reason: str = ""
    resolve: str = ""

    @field_validator("verdict", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.strip().upper() if isinstance(value, str) else value


def parse_ruling(text: str, structured: dict[str, Any] | None) -> Ruling:
    """The ruling in the arbiter's output. Never raises."""
    try:
        if isinstance(structured, dict):
            ruling = _from_structured(structured)
            if ruling is not None:
                return ruling
        text = text if isinstance(text, str) else ""
        printed = _json_object(text)
        if printed is not None:
            return _from_structured(printed) or unreadable(text)
        return _from_text(text)
    except Exception:  # a ruling we cannot read must escalate, never crash the engine
        return unreadable(text if isinstance(text, str) else "")


def unreadable(text: str, question: str = UNREADABLE_QUESTION) -> Ruling:
    """ESCALATE with readable=False, keeping an excerpt of what the arbiter wrote (without its
    `<internal>` notes, which are not for the room)."""
    excerpt = "\n".join(line for line, kind in classify_lines(text) if kind != "internal").strip()
    if len(excerpt) > _EXCERPT_CHARS:
        excerpt = excerpt[:_EXCERPT_CHARS] + "…"
    return Ruling(
        verdict=ESCALATE,
        reasons=excerpt,
        question=question,
        options=list(UNREADABLE_OPTIONS),
        readable=False,
    )


def check_ruling(ruling: Ruling) -> str | None:
    """What a readable ruling lacks, in words the arbiter can act on; None when it is complete.
    An unreadable ruling is not checked: it escalates as it is."""
    if not ruling.readable:
        return None
    if ruling.verdict == REVISE and not ruling.conditions:
        return (
            "a REVISE needs concrete conditions: list what the owner must change (file, "
            "function, action), one per line, so that meeting them can be checked"
        )
    if ruling.verdict == RESET and not ruling.new_direction.strip():
        return "a RESET needs a new direction: say the concrete path the owner follows now"
    if ruling.verdict == ESCALATE:
        problems = []
        if not ruling.question.strip():
            problems.append("the question for the people (a sentence ending in '?')")
        if not MIN_OPTIONS <= len(ruling.options) <= MAX_OPTIONS:
            problems.append(
                f"{MIN_OPTIONS} to {MAX_OPTIONS} options to choose from, as a list "
                f"(it gave {len(ruling.options)})"
            )
        if problems:
            return "an ESCALATE needs " + " and ".join(problems)
    return None


def _json_object(text: str) -> dict[str, Any] | None:
    """The ruling object when the whole output (without `<internal>` notes) is one JSON object,
    bare or in one fenced block; None otherwise."""
    visible = "\n".join(line for line, kind in classify_lines(text) if kind != "internal").strip()
    if len(visible) > _JSON_CHARS:
        return None
    fenced = _FENCED_JSON.match(visible)
    body = (fenced.group("body") if fenced else visible).strip()
    if not (body.startswith("{") and body.endswith("}")):
        return None
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) and "verdict" in data else None


def _from_structured(data: dict[str, Any]) -> Ruling | None:
    try:
        s = _Structured.model_validate(data)
    except ValidationError:
        return None
    return Ruling(
        verdict=s.verdict,
        reasons=s.reasons.strip(),
        conditions=_clean(s.conditions),
        new_direction=s.new_direction.strip(),
        question=s.question.strip(),
        options=_clean(s.options),
        references_cited=_clean(s.references_cited),
        dissent=s.dissent.strip(),
        override_reason=s.override_reason.strip(),
        resolve=" ".join(s.resolve.split()),
    )


def _from_text(text: str) -> Ruling:
    reading = read_marker(text, ARBITER)
    if reading.doubt is not None:
        why = _DOUBTS[reading.doubt].format(seen=", ".join(reading.seen))
        return unreadable(text, DOUBTFUL_QUESTION.format(why=why))
    verdict, lines = _body_lines(text)
    if verdict is None:
        return unreadable(text)
    sections = _sections(lines)
    body = sections.get("", [])
    reasons = _join([*body, "", *sections.get("reasons", [])])
    ruling: dict[str, Any] = {
        "verdict": verdict,
        "reasons": reasons,
        "dissent": _join(sections.get("dissent", [])),
        "override_reason": _join(sections.get("override_reason", [])),
    }
    cited = sections.get("references_cited")
    if cited:  # a list, or one line of labels separated by commas
        refs = list_items(cited) or [
            label.strip() for p in paragraphs(cited) for label in re.split(r"[,;]", p)
        ]
    else:  # no section: the labels the arbiter mentions in its visible text
        refs = _REFERENCE.findall("\n".join(line for line, is_code in lines if not is_code))
    ruling["references_cited"] = list(dict.fromkeys(ref for ref in refs if ref))
    if verdict == REVISE:
        ruling["conditions"] = _items(sections.get("conditions"), body)
    elif verdict == RESET:
        ruling["new_direction"] = _join(sections.get("new_direction", [])) or reasons
    elif verdict == ESCALATE:
        ruling["question"] = _join(sections.get("question", [])) or _question(body)
        ruling["options"] = _items(sections.get("options"), body)
    return Ruling(**ruling)


def _items(section: list[str] | None, body: list[str]) -> list[str]:
    """A labelled section's list items (or its paragraphs); without the section, the list
    items of the unlabelled text."""
    if section is not None:
        return list_items(section) or paragraphs(section)
    return list_items(body)


def _body_lines(text: str) -> tuple[str | None, list[tuple[str, bool]]]:
    """The verdict, and the output without `<internal>` blocks and with the verdict line cut
    down to the text after the verdict; each line with whether it is fenced code (labels are
    not read there)."""
    found, before, after = split_at_marker(text, ARBITER)
    if found is None:
        return None, []
    lines = [*before, (found.rest, "text"), *after]
    return found.marker, [(line, kind == "code") for line, kind in lines if kind != "internal"]


def _sections(lines: list[tuple[str, bool]]) -> dict[str, list[str]]:
    """Lines grouped under their section label; unlabelled lines under ""."""
    sections: dict[str, list[str]] = {}
    current = ""
    for line, is_code in lines:
        label = None if is_code else _LABEL.match(line)
        if label is not None and (label.group("hash") or label.group("colon")):
            current = _LABELS[label.group("label").lower()]
            sections.setdefault(current, [])
            if label.group("rest").strip():
                sections[current].append(label.group("rest"))
            continue
        sections.setdefault(current, []).append(line)
    return sections


def _question(body: list[str]) -> str:
    """The first sentence that asks something; "" when none does (check_ruling then says so)."""
    for paragraph in paragraphs(body):
        for sentence in re.split(r"(?<=[.!?])\s+", paragraph):
            if sentence.endswith("?"):
                return sentence
    return ""


def _join(lines: list[str]) -> str:
    return "\n".join(lines).strip()


def _clean(items: list[str]) -> list[str]:
    return [item.strip() for item in items if item.strip()]


# --- decision record ------------------------------------------------------------------------


def decision_record(
    ruling: Ruling,
    *,
    task_text: str,
    reason: str,
    turns_quoted: list[str],
    models: dict[str, str],
    extra: Sequence[str] = (),
) -> str:
    """The Markdown decision record of one arbitration (DESIGN §2)."""
    out: list[str] = [f"# Decision record: {ruling.verdict}", ""]
    out += ["## Frame", "", blockquote(task_text), ""]
    out += ["## Why the arbiter was called", "", reason.strip() or "(no reason recorded)", ""]
    out += ["## Positions", ""]
    if turns_quoted:
        for quoted in turns_quoted:
            out += [blockquote(quoted), ""]
    else:
        out += ["(no turns quoted)", ""]
    out += ["## Verdict", "", f"**{ruling.verdict}**"]
    if not ruling.readable:
        out += ["", "The arbiter's output could not be read, so the question goes to the people."]
    out += [""]
    if ruling.reasons:
        out += ["## Reasons", "", ruling.reasons, ""]
    if ruling.conditions:
        out += ["## Conditions", "", *[f"- {c}" for c in ruling.conditions], ""]
    if ruling.new_direction:
        out += ["## New direction", "", ruling.new_direction, ""]
    if ruling.question:
        out += ["## Question", "", ruling.question, ""]
    if ruling.options:
        out += ["## Options", "", *[f"{i}. {o}" for i, o in enumerate(ruling.options, 1)], ""]
    cited = [f"- {r}" for r in ruling.references_cited] or ["none"]
    out += ["## References cited", "", *cited, ""]
    out += ["## Dissent", "", ruling.dissent or "none recorded", ""]
    if ruling.override_reason:
        out += ["## Why it overrules the references", "", blockquote(ruling.override_reason), ""]
    for section in extra:  # reference opinions, fair input (rooms/pair/ruling_checks.py)
        out += [section.strip(), ""]
    out += ["## Models", ""]
    out += [f"- {role}: {model}" for role, model in sorted(models.items())] or ["- not recorded"]
    return "\n".join(out).rstrip() + "\n" + OUTCOME_MARK + PENDING_OUTCOME


def blockquote(text: str) -> str:
    text = text.strip()
    if len(text) > _QUOTE_CHARS:
        text = text[:_QUOTE_CHARS] + "\n…(cut)"
    return "\n".join(f"> {line}" if line else ">" for line in (text or "(empty)").splitlines())
