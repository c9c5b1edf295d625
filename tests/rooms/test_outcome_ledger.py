"""The outcome ledger through the real engine and store (DESIGN §5): every ruling's row filled
through each path (PROCEED borne out and not, REVISE satisfied and not, ESCALATE upheld and
overridden, a send-back's second answer complete or not), kept across a restart, and shown in
`status` and in the decision record's Outcome section."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rooms.base.model import GroupPolicy, Thresholds
from rooms.core.ledger import ledger_summary
from rooms.judge.outcomes import (
    BORNE_OUT,
    COMPLETE,
    INCOMPLETE,
    NOT_BORNE_OUT,
    OVERRIDDEN,
    PENDING,
    UNANSWERED,
    UPHELD,
)
from tests.fakes.engine_kit import FakeClock, engine_kit
from tests.fakes.rulings import ruling_reply
from tests.fakes.runner import Reply

FINDING = "CHANGES_REQUESTED\n- F1: the parser drops the last line of the file"
POLICY = GroupPolicy(
    name="g",
    approvers=frozenset({"boss"}),
    thresholds=Thresholds(repeated_findings_rounds=1, round_cap=20),
    swap_check=False,  # one reading per ruling here; tests/rooms/test_engine_swap_check.py
)
TASK = "@tribunal write a config parser"
OPTIONS = ["keep the parser", "rewrite it with csv"]


def rule(verdict: str, **fields: Any) -> Reply:
    defaults: dict[str, Any] = {
        "REVISE": {"conditions": ["keep the last line"]},
        "ESCALATE": {"question": "Which parser should stay?", "options": OPTIONS},
    }.get(verdict, {})
    return ruling_reply(verdict, **{**defaults, **fields})


def script(arbiter: list[Reply], owner: list[str], reviewer: list[str]) -> dict[str, Any]:
    """Two stuck rounds (the same finding twice) first, then what follows."""
    return {
        "owner": ["DONE\nparser written", "DONE\nkept the parser", *owner],
        "reviewer": [FINDING, FINDING, *reviewer],
        "arbiter": arbiter,
    }


async def test_a_proceed_borne_out_by_the_reviewers_approval(tmp_path: Path) -> None:
    s = script([rule("PROCEED")], owner=["DONE\nwrapped"], reviewer=["APPROVED"])
    async with engine_kit(tmp_path, s, policy=POLICY) as kit:
        await kit.say(TASK)
        await kit.settle()
        [row] = await kit.store.outcomes()
        assert (row.verdict, row.result, row.group) == ("PROCEED", BORNE_OUT, "g")
        assert "the reviewer approved at turn" in row.detail
        assert row.ruling_s is not None and row.people_s is None and row.sent_back is None
        [verdict] = await kit.store.verdicts(1)
        record = Path(verdict.record_path or "").read_text()
        assert "Ledger: PROCEED: borne out (the reviewer approved at turn" in record
        await kit.say("@tribunal status")
        await kit.settle()
        assert "Ruling 1: PROCEED: borne out (the reviewer approved" in kit.platform.texts()[-1]


async def test_a_proceed_not_borne_out_then_a_revise_satisfied(tmp_path: Path) -> None:
    s = script(
        [rule("PROCEED"), rule("REVISE")],
        owner=["DONE\nsame parser", "DONE\nkept the last line", "DONE\nwrapped"],
        reviewer=[FINDING, FINDING, "APPROVED"],
    )
    async with engine_kit(tmp_path, s, policy=POLICY) as kit:
        await kit.say(TASK)
        await kit.settle()
        assert (await kit.task()).status == "closed", kit.roles()
        proceed, revise = await kit.store.outcomes()
        assert (proceed.verdict, proceed.result) == ("PROCEED", NOT_BORNE_OUT)
        assert "another ruling was needed (REVISE at turn" in proceed.detail
        assert (revise.verdict, revise.result) == ("REVISE", BORNE_OUT)


async def test_a_revise_not_satisfied_then_an_escalation_upheld_across_a_restart(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    db = str(tmp_path / "ledger.db")
    s = script(
        [rule("REVISE"), rule("ESCALATE")],
        owner=["DONE\nchanged nothing", "DONE\nstill the same"],
        reviewer=[FINDING, FINDING],
    )
    async with engine_kit(tmp_path, s, policy=POLICY, clock=clock, db=db) as kit:
        await kit.say(TASK)
        await kit.settle()
        assert (await kit.task()).status == "waiting_human"
        revise, escalate = await kit.store.outcomes()
        assert (revise.result, escalate.result) == (NOT_BORNE_OUT, PENDING)
        await kit.say("@tribunal status")
        await kit.settle()
        status = kit.platform.texts()[-1]
        assert "Ruling 1: REVISE: not borne out (another ruling was needed" in status, status
        assert "Ruling 2: ESCALATE: pending" in status
        assert "Rulings in this group: 2 (1 pending) · borne out 0%" in status
        esc_id = await kit.escalation_id()
    clock.advance(120)
    # A new engine on the same store: the row is still there, and the answer settles it.
    rest = {"owner": ["DONE\nrewrote it", "DONE\nwrapped"], "reviewer": ["APPROVED"]}
    async with engine_kit(tmp_path, rest, policy=POLICY, clock=clock, db=db) as kit:
        assert [o.result for o in await kit.store.outcomes()] == [NOT_BORNE_OUT, PENDING]
        await kit.click("choose", f"{esc_id}.2")
        await kit.settle()
        revise, escalate = await kit.store.outcomes()
        assert (escalate.result, escalate.people_s) == (UPHELD, 120.0)
        assert escalate.answer == "option 2: rewrite it with csv"
        assert escalate.detail == "boss chose option 2: rewrite it with csv"
        ledger = await ledger_summary(kit.store)
        assert (ledger.overall.rulings, ledger.overall.settled, ledger.overall.upheld) == (2, 2, 1)
        assert ledger.overall.share_borne_out == 0.5 and ledger.overall.override_rate == 0.0


async def test_an_escalation_answered_in_the_peoples_own_words_is_overridden(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    s = script([rule("ESCALATE")], owner=["DONE\nused a state machine"], reviewer=[])
    async with engine_kit(tmp_path, s, policy=POLICY, clock=clock) as kit:
        await kit.say(TASK)
        await kit.settle()
        clock.advance(30)
        await kit.say("neither: parse it with a state machine", user="boss", mention=False)
        await kit.settle()
        [row] = await kit.store.outcomes()
        assert (row.result, row.people_s) == (OVERRIDDEN, 30.0)
        assert row.answer == "neither: parse it with a state machine"
        ledger = await ledger_summary(kit.store, group="g")
        assert ledger.overall.override_rate == 1.0 and ledger.groups[0].group == "g"
        # A person who may see other groups only (the dashboard) sees none of it, overall too.
        hidden = await ledger_summary(kit.store, among=frozenset({"other"}))
        assert (hidden.groups, hidden.overall.rulings) == ([], 0)


async def test_a_rejected_escalation_is_overridden(tmp_path: Path) -> None:
    s = script([rule("ESCALATE")], owner=[], reviewer=[])
    async with engine_kit(tmp_path, s, policy=POLICY) as kit:
        await kit.say(TASK)
        await kit.settle()
        await kit.click("reject", await kit.escalation_id())
        await kit.settle()
        [row] = await kit.store.outcomes()
        assert row.result == OVERRIDDEN and "rejected" in row.detail


async def test_a_send_back_whose_second_answer_is_complete(tmp_path: Path) -> None:
    s = script(
        [rule("REVISE", conditions=[]), rule("REVISE")],
        owner=["DONE\nkept the last line", "DONE\nwrapped"],
        reviewer=["APPROVED"],
    )
    async with engine_kit(tmp_path, s, policy=POLICY) as kit:
        await kit.say(TASK)
        await kit.settle()
        [row] = await kit.store.outcomes()
        assert (row.verdict, row.result, row.sent_back) == ("REVISE", BORNE_OUT, COMPLETE)


async def test_a_send_back_whose_second_answer_is_incomplete_too(tmp_path: Path) -> None:
    s = script([rule("REVISE", conditions=[]), rule("REVISE", conditions=[])], [], [])
    async with engine_kit(tmp_path, s, policy=POLICY) as kit:
        await kit.say(TASK)
        await kit.settle()
        [row] = await kit.store.outcomes()
        assert (row.verdict, row.result, row.sent_back) == ("ESCALATE", PENDING, INCOMPLETE)


async def test_an_escalation_closed_by_a_stop_is_unanswered(tmp_path: Path) -> None:
    s = script([rule("ESCALATE")], owner=[], reviewer=[])
    async with engine_kit(tmp_path, s, policy=POLICY) as kit:
        await kit.say(TASK)
        await kit.settle()
        await kit.say("@tribunal stop", user="boss")
        await kit.settle()
        [row] = await kit.store.outcomes()
        assert (row.result, row.people_s) == (UNANSWERED, None)
        ledger = await ledger_summary(kit.store)
        assert (ledger.overall.settled, ledger.overall.share_borne_out) == (1, 0.0)
