"""The pages: Tasks, a task, Waiting for people, Costs, Judgment; and the parts HTMX fetches
again when the server-sent events say something changed (`…/part` URLs).

Each page reads the store through rooms/store/dashboard_reads.py and shows only the groups the
signed-in person may see (bot/dashboard/access.py). Templates escape everything (autoescape):
agent output, task text and file names are shown, never run.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from typing import Any

import aiohttp_jinja2
import jinja2
from aiohttp import web

from bot.adapter import ThreadLinks
from bot.dashboard import access
from bot.dashboard import context as srv
from bot.dashboard.metrics import model_of
from bot.dashboard.sessions import csrf_token
from bot.dashboard.timeline import diffstat, record_text, timeline
from rooms.base.model import RoomRef
from rooms.core.ledger import ledger_summary, percent, seconds
from rooms.store.dashboard_reads import DAY_S, PAGE, TaskFilter, TaskLine

SPEND_DAYS = 30
FILTERS = ("group", "platform", "protocol", "status")


def add_routes(app: web.Application) -> None:
    app.router.add_get("/", tasks_page)
    app.router.add_get("/tasks/part", tasks_part)
    app.router.add_get("/tasks/{id:[0-9]{1,18}}", task_page)
    app.router.add_get("/tasks/{id:[0-9]{1,18}}/part", task_part)
    app.router.add_get("/waiting", waiting_page)
    app.router.add_get("/waiting/part", waiting_part)
    app.router.add_get("/costs", costs_page)
    app.router.add_get("/judgment", judgment_page)
    app.router.add_get("/events", events)


def add_filters(env: jinja2.Environment) -> None:
    env.filters["when"] = lambda at: time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at)) + "Z"
    env.filters["usd"] = lambda v: f"${v:,.4f}" if v < 1 else f"${v:,.2f}"
    env.filters["age"] = _age


def _age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _common(request: web.Request, **extra: Any) -> dict[str, Any]:
    dash = request.app[srv.DASHBOARD]
    session = srv.session_of(request)
    return {
        "session": session,
        "csrf": csrf_token(dash.key, session),
        "now": dash.now(),
        "path": request.path,
        **extra,
    }


def _thread_link(request: web.Request, line: TaskLine) -> str | None:
    """The chat thread's address, where the room's platform adapter can name it."""
    dash = request.app[srv.DASHBOARD]
    for adapter in dash.app.router.adapters():
        if adapter.platform == line.platform and isinstance(adapter, ThreadLinks):
            return adapter.thread_link(RoomRef(line.platform, line.channel, line.thread))
    return None


def _filter(request: web.Request) -> TaskFilter:
    dash = request.app[srv.DASHBOARD]
    session = srv.session_of(request)
    try:
        page = max(0, int(request.query.get("page", "0")))
    except ValueError:
        page = 0
    return TaskFilter(
        **{name: request.query.get(name, "")[:100] for name in FILTERS},
        groups=access.visible_groups(session, dash.app.policies),
        offset=page * PAGE,
        limit=PAGE,
    )


async def _tasks(request: web.Request) -> dict[str, Any]:
    dash = request.app[srv.DASHBOARD]
    chosen = _filter(request)
    lines, total = await dash.store.task_lines(chosen)
    query = "&".join(f"{n}={request.query[n]}" for n in FILTERS if request.query.get(n))
    return _common(
        request,
        progress=dash.changes.progress.lines,
        links={line.id: _thread_link(request, line) for line in lines},
        lines=lines,
        total=total,
        page=chosen.offset // PAGE,
        pages=max(1, -(-total // PAGE)),
        chosen={n: request.query.get(n, "") for n in FILTERS},
        query=query,
    )


async def tasks_page(request: web.Request) -> web.Response:
    context = await _tasks(request)
    context["facets"] = await request.app[srv.DASHBOARD].store.facets()
    return aiohttp_jinja2.render_template("tasks.html", request, context)


async def tasks_part(request: web.Request) -> web.Response:
    """The rows HTMX fetches on every change: one render serves every viewer of the same
    groups until the next change (live.PartCache)."""
    dash = request.app[srv.DASHBOARD]
    groups = access.visible_groups(srv.session_of(request), dash.app.policies)

    async def render() -> bytes:
        context = await _tasks(request)
        return aiohttp_jinja2.render_string("_task_rows.html", request, context).encode("utf-8")

    key = (request.path_qs, groups)
    body = await dash.parts.get(key, dash.changes.mark, dash.now(), render)
    return web.Response(body=body, content_type="text/html", charset="utf-8")


async def _task(request: web.Request) -> dict[str, Any]:
    dash = request.app[srv.DASHBOARD]
    session = srv.session_of(request)
    task_id = int(request.match_info["id"])
    task = await dash.store.task(task_id)
    if task is None or not access.may_see(session, dash.app.policies, task):
        raise web.HTTPNotFound(text="no such task (or not one of your groups')")
    line = await dash.store.task_line(task_id)
    room = await dash.store.room(task.room)
    policy = dash.app.policies.for_room(room) if room is not None else None
    by_role = await dash.store.usage_by_role(task_id)
    usage = [(s.key[0], model_of(dash.app.policies, task.group, s.key[0]), s) for s in by_role]
    verdicts = await dash.store.verdicts(task_id)
    records = [
        (v.ruling.verdict, v.record_path, record_text(dash.records_dir, v.record_path))
        for v in verdicts
        if v.record_path
    ]
    work = await dash.store.worktree(task_id)
    stat = await diffstat(work.repository, work.base, work.branch) if work else ""
    question = await dash.store.open_escalation(task_id)
    return _common(
        request,
        task=task,
        line=line,
        items=await timeline(dash.store, task_id),
        usage=usage,
        records=records,
        work=work,
        diffstat=stat,
        question=question,
        actions=await dash.store.dashboard_actions(task_id, limit=20),
        progress=dash.changes.progress.lines.get(task.room, ""),
        thread_link=_thread_link(request, line) if line is not None else None,
        may_stop=task.status != "closed" and access.may_stop_on(session, policy, task),
        may_arbitrate=task.status != "closed" and access.may_arbitrate_on(session, policy, task),
        may_answer=question is not None and access.may_answer_on(session, policy, task),
    )


async def task_page(request: web.Request) -> web.Response:
    return aiohttp_jinja2.render_template("task.html", request, await _task(request))


async def task_part(request: web.Request) -> web.Response:
    return aiohttp_jinja2.render_template("_task_live.html", request, await _task(request))


async def _waiting(request: web.Request) -> dict[str, Any]:
    dash = request.app[srv.DASHBOARD]
    session = srv.session_of(request)
    groups = access.visible_groups(session, dash.app.policies)
    questions = await dash.store.open_questions(groups)
    shown = []
    for q in questions:
        task = await dash.store.task(q.task_id)
        room = await dash.store.room(q.room)
        policy = dash.app.policies.for_room(room) if room is not None else None
        allowed = task is not None and access.may_answer_on(session, policy, task)
        shown.append((q, allowed))
    return _common(request, questions=shown)


async def waiting_page(request: web.Request) -> web.Response:
    return aiohttp_jinja2.render_template("waiting.html", request, await _waiting(request))


async def waiting_part(request: web.Request) -> web.Response:
    return aiohttp_jinja2.render_template("_waiting_list.html", request, await _waiting(request))


async def costs_page(request: web.Request) -> web.Response:
    dash = request.app[srv.DASHBOARD]
    session = srv.session_of(request)
    groups = access.visible_groups(session, dash.app.policies)
    spend = await dash.store.spend(dash.now() - SPEND_DAYS * DAY_S, groups)
    by: dict[str, dict[str, list[float]]] = defaultdict(dict)
    for s in spend:
        day, group, role = s.key
        model = model_of(dash.app.policies, group, role)
        for name, key in (("day", day), ("group", group), ("role", role), ("model", model)):
            entry = by[name].setdefault(key, [0.0, 0.0, 0.0, 0.0])
            entry[0] += s.cost_usd
            entry[1] += s.input_tokens
            entry[2] += s.output_tokens
            entry[3] += s.turns
    budgets = []
    for policy in dash.app.policies.groups():
        if groups is not None and policy.name not in groups:
            continue
        limit = policy.thresholds.max_cost_usd
        near = await dash.store.costly_tasks(policy.name, 0.8 * limit) if limit > 0 else []
        budgets.append((policy, by["group"].get(policy.name, [0.0] * 4)[0], near))
    return aiohttp_jinja2.render_template(
        "costs.html",
        request,
        _common(request, by={k: sorted(v.items()) for k, v in by.items()}, budgets=budgets),
    )


async def judgment_page(request: web.Request) -> web.Response:
    dash = request.app[srv.DASHBOARD]
    session = srv.session_of(request)
    groups = access.visible_groups(session, dash.app.policies)
    since = dash.now() - SPEND_DAYS * DAY_S
    seen = await dash.store.judgment(since, groups)
    ledger = await ledger_summary(dash.store, since=since, among=groups)
    detectors = sorted({d for c in seen.firings_by_day.values() for d in c})
    verdicts = sorted({v for c in seen.rulings_by_day.values() for v in c})
    totals: Counter[str] = Counter()
    for c in seen.rulings_by_day.values():
        totals.update(c)
    return aiohttp_jinja2.render_template(
        "judgment.html",
        request,
        _common(
            request,
            seen=seen,
            detectors=detectors,
            verdicts=verdicts,
            ruling_totals=totals,
            ledger=[*ledger.groups, ledger.overall] if ledger.overall.rulings else [],
            percent=percent,
            seconds=seconds,
            days=sorted(set(seen.firings_by_day) | set(seen.rulings_by_day)),
        ),
    )


async def events(request: web.Request) -> web.StreamResponse:
    return await request.app[srv.DASHBOARD].changes.stream(request)
