"""The routes for monitoring systems: /healthz and /metrics (bot/dashboard/health.py and
metrics.py). They need no session: a monitor has none, and they show counts, not conversations.
Like the rest of the dashboard they listen on loopback unless `[dashboard] host` says otherwise."""

from __future__ import annotations

from aiohttp import web

from bot.dashboard import context as srv
from bot.dashboard import health, metrics


def add_routes(app: web.Application) -> None:
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics_page)


async def healthz(request: web.Request) -> web.Response:
    dash = request.app[srv.DASHBOARD]
    found = await health.check(dash.app.engine, dash.app.store, dash.app.router.adapters())
    return web.Response(
        text="\n".join(found.lines) + "\n",
        status=200 if found.ok else 503,
        headers={"Cache-Control": "no-store"},
    )


async def metrics_page(request: web.Request) -> web.Response:
    dash = request.app[srv.DASHBOARD]
    found = await health.check(dash.app.engine, dash.app.store, dash.app.router.adapters())
    counts = await dash.store.store_counts()
    body = metrics.render(
        counts, dash.app.policies, now=dash.now(), roundtrip_s=found.store_roundtrip_s
    )
    return web.Response(body=body, headers={"Content-Type": metrics.CONTENT_TYPE})
