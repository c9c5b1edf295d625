"""A scripted `Runner` (rooms.base.ports.Runner) for engine tests: no process, no model.

Script replies per role; each call takes the next reply of its role, and every call is recorded
with its `RunSpec` so tests can assert on prompts, resume ids, read-only flags and schemas.

    runner = ScriptedRunner({
        "owner": ["DONE\\nimplemented", say("DONE", files={"a.py": "x = 1\\n"})],
        "reviewer": ["CHANGES_REQUESTED\\n- add a test", "APPROVED"],
        "arbiter": [say("", structured={...})],
    })

A reply is a string (the final text) or a `Reply`: progress lines first, then after `delay`
seconds (or once `gate` is set, or never with `hang=True`) the final text or an error event.
`files` are written into the spec's workspace first, as an owner editing the work would.
When a role's script is used up the runner answers with `default[role]` if set, else with an
`agent` error naming the role, so a test that under-scripts fails loudly instead of hanging.

`commands`: a real Runner for the engine's own `command` runs (resolve's tests), e.g. the
LocalBackend with the real command runner (tests/fakes/commands.py): agents are scripted, the
commands really run. Those calls are recorded too.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rooms.base.ports import Runner
from runners.protocol import AGENT, RunEvent, RunSpec


@dataclass
class Reply:
    text: str = ""
    structured: dict[str, Any] | None = None
    error: str | None = None  # set: the turn ends with an error event instead of a final
    error_code: str = "crashed"
    progress: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    files: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    gate: asyncio.Event | None = None
    hang: bool = False
    session: bool = True  # emit a session event
    input_tokens: int = 100
    output_tokens: int = 20
    cost_usd: float = 0.01
    after: tuple[RunEvent, ...] = ()  # events after the terminal one (a forger's, a backend's)


def say(text: str, **kw: Any) -> Reply:
    return Reply(text=text, **kw)


def fail(code: str, text: str, **kw: Any) -> Reply:
    return Reply(error=text, error_code=code, **kw)


def hang(**kw: Any) -> Reply:
    return Reply(hang=True, **kw)


@dataclass
class Call:
    index: int
    spec: RunSpec
    reply: Reply
    started: asyncio.Event = field(default_factory=asyncio.Event)
    finished: bool = False
    cancelled: bool = False

    @property
    def role(self) -> str:
        return self.spec.request.role

    @property
    def prompt(self) -> str:
        return self.spec.request.prompt

    @property
    def task_turn(self) -> tuple[str, str]:
        """(task id, turn seq) as the engine labels the run in its environment."""
        return self.spec.env.get("TRIBUNAL_TASK", ""), self.spec.env.get("TRIBUNAL_TURN", "")


Script = Mapping[str, Sequence[Reply | str]]


class ScriptedRunner:
    def __init__(
        self,
        script: Script | None = None,
        *,
        default: dict[str, Reply | str] | None = None,
        decide: Callable[[RunSpec], Reply | str | None] | None = None,
        commands: Runner | None = None,
    ) -> None:
        self.script: dict[str, list[Reply]] = {
            role: [_reply(r) for r in replies] for role, replies in (script or {}).items()
        }
        self.default = {role: _reply(r) for role, r in (default or {}).items()}
        self.decide = decide  # consulted first: a reply for this spec, or None for the script
        self.commands = commands
        self.calls: list[Call] = []
        self._changed = asyncio.Condition()

    def add(self, role: str, *replies: Reply | str) -> None:
        self.script.setdefault(role, []).extend(_reply(r) for r in replies)

    def calls_for(self, role: str) -> list[Call]:
        return [c for c in self.calls if c.role == role]

    async def wait_calls(self, n: int, timeout: float = 10.0) -> Call:
        """Wait until at least `n` calls have started; returns the n-th."""
        async with asyncio.timeout(timeout):
            async with self._changed:
                await self._changed.wait_for(lambda: len(self.calls) >= n)
        return self.calls[n - 1]

    def _next(self, spec: RunSpec) -> Reply:
        if self.decide is not None:
            decided = self.decide(spec)
            if decided is not None:
                return _reply(decided)
        role = spec.request.role
        queue = self.script.get(role, [])
        if queue:
            return queue.pop(0)
        if role in self.default:
            return self.default[role]
        return fail(AGENT, f"the test script has no more replies for the {role}")

    async def run(self, spec: RunSpec) -> AsyncIterator[RunEvent]:
        if spec.agent == "command" and self.commands is not None:
            async for event in self._real(spec):
                yield event
            return
        reply = self._next(spec)
        call = Call(len(self.calls) + 1, spec, reply)
        self.calls.append(call)
        async with self._changed:
            self._changed.notify_all()
        call.started.set()
        try:
            async for event in _events(call):
                yield event
        except (asyncio.CancelledError, GeneratorExit):
            call.cancelled = True
            raise
        finally:
            call.finished = True

    async def _real(self, spec: RunSpec) -> AsyncIterator[RunEvent]:
        assert self.commands is not None
        call = Call(len(self.calls) + 1, spec, Reply(text="(run for real)"))
        self.calls.append(call)
        async with self._changed:
            self._changed.notify_all()
        call.started.set()
        events = self.commands.run(spec)
        try:
            async for event in events:
                yield event
        finally:
            call.finished = True
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()


async def _events(call: Call) -> AsyncIterator[RunEvent]:
    reply, spec = call.reply, call.spec
    if reply.session:
        yield RunEvent(kind="session", session_id=f"sess-{spec.request.role}-{call.index}")
    for text in reply.progress:
        yield RunEvent(kind="progress", text=text)
    for tool in reply.tools:
        yield RunEvent(kind="tool", tool=tool, text=f"{tool} input")
    if reply.files and spec.workspace:
        for rel, content in reply.files.items():
            path = os.path.join(spec.workspace, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(content)
    if reply.hang:
        await asyncio.Event().wait()  # until cancelled, like an agent that never answers
    if reply.gate is not None:
        await reply.gate.wait()
    if reply.delay:
        await asyncio.sleep(reply.delay)
    yield RunEvent(
        kind="usage",
        input_tokens=reply.input_tokens,
        output_tokens=reply.output_tokens,
        cost_usd=reply.cost_usd,
    )
    if reply.error is not None:
        yield RunEvent(kind="error", code=reply.error_code, text=reply.error)
    else:
        yield RunEvent(kind="final", text=reply.text, structured=reply.structured)
    for event in reply.after:
        yield event


def _reply(r: Reply | str) -> Reply:
    return Reply(text=r) if isinstance(r, str) else r
