"""A scripted runner that models an agent's session, for measuring what each turn reads.

Claude Code and Codex keep a session per conversation: a resumed run reads everything the
session holds (its earlier prompts and answers) and then the new prompt. `SessionModelRunner`
answers from a script like `ScriptedRunner` and counts, per run, the characters the model would
read: system prompt + held session + prompt (tokens ≈ characters / 4, the usual estimate for
English and code). A resumed run's new session holds the old one plus this prompt and answer.

`long_task(rounds)` is a task of `rounds` review rounds: the reviewer finds a new problem each
time (so no deadlock detector fires) and approves in the last one; each answer is about
`answer_chars` long.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from runners.protocol import RunEvent, RunSpec

CHARS_PER_TOKEN = 4
_WORDS = [
    "parser",
    "buffer",
    "line",
    "offset",
    "token",
    "stream",
    "reader",
    "config",
    "value",
    "section",
    "key",
    "default",
    "error",
    "branch",
    "test",
    "case",
    "input",
    "output",
    "empty",
    "trailing",
    "newline",
    "unicode",
    "escape",
    "quote",
    "comment",
    "header",
]


@dataclass
class Read:
    role: str
    resumed: bool
    chars: int
    # The leading part of this request that an earlier request already sent as its own leading
    # part (what a prompt cache can serve): a resumed run's whole previous request; a fresh
    # run's system prompt, once its role has sent it before.
    cached: int = 0

    @property
    def tokens(self) -> int:
        return self.chars // CHARS_PER_TOKEN


def _prose(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < chars:
        words.append(rng.choice(_WORDS))
    return " ".join(words)


def long_task(rounds: int, answer_chars: int = 1500, seed: int = 1) -> dict[str, list[str]]:
    rng = random.Random(seed)
    owner = [f"DONE\nround {i}: {_prose(rng, answer_chars)}" for i in range(1, rounds + 1)]
    owner.append(f"DONE\nwrapped up: {_prose(rng, 200)}")
    reviewer = [
        f"CHANGES_REQUESTED\n- F{i}: {_prose(rng, answer_chars)}" for i in range(1, rounds)
    ] + ["APPROVED\nall findings are resolved"]
    return {"owner": owner, "reviewer": reviewer}


@dataclass
class SessionModelRunner:
    script: dict[str, list[str]]
    held: dict[str, int] = field(default_factory=dict)  # session id -> characters it holds
    sent: dict[str, int] = field(default_factory=dict)  # session id -> its last request's size
    systems: set[str] = field(default_factory=set)  # system prompts sent before
    reads: list[Read] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)

    async def run(self, spec: RunSpec) -> AsyncIterator[RunEvent]:
        request = spec.request
        role = request.role
        answer = self.script[role].pop(0) if self.script.get(role) else "DONE"
        resume = request.resume_session_id
        if resume is not None and resume in self.held:
            chars = self.held[resume] + len(request.prompt)  # the session, then the new prompt
            cached = self.sent[resume]
        else:
            system = request.system_prompt or ""
            chars = len(system) + len(request.prompt)
            cached = len(system) if system in self.systems else 0
            self.systems.add(system)
        self.reads.append(Read(role, resume is not None, chars, cached))
        self.prompts.append(request.prompt)
        self.answers.append(answer)
        session = f"sess-{role}-{len(self.reads)}"
        self.held[session] = chars + len(answer)
        self.sent[session] = chars
        yield RunEvent(kind="session", session_id=session)
        yield RunEvent(kind="usage", input_tokens=chars // CHARS_PER_TOKEN, output_tokens=1)
        yield RunEvent(kind="final", text=answer)


def transcript_baseline(
    task: str, system: dict[str, str], runs: list[Read], outputs: list[str]
) -> list[int]:
    """What each of the same runs would read if every turn resent the whole transcript: system
    prompt, task, and every earlier answer (characters)."""
    out, before = [], len(task)
    for run, answer in zip(runs, outputs, strict=True):
        out.append(len(system.get(run.role, "")) + before)
        before += len(answer)
    return out
