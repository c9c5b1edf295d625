"""Reference opinions and fair input through the real engine and store (DESIGN §5), with a
scripted arbiter and in-process references (the SDK clients against fake APIs are tested in
tests/bot/references)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from rooms.base.model import GroupPolicy, Thresholds
from rooms.references.section import VENDOR_NAMES
from runners.protocol import RunSpec
from tests.fakes.engine_kit import engine_kit
from tests.fakes.references import FakeReference, StaticReferences, panel_of
from tests.fakes.rulings import ruling_reply
from tests.fakes.runner import Reply, ScriptedRunner

BLOCKED = "BLOCKED: I need the staging API key to run the integration tests."
FINDING = "CHANGES_REQUESTED\n- the parser drops the last line of the file"
POLICY = GroupPolicy(name="g", approvers=frozenset({"boss"}))


def ruling(verdict: str, **fields: Any) -> Reply:
    conditions = ["mock the API"] if verdict == "REVISE" else []
    return ruling_reply(verdict, **{"conditions": conditions, **fields})


def three_references() -> list[FakeReference]:
    return panel_of(
        FakeReference(
            "second-opinion",
            "claude-zeta-9",
            answer="VERDICT: REVISE\nAs Claude I say: mock the API in the tests.",
            delay_s=0.05,
            tokens=(700, 50),
            cost_usd=0.004,
        ),
        FakeReference("flaky", "gpt-9o-mini", fail="HTTP 500: the model is overloaded"),
        FakeReference("sleepy", "acme-large-2", delay_s=30, timeout_s=0.3),
    )


async def test_three_references_one_late_one_failing_the_ruling_reads_the_third(
    tmp_path: Path,
) -> None:
    refs = three_references()
    script = {
        "owner": [BLOCKED, "DONE\nmocked the API", "DONE\nwrapped"],
        "arbiter": [ruling("REVISE", references_cited=["R1"])],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script, references=StaticReferences(refs)) as kit:
        await kit.say("@tribunal add integration tests")
        await kit.settle()
        assert kit.roles() == ["owner", "arbiter", "owner", "reviewer", "owner"]
        arbiter = kit.runner.calls[1]
        prompt = arbiter.prompt
        assert "## Reference opinions" in prompt and "### R1" in prompt and "R2" not in prompt
        assert "mock the API in the tests" in prompt
        everything = (prompt + arbiter.spec.request.system_prompt).lower()
        for ref in refs:
            assert ref.name not in everything and ref.model not in everything
        for vendor in VENDOR_NAMES:
            assert not re.search(rf"(?<![a-z0-9]){re.escape(vendor)}(?![a-z0-9])", everything), (
                vendor
            )
        # Each reference was asked once, with the arbiter's context and not the workspace.
        assert all(len(r.prompts) == 1 for r in refs)
        assert "staging API key" in refs[0].prompts[0]
        assert "## Reference opinions" not in refs[0].prompts[0]

        [verdict] = await kit.store.verdicts(1)
        assert verdict.ruling.references_cited == ["R1"]
        assert verdict.tally is not None and verdict.tally["counts"] == {"REVISE": 1}
        panel = await kit.store.panel(verdict.panel_id or 0)
        assert panel is not None
        errors = {o.name: o.error for o in panel.opinions}
        assert errors == {
            "second-opinion": None,
            "flaky": "HTTP 500: the model is overloaded",
            "sleepy": "timed out after 0.3 s",
        }
        answered = next(o for o in panel.opinions if o.answered)
        assert (answered.input_tokens, answered.output_tokens, answered.cost_usd) == (
            700,
            50,
            0.004,
        )
        assert answered.latency_s > 0
        # The room sees the references under the ruling, one line each, with their names.
        posted = next(t for t in kit.platform.texts() if t.startswith("⚖️ Ruling: REVISE"))
        assert "- R1 second-opinion (claude-zeta-9): REVISE" in posted
        assert "- flaky (gpt-9o-mini): HTTP 500: the model is overloaded" in posted
        assert "- sleepy (acme-large-2): timed out after 0.3 s" in posted
        # The decision record: label, model, verdict, excerpt, the seed.
        record = Path(verdict.record_path or "").read_text()
        assert f"Seed {panel.seed}" in record
        assert "| R1 | second-opinion | claude-zeta-9 | REVISE | 700/50 |" in record
        assert "**flaky** dropped: HTTP 500" in record
        task = await kit.task()
        assert task.tokens >= 750  # the references' tokens count toward the task


async def test_status_shows_the_references_of_the_last_ruling(tmp_path: Path) -> None:
    refs = three_references()
    script = {
        "owner": [BLOCKED],
        "arbiter": [ruling("ESCALATE", question="Which key?", options=["staging", "none"])],
    }
    async with engine_kit(tmp_path, script, references=StaticReferences(refs)) as kit:
        await kit.say("@tribunal add integration tests")
        await kit.settle()
        await kit.say("@tribunal status")
        await kit.settle()
        status = kit.platform.texts()[-1]
        assert "References at the last ruling: REVISE 1 · seed " in status
        assert "second-opinion (claude-zeta-9): REVISE · 750 tokens · $0.0040" in status
        assert "flaky (gpt-9o-mini): dropped (HTTP 500: the model is overloaded)" in status


def unanimous() -> list[FakeReference]:
    return panel_of(
        FakeReference("a", "model-a", answer="VERDICT: REVISE\nmock the API"),
        FakeReference("b", "model-b", answer="VERDICT: REVISE\nthe key is not needed"),
    )


async def test_overruling_a_unanimous_tally_needs_a_reason_which_the_ruling_carries(
    tmp_path: Path,
) -> None:
    script = {
        "owner": [BLOCKED, "DONE\nwrapped"],
        "arbiter": [
            ruling("PROCEED", reasons="the tests pass without the key"),
            ruling(
                "PROCEED",
                reasons="the tests pass without the key",
                override_reason="both references assumed the key is needed; the log says not",
            ),
        ],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script, references=StaticReferences(unanimous())) as kit:
        await kit.say("@tribunal add integration tests")
        await kit.settle()
        arbiters = kit.runner.calls_for("arbiter")
        assert len(arbiters) == 2  # the first, without a reason, was sent back once
        assert "unanimous for REVISE" in arbiters[0].prompt
        assert "override_reason" in arbiters[1].prompt and "sent back" in arbiters[1].prompt
        [verdict] = await kit.store.verdicts(1)
        assert verdict.ruling.verdict == "PROCEED"
        assert verdict.ruling.override_reason.startswith("both references assumed")
        posted = next(t for t in kit.platform.texts() if t.startswith("⚖️ Ruling: PROCEED"))
        assert "Overrules the references' unanimous REVISE: both references assumed" in posted
        # The ruling card says so too, with the references one line each.
        [card] = [
            p.message.card
            for p in kit.platform.messages()
            if p.message.card is not None and p.message.card.kind == "ruling"
        ]
        sections = dict(card.sections)
        assert sections["Overrules the references"].startswith("both references assumed")
        [listed] = [body for heading, body in card.sections if heading.startswith("References")]
        assert sorted(line[:5] for line in listed.splitlines()) == ["- R1 ", "- R2 "]
        assert "a (model-a): REVISE" in listed and "b (model-b): REVISE" in listed
        record = Path(verdict.record_path or "").read_text()
        assert "Overrules the references' unanimous REVISE" in record


async def test_a_ruling_citing_a_label_that_does_not_exist_is_sent_back_once(
    tmp_path: Path,
) -> None:
    script = {
        "owner": [BLOCKED, "DONE\nmocked", "DONE\nwrapped"],
        "arbiter": [
            ruling("REVISE", references_cited=["R1", "R7"]),
            ruling("REVISE", references_cited=["R9"]),
        ],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script, references=StaticReferences(unanimous())) as kit:
        await kit.say("@tribunal add integration tests")
        await kit.settle()
        arbiters = kit.runner.calls_for("arbiter")
        assert len(arbiters) == 2  # sent back once, not twice
        assert "R7" in arbiters[1].prompt and "the labels are: R1, R2" in arbiters[1].prompt
        # The panel was asked once for the arbitration, not again for the second reading.
        [verdict] = await kit.store.verdicts(1)
        assert verdict.ruling.verdict == "REVISE"
        assert verdict.ruling.references_cited == []  # the labels that do not exist are dropped


def first_position_judge(spec: RunSpec) -> Reply | None:
    """An arbiter that always sides with whichever position it reads first (Position A)."""
    if spec.request.role != "arbiter":
        return None
    prompt = spec.request.prompt
    proceed = re.search(r"PROCEED sides with Position ([AB])", prompt)
    assert proceed is not None, "the arbiter must see the positions"
    return ruling("PROCEED") if proceed.group(1) == "A" else ruling("REVISE")


async def _stuck_pair(tmp_path: Path, task: str, **script: list[str]) -> Any:
    # The swap check is on by default (POLICY does not set it).
    policy = replace(POLICY, thresholds=Thresholds(repeated_findings_rounds=1, round_cap=20))
    runner = ScriptedRunner(
        {
            "owner": ["DONE\nparser written", "DONE\nkept the parser", *script.get("owner", [])],
            "reviewer": [FINDING, FINDING, *script.get("reviewer", [])],
        },
        decide=first_position_judge,
    )
    return engine_kit(tmp_path, policy=policy, runner=runner), task


async def test_swap_check_with_a_first_position_judge_finds_no_winner_reversible(
    tmp_path: Path,
) -> None:
    kit_cm, task = await _stuck_pair(
        tmp_path,
        "@tribunal write a config parser",
        owner=["DONE\nfixed", "DONE\nwrapped"],
        reviewer=["APPROVED"],
    )
    async with kit_cm as kit:
        await kit.say(task)
        await kit.settle()
        arbiters = kit.runner.calls_for("arbiter")
        assert len(arbiters) == 2
        first, second = (
            re.search(r"PROCEED sides with Position ([AB])", a.prompt) for a in arbiters
        )
        assert first and second and first.group(1) != second.group(1)  # the order was swapped
        [verdict] = await kit.store.verdicts(1)
        assert verdict.ruling.verdict == "REVISE"  # the tie rule: the cautious option
        assert "tie rule" in verdict.ruling.reasons
        assert verdict.fairness is not None and verdict.fairness["swap"].startswith("swap check")


async def test_swap_check_with_a_first_position_judge_escalates_an_irreversible_change(
    tmp_path: Path,
) -> None:
    kit_cm, task = await _stuck_pair(tmp_path, "@tribunal deploy the parser to production")
    async with kit_cm as kit:
        await kit.say(task)
        await kit.settle()
        assert len(kit.runner.calls_for("arbiter")) == 2
        [verdict] = await kit.store.verdicts(1)
        assert verdict.ruling.verdict == "ESCALATE"
        assert (await kit.task()).status == "waiting_human"


async def test_the_arbiter_reads_positions_a_and_b_with_roles_masked(tmp_path: Path) -> None:
    kit_cm, task = await _stuck_pair(
        tmp_path,
        "@tribunal write a config parser",
        owner=["DONE\nfixed", "DONE\nwrapped"],
        reviewer=["APPROVED"],
    )
    async with kit_cm as kit:
        await kit.say(task)
        await kit.settle()
        prompt = kit.runner.calls_for("arbiter")[0].prompt
        positions = prompt.split("## The positions")[1].split("\n## ")[0]
        assert "### Position A" in positions and "### Position B" in positions
        assert "owner" not in positions.lower() and "reviewer" not in positions.lower()
        assert "the parser drops the last line" in positions
        [verdict] = await kit.store.verdicts(1)
        assert verdict.fairness is not None
        assert verdict.fairness["first"] in ("owner", "reviewer")
        assert isinstance(verdict.fairness["seed"], int)
