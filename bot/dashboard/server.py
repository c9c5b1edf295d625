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

from bot.adapter import HttpHost
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
# /slack/: Slack's events, when the dashboard shares Slack's listener (signed by Slack instead).
PUBLIC = ("/healthz", "/metrics", "/static/", "/signin", "/slack/")
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
    """The dashboard's own application (its own listener)."""
    web_app = web.Application(client_max_size=64 * 1024)
    attach(web_app, dash)
    return web_app


def attach(web_app: web.Application, dash: Dashboard) -> None:
    """The dashboard's middleware, templates and routes on `web_app`: its own, or the Slack
    adapter's HTTP listener (beside /slack/events, which the middleware leaves alone)."""
    web_app.middlewares.append(headers)
    web_app.middlewares.append(signed_in)
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


def _static_url(name: str) -> str:
    """A vendored file's address, with its content's hash so a new version is fetched anew."""
    data = (HERE / "static" / name).read_bytes()
    return f"/static/{name}?v={hashlib.sha256(data).hexdigest()[:12]}"


def base_url(settings: Settings, port: int, *, shared: bool = False) -> str:
    if settings.dashboard.public_url:
        return settings.dashboard.public_url.rstrip("/")
    # Beside /slack/events the listener is Slack's, on every address: name this machine's.
    host = "127.0.0.1" if shared else settings.dashboard.host
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


@dataclass
class Running:
    dashboard: Dashboard
    port: int
    url: str


def http_host(app: App, settings: Settings) -> HttpHost | None:
    """The adapter whose HTTP listener is on the dashboard's port, if any: the dashboard is
    then served there, beside /slack/events (`[dashboard] port` = TRIBUNAL_HTTP_PORT)."""
    port = settings.dashboard.port
    if not port:
        return None
    hosts = [a for a in app.router.adapters() if isinstance(a, HttpHost)]
    return next((a for a in hosts if a.serves_http(port)), None)


async def start_dashboard(
    app: App,
    settings: Settings,
    stack: contextlib.AsyncExitStack,
    *,
    clock: Callable[[], float] = time.time,
) -> Running | None:
    """The dashboard, started (on its own listener) or mounted (on an adapter's, which starts
    after this); what it opened is closed by `stack`. None when it is off. Meanwhile the
    engine's `dashboard` command hands out sign-in links."""
    if not settings.dashboard.enabled:
        return None
    data = settings.data.resolve()
    make_private_folder(data)
    store = await Store.open(settings.database)  # the bot's own: SQLite file or PostgreSQL
    stack.push_async_callback(store.close)
    changes = Changes(store)
    stack.push_async_callback(changes.close)
    app.router.watchers.append(changes.progress)
    stack.callback(app.router.watchers.remove, changes.progress)
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
    host = http_host(app, settings)
    if host is not None:
        host.mount(lambda web_app: attach(web_app, dash))
        port = int(settings.dashboard.port or 0)
    else:
        runner = web.AppRunner(make_web_app(dash), access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        stack.push_async_callback(runner.cleanup)
        site = web.TCPSite(runner, settings.dashboard.host, settings.dashboard.port or 0)
        await site.start()
        server = getattr(site, "_server", None)
        sockets = getattr(server, "sockets", None) or []
        port = sockets[0].getsockname()[1] if sockets else int(settings.dashboard.port or 0)
    url = base_url(settings, port, shared=host is not None)
    dash.links.base_url = url
    app.engine.offer_sign_in(dash.links)
    stack.callback(app.engine.offer_sign_in, None)
    return Running(dash, port, url)


@contextlib.asynccontextmanager
async def running_dashboard(
    app: App, settings: Settings, *, clock: Callable[[], float] = time.time
) -> AsyncIterator[Running | None]:
    """`start_dashboard` for the length of a block (None when it is off)."""
    async with contextlib.AsyncExitStack() as stack:
        yield await start_dashboard(app, settings, stack, clock=clock)
