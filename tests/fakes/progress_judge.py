"""A scripted progress judge for rooms tests (rooms/judge/no_progress.py): an in-process
reference (rooms.references.port.Reference) that answers the progress question from a script,
in order, and any other prompt (the arbiter's reference panel) with a fixed opinion. It records
the questions it was asked."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from rooms.references.port import Answer, ReferenceFailed

QUESTION = "You judge whether a coding pair is making progress"


def says(progress: str, *ids: str) -> str:
    return json.dumps({"progress": progress, "finding_ids": list(ids)})


@dataclass
class ScriptedJudge:
    answers: list[str] = field(default_factory=list)  # "TIMEOUT" hangs, "FAIL" fails
    default: str = says("yes")
    name: str = "judge"
    model: str = "tiny-judge-1"
    timeout_s: float = 5.0
    cost_usd: float = 0.0005
    questions: list[str] = field(default_factory=list)

    async def ask(self, prompt: str, *, timeout: float) -> Answer:
        if not prompt.startswith(QUESTION):
            return Answer("VERDICT: REVISE\nmeet the objections", 50, 10, 0.001)
        self.questions.append(prompt)
        said = self.answers.pop(0) if self.answers else self.default
        if said == "TIMEOUT":
            await asyncio.sleep(3600)
        if said == "FAIL":
            raise ReferenceFailed("HTTP 503: overloaded")
        return Answer(said, 300, 12, self.cost_usd)


@dataclass
class JudgePool:
    """rooms.references.port.ReferencePool with the one judge for every group."""

    judge: ScriptedJudge

    def for_group(self, group: str) -> Sequence[ScriptedJudge]:
        return [self.judge]
