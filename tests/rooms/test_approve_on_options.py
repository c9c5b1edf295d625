"""`approve` on a question that offers options (issue 26, a decision left open): Approve names
no option, so taking it would let the owner go on without the choice the question asks for. It
is refused, privately, naming `choose N`, and nothing changes: typed in any form, with text
after it, or clicked on a card posted before questions had option buttons. A question without
options (a failed run's "retry or close?", a ceiling's budget) is still approved as before;
Reject, a choice and an answer in one's own words still answer the question.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.engine_kit import Kit, engine_kit
from tests.fakes.runner import Script, fail
from tests.rooms.test_engine_escalations import ESCALATING, escalated

REFUSED = (
    "boss: question #1 offers 2 options, and `approve` picks none of them, so nothing was "
    "changed. Pick one with `choose N` (1–2) or its button, answer in your own words, or "
    "`reject`."
)


async def unchanged(kit: Kit, before_calls: int) -> None:
    task = await kit.task()
    assert task.status == "waiting_human"
    [escalation] = await kit.store.escalations(task.id)
    assert (escalation.status, escalation.answer) == ("open", None)
    assert await kit.store.messages(task.id) == []  # nothing reaches the owner's prompt
    assert len(kit.runner.calls) == before_calls


@pytest.mark.parametrize(
    "typed",
    [
        "@tribunal approve",
        "@tribunal APPROVE!",
        "@tribunal /approve",
        "@tribunal approve 1",  # a number after approve is not a choice
        "@tribunal approve yes",  # nor is the option's own text
        "@tribunal approve, go ahead",
        "@tribunal ａｐｐｒｏｖｅ！",  # full-width letters and punctuation
        "@tribunal ／approve",
    ],
)
async def test_typed_approve_on_a_question_with_options_is_refused(
    tmp_path: Path, typed: str
) -> None:
    async with engine_kit(tmp_path, ESCALATING) as kit:
        await escalated(kit)
        calls = len(kit.runner.calls)
        await kit.say(typed, user="boss")
        await kit.settle()
        refusal = kit.platform.messages()[-1]
        assert (refusal.text, refusal.message.private_to) == (REFUSED, "boss")
        await unchanged(kit, calls)


async def test_an_old_cards_approve_button_is_refused_too(tmp_path: Path) -> None:
    async with engine_kit(tmp_path, ESCALATING) as kit:
        esc_id = await escalated(kit)
        calls = len(kit.runner.calls)
        await kit.click("approve", esc_id, user="boss")
        await kit.settle()
        assert kit.platform.texts()[-1] == REFUSED
        await unchanged(kit, calls)


async def test_a_non_approver_is_refused_as_one_before_anything_else(tmp_path: Path) -> None:
    async with engine_kit(tmp_path, ESCALATING) as kit:
        await escalated(kit)
        await kit.say("@tribunal approve", user="mallory")
        await kit.settle()
        assert kit.platform.texts()[-1] == "mallory: only approvers can answer: boss."


async def test_after_the_refusal_a_choice_answers(tmp_path: Path) -> None:
    async with engine_kit(tmp_path, ESCALATING) as kit:
        await escalated(kit)
        await kit.say("@tribunal approve", user="boss")
        await kit.say("@tribunal choose 2", user="boss")
        await kit.settle()
        assert (await kit.task()).status == "closed"
        assert 'chose option 2 of "May we use the production key?": no, use a mock' in (
            kit.runner.calls[2].prompt
        )


@pytest.mark.parametrize(
    ("typed", "status"),
    [("@tribunal reject", "closed"), ("use the staging key instead", "closed")],
)
async def test_reject_and_an_own_answer_still_answer(
    tmp_path: Path, typed: str, status: str
) -> None:
    async with engine_kit(tmp_path, ESCALATING) as kit:
        await escalated(kit)
        await kit.say(typed, user="boss", mention=typed.startswith("@"))
        await kit.settle()
        assert (await kit.task()).status == status
        [escalation] = await kit.store.escalations(1)
        assert escalation.status == "answered"


async def test_a_question_without_options_is_still_approved(tmp_path: Path) -> None:
    script: Script = {
        "owner": [fail("crashed", "exit 3"), fail("crashed", "exit 3"), "DONE", "DONE"],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal build")
        await kit.settle()
        escalation = await kit.store.open_escalation(1)
        assert escalation is not None and escalation.options == ()
        await kit.say("@tribunal approve", user="boss")
        await kit.settle()
        assert (await kit.task()).status == "closed"
