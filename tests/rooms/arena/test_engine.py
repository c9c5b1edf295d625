"""The arena through the real engine and store with scripted runners: the synthesis file in the
workspace with every section, a silent expert, and a reported failure."""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rooms.arena.synthesis import SECTIONS
from rooms.base.model import AgentConfig, GroupPolicy
from rooms.base.words import CLOSED
from runners.protocol import RunSpec
from tests.fakes.engine_kit import engine_kit
from tests.fakes.runner import Reply, ScriptedRunner, fail, say
from tests.rooms.arena import scripts
from tests.rooms.arena.scripts import SLUGS
from tests.rooms.test_engine_arbitration import BLOCKED, ruling

QUESTION = "@tribunal arena Should billing move to a queue?"


def arena_runner(expert: Callable[[str, str], Any]) -> ScriptedRunner:
    """Replies by role: the moderator's panel, researchers' findings, `expert(slug, prompt)`."""

    def decide(spec: RunSpec) -> Reply | str | None:
        role, prompt = spec.request.role, spec.request.prompt
        if role == "moderator":
            return say(json.dumps(scripts.panel()))
        if role == "synthesizer":
            return say("", structured=scripts.narrative())
        if role.startswith("researcher:"):
            return say(f"findings of {role}: the billing module writes synchronously")
        if role.startswith("expert:"):
            got = expert(role.removeprefix("expert:"), prompt)
            return got if isinstance(got, Reply) else say(json.dumps(got))
        return None

    return ScriptedRunner(decide=decide)


def converging(slug: str, prompt: str) -> Any:
    return scripts.final() if "Since your last turn" in prompt else scripts.msg()


async def test_an_arena_from_the_command_to_the_saved_synthesis(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    policy = GroupPolicy(name="g", workspace=str(workspace), approvers=frozenset({"boss"}))
    async with engine_kit(tmp_path, policy=policy, runner=arena_runner(converging)) as kit:
        await kit.say(QUESTION)
        await kit.settle(60)
        task = await kit.task()
        assert (task.protocol, task.status) == ("arena", CLOSED)
        roles = kit.roles()
        assert roles[:4] == ["moderator", "researcher:1", "researcher:2", "researcher:3"]
        assert roles[4:] == [f"expert:{s}" for s in SLUGS] * 2 + ["synthesizer"]
        (saved,) = (workspace / "docs" / "arena").iterdir()
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}-queue-or-not\.md", saved.name)
        doc = saved.read_text()
        assert re.findall(r"^## (.+)$", doc, flags=re.MULTILINE) == list(SECTIONS)
        texts = kit.platform.texts()
        assert texts[0].startswith("🏟️ Arena opened by alice")
        assert any(t.startswith("🏟️ **Expert arena:**") and "devil’s advocate" in t for t in texts)
        assert any(t.startswith("🏟️ **Arena concluded.**") and "docs/arena/" in t for t in texts)
        personas = {p.message.persona for p in kit.platform.messages()}
        assert set(SLUGS) <= personas  # each expert speaks under its own name
        expert_spec = kit.runner.calls_for("expert:skeptic")[0].spec
        assert expert_spec.request.read_only
        assert "devil's advocate" in expert_spec.request.prompt


async def test_a_silent_expert_is_nudged_twice_then_left_out(tmp_path: Path) -> None:
    def auditor_silent(slug: str, prompt: str) -> Any:
        if slug == "security-auditor":
            return fail("crashed", "the container did not start")
        return scripts.final() if "Round 4 of" in prompt else scripts.msg()

    async with engine_kit(tmp_path, runner=arena_runner(auditor_silent)) as kit:
        await kit.say(QUESTION)
        await kit.settle(60)
        assert (await kit.task()).status == CLOSED
        assert len(kit.runner.calls_for("expert:security-auditor")) == 3  # then left out
        texts = kit.platform.texts()
        assert sum(t.startswith("👋 Security Auditor") for t in texts) == 2
        record = next((tmp_path / "data" / "decisions").iterdir()).read_text()
        assert "Security Auditor (silent after 2 nudges)" in record


async def test_fewer_than_two_experts_is_a_reported_failure(tmp_path: Path) -> None:
    def three_fail(slug: str, prompt: str) -> Any:
        return scripts.msg() if slug == "fleet-operator" else fail("crashed", "no model")

    async with engine_kit(tmp_path, runner=arena_runner(three_fail)) as kit:
        await kit.say(QUESTION)
        await kit.settle(60)
        assert (await kit.task()).status == CLOSED
        assert any("The arena failed: only 1 expert(s) left" in t for t in kit.platform.texts())


