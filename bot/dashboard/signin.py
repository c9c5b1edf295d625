"""Signing in and out: the operator's token (a form), or a one-time link from chat (its page
shows a button; the POST spends the link). Both set a signed session cookie (HttpOnly,
SameSite=Strict, Secure behind TLS) and every sign-in, refused or not, is recorded."""

from __future__ import annotations

import aiohttp_jinja2
from aiohttp import web

from bot.dashboard import context as srv
from bot.dashboard.sessions import COOKIE, Session, new_session
from bot.dashboard.token import digest, token_matches


def add_routes(app: web.Application) -> None:
    app.router.add_get("/signin", signin_page)
    app.router.add_post("/signin", signin_token)
    app.router.add_get("/signin/link", link_page)
    app.router.add_post("/signin/link", signin_link)
    app.router.add_post("/signout", signout)


async def signin_page(request: web.Request) -> web.Response:
    return aiohttp_jinja2.render_template("signin.html", request, {"error": ""})


def _signed_in(request: web.Request, session: Session, cookie: str) -> web.HTTPSeeOther:
    dash = request.app[srv.DASHBOARD]
    response = web.HTTPSeeOther("/")
    response.set_cookie(
        COOKIE,
        cookie,
        max_age=int(session.expires_at - dash.now()),
        httponly=True,
        samesite="Strict",
        secure=dash.secure_cookie,
        path="/",
    )
    return response


async def _record(request: web.Request, who: str, action: str, outcome: str) -> None:
    dash = request.app[srv.DASHBOARD]
    await dash.store.record_dashboard_action(
        at=dash.now(), who=who, action=action, task_id=None, detail="", outcome=outcome
    )


async def signin_token(request: web.Request) -> web.Response:
    dash = request.app[srv.DASHBOARD]
    form = await request.post()
    given = str(form.get("token", ""))
    if not token_matches(given, dash.settings.dashboard.token_sha256):
        await _record(request, "anonymous", "sign in (token)", "refused: wrong token")
        return aiohttp_jinja2.render_template(
            "signin.html", request, {"error": "That token is not the dashboard's."}, status=403
        )
    session, cookie = new_session(
        dash.key, operator=True, now=dash.now(), hours=dash.settings.dashboard.session_hours
    )
    await _record(request, session.who, "sign in (token)", "ok")
    raise _signed_in(request, session, cookie)


async def link_page(request: web.Request) -> web.Response:
    secret = request.query.get("s", "")
    return aiohttp_jinja2.render_template("link.html", request, {"secret": secret})


async def signin_link(request: web.Request) -> web.Response:
    dash = request.app[srv.DASHBOARD]
    form = await request.post()
    secret = str(form.get("s", ""))
    identity = await dash.store.spend_dashboard_link(digest(secret), dash.now()) if secret else None
    if identity is None:
        await _record(request, "anonymous", "sign in (link)", "refused: unknown, used or expired")
        return aiohttp_jinja2.render_template(
            "signin.html",
            request,
            {
                "error": "That link was used already, has expired or is not one of ours: "
                "ask for a new one with `dashboard` in chat."
            },
            status=403,
        )
    session, cookie = new_session(
        dash.key,
        operator=False,
        platform=identity.platform,
        user=identity.user,
        roles=identity.roles,
        now=dash.now(),
        hours=dash.settings.dashboard.session_hours,
    )
    await _record(request, session.who, "sign in (link)", "ok")
    raise _signed_in(request, session, cookie)


async def signout(request: web.Request) -> web.Response:
    response = web.HTTPSeeOther("/signin")
    response.del_cookie(COOKIE, path="/")
    raise response
