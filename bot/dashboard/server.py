"""The dashboard's aiohttp application and its lifetime beside the engine (`tribunal serve`).

Middleware, in order: security headers on every answer (a strict Content-Security-Policy: only
our own scripts and styles, nothing inline, so HTML that slipped past the escaping could not run
either); then the session: every page, part and action needs a signed, unexpired session cookie
(bot/dashboard/sessions.py) but /healthz, /metrics, the static files and the sign-in pages; and
every POST needs the session's CSRF token (header `X-CSRF-Token`, as HTMX sends it, or a form
field `csrf`) and, when the browser names one, an Origin of this server.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp_jinja2
import jinja2
from aiohttp import web

from bot.app import App
from bot.dashboard import actions, monitoring, pages, signin
from bot.dashboard.context import DASHBOARD, SESSION, Dashboard
from bot.dashboard.links import DashboardLinks
from bot.dashboard.live import Changes
from bot.dashboard.sessions import COOKIE, csrf_ok, load_key, read_session
from bot.data_folder import make_private_folder
from bot.settings import Settings
from rooms.store import Store

HERE = Path(__file__).parent
PUBLIC = ("/healthz", "/metrics", "/static/", "/signin")
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        response = exc
    response.headers.setdefault("Content-Security-Policy", CSP)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    # Link secrets never leave for another site (same-origin, not no-referrer: with that,
    # Chromium sends "Origin: null" on our own forms, which the Origin check refuses).
    response.headers.setdefault("Referrer-Policy", "same-origin")
    response.headers.setdefault("X-Frame-Options", "DENY")
    if isinstance(response, web.HTTPException):
        raise response
    return response


def _public(path: str) -> bool:
    return any(path == p or (p.endswith("/") and path.startswith(p)) for p in PUBLIC) or (
        path.startswith("/signin/") or path == "/signin"
    )


def _same_origin(request: web.Request) -> bool:
    origin = request.headers.get("Origin")
    if origin is None:
        return True  # not every client names it; the CSRF token is the check that counts
    # The host only: behind a TLS proxy the browser says https and we hear http.
    return origin.partition("://")[2] == request.host


@web.middleware
async def signed_in(request: web.Request, handler: Handler) -> web.StreamResponse:
    dash = request.app[DASHBOARD]
    if request.method == "POST" and not _same_origin(request):
        raise web.HTTPForbidden(text="refused: this request came from another site")
    if _public(request.path):
        return await handler(request)
    session = read_session(dash.key, request.cookies.get(COOKIE), dash.now())
    if session is None:
        if (
            request.method == "GET"
            and "HX-Request" not in request.headers
            and (request.path != "/events")
        ):
            raise web.HTTPSeeOther("/signin")
        raise web.HTTPUnauthorized(text="refused: sign in first")
    if request.method == "POST":
        given = request.headers.get("X-CSRF-Token")
        if given is None and request.content_type == "application/x-www-form-urlencoded":
            given = str((await request.post()).get("csrf", ""))
        if not csrf_ok(dash.key, session, given):
            raise web.HTTPForbidden(text="refused: missing or wrong CSRF token")
    request[SESSION] = session
    return await handler(request)


def make_web_app(dash: Dashboard) -> web.Application:
    web_app = web.Application(middlewares=[headers, signed_in], client_max_size=64 * 1024)
    web_app[DASHBOARD] = dash
    env = aiohttp_jinja2.setup(
        web_app,
        loader=jinja2.FileSystemLoader(str(HERE / "templates")),
        autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
        undefined=jinja2.StrictUndefined,
    )
    pages.add_filters(env)
    env.globals["static"] = _static_url
    web_app.router.add_static("/static/", HERE / "static")
    monitoring.add_routes(web_app)
    signin.add_routes(web_app)
    pages.add_routes(web_app)
    actions.add_routes(web_app)
    return web_app


def _static_url(name: str) -> str:
    """A vendored file's address, with its content's hash so a new version is fetched anew."""
    data = (HERE / "static" / name).read_bytes()
    return f"/static/{name}?v={hashlib.sha256(data).hexdigest()[:12]}"


def base_url(settings: Settings, port: int) -> str:
    if settings.dashboard.public_url:
        return settings.dashboard.public_url.rstrip("/")
    host = settings.dashboard.host
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


@dataclass
class Running:
    dashboard: Dashboard
    port: int
    url: str


@contextlib.asynccontextmanager
async def running_dashboard(
    app: App, settings: Settings, *, clock: Callable[[], float] = time.time
) -> AsyncIterator[Running | None]:
    """The dashboard on `[dashboard] host:port` while the block runs (None when it is off); the
    engine's `dashboard` command hands out sign-in links meanwhile."""
    if not settings.dashboard.enabled:
        yield None
        return
    data = settings.data.resolve()
    make_private_folder(data)
    store = await Store.open(str(settings.db_path))
    changes = Changes(store)
    app.router.watchers.append(changes.progress)
    dash = Dashboard(
        app=app,
        settings=settings,
        store=store,
        key=load_key(data),
        changes=changes,
        links=DashboardLinks(store, "", settings.dashboard.link_minutes, clock),
        clock=clock,
        records_dir=(settings.data / "records").resolve(),
    )
    runner = web.AppRunner(make_web_app(dash), access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    try:
        site = web.TCPSite(runner, settings.dashboard.host, settings.dashboard.port or 0)
        await site.start()
        server = getattr(site, "_server", None)
        sockets = getattr(server, "sockets", None) or []
        port = sockets[0].getsockname()[1] if sockets else int(settings.dashboard.port or 0)
        url = base_url(settings, port)
        dash.links.base_url = url
        app.engine.offer_sign_in(dash.links)
        yield Running(dash, port, url)
    finally:
        app.engine.offer_sign_in(None)
        app.router.watchers.remove(changes.progress)
        await changes.close()
        await runner.cleanup()
        await store.close()