async def test_a_second_arena_on_the_same_topic_does_not_overwrite_the_first(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    policy = GroupPolicy(name="g", workspace=str(workspace), approvers=frozenset({"boss"}))
    async with engine_kit(tmp_path, policy=policy, runner=arena_runner(converging)) as kit:
        for _ in range(2):
            await kit.say(QUESTION)
            await kit.settle(60)
        saved = sorted(p.name for p in (workspace / "docs" / "arena").iterdir())
        assert (
            len(saved) == 2
            and saved[1].endswith("-queue-or-not.md")
            and "-2" in saved[0] + saved[1]
        )
        notes = [
            t
            for t in kit.platform.texts()
            if t.startswith("📄 Saved in the workspace: docs/arena/")
        ]
        assert len(notes) == 2 and notes[0] != notes[1]


async def test_without_a_workspace_the_room_is_told_where_the_synthesis_is(tmp_path: Path) -> None:
    async with engine_kit(tmp_path, runner=arena_runner(converging)) as kit:
        await kit.say(QUESTION)
        await kit.settle(60)
        texts = kit.platform.texts()
        assert any(t.startswith("No workspace is set for this group") for t in texts)
        assert any(t.startswith("📄 Decision record:") for t in texts)


def veto(withdraw: bool) -> Callable[[str, str], Any]:
    def expert(slug: str, prompt: str) -> Any:
        rnd = int(prompt.rsplit("Round ", 1)[1].split(" ", 1)[0])
        if slug != "skeptic":
            return scripts.msg() if rnd == 1 else scripts.final()
        if rnd == 1:
            return scripts.msg(stance="Do not add a queue")
        if rnd == 2:
            return scripts.final("No queue", veto="raise", veto_reason="it hides back-pressure")
        return scripts.msg("response", "A bounded queue", veto="withdraw" if withdraw else "none")

    return expert


async def test_a_standing_veto_is_recorded_as_dissent(tmp_path: Path) -> None:
    async with engine_kit(tmp_path, runner=arena_runner(veto(withdraw=False))) as kit:
        await kit.say(QUESTION)
        await kit.settle(60)
        texts = kit.platform.texts()
        assert any(
            t.startswith("✋ The devil's advocate's veto is put to the whole panel") for t in texts
        )
        assert len(kit.runner.calls_for("expert:fleet-operator")) == 3  # finals answer the veto too
        record = next((tmp_path / "data" / "decisions").iterdir()).read_text()
        assert "Standing veto of the devil's advocate (dissent): it hides back-pressure" in record


async def test_a_withdrawn_veto_leaves_no_dissent(tmp_path: Path) -> None:
    async with engine_kit(tmp_path, runner=arena_runner(veto(withdraw=True))) as kit:
        await kit.say(QUESTION)
        await kit.settle(60)
        record = next((tmp_path / "data" / "decisions").iterdir()).read_text()
        assert "dissent" not in record.lower()
        assert "the veto was withdrawn" in record


async def test_the_arenas_actors_run_the_deliberation_agent_and_the_pairs_arbiter_its_own(
    tmp_path: Path,
) -> None:
    policy = GroupPolicy(
        name="g",
        approvers=frozenset({"boss"}),
        arbiter=AgentConfig("claude", "arbiter-model"),
        deliberation=AgentConfig("codex", "panel-model"),
    )
    runner = arena_runner(converging)
    runner.add("owner", BLOCKED)
    runner.add("arbiter", ruling("ESCALATE", question="May we?", options=["yes", "no"]))
    async with engine_kit(tmp_path, policy=policy, runner=runner) as kit:
        await kit.say(QUESTION)
        await kit.settle(60)
        assert (await kit.task()).status == CLOSED
        arena = list(kit.runner.calls)
        expert = kit.runner.calls_for("expert:skeptic")[0].spec
        assert (expert.agent, expert.request.model) == ("codex", "panel-model")
        assert {(c.spec.agent, c.spec.request.model) for c in arena} == {("codex", "panel-model")}
        await kit.say("@tribunal add integration tests")  # a pair task in the same group
        await kit.settle()
        (arbiter,) = kit.runner.calls_for("arbiter")
        assert (arbiter.spec.agent, arbiter.spec.request.model) == ("claude", "arbiter-model")
        (owner,) = kit.runner.calls_for("owner")
        assert (owner.spec.agent, owner.spec.request.model) == ("claude", None)


async def test_the_record_and_the_synthesis_are_written_atomically_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both files take their name in one step (rename or link of a finished temporary file, in
    rooms/work/files.py), in a worker thread: a slow disk does not stall the engine's loop."""
    renamed: list[tuple[str, threading.Thread]] = []
    real_replace, real_link = os.replace, os.link

    def replace(src: Any, dst: Any, **kw: Any) -> None:
        renamed.append((str(dst), threading.current_thread()))
        real_replace(src, dst, **kw)

    def link(src: Any, dst: Any, **kw: Any) -> None:
        renamed.append((str(dst), threading.current_thread()))
        real_link(src, dst, **kw)

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "link", link)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    policy = GroupPolicy(name="g", workspace=str(workspace), approvers=frozenset({"boss"}))
    async with engine_kit(tmp_path, policy=policy, runner=arena_runner(converging)) as kit:
        await kit.say(QUESTION)
        await kit.settle(60)
        assert (await kit.task()).status == CLOSED
    (record,) = (tmp_path / "data" / "decisions").iterdir()
    (saved,) = (workspace / "docs" / "arena").iterdir()
    ours = {dst: thread for dst, thread in renamed if dst in (str(record), str(saved))}
    assert set(ours) == {str(record), str(saved)}
    assert threading.main_thread() not in ours.values()
