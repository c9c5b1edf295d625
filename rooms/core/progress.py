"""One progress message per turn, edited in place as the agent works (DESIGN §7).

Delivered straight to the platform, not through the outbox: progress is ephemeral, so losing an
edit costs nothing, while queueing every edit behind the outbox would only delay the real posts.
Best effort: a platform error never fails a turn. Edits are throttled so a chatty agent does not
run into the platform's rate limits, except the first one after a wait: a turn the backend
queued (no runner slot free, a `queued` event) shows why it waits, and stops showing it as soon
as it starts.

A finished turn whose output is posted on its own (the pair's) has its progress message removed
where the platform can: one message per turn. Elsewhere, and for a failed or interrupted turn,
the message is edited to say how the turn ended.

That last edit is not best effort: a message that says "working" after its turn ended lies. The
message's id is kept on the turn (rooms/store/progress_rows.py) until its final edit (marked
`final`, which the platforms never coalesce away) went through; whatever is still kept when the
engine starts, or takes over a task, is edited then (`close_open_progress`): after a crash, a
stop, or an edit the platform refused, every progress message ends finished, failed or
interrupted.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from rooms.base.model import Outbound, RoomRef
from rooms.base.ports import Platform
from rooms.store.progress_rows import OpenProgress, ProgressStore

log = logging.getLogger(__name__)
MIN_EDIT_INTERVAL_S = 1.0
_LINE_LIMIT = 300
FINISHED, FAILED, INTERRUPTED = "finished", "failed", "was interrupted"
_BY_STATUS = {"done": FINISHED, "failed": FAILED, "interrupted": INTERRUPTED}


def removes_progress(protocol: object) -> bool:
    """Whether a finished turn of `protocol` has its output posted on its own (the pair's
    `posts_each_turn`), so that its progress message goes: one message per turn. A failed or
    interrupted turn's message stays, saying so; so does a deliberation's (its phase posts
    sum its runs up, and the message is the one trace of each run)."""
    return bool(getattr(protocol, "posts_each_turn", False))


Remember = Callable[[str | None], Awaitable[None]]  # the message id, None once it is final


def final_text(role: str, seq: int, outcome: str, steps: int | None = None) -> str:
    """The last text of a turn's progress message: how the turn ended."""
    counted = f", {steps} steps" if steps is not None else ""
    return f"{role} {outcome} (turn {seq}{counted})"


class Progress:
    def __init__(
        self,
        platform: Platform,
        room: RoomRef,
        role: str,
        seq: int,
        remember: Remember | None = None,
        *,
        remove_when_finished: bool = False,
    ) -> None:
        self._platform = platform
        self._remove_when_finished = remove_when_finished
        self._room = room
        self._role = role
        self._seq = seq
        self._remember = remember
        self._message_id: str | None = None
        self._failed = False
        self._last_at = 0.0
        self._last_text = ""
        self._queued = False  # the message says the turn waits: the next update replaces it
        self.steps = 0

    async def queued(self, line: str) -> None:
        """The turn waits to start (the backend's `queued` event); not a step of its own."""
        self._queued = True
        await self._send(f"⏳ {self._role} is waiting (turn {self._seq}): {_one_line(line)}")

    async def update(self, line: str) -> None:
        self.steps += 1
        text = f"⏳ {self._role} is working (turn {self._seq}): {_one_line(line)}"
        throttled = time.monotonic() - self._last_at < MIN_EDIT_INTERVAL_S
        if throttled and self._message_id and not self._queued:
            return
        self._queued = False
        await self._send(text)

    async def finish(self, outcome: str) -> None:
        """End the message: removed when the turn finished and its output is posted on its own
        (`remove_when_finished`: one message per turn), else edited to say how the turn ended;
        once that went through, forget it. Raises nothing: a final edit that fails is
        made again at the engine's next start."""
        if self._message_id is None:
            return  # no progress was shown: nothing to close
        text = final_text(self._role, self._seq, outcome, self.steps)
        message = Outbound(
            self._room,
            text,
            persona=self._role,
            edit_of=self._message_id,
            final=True,
            remove=self._remove_when_finished and outcome == FINISHED,
        )
        try:
            await self._platform.deliver(message)
            if self._remember is not None:
                await self._remember(None)
        except Exception as exc:
            log.warning("final progress edit in %s failed: %s", self._room.key, exc)

    async def _send(self, text: str) -> None:
        if self._failed or text == self._last_text:
            return
        self._last_at = time.monotonic()
        self._last_text = text
        message = Outbound(self._room, text, persona=self._role, edit_of=self._message_id)
        try:
            delivered = await self._platform.deliver(message)
        except Exception as exc:  # best effort: progress must never fail a turn
            log.warning("progress update in %s failed: %s", self._room.key, exc)
            self._failed = self._message_id is None  # edits may work again; a first post not
            return
        if self._message_id is None:
            self._message_id = delivered
            # A platform that returns no id cannot edit: stop rather than post a new line each time.
            self._failed = delivered is None
            if delivered is not None and self._remember is not None:
                try:
                    await self._remember(delivered)
                except Exception as exc:  # the store: the message is only not closed after a crash
                    log.warning("recording the progress message in %s failed: %s", self._room, exc)


async def close_open_progress(
    store: ProgressStore,
    platform: Platform,
    *,
    task_id: int | None = None,
    serves: Callable[[RoomRef], bool] = lambda room: True,
    removes: Callable[[str], bool] = lambda protocol: False,
) -> int:
    """Edit every progress message whose turn has ended but which does not say so (of one task,
    or of every room this process serves) to its final state; remove it instead when its turn
    finished and `removes` says so of the task's protocol (by name). Returns how many."""
    closed = 0
    for open_ in await store.open_progress(task_id):
        if not serves(open_.room):
            continue
        if await _close(store, platform, open_, removes):
            closed += 1
    return closed


async def _close(
    store: ProgressStore, platform: Platform, p: OpenProgress, removes: Callable[[str], bool]
) -> bool:
    outcome = _BY_STATUS.get(p.status, INTERRUPTED)
    text = final_text(p.role, p.seq, outcome)
    remove = outcome == FINISHED and removes(p.protocol)
    message = Outbound(
        p.room,
        text,
        persona=p.role,
        edit_of=p.message_id,
        final=True,
        remove=remove,
    )
    try:
        await platform.deliver(message)
    except Exception as exc:  # a deleted message, a platform down: tried again next start
        log.warning("closing the progress message of turn %s failed: %s", p.turn_id, exc)
        return False
    await store.set_progress_message(p.turn_id, None)
    return True


def _one_line(line: str) -> str:
    return " ".join(line.split())[:_LINE_LIMIT]
