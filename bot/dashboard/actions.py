"""The dashboard's actions, each through the engine's own path, as the signed-in person:

- answer an open question (Approve / Reject / option N / a written answer): the same `Inbound`
  a click on the card's button (or a reply in the thread) makes, so the engine checks the
  group's approver rules again, records the answer, and edits the card in the thread;
- stop a task: `stop` in chat for a person (the engine checks `may_stop`), the engine's
  `stop_task` for the operator;
- call the arbiter: `arbitrate [note]` in chat.

Each is checked here first (bot/dashboard/access.py) so a refusal is answered on the page and
posts nothing in the thread, and each, allowed or refused, is recorded with who asked.
"""

from __future__ import annotations

import uuid

from aiohttp import web

from bot.dashboard import access
from bot.dashboard import context as srv
from bot.dashboard.sessions import Session
from rooms.base.model import GroupPolicy, Inbound, RoomRef, Task
from rooms.base.words import CHOOSE, WAITING_HUMAN
from rooms.core.choices import choice_value

ANSWERS = ("approve", "reject", CHOOSE, "answer")
TEXT_LIMIT = 20_000


def add_routes(app: web.Application) -> None:
    app.router.add_post("/tasks/{id:[0-9]{1,18}}/stop", stop)
    app.router.add_post("/tasks/{id:[0-9]{1,18}}/arbitrate", arbitrate)
    app.router.add_post("/questions/{id:[0-9]{1,18}}/answer", answer)


def _said(text: str, status: int = 200) -> web.Response:
    """A short answer an HTMX form shows in place (escaped: it may quote what was typed)."""
    import html

    return web.Response(
        text=f'<p class="said">{html.escape(text)}</p>', status=status, content_type="text/html"
    )


async def _task_and_policy(
    request: web.Request, task_id: int
) -> tuple[Task, RoomRef, GroupPolicy | None]:
    dash = request.app[srv.DASHBOARD]
    task = await dash.store.task(task_id)
    room = await dash.store.room(task.room) if task is not None else None
    if (
        task is None
        or room is None
        or not access.may_see(srv.session_of(request), dash.app.policies, task)
    ):
        raise web.HTTPNotFound(text="no such task (or not one of your groups')")
    return task, room, dash.app.policies.for_room(room)


async def _record(
    request: web.Request, session: Session, action: str, task_id: int, detail: str, outcome: str
) -> None:
    dash = request.app[srv.DASHBOARD]
    await dash.store.record_dashboard_action(
        at=dash.now(),
        who=session.who,
        action=action,
        task_id=task_id,
        detail=detail[:500],
        outcome=outcome,
    )


def _event_id() -> str:
    return f"dashboard:{uuid.uuid4().hex}"


async def stop(request: web.Request) -> web.Response:
    dash = request.app[srv.DASHBOARD]
    session = srv.session_of(request)
    task, room, policy = await _task_and_policy(request, int(request.match_info["id"]))
    if not access.may_stop_on(session, policy, task):
        await _record(request, session, "stop", task.id, "", "refused")
        return _said("Only an approver of this group or the task's opener can stop it.", 403)
    if task.status == "closed":
        return _said(f"Task #{task.id} is closed already.", 409)
    if session.operator:
        done = await dash.app.engine.stop_task(task.id, "the dashboard's operator", _event_id())
    else:
        inbound = Inbound(
            room=room,
            user=session.user,
            text="stop",
            event_id=_event_id(),
            mentions_bot=True,
            roles=session.roles,
        )
        await dash.app.engine.handle(inbound)
        after = await dash.store.task(task.id)
        done = after is not None and after.status == "closed"
    await _record(request, session, "stop", task.id, "", "stopped" if done else "not stopped")
    return _said(f"Task #{task.id} stopped." if done else f"Task #{task.id} did not stop.")


async def arbitrate(request: web.Request) -> web.Response:
    dash = request.app[srv.DASHBOARD]
    session = srv.session_of(request)
    task, room, policy = await _task_and_policy(request, int(request.match_info["id"]))
    form = await request.post()
    note = str(form.get("note", ""))[:TEXT_LIMIT].replace("\n", " ").strip()
    if not access.may_arbitrate_on(session, policy, task):
        await _record(request, session, "arbitrate", task.id, note, "refused")
        return _said("You may not call the arbiter on this task.", 403)
    user = "the dashboard's operator" if session.operator else session.user
    inbound = Inbound(
        room=room,
        user=user,
        text=f"arbitrate {note}".strip(),
        event_id=_event_id(),
        mentions_bot=True,
        roles=session.roles,
    )
    await dash.app.engine.handle(inbound)
    await _record(request, session, "arbitrate", task.id, note, "asked")
    return _said(f"The arbiter was called on task #{task.id}; the thread says what happens.")


async def answer(request: web.Request) -> web.Response:
    dash = request.app[srv.DASHBOARD]
    session = srv.session_of(request)
    escalation = await dash.store.escalation(int(request.match_info["id"]))
    if escalation is None:
        raise web.HTTPNotFound(text="no such question")
    task, room, policy = await _task_and_policy(request, escalation.task_id)
    form = await request.post()
    kind = str(form.get("kind", ""))
    text = str(form.get("text", ""))[:TEXT_LIMIT].strip()
    detail = f"{kind}: {text}" if text else kind
    if kind not in ANSWERS:
        return _said("Choose Approve, Reject, an option, or write an answer.", 400)
    if not access.may_answer_on(session, policy, task):
        await _record(request, session, "answer", task.id, detail, "refused")
        who = ", ".join(sorted(policy.approvers)) if policy and policy.approvers else "nobody"
        return _said(
            f"Only an approver of this group, signed in as themselves, can answer (approvers: "
            f"{who}).",
            403,
        )
    if escalation.status != "open" or task.status != WAITING_HUMAN:
        return _said("That question was answered already or the task moved on.", 409)
    inbound = _answer_inbound(session, room, escalation.id, kind, form.get("option"), text)
    if inbound is None:
        return _said("Write the answer first, or pick one of the options.", 400)
    await dash.app.engine.handle(inbound)
    after = await dash.store.escalation(escalation.id)
    answered = after is not None and after.status == "answered"
    await _record(request, session, "answer", task.id, detail, "answered" if answered else "kept")
    if not answered:
        return _said("The answer was kept as a note; the question is still open.", 202)
    return _said(f"Answered: {after.answer if after else kind}")


def _answer_inbound(
    session: Session, room: RoomRef, escalation_id: int, kind: str, option: object, text: str
) -> Inbound | None:
    common = {"room": room, "user": session.user, "event_id": _event_id(), "roles": session.roles}
    if kind == "answer":
        # A reply in the thread while the task waits: the approver's words are the answer.
        return Inbound(text=text, **common) if text else None  # type: ignore[arg-type]
    if kind == CHOOSE:
        number = str(option or "")
        if not number.isdigit() or len(number) > 4:
            return None
        value = choice_value(escalation_id, int(number))
    else:
        value = str(escalation_id)
    return Inbound(action=kind, action_value=value, **common)  # type: ignore[arg-type]
