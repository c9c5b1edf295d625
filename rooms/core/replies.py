"""Tribunal's own answer to a person's message or click (a command's reply, a refusal, the help):
one outbox message in the room, for their eyes only where asked and the platform can.

The answer is enqueued with the event it answers (the same transaction records the event as
seen), so a redelivered event is dropped with its reply: nothing to retry.
"""

from __future__ import annotations

import uuid

from rooms.base.model import GroupPolicy, Inbound
from rooms.base.records import OutboxDraft
from rooms.core.context import Ctx


async def reply(
    ctx: Ctx, inbound: Inbound, policy: GroupPolicy, text: str, *, private: bool = False
) -> bool:
    """Answer the person in the room; `private`: for their eyes only where the platform can.
    True: the inbound event is handled (the callers' "done")."""
    key = f"event:{inbound.event_id}" if inbound.event_id else f"reply:{uuid.uuid4().hex}"
    draft = OutboxDraft(
        key=key,
        room=inbound.room,
        text=text,
        private_to=inbound.user if private else None,
        in_reply_to=inbound.event_id or None,
    )
    await ctx.store.enqueue(
        [draft], ctx.now(), group=policy.name, event_id=inbound.event_id or None
    )
    return True
